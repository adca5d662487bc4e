"""Per-step costs that real trainers keep out of sight: library calls whose cost the reviewed table
(analysis/libraries.py) records, and step functions run through a callable (`gpu_timer(train_step)`, a
trainer's step method handed to the loop as a parameter).

Every case has its quiet twin: the same code under `if step % 100 == 0:` (periodic logging is deliberate).
"""

from __future__ import annotations

import textwrap
from pathlib import Path

from gpulint.analysis.libraries import Effect, fact_for_function, fact_for_method
from projects import check, found


def _write(root: Path, files: dict[str, str]) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    (root / "pyproject.toml").write_text("")
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text))
    return root


# -- library facts ------------------------------------------------------------------------------------------------
def test_barrier_and_ema_facts_are_in_the_table():
    assert fact_for_method("accelerate.Accelerator", "wait_for_everyone").effect is Effect.SYNCS
    assert fact_for_method("accelerate.accelerator.Accelerator", "wait_for_everyone").effect is Effect.SYNCS
    assert fact_for_function("torch.distributed.barrier").effect is Effect.SYNCS
    assert fact_for_method("ema_pytorch.EMA", "update").effect is Effect.SYNCS
    assert fact_for_method("ema_pytorch.EMA", "copy_params_from_model_to_ema") is None


TRAINER = """\
import torch
from accelerate import Accelerator
from ema_pytorch import EMA


class Trainer:
    def __init__(self, model, dl):
        self.accelerator = Accelerator()
        self.model = model
        self.ema = EMA(model, beta=0.995)
        self.ema.to(self.accelerator.device)
        self.opt = torch.optim.Adam(model.parameters(), fused=True)
        self.dl = dl
        self.step = 0

    def train(self):
        accelerator = self.accelerator
        for data in self.dl:
            loss = self.model(data)
            accelerator.backward(loss)
{body}
            self.step += 1
"""


def test_barrier_and_ema_update_every_step_are_reported(tmp_path):
    body = ("            accelerator.wait_for_everyone()\n            self.opt.step()\n"
            "            self.opt.zero_grad()\n            self.ema.update()\n")
    root = _write(tmp_path, {"train.py": TRAINER.format(body=body)})
    items = check(root, "--no-cache", "train.py")
    assert found(items) == {("train.py", 21, "GPU112"), ("train.py", 24, "GPU112")}
    messages = {d["location"]["row"]: d["message"] for d in items}
    assert "Accelerator.wait_for_everyone" in messages[21] and "EMA.update" in messages[24]


def test_barrier_and_ema_update_under_a_periodic_test_are_fine(tmp_path):
    body = ("            self.opt.step()\n            self.opt.zero_grad()\n"
            "            if self.step % 100 == 0:\n                accelerator.wait_for_everyone()\n"
            "                self.ema.update()\n")
    root = _write(tmp_path, {"train.py": TRAINER.format(body=body)})
    assert found(check(root, "--no-cache", "train.py")) == set()


def test_a_distributed_barrier_every_step_is_reported_and_one_after_the_loop_is_not(tmp_path):
    root = _write(tmp_path, {"train.py": """\
        import torch
        import torch.distributed as dist

        model = torch.nn.Linear(2, 1).cuda()
        opt = torch.optim.SGD(model.parameters(), lr=0.1, foreach=True)
        for x in loader:
            loss = model(x.cuda(non_blocking=True)).sum()
            loss.backward()
            opt.step()
            opt.zero_grad(set_to_none=True)
            dist.barrier()
        dist.barrier()
        """})
    assert ("train.py", 11, "GPU112") in found(check(root, "--no-cache", "train.py"))
    assert ("train.py", 12, "GPU112") not in found(check(root, "--no-cache", "train.py"))


# -- a step closure handed to a helper that calls it ---------------------------------------------------------------
TIMER = """\
import torch


def gpu_timer(closure, log_timings=True):
    start = torch.cuda.Event(enable_timing=True)
    start.record()
    result = closure()
    return result


def register(closure, hooks):
    hooks.append(closure)
"""

