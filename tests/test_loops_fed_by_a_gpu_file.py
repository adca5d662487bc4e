"""A module that names no device whose function loops over batches running the network it is handed, called from
a script that does name one (`model = Model().to(device)`, then `train(model, loader)`): the network and what it
computes every step are on that device (analysis/helper_sites.loops_fed_by_a_gpu_file)."""

from __future__ import annotations

from pathlib import Path

from tests.projects import check, found, write_project

# train_eval.py names no device: its loops run the model the script hands in.
TRAIN_EVAL = """import numpy as np
import torch
import torch.nn.functional as F


def evaluate(model, data_iter):
    model.eval()
    preds = np.array([], dtype=int)
    with torch.no_grad():
        for texts, labels in data_iter:
            outputs = model(texts)
            predic = torch.max(outputs, 1)[1].cpu().numpy()
            preds = np.append(preds, predic)
    return preds


def train(model, train_iter, dev_iter, epochs):
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
    total = 0
    for epoch in range(epochs):
        for trains, labels in train_iter:
            outputs = model(trains)
            loss = F.cross_entropy(outputs, labels)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            if total % 100 == 0:
                true = labels.cpu()
                print(total, loss.item(), true)
            total += 1
        evaluate(model, dev_iter)
"""

RUN = """import torch
from torch.utils.data import DataLoader, TensorDataset
from train_eval import train

device = torch.device("cuda")
model = torch.nn.Linear(8, 3).to(device)
data = DataLoader(TensorDataset(torch.randn(64, 8), torch.randint(0, 3, (64,))), batch_size=8)
train(model, data, data, 3)
"""


def test_a_loop_over_a_network_handed_in_by_a_gpu_script_syncs_every_step(tmp_path: Path) -> None:
    root = write_project(tmp_path, {"train_eval.py": TRAIN_EVAL, "run.py": RUN})
    keys = found(check(root, "--no-cache", "--exit-zero", "train_eval.py"))
    assert ("train_eval.py", 12, "GPU104") in keys  # `.cpu()` of the prediction, every evaluation batch
    # periodic logging in the training loop stays quiet
    assert not {k for k in keys if k[1] in (37, 38)}


def test_a_script_that_names_no_device_keeps_the_module_quiet(tmp_path: Path) -> None:
    cpu_run = RUN.replace('device = torch.device("cuda")\n', "").replace(".to(device)", "")
    root = write_project(tmp_path, {"train_eval.py": TRAIN_EVAL, "run.py": cpu_run})
    assert not found(check(root, "--no-cache", "--exit-zero", "train_eval.py"))


def test_a_function_that_runs_no_network_it_is_handed_stays_quiet(tmp_path: Path) -> None:
    # a metrics helper looping over arrays it is given, called from the GPU script: what it reads is what it is
    # handed (maybe host copies), not a network it runs
    helper = """import torch


def summarise(values, steps):
    out = []
    for v in values:
        out.append(torch.as_tensor(v).cpu())
        steps(v)
    return out
"""
    run = RUN + "from metrics import summarise\nsummarise([1, 2], print)\n"
    root = write_project(tmp_path, {"train_eval.py": TRAIN_EVAL, "run.py": run, "metrics.py": helper})
    assert not {k for k in found(check(root, "--no-cache", "--exit-zero", "metrics.py"))}


# A beam-search translator class with no device of its own; the script moves each source sentence to the GPU and
# hands it to the translator's method, once per sentence.
TRANSLATOR = """import torch
from torch import nn


class Translator(nn.Module):
    def __init__(self, model, beam_size):
        super().__init__()
        self.model = model
        self.beam_size = beam_size

    def translate_sentence(self, src_seq):
        with torch.no_grad():
            gen = self.model(src_seq)
            for step in range(2, 100):
                gen = self.model(gen)
                done = gen > 0
                if done.sum().item() == self.beam_size:
                    break
        return gen
"""

TRANSLATE = """import torch
from torch.utils.data import DataLoader
from translator import Translator

device = torch.device("cuda")
translator = Translator(torch.nn.Linear(8, 8), 5).to(device)
for example in DataLoader(torch.randn(100, 8), batch_size=1):
    src = example{move}
    out = translator.translate_sentence(src)
    print(out)
"""


def test_a_method_handed_a_device_tensor_every_step_syncs_on_that_device(tmp_path: Path) -> None:
    root = write_project(tmp_path, {"translator.py": TRANSLATOR,
                                    "translate.py": TRANSLATE.format(move=".to(device)")})
    assert ("translator.py", 17, "GPU101") in found(check(root, "--no-cache", "--exit-zero", "translator.py"))


def test_a_method_handed_host_copies_or_unmoved_batches_stays_quiet(tmp_path: Path) -> None:
    # a host copy; a loader's batch never moved (not known to be on the device); a copy to the device copied back
    # before the call (SlowFast's wrong-prediction visualiser is handed `preds` after `preds = preds.cpu()`)
    for move in (".cpu()", "", ".to(device)\n    src = src.cpu()"):
        root = write_project(tmp_path / repr(move), {"translator.py": TRANSLATOR,
                                                     "translate.py": TRANSLATE.format(move=move)})
        assert not found(check(root, "--no-cache", "--exit-zero", "translator.py")), move
