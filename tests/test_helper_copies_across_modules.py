"""A batch handed to another module's helper that copies it to the GPU without `non_blocking=True` (GPU202 at the
call; heldout33b's Sentence-VAE: `batch[k] = to_var(v)`, `def to_var(x): ... x = x.cuda()` in utils.py). The
project model records each blocking copy of a parameter (`FunctionSummary.blocking_moves`); the loop's loaders
decide the message, as for a copy written in the loop."""

from __future__ import annotations

from projects import check, found, write_project

UTILS = """\
import torch


def to_var(x):
    if torch.cuda.is_available():
        x = x.cuda()
    return x


def to_var_async(x):
    return x.cuda(non_blocking=True)
"""

TRAIN = """\
import torch
from torch.utils.data import DataLoader

from utils import to_var, to_var_async


def main(dataset, model, opt):
    loader = DataLoader(dataset, batch_size=32, num_workers=4{pin})
    model = model.cuda()
    for batch in loader:
        for k, v in batch.items():
            batch[k] = to_var(v)
        extra = to_var_async(batch["extra"])
        loss = model(batch["input"], extra).sum()
        opt.zero_grad()
        loss.backward()
        opt.step()
"""


def _lint(tmp_path, pin):
    root = write_project(tmp_path, {"utils.py": UTILS, "train.py": TRAIN.format(pin=pin)})
    return check(root, "--no-cache", "--exit-zero", "--select", "GPU202", "train.py")


def test_a_pinned_batch_handed_to_a_blocking_helper_is_reported_at_the_call(tmp_path):
    items = _lint(tmp_path, ", pin_memory=True")
    assert found(items) == {("train.py", 12, "GPU202")}, items
    assert "`to_var(...)`" in items[0]["message"] and "utils.py:6" in items[0]["message"], items


def test_an_unpinned_loader_says_gpu201_pins_it(tmp_path):
    items = _lint(tmp_path, "")
    assert found(items) == {("train.py", 12, "GPU202")} and "GPU201" in items[0]["message"], items


def test_a_loader_that_decides_not_to_pin_is_left_alone(tmp_path):
    assert _lint(tmp_path, ", pin_memory=False") == []


def test_a_batch_already_copied_is_not_copied_again_by_the_helper(tmp_path):
    # `msk = batch["gt"].cuda()` then `to_var(msk[:, 0])`: the helper's `.cuda()` copies nothing (STCN's
    # `processor.interact(msk[:, 0], ...)`, seen in the regression diff)
    text = TRAIN.format(pin=", pin_memory=True").replace(
        '        for k, v in batch.items():\n            batch[k] = to_var(v)\n',
        '        msk = batch["gt"].cuda()\n        batch["gt"] = to_var(msk[:, 0])\n')
    root = write_project(tmp_path, {"utils.py": UTILS, "train.py": text})
    items = check(root, "--no-cache", "--exit-zero", "--select", "GPU202", "train.py")
    assert all("to_var" not in d["message"] for d in items), items