CLOSURE_LOOP = """\
import torch
from utils.timing import gpu_timer, register

model = torch.nn.Linear(2, 1).cuda()
opt = torch.optim.SGD(model.parameters(), lr=0.1, foreach=True)
hooks = []
for itr, x in enumerate(loader):
    x = x.cuda(non_blocking=True)

    def train_step():
        loss = model(x).sum()
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)
        print(loss.item())
        return loss

{call}
"""


def test_a_closure_run_by_a_timer_every_step_is_per_step_code(tmp_path):
    root = _write(tmp_path, {"utils/__init__.py": "", "utils/timing.py": TIMER,
                             "train.py": CLOSURE_LOOP.format(call="    gpu_timer(train_step)")})
    assert ("train.py", 15, "GPU101") in found(check(root, "--no-cache", "train.py"))


def test_a_closure_passed_by_keyword_is_followed_too(tmp_path):
    root = _write(tmp_path, {"utils/__init__.py": "", "utils/timing.py": TIMER,
                             "train.py": CLOSURE_LOOP.format(call="    gpu_timer(closure=train_step)")})
    assert ("train.py", 15, "GPU101") in found(check(root, "--no-cache", "train.py"))


def test_a_closure_timed_only_periodically_or_only_stored_is_not_per_step(tmp_path):
    periodic = "    if itr % 100 == 0:\n        gpu_timer(train_step)"
    stored = "    register(train_step, hooks)"
    for call in (periodic, stored):
        root = _write(tmp_path, {"utils/__init__.py": "", "utils/timing.py": TIMER,
                                 "train.py": CLOSURE_LOOP.format(call=call)})
        assert not any(row == 15 for _, row, _ in found(check(root, "--no-cache", "train.py"))), call


def test_a_helper_reading_the_parameters_it_is_given_syncs_at_the_call(tmp_path):
    helper = """\
    def grad_logger(named_params):
        total = 0.0
        for n, p in named_params:
            if p.grad is not None:
                total += float(p.grad.norm())
        return total
    """
    loop = """\
    import torch
    from stats import grad_logger

    model = torch.nn.Linear(2, 1).cuda()
    opt = torch.optim.SGD(model.parameters(), lr=0.1, foreach=True)
    for step, x in enumerate(loader):
        model(x.cuda(non_blocking=True)).sum().backward()
        opt.step()
        {call}
        opt.zero_grad(set_to_none=True)
    """
    root = _write(tmp_path, {"stats.py": helper, "train.py": loop.format(
        call="stats = grad_logger(model.named_parameters())")})
    assert ("train.py", 9, "GPU112") in found(check(root, "--no-cache", "train.py"))
    root = _write(tmp_path, {"stats.py": helper, "train.py": loop.format(
        call="stats = grad_logger(model.named_parameters()) if step % 100 == 0 else None")})
    assert ("train.py", 9, "GPU112") not in found(check(root, "--no-cache", "train.py"))


# -- a loader handed to a class and drawn from with next(self.data) ------------------------------------------------
EVALUATOR = """\
import torch


class Evaluator:
    def __init__(self, scorer, data):
        self.scorer = scorer
        self.data = {stored}

    def run(self, steps):
        scores = []
        step = 0
        while True:
            x = next(self.data)
            x = x.cuda()
            score = self.scorer(x)
{read}
            step += 1
            if step == steps:
                return scores
"""

BUILDER = """\
import torch
from torch.utils.data import DataLoader
from evaluator import Evaluator


def load(ds):
    loader = DataLoader(ds, batch_size=4)
    while True:
        yield from loader


data = {data}
Evaluator(model, data).run(1000)
"""

EVERY_STEP = "            scores.append(score.mean().item())"


def _evaluator(root: Path, stored="data", read=EVERY_STEP, data="load(ds)") -> Path:
    return _write(root, {"evaluator.py": EVALUATOR.format(stored=stored, read=read),
                         "train.py": BUILDER.format(data=data)})


def test_a_stored_loader_drawn_with_next_makes_the_loop_per_step(tmp_path):
    assert ("evaluator.py", 16, "GPU101") in found(check(_evaluator(tmp_path), "--no-cache", "evaluator.py"))


