"""Objects picked from a dict of classes by a configuration key, handed to another module's loop (branch recall49).

`distiller = distiller_dict[cfg.TYPE](student, teacher, cfg)` in a script with no loop, wrapped in
`DataParallel`, handed to `trainer_dict[cfg.TRAINER](distiller, loader, cfg)`; the trainer keeps it
(`self.distiller = distiller`) and calls `self.distiller(image=..., target=...)` every step. Any class of the dict
may be the one built (the run naming it builds it), so:

- the base distiller's `forward` runs every step (`forward._handed_by_dicts` finds the trainer module,
  `named_classes._dict_constructions` the trainer's construction through its dict);
- it dispatches `return self.forward_train(**kwargs)`: the `forward_train` of a subclass in another module runs
  every step (`overrides._called_by_per_step_forward`);
- that subclass builds a memory module in a helper its `__init__` calls (`self.init_modules(...)`) and calls it in
  a method `forward_train` calls: the memory's `forward` runs every step, and its `.item()` reads are reported.

Not reported: the memory's `if z < 0: self.params[2] = ...; z = self.params[2].item()` block, a value set on the
first call only (`once.py`), nor anything when the script never hands the picked object to a loop.
"""

from __future__ import annotations

from projects import check, found, write_project

BASE = """\
import torch.nn as nn


class Distiller(nn.Module):
    def __init__(self, student, teacher):
        super().__init__()
        self.student = student
        self.teacher = teacher

    def forward_train(self, **kwargs):
        raise NotImplementedError()

    def forward_test(self, image):
        return self.student(image)

    def forward(self, **kwargs):
        if self.training:
            return self.forward_train(**kwargs)
        return self.forward_test(kwargs["image"])


class Vanilla(Distiller):
    def forward_train(self, image, target, **kwargs):
        logits = self.student(image)
        return logits, {"ce": nn.functional.cross_entropy(logits, target)}
"""

CRD = """\
import torch
import torch.nn as nn
import torch.nn.functional as F

from .base import Distiller


class Memory(nn.Module):
    def __init__(self, size, dim):
        super().__init__()
        self.register_buffer("params", torch.tensor([16, 0.07, -1.0, 0.5]))
        self.register_buffer("memory", torch.rand(size, dim))

    def forward(self, v, idx):
        k = int(self.params[0].item())
        t = self.params[1].item()
        z = self.params[2].item()
        weight = torch.index_select(self.memory, 0, idx.view(-1)).detach()
        out = torch.exp(torch.mm(v, weight.t()) / t)[:, :k]
        if z < 0:
            self.params[2] = out.mean() * self.memory.size(0)
            z = self.params[2].clone().detach().item()
        return out / z


class CRD(Distiller):
    def __init__(self, student, teacher, cfg):
        super().__init__(student, teacher)
        self.init_modules(cfg.size, cfg.dim)

    def init_modules(self, size, dim):
        self.contrast = Memory(size, dim)

    def crd_loss(self, f_s, idx):
        return self.contrast(f_s, idx).mean()

    def forward_train(self, image, target, index, **kwargs):
        logits = self.student(image)
        return logits, {"ce": F.cross_entropy(logits, target), "crd": self.crd_loss(logits, index)}
"""

DISTILLERS = """\
from .base import Vanilla
from .crd import CRD

distiller_dict = {
    "NONE": Vanilla,
    "CRD": CRD,
}
"""

TRAINER = """\
import torch


class BaseTrainer(object):
    def __init__(self, distiller, train_loader, cfg):
        self.distiller = distiller
        self.train_loader = train_loader
        self.optimizer = torch.optim.SGD(distiller.module.parameters(), lr=0.1)

    def train(self):
        for epoch in range(10):
            self.train_epoch()

    def train_epoch(self):
        for idx, (image, target, index) in enumerate(self.train_loader):
            self.train_iter(image, target, index)

    def train_iter(self, image, target, index):
        image = image.cuda(non_blocking=True)
        target = target.cuda(non_blocking=True)
        index = index.cuda(non_blocking=True)
        preds, losses = self.distiller(image=image, target=target, index=index)
        loss = sum(losses.values())
        self.optimizer.zero_grad()
        loss.backward()
        self.optimizer.step()


class CRDTrainer(BaseTrainer):
    pass
"""

ENGINE = """\
from .trainer import BaseTrainer, CRDTrainer

trainer_dict = {
    "base": BaseTrainer,
    "crd": CRDTrainer,
}
"""

SCRIPT = """\
import torch

from distillers import distiller_dict
from engine import trainer_dict


def main(cfg, student, teacher, loader):
    distiller = distiller_dict[cfg.TYPE](student, teacher, cfg)
    distiller = torch.nn.DataParallel(distiller.cuda())
    trainer = trainer_dict[cfg.TRAINER](distiller, loader, cfg)
    trainer.train()
"""

READS = {("distillers/crd.py", 15, "GPU101"), ("distillers/crd.py", 16, "GPU101"),
         ("distillers/crd.py", 17, "GPU101")}


def _project(script: str) -> dict:
    return {"distillers/__init__.py": DISTILLERS, "distillers/base.py": BASE, "distillers/crd.py": CRD,
            "engine/__init__.py": ENGINE, "engine/trainer.py": TRAINER, "tools/train.py": script}


def _lint(root, modules) -> set:
    items = check(write_project(root, modules), "--no-cache", "--exit-zero", ".")
    return {key for key in found(items) if key[0] == "distillers/crd.py" and key[2] == "GPU101"}


def test_a_picked_distiller_handed_to_a_picked_trainer(tmp_path):
    # lines 20-22 (`if z < 0:` setting the stored constant) run on the first call only
    assert _lint(tmp_path, _project(SCRIPT)) == READS


def test_a_picked_object_that_no_loop_is_handed(tmp_path):
    script = SCRIPT.replace("    trainer = trainer_dict[cfg.TRAINER](distiller, loader, cfg)\n    trainer.train()\n",
                            "    print(distiller)\n")
    assert _lint(tmp_path, _project(script)) == set()


def test_a_sentinel_set_every_call_is_not_once(tmp_path):
    # the block writes another state than the one its test reads: nothing says it runs once
    crd = CRD.replace("            self.params[2] = out.mean() * self.memory.size(0)\n",
                      "            self.params[3] = out.mean() * self.memory.size(0)\n")
    modules = {**_project(SCRIPT), "distillers/crd.py": crd}
    assert _lint(tmp_path, modules) == READS | {("distillers/crd.py", 22, "GPU101")}
