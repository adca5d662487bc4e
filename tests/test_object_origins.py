"""Per-step code reached through objects built elsewhere (branch recall69).

An NMT-style trainer gets its loss object from a builder function: `train_loss = LossCompute.from_opts(opt)`,
a `@classmethod` alternative constructor returning `cls(...)`, handed to `Trainer(model, train_loss, optim)` and
stored as `self.train_loss`; the training loop calls `self.train_loss(out, y)` every step. The classmethod's
summary says it builds the class it is called on (`FunctionSummary.returns_cls`), `Cls.factory(...)` resolves to
that class (`Project.alternative_constructor`), the constructor's call sites give `self.train_loss` its class,
and the search for the loss's per-step caller looks for the factory's name (`forward._alternative_constructors`).
"""

from __future__ import annotations

import textwrap
from pathlib import Path

from projects import check, found, write_project

LOSS = textwrap.dedent("""\
    import torch
    import torch.nn as nn


    class LossCompute(nn.Module):
        def __init__(self, criterion):
            super().__init__()
            self.criterion = criterion

        @classmethod
        def from_opts(cls, opt):
            criterion = nn.CrossEntropyLoss()
            compute = cls(criterion)
            return compute

        def forward(self, output, target):
            loss = self.criterion(output, target)
            stats = loss.sum().item()
            return loss, stats


    class QuietLoss(LossCompute):
        def forward(self, output, target):
            return self.criterion(output, target), None
""")

TRAINER = textwrap.dedent("""\
    import torch
    from loss import {cls}


    def build_trainer(opt, model, optim):
        train_loss = {cls}.from_opts(opt)
        return Trainer(model, train_loss, optim)


    class Trainer:
        def __init__(self, model, train_loss, optim):
            self.model = model
            self.train_loss = train_loss
            self.optim = optim

        def train(self, loader):
            for x, y in loader:
                x, y = x.cuda(non_blocking=True), y.cuda(non_blocking=True)
                loss, stats = self.train_loss(x, y)
                loss.backward()
                self.optim.step()
""")

READ = ("loss.py", 18, "GPU101")  # `loss.sum().item()` in `LossCompute.forward`
CALL = ("trainer.py", 19, "GPU112")  # `self.train_loss(x, y)` every step


def _lint(root: Path, cls: str = "LossCompute", loss: str = LOSS) -> set:
    write_project(root, {"loss.py": loss, "trainer.py": TRAINER.format(cls=cls)})
    return found(check(root, "--no-cache", "--exit-zero"))


def test_an_object_from_a_classmethod_constructor_stored_by_a_trainer_runs_every_step(tmp_path: Path):
    results = _lint(tmp_path)
    assert READ in results
    assert CALL in results


def test_a_message_names_the_stored_attribute_call(tmp_path: Path):
    write_project(tmp_path, {"loss.py": LOSS, "trainer.py": TRAINER.format(cls="LossCompute")})
    items = check(tmp_path, "--no-cache", "--exit-zero")
    read = next(d for d in items if d["code"] == "GPU101")
    assert "`self.train_loss(...)` runs every step" in read["message"]
    call = next(d for d in items if d["code"] == "GPU112")
    assert "`LossCompute.forward` calls `.item()`" in call["message"]


def test_a_subclass_calling_the_inherited_factory_builds_the_subclass(tmp_path: Path):
    # `QuietLoss.from_opts(opt)` builds a QuietLoss, whose own `forward` reads nothing
    results = _lint(tmp_path, cls="QuietLoss")
    assert CALL not in results
    assert READ not in results


def test_a_classmethod_returning_something_else_is_no_constructor(tmp_path: Path):
    loss = LOSS.replace("        return compute\n", "        return compute.criterion\n")
    assert loss != LOSS
    results = _lint(tmp_path, loss=loss)
    assert CALL not in results
    assert READ not in results


LAUNCHER = textwrap.dedent("""\
    import torch
    from tensorboardX import SummaryWriter
    from utils.train_utils import train_model


    def main(cfg, model, optimizer, loader):
        tb_log = {writer}
        train_model(model, optimizer, loader, tb_log=tb_log)
""")