def test_a_stored_iterator_over_the_loader_is_a_loader_too(tmp_path):
    root = _evaluator(tmp_path, stored="iter(data)", data="DataLoader(ds, batch_size=4, pin_memory=True)")
    assert ("evaluator.py", 16, "GPU101") in found(check(root, "--no-cache", "evaluator.py"))


def test_a_stored_loader_read_periodically_or_not_a_loader_is_quiet(tmp_path):
    periodic = "            if step % 100 == 0:\n                scores.append(score.mean().item())"
    root = _evaluator(tmp_path / "periodic", read=periodic)
    assert not found(check(root, "--no-cache", "evaluator.py"))
    # a site passes something that is not a loader: the attribute is unknown, the loop is not a batch loop
    root = _evaluator(tmp_path / "other", data="iter(range(10))")
    assert not found(check(root, "--no-cache", "evaluator.py"))


def test_a_range_loop_drawing_a_batch_each_iteration_is_per_step(tmp_path):
    root = _write(tmp_path, {"evaluator.py": """\
        import torch


        def score_of(model, x):
            return model(x).mean()


        class Evaluator:
            def __init__(self, model, data):
                self.model = model
                self.data = data

            def run(self, steps):
                scores = []
                for step in range(steps):
                    x = next(self.data).cuda()
                    scores.append(score_of(self.model, x).item())
                return scores
        """, "train.py": BUILDER.format(data="load(ds)")})
    assert ("evaluator.py", 17, "GPU101") in found(check(root, "--no-cache", "evaluator.py"))


# -- a model built through a registry of builders ------------------------------------------------------------------
MODELS = """\
import torch
from torch import nn


class Net(nn.Module):
    def __init__(self, width):
        super().__init__()
        self.fc = nn.Linear(width, width)

    def forward(self, x):
        y = self.fc(x) * torch.ones(1, device=x.device)
        self.last = y.norm().item()
        return y


def net_small(**kw):
    return Net(8, **kw)


def net_large(**kw):
    return Net(64, **kw)


class Other(nn.Module):
    def forward(self, x):
        return x


def other(**kw):
    return Other()


NETS = {"small": net_small, "large": net_large}
MIXED = {"small": net_small, "other": other}
"""

REGISTRY_LOOP = """\
import torch
from models import {registry}

model = {registry}[args.model]().cuda()
opt = torch.optim.SGD(model.parameters(), lr=0.1, fused=True)
with torch.autocast("cuda", dtype=torch.bfloat16):
    for x in loader:
        loss = model(x.cuda(non_blocking=True)).sum()
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)
"""


def test_a_model_built_from_a_registry_runs_its_forward_every_step(tmp_path):
    root = _write(tmp_path, {"models.py": MODELS, "train.py": REGISTRY_LOOP.format(registry="NETS")})
    items = check(root, "--no-cache", "models.py")
    assert ("models.py", 12, "GPU101") in found(items)
    assert next(d for d in items if d["location"]["row"] == 12)["related"][0]["filename"] == "train.py"


def test_a_registry_of_different_classes_is_not_followed(tmp_path):
    # the registry is not followed to the loop (no related location in train.py); the network's forward is
    # still per-batch code of a GPU project (trained_modules.py: a forward assumed to run on every forward pass)
    root = _write(tmp_path, {"models.py": MODELS, "train.py": REGISTRY_LOOP.format(registry="MIXED")})
    items = [d for d in check(root, "--no-cache", "models.py") if d["location"]["row"] == 12]
    assert all(r["filename"] != "train.py" for d in items for r in d["related"])
    assert all("runs on every forward pass" in d["message"] for d in items)


def test_a_barrier_while_a_cache_is_filled_runs_once_per_key(tmp_path):
    """A CUDA graph captured on the first call for each model: the barrier and synchronize around the capture
    run once per key, not every step (the call that replays the graph does run every step)."""
    root = _write(tmp_path, {"train.py": """\
        import torch
        import torch.distributed as dist

        graphs = {}
        model = torch.nn.Linear(2, 1).cuda()
        opt = torch.optim.SGD(model.parameters(), lr=0.1, foreach=True)
        for x in loader:
            x = x.cuda(non_blocking=True)
            if model not in graphs:
                dist.barrier()
                torch.cuda.synchronize()
                graphs[model] = torch.cuda.make_graphed_callables(model, (x,))
            loss = graphs[model](x).sum()
            loss.backward()
            opt.step()
            opt.zero_grad(set_to_none=True)
            dist.barrier()
        """})
    assert {f for f in found(check(root, "--no-cache", "train.py")) if f[2] in ("GPU109", "GPU112")} == \
        {("train.py", 17, "GPU112")}


