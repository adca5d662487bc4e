"""Iterator classes a step loop drives (branch recall49).

A project class with `__next__` (and `__iter__` returning `self`) hands out one batch per call, building it on the
host and copying it to the device (`torch.LongTensor(rows).to(self.device)`). A script with no loop builds it
through a factory of the class's module (`train_iter = build_iterator(rows, config)`, imported there, even under
`if model == ...:`) and hands it to another module's `train(config, model, train_iter)`, whose step loop runs
`for i, (x, y) in enumerate(train_iter):`. No loop is in sight of the copy, yet `__next__` runs once per step: the
copy is reported there, with the loop as the related location (`forward.iterated_site`).

Also `next(it)` once per iteration of a step loop. Not: an instance iterated only by a loop that runs no step
(counting the batches), `next(it)` under a periodic test, or a class whose `__iter__` returns another iterator
(a `for` over it never runs the class's `__next__`).
"""

from __future__ import annotations

from projects import check, found, write_project

ITERATOR = """\
import torch


class BatchIterator(object):
    def __init__(self, rows, batch_size, device):
        self.rows = rows
        self.batch_size = batch_size
        self.index = 0
        self.device = device

    def _to_tensor(self, rows):
        x = torch.LongTensor([r[0] for r in rows]).to(self.device)
        y = torch.LongTensor([r[1] for r in rows]).to(self.device)
        return x, y

    def __next__(self):
        if self.index >= len(self.rows) // self.batch_size:
            self.index = 0
            raise StopIteration
        rows = self.rows[self.index * self.batch_size:(self.index + 1) * self.batch_size]
        self.index += 1
        return self._to_tensor(rows)

    def __iter__(self):
        return self{extra}


def build_iterator(rows, config):
    return BatchIterator(rows, config.batch_size, config.device)
"""

MODEL = """\
import torch
import torch.nn as nn


class Config:
    def __init__(self):
        self.batch_size = 32
        self.epochs = 3
        self.device = torch.device("cuda" if torch.cuda.is_available() else "cpu")


class Model(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.embedding = nn.Embedding(100, 16)
        self.fc = nn.Linear(16, 2)

    def forward(self, x):
        return self.fc(self.embedding(x).mean(1))
"""

TRAIN = """\
import torch
import torch.nn.functional as F


def train(config, model, train_iter):
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
    for epoch in range(config.epochs):
        for i, (x, y) in enumerate(train_iter):
            out = model(x)
            loss = F.cross_entropy(out, y)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
"""

COUNT = """\
def train(config, model, train_iter):
    batches = 0
    for x, y in train_iter:
        batches += 1
    return batches
"""

RUN = """\
import argparse

from model import Config, Model
from train_eval import train

parser = argparse.ArgumentParser()
parser.add_argument("--model", default="plain")
args = parser.parse_args()

if __name__ == "__main__":
    if args.model == "plain":
        from utils import build_iterator
    config = Config()
    rows = [([1, 2, 3], 0)] * 100
    train_iter = build_iterator(rows, config)
    model = Model(config).to(config.device)
    train(config, model, train_iter)
"""

NEXT = """\
import torch
import torch.nn.functional as F

from model import Config, Model
from utils import BatchIterator

config = Config()
model = Model(config).to(config.device)
optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
it = BatchIterator([([1, 2, 3], 0)] * 100, 32, config.device)
val_it = BatchIterator([([1, 2, 3], 0)] * 10, 32, config.device)
for step in range(1000):
    x, y = next(it)
    loss = F.cross_entropy(model(x), y)
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
"""

COPIES = {("utils.py", 12, "GPU203"), ("utils.py", 13, "GPU203")}


def _lint(root, modules) -> set:
    items = check(write_project(root, modules), "--no-cache", "--exit-zero", ".")
    return {key for key in found(items) if key[0] == "utils.py"}


def test_an_iterator_built_by_a_factory_and_handed_to_a_step_loop(tmp_path):
    modules = {"utils.py": ITERATOR.format(extra=""), "model.py": MODEL, "train_eval.py": TRAIN, "run.py": RUN}
    assert _lint(tmp_path, modules) == COPIES


def test_next_of_an_iterator_every_step(tmp_path):
    modules = {"utils.py": ITERATOR.format(extra=""), "model.py": MODEL, "train.py": NEXT}
    assert _lint(tmp_path, modules) == COPIES


def test_next_under_a_periodic_test_is_not_every_step(tmp_path):
    periodic = NEXT.replace("    x, y = next(it)\n", "    if step % 100 == 0:\n        x, y = next(val_it)\n"
                            "    x = torch.zeros(32, 3, dtype=torch.long, device=config.device)\n"
                            "    y = torch.zeros(32, dtype=torch.long, device=config.device)\n")
    modules = {"utils.py": ITERATOR.format(extra=""), "model.py": MODEL, "train.py": periodic}
    assert _lint(tmp_path, modules) == set()


def test_an_iterator_iterated_by_a_loop_that_runs_no_step(tmp_path):
    modules = {"utils.py": ITERATOR.format(extra=""), "model.py": MODEL, "train_eval.py": COUNT, "run.py": RUN}
    assert _lint(tmp_path, modules) == set()


def test_a_class_whose_iter_hands_out_another_iterator(tmp_path):
    other = ITERATOR.format(extra="").replace("    def __iter__(self):\n        return self",
                                             "    def __iter__(self):\n        return iter(self.rows)")
    modules = {"utils.py": other, "model.py": MODEL, "train_eval.py": TRAIN, "run.py": RUN}
    assert _lint(tmp_path, modules) == set()
