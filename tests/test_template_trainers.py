"""Template-method trainers (Keras-style `fit()` in a base class, DeepCTR's `BaseModel.fit`): the base class's
training loop runs the model it is (`model = self.train()`, perhaps wrapped in `DataParallel`, then `model(x)`),
so a subclass that defines `forward` and inherits `fit` runs its `forward` every step, and so do the submodules
that forward calls. `nn` may come into the model's module through a project star import (`from .layers import *`).
"""

from __future__ import annotations

from pathlib import Path

from projects import check, found, write_project

BASE = '''\
import torch
import torch.nn as nn
from torch.utils.data import DataLoader, TensorDataset


class BaseModel(nn.Module):
    def __init__(self, device="cpu", gpus=None):
        super().__init__()
        self.device = device
        self.gpus = gpus

    def fit(self, x, y, batch_size=256, epochs=1):
        model = self.train()
        if self.gpus:
            model = torch.nn.DataParallel(model, device_ids=self.gpus)
        loader = DataLoader(TensorDataset(x, y), batch_size=batch_size, pin_memory=True, num_workers=2)
        optim = torch.optim.Adam(self.parameters())
        for epoch in range(epochs):
            for xb, yb in loader:
                xb = xb.to(self.device, non_blocking=True)
                yb = yb.to(self.device, non_blocking=True)
                pred = CALL
                loss = nn.functional.mse_loss(pred, yb)
                optim.zero_grad()
                loss.backward()
                optim.step()
'''

LAYERS = '''\
import torch
import torch.nn as nn


class Extractor(nn.Module):
    def forward(self, keys, lengths):
        mask = lengths > 0
        return torch.masked_select(keys, mask.view(-1, 1))
'''

NET = '''\
from .base import BaseModel
from .layers import *


class Net(BaseModel):
    def __init__(self, device="cpu"):
        super().__init__(device=device)
        self.extractor = Extractor()
        self.linear = nn.Linear(4, 1)

    def forward(self, x):
        keys = self.extractor(x, x.sum(1))
        return self.linear(keys)
'''

RUN = '''\
import torch
from models.net import Net

model = Net(device="cuda:0").to("cuda:0")
model.fit(torch.randn(1024, 4), torch.randn(1024, 1))
'''

MASK = ("models/layers.py", 8, "GPU111")  # `torch.masked_select(...)` in the submodule the subclass's forward calls


def _findings(tmp_path: Path, call: str = "model(xb)", net: str = NET) -> set:
    root = write_project(tmp_path, {"models/__init__.py": "", "models/base.py": BASE.replace("CALL", call),
                                    "models/layers.py": LAYERS, "models/net.py": net, "run.py": RUN})
    return found(check(root, "--no-cache", "."))


def test_the_subclass_forward_runs_every_step_of_the_inherited_fit(tmp_path: Path):
    assert MASK in _findings(tmp_path)


def test_the_model_called_as_itself_runs_every_step(tmp_path: Path):
    assert MASK in _findings(tmp_path, "self(xb)")
    assert MASK in _findings(tmp_path / "b", "self.forward(xb)")


def test_a_loop_calling_something_else_does_not_run_the_forward(tmp_path: Path):
    assert MASK not in _findings(tmp_path, "self.linear(xb)")


def test_a_subclass_that_overrides_the_loop_method_does_not_inherit_it(tmp_path: Path):
    net = NET + '''
    def fit(self, x, y, batch_size=256, epochs=1):
        return None
'''
    assert MASK not in _findings(tmp_path, net=net)


def test_a_module_class_whose_nn_comes_through_a_star_import(tmp_path: Path):
    """`class Gate(nn.Module)` in a module that has `nn` only from `from .layers import *`."""
    net = NET.replace("class Net(BaseModel):", '''class Gate(nn.Module):
    def forward(self, x):
        return torch.masked_select(x, x > 0)


class Net(BaseModel):''').replace("        self.linear = nn.Linear(4, 1)\n",
                                  "        self.linear = nn.Linear(4, 1)\n        self.gate = Gate()\n").replace(
        "        return self.linear(keys)", "        return self.linear(self.gate(keys))")
    assert ("models/net.py", 7, "GPU111") in _findings(tmp_path, net=net)


def test_a_loop_without_backward_does_not_make_every_subclass_forward_per_step(tmp_path: Path):
    """A base class's generation or prediction loop (a library mixin's `greedy_search` calling `self(...)` per
    token) is not a training step: the subclasses' `forward` bodies, with their training-only branches, are not
    made per-step by it."""
    root = write_project(tmp_path, {
        "models/__init__.py": "", "models/layers.py": LAYERS, "run.py": RUN,
        "models/base.py": BASE.replace("                loss.backward()\n", "")
                              .replace("CALL", "self(xb)"),
        "models/net.py": NET})
    assert MASK not in found(check(root, "--no-cache", "."))