# -- a project class wrapping a library object the table knows -----------------------------------------------------
SCALER = """\
import torch


class ScalerWrapper:
    def __init__(self):
        self._scaler = torch.cuda.amp.GradScaler()

    def scale_value(self):
        return self._scaler.get_scale()

    def tidy(self):
        self._scaler.update()
"""

SCALER_LOOP = """\
import torch
from scaling import ScalerWrapper

scaler = ScalerWrapper()
model = torch.nn.Linear(2, 1).cuda()
opt = torch.optim.SGD(model.parameters(), lr=0.1, foreach=True)
for step, x in enumerate(loader):
    loss = model(x.cuda(non_blocking=True)).sum()
    loss.backward()
    opt.step()
    opt.zero_grad(set_to_none=True)
{line}
"""


def test_a_wrapper_method_reading_the_library_scale_syncs_at_the_call(tmp_path):
    root = _write(tmp_path, {"scaling.py": SCALER, "train.py": SCALER_LOOP.format(
        line="    value = scaler.scale_value()\n    scaler.tidy()")})
    items = check(root, "--no-cache", "train.py")
    assert found(items) == {("train.py", 12, "GPU112")}
    assert "GradScaler.get_scale()" in items[0]["message"]
    assert items[0]["related"][0]["filename"] == "scaling.py" and items[0]["related"][0]["location"]["row"] == 9


def test_a_wrapper_method_read_periodically_is_quiet(tmp_path):
    root = _write(tmp_path, {"scaling.py": SCALER, "train.py": SCALER_LOOP.format(
        line="    if step % 100 == 0:\n        value = scaler.scale_value()")})
    assert found(check(root, "--no-cache", "train.py")) == set()


# -- a step function handed to the loop as a parameter, or stored by a trainer --------------------------------------
STEPS = """\
import torch


class Trainer:
    def __init__(self, model, opt):
        self.model = model
        self.opt = opt

    def train_step(self, x):
        loss = self.model(x).sum()
        loss.backward()
        self.opt.step()
        torch.cuda.synchronize()
        return loss


def quiet_step(model, x):
    return model(x).sum()
"""

ENGINE = """\
import torch


def train(train_step, loader):
    for step, x in enumerate(loader):
        x = x.cuda(non_blocking=True)
        loss = train_step(x)


class Loop:
    def __init__(self, fwd_bwd_fn, loader):
        self.fwd_bwd_fn = fwd_bwd_fn
        self.loader = loader

    def run(self):
        for x in self.loader:
            loss = self.fwd_bwd_fn(x.cuda(non_blocking=True))
"""

MAIN = """\
import torch
from engine import Loop, train
from steps import Trainer, quiet_step

def main(trainer: Trainer, loader):
    {call}
"""


def test_a_step_method_passed_to_the_loop_is_paid_at_its_call(tmp_path):
    root = _write(tmp_path, {"steps.py": STEPS, "engine.py": ENGINE, "main.py": MAIN.format(
        call="step = trainer.train_step\n    train(step, loader)")})
    items = check(root, "--no-cache", "engine.py")
    assert found(items) == {("engine.py", 7, "GPU112")}
    assert "Trainer.train_step" in items[0]["message"]
    assert items[0]["related"][0]["filename"] == "steps.py" and items[0]["related"][0]["location"]["row"] == 13


def test_a_step_function_stored_by_a_trainer_is_paid_at_its_call(tmp_path):
    root = _write(tmp_path, {"steps.py": STEPS, "engine.py": ENGINE, "main.py": MAIN.format(
        call="Loop(trainer.train_step, loader).run()")})
    assert found(check(root, "--no-cache", "engine.py")) == {("engine.py", 17, "GPU112")}


