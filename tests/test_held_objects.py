"""Objects a class keeps from its constructor's parameters (analysis/held_objects.py, branch recall84).

A metric stored on a trainer keeps the vocabulary it is handed (`self.vocab = vocab`); the vocabulary's method reads
every CUDA token with `.item()`. The class of `self.vocab` comes from the project's constructions of the metric
(through the trainer's own constructor parameter, to the script that builds the vocabulary), so the trainer's
per-step `self.metric(targets, preds)` is reported at the call, the read as related."""
from __future__ import annotations

from tests.projects import check, found, write_project

VOCAB = '''
class Vocabulary(object):
    def label_to_string(self, labels):
        raise NotImplementedError


class CharVocabulary(Vocabulary):
    def __init__(self, path):
        self.eos_id = 2
        self.id_dict = {}

    def label_to_string(self, labels):
        if len(labels.shape) == 1:
            sentence = str()
            for label in labels:
                if label.item() == self.eos_id:
                    break
                sentence += self.id_dict[label.item()]
            return sentence
        return [self.label_to_string(row) for row in labels]


class ListVocabulary(Vocabulary):
    def __init__(self, words):
        self.words = words

    def label_to_string(self, labels):
        return " ".join(self.words)
'''

METRIC = '''
class ErrorRate(object):
    def __init__(self, vocab):
        self.vocab = vocab
        self.total = 0

    def __call__(self, targets, y_hats):
        total = 0
        for (target, y_hat) in zip(targets, y_hats):
            s1 = self.vocab.label_to_string(target)
            s2 = self.vocab.label_to_string(y_hat)
            total += abs(len(s1) - len(s2))
        self.total += total
        return total


class CharErrorRate(ErrorRate):
    def __init__(self, vocab):
        super(CharErrorRate, self).__init__(vocab)
'''

TRAINER = '''
import torch
from vocab import Vocabulary
from metric import CharErrorRate


class Trainer(object):
    def __init__(self, model, loader, device, vocab: Vocabulary = None):
        self.model = model
        self.loader = loader
        self.metric = CharErrorRate(vocab)
        self.device = device

    def train(self, optimizer):
        for inputs, targets in self.loader:
            inputs = inputs.to(self.device, non_blocking=True)
            targets = targets.to(self.device, non_blocking=True)
            logits = self.model(inputs)
            loss = torch.nn.functional.cross_entropy(logits, targets)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            cer = self.metric(targets, logits.argmax(-1))
'''

MAIN = '''
import torch
from torch.utils.data import DataLoader
from vocab import {vocab}
from trainer import Trainer

model = torch.nn.Linear(4, 4).cuda()
vocab = {vocab}("labels.csv")
loader = DataLoader(list(range(10)), batch_size=2, pin_memory=True, num_workers=2)
trainer = Trainer(model, loader, torch.device("cuda"), vocab=vocab)
trainer.train(torch.optim.SGD(model.parameters(), lr=0.1, fused=True))
'''

CALL_LINE = 23  # `cer = self.metric(...)` in TRAINER


def _lint(tmp_path, vocab: str, main: str = MAIN) -> list:
    root = write_project(tmp_path, {"vocab.py": VOCAB, "metric.py": METRIC, "trainer.py": TRAINER,
                                    "main.py": main.format(vocab=vocab)})
    return check(root, "--no-cache", "--exit-zero", ".")


def test_a_metric_holding_the_vocabulary_the_script_builds_syncs_at_the_trainers_call(tmp_path):
    items = _lint(tmp_path, "CharVocabulary")
    assert ("trainer.py", CALL_LINE, "GPU112") in found(items)
    finding = next(d for d in items if d["filename"].endswith("trainer.py") and d["location"]["row"] == CALL_LINE)
    assert "`self.metric(...)` syncs every step" in finding["message"]
    assert "`.item()`" in finding["message"]
    related = finding["related"] if isinstance(finding["related"], list) else [finding["related"]]
    assert any(r and str(r.get("filename", "")).endswith("vocab.py") and r["location"]["row"] == 16
               for r in related), finding["related"]


def test_a_vocabulary_that_reads_nothing_keeps_the_metric_call_quiet(tmp_path):
    assert ("trainer.py", CALL_LINE, "GPU112") not in found(_lint(tmp_path, "ListVocabulary"))


