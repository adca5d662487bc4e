"""GPU402 at an optimizer factory in another module (`build_optimizer(cfg, model)`, `init_opt(encoder,
predictor)`): reported at the factory's `torch.optim` call when every call of the factory outside tests passes a
model its module moves to CUDA and trains with the result; silent when a caller's model may stay on the host,
when the factory does not hand the optimizer back, or `fused=` is given. Also: a training loop whose step is a
closure handed to a timer helper (`gpu_timer(train_step)`) trains, so the script's own optimizer is reported.
"""

from __future__ import annotations

from projects import check, found, write_project

FACTORY = """\
import torch


def set_weight_decay(model, skip=()):
    decay, no_decay = [], []
    for name, p in model.named_parameters():
        (no_decay if name.endswith(".bias") or name in skip else decay).append(p)
    return [dict(params=decay), dict(params=no_decay, weight_decay=0.0)]


def build_optimizer(cfg, model):
    parameters = set_weight_decay(model)
    if cfg.name == "sgd":
        optimizer = torch.optim.SGD(parameters, lr=cfg.lr, momentum=0.9)
    else:
        optimizer = torch.optim.AdamW(parameters, lr=cfg.lr{fused})
    {ret}
"""

TRAIN = """\
import torch
import torchvision

from optim_factory import build_optimizer


def main(cfg, loader):
    model = torchvision.models.resnet50(){move}
    optimizer = build_optimizer(cfg, model)
    for x, y in loader:
        x, y = x.cuda(non_blocking=True), y.cuda(non_blocking=True)
        loss = torch.nn.functional.cross_entropy(model(x), y)
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        optimizer.step()
"""

A_TEST = """\
import torch

from optim_factory import build_optimizer


def test_builds(cfg):
    assert build_optimizer(cfg, torch.nn.Linear(4, 4)) is not None
"""


def _lint(tmp_path, move=".cuda()", fused="", ret="return optimizer", extra=None):
    modules = {"optim_factory.py": FACTORY.format(fused=fused, ret=ret), "train.py": TRAIN.format(move=move),
               "tests/test_optim.py": A_TEST}
    modules.update(extra or {})
    return check(write_project(tmp_path, modules), "--no-cache", "--exit-zero", "--select", "GPU402", ".")


def test_a_factory_every_caller_trains_a_cuda_model_with_is_reported_at_its_constructors(tmp_path):
    items = _lint(tmp_path)
    assert found(items) == {("optim_factory.py", 14, "GPU402"), ("optim_factory.py", 16, "GPU402")}
    for item in items:  # the caller is named, and the fix adds fused=True at the factory
        assert any(r["filename"].endswith("train.py") and r["location"]["row"] == 9 for r in item["related"]) \
            if "related" in item else "train.py" in str(item)
        assert "fused=True" in str(item["fix"])


def test_a_caller_whose_model_may_stay_on_the_host_keeps_it_silent(tmp_path):
    assert found(_lint(tmp_path, move="")) == set()
    other = {"export.py": "import torchvision\nfrom optim_factory import build_optimizer\n\n"
                          "def export(cfg):\n    model = torchvision.models.resnet50()\n"
                          "    return build_optimizer(cfg, model)\n"}
    assert found(_lint(tmp_path / "two", extra=other)) == set()


def test_a_factory_that_keeps_the_optimizer_or_fuses_it_is_silent(tmp_path):
    assert found(_lint(tmp_path / "kept", ret="return None")) == set()
    assert found(_lint(tmp_path / "fused", fused=", fused=True")) == {("optim_factory.py", 14, "GPU402")}


TIMED = """\
import torch
import torchvision

from utils import gpu_timer


def main(loader):
    model = torchvision.models.resnet50().cuda()
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
    for x, y in loader:
        def train_step():
            loss = torch.nn.functional.cross_entropy(model(x.cuda(non_blocking=True)), y.cuda(non_blocking=True))
            optimizer.zero_grad(set_to_none=True)
            loss.backward()
            optimizer.step()
            return loss

        loss, elapsed = gpu_timer(train_step)
"""

UTILS = """\
import time


def gpu_timer(closure):
    start = time.perf_counter()
    result = closure()
    return result, time.perf_counter() - start
"""


def test_a_step_closure_handed_to_a_timer_makes_the_loop_train(tmp_path):
    root = write_project(tmp_path, {"train.py": TIMED, "utils.py": UTILS})
    assert found(check(root, "--no-cache", "--exit-zero", "--select", "GPU402", ".")) == {("train.py", 9, "GPU402")}
