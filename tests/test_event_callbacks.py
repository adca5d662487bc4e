"""Callback methods run by an event's name (branch recall49, `analysis/event_hooks.py`).

A learner calls `self('after_batch')` on every batch; its `__call__(self, name)` runs `getattr(cb, name)()` for each
callback it holds. A callback class of another module, imported by the learner's module, defines
`after_batch`: that method runs every step although nothing calls it by its name, and its `.cpu()` copies are
reported. Not: a callback run by an event once per epoch (`after_epoch`), a class the learner's module does not
import, or a `__call__` that does not look the name up on its callbacks.
"""

from __future__ import annotations

from projects import check, found, write_project

CALLBACKS = """\
import torch


class Callback:
    learner = None


class Recorder(Callback):
    def __init__(self):
        self.preds = []

    def after_batch(self):
        self.preds.append(self.learner.pred.detach().cpu())

    def after_epoch(self):
        self.preds.append(self.learner.pred.detach().cpu())
"""

LEARNER = """\
import torch

from callbacks import *


class Learner:
    def __init__(self, model, loader, cbs):
        self.model = model
        self.loader = loader
        self.cbs = cbs
        self.device = torch.device("cuda")
        for cb in self.cbs:
            cb.learner = self
        self.opt = torch.optim.SGD(model.parameters(), lr=0.1)

    def fit(self, epochs):
        for epoch in range(epochs):
            for xb, yb in self.loader:
                self.one_batch(xb.to(self.device), yb.to(self.device))
            self('after_epoch')

    def one_batch(self, xb, yb):
        self.pred = self.model(xb)
        loss = torch.nn.functional.mse_loss(self.pred, yb)
        loss.backward()
        self.opt.step()
        self.opt.zero_grad()
        self('after_batch')

    def __call__(self, name):
        for cb in self.cbs:
            attr = getattr(cb, name)
            if attr is not None:
                attr()
"""

RUN = """\
import torch

from callbacks import Recorder
from learner import Learner

model = torch.nn.Linear(4, 1).cuda()
loader = torch.utils.data.DataLoader(torch.utils.data.TensorDataset(torch.randn(64, 4), torch.randn(64, 1)),
                                     batch_size=8, pin_memory=True)
Learner(model, loader, [Recorder()]).fit(3)
"""


def _lint(root, modules) -> set:
    items = check(write_project(root, modules), "--no-cache", "--exit-zero", ".")
    return {key for key in found(items) if key[0] == "callbacks.py"}


def test_a_callback_run_by_its_event_name_every_step(tmp_path):
    modules = {"callbacks.py": CALLBACKS, "learner.py": LEARNER, "run.py": RUN}
    assert _lint(tmp_path, modules) == {("callbacks.py", 13, "GPU104")}  # not `after_epoch` (line 16)


def test_a_callback_class_the_learner_does_not_see(tmp_path):
    learner = LEARNER.replace("from callbacks import *\n", "")
    modules = {"callbacks.py": CALLBACKS, "learner.py": learner, "run.py": RUN}
    assert _lint(tmp_path, modules) == set()


def test_a_call_that_does_not_dispatch_by_name(tmp_path):
    learner = LEARNER.replace("            attr = getattr(cb, name)\n            if attr is not None:\n"
                              "                attr()\n", "            print(name, cb)\n")
    modules = {"callbacks.py": CALLBACKS, "learner.py": learner, "run.py": RUN}
    assert _lint(tmp_path, modules) == set()
