"""A plain helper class built in per-step model code runs its `__init__` every step.

`ProbMask(B, L, index, device=x.device)` in an attention's `forward` (a mask object whose `__init__` builds
`torch.ones(L, S).to(device)`): the host build and copy happen on every forward, although no loop is in sight
of the `__init__`. A class built only in the model's own `__init__` (once) is setup, and so is a module class
(`nn.Module` subclass) built per step, which is another rule's matter.
"""

from __future__ import annotations

from pathlib import Path

from projects import check, found, write_project

MODEL = '''import torch
import torch.nn as nn


class ProbMask:
    def __init__(self, L, device="cpu"):
        self.mask = torch.ones(L, L, dtype=torch.bool).to(device).triu(1)


class OnceTable(object):
    def __init__(self, n, device="cpu"):
        self.table = torch.arange(n).to(device)


class Block(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.fc = nn.Linear(d, d)
        self.table = OnceTable(d)

    def forward(self, x):
        m = ProbMask(x.shape[1], device=x.device)
        return self.fc(x).masked_fill(m.mask[0], 0.0)
'''

TRAIN = '''import torch
from torch.utils.data import DataLoader
from model import Block

device = torch.device("cuda")
model = Block(8).to(device)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
loader = DataLoader(torch.randn(64, 8, 8), batch_size=8, pin_memory=True, num_workers=2)
for x in loader:
    loss = model(x.to(device, non_blocking=True)).sum()
    loss.backward()
    opt.step()
    opt.zero_grad(set_to_none=True)
'''


def test_init_of_a_class_built_in_forward_runs_every_step(tmp_path: Path):
    root = write_project(tmp_path / "p", {"model.py": MODEL, "train.py": TRAIN})
    items = check(root, "--no-cache", "--select", "GPU203", ".")
    assert found(items) == {("model.py", 7, "GPU203")}  # ProbMask.__init__; OnceTable is built once
    (item,) = items
    assert "Block.forward" in item["message"]


def test_class_built_only_at_setup_is_not_per_step(tmp_path: Path):
    model = MODEL.replace("        m = ProbMask(x.shape[1], device=x.device)\n", "        m = self.m\n") \
        .replace("        self.table = OnceTable(d)\n", "        self.table = OnceTable(d)\n        self.m = ProbMask(8)\n")
    root = write_project(tmp_path / "p", {"model.py": model, "train.py": TRAIN})
    assert found(check(root, "--no-cache", "--select", "GPU203", ".")) == set()


def test_module_class_built_in_forward_is_not_followed(tmp_path: Path):
    model = MODEL.replace("class ProbMask:", "class ProbMask(nn.Module):")
    root = write_project(tmp_path / "p", {"model.py": model, "train.py": TRAIN})
    assert found(check(root, "--no-cache", "--select", "GPU203", ".")) == set()