TRAIN_UTILS = textwrap.dedent("""\
    import torch


    def train_one_epoch(model, optimizer, loader, tb_log=None):
        for step, (x, y) in enumerate(loader):
            x, y = x.cuda(non_blocking=True), y.cuda(non_blocking=True)
            loss = torch.nn.functional.mse_loss(model(x), y)
            loss.backward()
            optimizer.step()
            if tb_log is not None:
                tb_log.add_scalar("train/loss", loss, step)


    def train_model(model, optimizer, loader, tb_log=None, epochs=10):
        for epoch in range(epochs):
            train_one_epoch(model, optimizer, loader, tb_log=tb_log)
""")

SCALAR = ("tools/utils/train_utils.py", 11, "GPU112")  # `tb_log.add_scalar(..., loss, ...)` every step


def _launch(root: Path, writer: str) -> set:
    write_project(root, {"tools/train.py": LAUNCHER.format(writer=writer), "tools/utils/__init__.py": "",
                         "tools/utils/train_utils.py": TRAIN_UTILS})
    return found(check(root, "--no-cache", "--exit-zero"))


def test_a_writer_built_by_a_launcher_and_handed_down_two_functions_is_known(tmp_path: Path):
    assert SCALAR in _launch(tmp_path, 'SummaryWriter(log_dir="runs") if cfg.LOCAL_RANK == 0 else None')


def test_a_writer_message_names_the_library(tmp_path: Path):
    write_project(tmp_path, {"tools/train.py": LAUNCHER.format(writer='SummaryWriter(log_dir="runs")'),
                             "tools/utils/__init__.py": "", "tools/utils/train_utils.py": TRAIN_UTILS})
    items = check(tmp_path, "--no-cache", "--exit-zero")
    message = next(d["message"] for d in items if d["code"] == "GPU112")
    assert "`tb_log.add_scalar(...)` syncs every step: `SummaryWriter.add_scalar`" in message


def test_a_launcher_passing_another_object_or_only_none_leaves_it_unknown(tmp_path: Path):
    assert SCALAR not in _launch(tmp_path / "other", "cfg.make_logger()")
    assert SCALAR not in _launch(tmp_path / "none", "None")


STORED_MODEL = textwrap.dedent("""\
    import torch


    def summarize(output):
        return output.sum().item()


    class Trainer:
        def __init__(self, model, optim):
            self.model = model
            self.optim = optim

        def train(self, loader):
            for x, y in loader:
                model_out = self.model(x.cuda(non_blocking=True))
                stats = summarize(model_out)
                loss = torch.nn.functional.mse_loss(model_out, y.cuda(non_blocking=True))
                loss.backward()
                self.optim.step()
""")


def test_a_model_a_trainer_stores_from_its_constructor_returns_tensors(tmp_path: Path):
    # `self.model = model` from an `__init__` parameter named as a module: `self.model(x)` runs the network, as
    # `model(x)` of the parameter would, so the helper reading its output is a per-step sync
    from projects import lint_script

    assert (16, "GPU112") in lint_script(tmp_path, STORED_MODEL)


def test_a_model_attribute_assigned_something_else_stays_unknown(tmp_path: Path):
    from projects import lint_script

    script = STORED_MODEL.replace("self.model = model\n", "self.model = load(model)\n")
    assert script != STORED_MODEL
    assert (16, "GPU112") not in lint_script(tmp_path, script)


MODEL_FUNC = textwrap.dedent("""\
    import torch
    from torch.utils.tensorboard import SummaryWriter


    def train(model, model_func, optimizer, loader):
        writer = SummaryWriter()
        scaler = torch.cuda.amp.GradScaler()
        for step, batch in enumerate(loader):
            loss, tb_dict = model_func(model, batch)
            scaler.scale(loss).backward()
            scaler.step(optimizer)
            writer.add_scalar("train/loss", loss, step)
            for key, val in tb_dict.items():
                writer.add_scalar("train/" + key, val, step)
""")


def test_a_function_named_model_func_is_no_module(tmp_path: Path):
    # OpenPCDet's `loss, tb_dict, disp_dict = model_func(model, batch)`: a function running the model, whose dict
    # holds `.item()` floats; named like a module it made `tb_dict`'s values tensors
    from projects import lint_script

    results = lint_script(tmp_path, MODEL_FUNC)
    assert (12, "GPU112") in results  # the loss itself, a tensor by `scaler.scale(loss).backward()`
    assert (14, "GPU112") not in results