def test_one_construction_of_an_unknown_or_quiet_class_keeps_the_call_quiet(tmp_path):
    # every branch's class must read: one that does not (ListVocabulary) leaves the call silent
    either = MAIN.replace('vocab = {vocab}("labels.csv")',
                          'import sys\nvocab = {vocab}("labels.csv") if sys.argv[1] == "c" else ListVocabulary([])')
    either = either.replace("from vocab import {vocab}", "from vocab import {vocab}, ListVocabulary")
    assert ("trainer.py", CALL_LINE, "GPU112") not in found(_lint(tmp_path, "CharVocabulary", either))
    # a vocabulary built by something gpulint cannot tell: nothing is claimed
    unknown = MAIN.replace('vocab = {vocab}("labels.csv")', 'vocab = load_vocabulary("labels.csv")')
    unknown = unknown.replace("from trainer import Trainer", "from trainer import Trainer\nfrom somewhere import load_vocabulary")
    assert ("trainer.py", CALL_LINE, "GPU112") not in found(_lint(tmp_path, "CharVocabulary", unknown))


SCORER = '''
class Scorer(object):
    def __init__(self, fn):
        self.fn = fn

    def __call__(self, out, y):
        return self.fn(out, y)


class Accuracy(object):
    def __call__(self, out, y):
        return (out.argmax(-1) == y).float().mean().item()
'''

SCORED = '''
import torch
from torch.utils.data import DataLoader
from scorer import Scorer, Accuracy


def train(model, loader, optimizer, scorer):
    for x, y in loader:
        x, y = x.cuda(non_blocking=True), y.cuda(non_blocking=True)
        out = model(x)
        loss = torch.nn.functional.cross_entropy(out, y)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        acc = scorer(out, y)


model = torch.nn.Linear(4, 4).cuda()
loader = DataLoader(list(range(10)), batch_size=2, pin_memory=True, num_workers=2)
scorer = Scorer({fn})
train(model, loader, torch.optim.SGD(model.parameters(), lr=0.1, fused=True), scorer)
'''


def test_a_held_callable_runs_its_call_method(tmp_path):
    root = write_project(tmp_path, {"scorer.py": SCORER, "train.py": SCORED.format(fn="Accuracy()")})
    assert ("train.py", 15, "GPU112") in found(check(root, "--no-cache", "--exit-zero", "."))


def test_a_held_callable_of_an_unknown_class_says_nothing(tmp_path):
    root = write_project(tmp_path, {"scorer.py": SCORER, "train.py": SCORED.format(fn="torch.nn.MSELoss()")})
    assert ("train.py", 15, "GPU112") not in found(check(root, "--no-cache", "--exit-zero", "."))


LOSSES = '''
from torch import nn


class HardLoss(nn.Module):
    def forward(self, inputs, targets):
        worst = []
        for i in range(inputs.size(0)):
            worst.append(inputs[i].max().item())
        return inputs.sum() * max(worst)
'''

TRAINERS = '''
import torch


class BaseTrainer(object):
    def __init__(self, model, criterion):
        self.model = model
        self.criterion = criterion

    def train(self, loader, optimizer):
        for x, y in loader:
            x, y = x.cuda(non_blocking=True), y.cuda(non_blocking=True)
            out = torch.relu(x)
            loss = self.criterion(out, y)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()


class Trainer(BaseTrainer):
    pass
'''

EXAMPLE = '''
import torch
from torch.utils.data import DataLoader
from losses import HardLoss
from trainers import Trainer

model = torch.nn.Linear(4, 4).cuda()
criterion = {criterion}
loader = DataLoader(list(range(10)), batch_size=2, pin_memory=True, num_workers=2)
trainer = Trainer(model, criterion)
trainer.train(loader, torch.optim.SGD(model.parameters(), lr=0.1, fused=True))
'''


def test_a_loss_a_script_hands_to_a_subclass_of_the_trainer_syncs_at_its_call(tmp_path):
    # `Trainer(model, criterion)` builds a subclass with the base's `__init__`; `.cuda()` hands the loss back
    root = write_project(tmp_path, {"losses.py": LOSSES, "trainers.py": TRAINERS,
                                    "main.py": EXAMPLE.format(criterion="HardLoss().cuda()")})
    items = check(root, "--no-cache", "--exit-zero", ".")
    assert ("trainers.py", 14, "GPU112") in found(items)
    finding = next(d for d in items if d["code"] == "GPU112")
    assert "`self.criterion(...)` syncs every step: `HardLoss.forward` calls `.item()`" in finding["message"]


def test_a_library_loss_handed_to_the_trainer_is_not_claimed(tmp_path):
    root = write_project(tmp_path, {"losses.py": LOSSES, "trainers.py": TRAINERS,
                                    "main.py": EXAMPLE.format(criterion="torch.nn.CrossEntropyLoss().cuda()")})
    assert ("trainers.py", 14, "GPU112") not in found(check(root, "--no-cache", "--exit-zero", "."))