def test_a_step_function_without_a_sync_or_sites_that_disagree_are_quiet(tmp_path):
    for call in ("train(quiet_step, loader)", "train(trainer.train_step, loader)\n    train(quiet_step, loader)",
                 "train(lambda x: x, loader)"):
        root = _write(tmp_path / str(abs(hash(call))), {"steps.py": STEPS, "engine.py": ENGINE,
                                                         "main.py": MAIN.format(call=call)})
        assert found(check(root, "--no-cache", "engine.py")) == set(), call


# -- the __call__ of a project object called every step -------------------------------------------------------------
CALLABLE = """\
import torch


class ScaledBackward:
    def __init__(self):
        self._scaler = torch.cuda.amp.GradScaler()

    def __call__(self, loss, optimizer, update=True):
        self._scaler.scale(loss).backward()
        if update:
            self._scaler.step(optimizer)
            self._scaler.update()
"""

CALLABLE_LOOP = """\
import torch
from scaled import ScaledBackward

backward = ScaledBackward()
model = torch.nn.Linear(2, 1).cuda()
opt = torch.optim.SGD(model.parameters(), lr=0.1, foreach=True)
for step, x in enumerate(loader):
    with torch.autocast("cuda", dtype=torch.bfloat16):
        loss = model(x.cuda(non_blocking=True)).sum()
{call}
    opt.zero_grad(set_to_none=True)
"""


def test_the_call_method_of_an_object_called_every_step_is_per_step_code(tmp_path):
    root = _write(tmp_path, {"scaled.py": CALLABLE, "train.py": CALLABLE_LOOP.format(
        call="    backward(loss, opt, update=True)")})
    items = check(root, "--no-cache", "scaled.py")
    assert found(items) == {("scaled.py", 11, "GPU112")}
    assert items[0]["related"][0]["filename"] == "train.py" and items[0]["related"][0]["location"]["row"] == 10


def test_the_call_method_of_an_object_called_periodically_is_quiet(tmp_path):
    root = _write(tmp_path, {"scaled.py": CALLABLE, "train.py": CALLABLE_LOOP.format(
        call="    if step % 100 == 0:\n        backward(loss, opt)")})
    assert found(check(root, "--no-cache", "scaled.py")) == set()


AVERAGED = """\
import torch
from torch.optim.swa_utils import AveragedModel


def main(model, loader, opt, device="cuda"):
    model = model.to(device)
    ema = AveragedModel(model, device=device)
    host_ema = AveragedModel(model)
    moved_ema = AveragedModel(model).to(device)
    for x, y in loader:
        loss = model(x.to(device)).sum()
        opt.zero_grad()
        loss.backward()
        opt.step()
        ema.update_parameters(model)
        host_ema.update_parameters(model)
        moved_ema.update_parameters(model)
"""


def test_an_averaged_model_on_the_gpu_syncs_in_every_update(tmp_path):
    # torch's AveragedModel tests its `n_averaged` buffer in Python on every update_parameters(); the buffer is
    # on the GPU when the copy is built with `device=` or moved, in host memory otherwise (no sync)
    root = _write(tmp_path, {"train.py": AVERAGED})
    items = check(root, "--no-cache", "--select", "GPU112", "train.py")
    assert found(items) == {("train.py", 15, "GPU112"), ("train.py", 17, "GPU112")}, items


METER = """\
import torch
import torchnet as tnt


def evaluate(model, loader):
    model = model.cuda()
    classacc = tnt.meter.ClassErrorMeter(accuracy=True)
    with torch.no_grad():
        for x, y in loader:
            out = model(x.cuda(non_blocking=True))
            classacc.add(out.data, y)
    return classacc.value()
"""


def test_a_torchnet_meter_given_device_outputs_copies_them_every_batch(tmp_path):
    # torchnet's ClassErrorMeter.add turns tensor arguments into numpy arrays (`.cpu().squeeze().numpy()`)
    root = _write(tmp_path, {"eval.py": METER})
    items = check(root, "--no-cache", "--select", "GPU112", "eval.py")
    assert found(items) == {("eval.py", 11, "GPU112")}, items
