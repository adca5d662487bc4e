"""Submodules and callable objects an owner builds in `__init__` through a plain project factory function.

maskrcnn-benchmark-style code builds its heads and loss evaluators through `make_*`/`build_*` functions of the
class's own module that return an instance (`def make_loss_evaluator(cfg): evaluator = LossComputation(...);
return evaluator`, `def build_head(cfg): return Head(cfg)`), often through a local first (`loss_evaluator =
make_loss_evaluator(cfg)` then `self.loss_evaluator = loss_evaluator`). The owner's per-step `forward` calls the
attribute, so the built object's `forward`/`__call__` runs every step (analysis/forward.py `_submodule_site`,
`_plain_factories`, `_built_in_init`).
"""

from __future__ import annotations

from projects import check, found, write_project

LOSS = """\
import torch
from .sampler import Sampler


class LossComputation(object):
    def __init__(self, sampler, weight):
        self.sampler = sampler
        self.weight = weight

    def __call__(self, logits, labels):
        labels = labels.to(logits.device)
        pos = torch.nonzero(labels > 0).squeeze(1)
        picked = self.sampler(labels)
        return logits[pos].sum() * self.weight + picked.sum()


def make_loss_evaluator(cfg):
    sampler = Sampler(cfg)
    loss_evaluator = LossComputation(sampler, 2.0)
    return loss_evaluator
"""

SAMPLER = """\
import torch


class Sampler(object):
    def __init__(self, per_image):
        self.per_image = per_image

    def __call__(self, labels):
        labels = labels.to(torch.device("cuda"))
        return torch.nonzero(labels >= 1).squeeze(1)
"""

HEAD = """\
import torch
from torch import nn
from .loss import make_loss_evaluator


class Head(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.fc = nn.Linear(4, 4)
        loss_evaluator = make_loss_evaluator(cfg)
        self.loss_evaluator = loss_evaluator

    def forward(self, x, labels):
        y = self.fc(x)
        keep = torch.nonzero(y.sum(1) > 0)
        return self.loss_evaluator(y[keep], labels)


def build_head(cfg):
    if cfg == 0:
        return None
    return Head(cfg)
"""

MODEL = """\
from torch import nn
from .head import build_head


class Model(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.head = build_head(cfg)

    def forward(self, x, labels):
        return self.head(x, labels)
"""

TRAIN = """\
import torch
from pkg.model import Model


def main():
    model = Model(3).cuda()
    opt = torch.optim.SGD(model.parameters(), lr=0.1, fused=True)
    loader = torch.utils.data.DataLoader(list(range(10)), pin_memory=True)
    for x, labels in loader:
        x = x.cuda(non_blocking=True)
        labels = labels.cuda(non_blocking=True)
        with torch.autocast("cuda", dtype=torch.bfloat16):
            loss = model(x, labels)
        loss.backward()
        opt.step()


if __name__ == "__main__":
    main()
"""

PROJECT = {"pkg/__init__.py": "", "pkg/loss.py": LOSS, "pkg/sampler.py": SAMPLER, "pkg/head.py": HEAD, "pkg/model.py": MODEL,
           "train.py": TRAIN}
LOSS_SYNC = ("pkg/loss.py", 12, "GPU111")  # torch.nonzero in LossComputation.__call__
HEAD_SYNC = ("pkg/head.py", 15, "GPU111")  # torch.nonzero in Head.forward
SAMPLER_SYNC = ("pkg/sampler.py", 10, "GPU111")  # torch.nonzero in Sampler.__call__


def _lint(tmp_path, modules):
    return check(write_project(tmp_path, modules), "--no-cache", "--exit-zero")


def test_a_module_built_by_a_plain_factory_runs_its_forward_every_step(tmp_path):
    items = _lint(tmp_path, PROJECT)
    assert HEAD_SYNC in found(items)
    item = next(d for d in items if (d["filename"], d["location"]["row"], d["code"]) == HEAD_SYNC)
    assert "(in `Head.forward`, which `self.head(...)` runs every step)" in item["message"]


def test_a_loss_evaluator_a_factory_returns_through_a_local_runs_its_call_every_step(tmp_path):
    items = _lint(tmp_path, PROJECT)
    assert LOSS_SYNC in found(items)
    item = next(d for d in items if (d["filename"], d["location"]["row"], d["code"]) == LOSS_SYNC)
    assert "LossComputation.__call__" in item["message"]
    assert "self.loss_evaluator(...)" in item["message"]


def test_a_callable_a_factory_hands_to_a_per_step_object_runs_its_call_every_step(tmp_path):
    # `Sampler(cfg)` built in the factory, passed to `LossComputation(sampler, ...)`, stored from the parameter and
    # called in the evaluator's per-step `__call__`
    items = _lint(tmp_path, PROJECT)
    assert SAMPLER_SYNC in found(items)
    item = next(d for d in items if (d["filename"], d["location"]["row"], d["code"]) == SAMPLER_SYNC)
    assert "(in `Sampler.__call__`, which `self.sampler(...)` runs every step)" in item["message"]


def test_a_factory_built_object_called_only_outside_the_step_stays_quiet(tmp_path):
    # the owner calls the evaluator only in a method nothing runs per step: no per-step route
    head = HEAD.replace("        return self.loss_evaluator(y[keep], labels)\n",
                        "        return y\n\n    def report(self, y, labels):\n"
                        "        return self.loss_evaluator(y, labels)\n")
    items = _lint(tmp_path, {**PROJECT, "pkg/head.py": head})
    got = found(items)
    assert LOSS_SYNC not in got and SAMPLER_SYNC not in got
    assert HEAD_SYNC in got
