"""Issue 12's throughput levers on the shapes real trainers take (branch recall73).

- GPU403 is reported on the forward pass even where the model is known by no name (a function's parameter,
  `loss, acc = segmentation_module(batch)`) or runs in a method of the trainer (`outputs, losses =
  self.process_batch(inputs)`, `self.netG_forward()` assigning what the loss reads): the loss is read back through
  the step's assignments. A loss module (`self.G_lossfn(...)`) is not taken for the forward pass.
- GPU403 (and the other levers asking "does this module train on CUDA") see a device imported from a project
  config module (`from conf import *` with `device = torch.device("cuda:0" if ... else "cpu")`).
- GPU411 reports a per-parameter loop in the `step` of a hand-written `torch.optim` optimizer the project builds
  by name from a config (no loop calls it where gpulint can see), in a project that runs on CUDA.

Each has its quiet twin.
"""

from __future__ import annotations


from projects import check, lint_files


_lint = lint_files


# -- GPU403: where the forward pass is -----------------------------------------------------------------------------
SEGMENTATION = """\
import torch


def train(segmentation_module, iterator, optimizer, epoch_iters):
    for i in range(epoch_iters):
        batch_data = next(iterator)
        segmentation_module.zero_grad()
        loss, acc = segmentation_module(batch_data)
        loss = loss.mean()
        loss.backward()
        optimizer.step()


def main(model, loader):
    model = model.cuda()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    train(model, iter(loader), optimizer, 100)
"""


def test_forward_of_a_model_known_by_no_name_is_read_back_from_the_loss(tmp_path):
    assert ("train.py", 8, "GPU403") in _lint(tmp_path, {"train.py": SEGMENTATION}, "GPU403")


TRAINER = """\
import torch


class Trainer:
    def __init__(self, models, loader):
        self.models = models
        self.loader = loader
        self.model_optimizer = torch.optim.Adam(self.parameters, fused=True)

    def process_batch(self, inputs):
        features = self.models["encoder"](inputs["color"].cuda())
        outputs = self.models["depth"](features)
        return outputs, {"loss": outputs.mean()}

    def run_epoch(self):
        for batch_idx, inputs in enumerate(self.loader):
            outputs, losses = self.process_batch(inputs)
            self.model_optimizer.zero_grad()
            losses["loss"].backward()
            self.model_optimizer.step()
"""


def test_forward_in_a_trainer_method_is_the_call_the_loss_comes_from(tmp_path):
    findings = _lint(tmp_path, {"train.py": TRAINER}, "GPU403")
    assert ("train.py", 17, "GPU403") in findings
    assert ("train.py", 19, "GPU403") not in findings


PLAIN_MODEL = """\
import torch


class ModelPlain:
    def __init__(self, netG, lossfn, loader):
        self.netG = netG.cuda()
        self.G_lossfn = torch.nn.L1Loss()
        self.G_optimizer = torch.optim.Adam(self.netG.parameters(), fused=True)
        self.loader = loader

    def netG_forward(self):
        self.E = self.netG(self.L)

    def optimize_parameters(self):
        self.G_optimizer.zero_grad()
        self.netG_forward()
        G_loss = 2.0 * self.G_lossfn(self.E, self.H)
        G_loss.backward()
        self.G_optimizer.step()

    def train(self):
        for self.L, self.H in self.loader:
            self.optimize_parameters()
"""


def test_a_loss_module_is_not_the_forward_the_method_setting_its_input_is(tmp_path):
    findings = _lint(tmp_path, {"train.py": PLAIN_MODEL}, "GPU403")
    assert ("train.py", 16, "GPU403") in findings
    assert ("train.py", 17, "GPU403") not in findings


GAN_STEP = """\
import torch


def train(netG, netD, lossfn, loader, opt_g, opt_d):
    netG, netD = netG.cuda(), netD.cuda()
    for x, y in loader:
        fake = netG(x)
        g_loss = lossfn(netD(fake), True)
        g_loss.backward()
        opt_g.step()
        pred_real = netD(y)
        l_real = lossfn(pred_real, True)
        l_real.backward()
        pred_fake = netD(fake.detach())
        l_fake = lossfn(pred_fake, False)
        l_fake.backward()
        opt_d.step()
"""


def test_one_finding_per_step_for_the_losses_read_back(tmp_path):
    """The discriminator's losses, read back to their forward passes, add nothing to the step's finding."""
    assert [f for f in _lint(tmp_path, {"train.py": GAN_STEP}, "GPU403")] == [("train.py", 7, "GPU403")]


# -- GPU403: a CUDA device imported from a config module -----------------------------------------------------------
CONF = """\
import torch

device = torch.device("cuda:0" if torch.cuda.is_available() else "{other}")
batch_size = 128
"""

DATA = """\
from conf import *

loader = [1, 2, 3]
"""

SCRIPT = """\
from torch import nn, optim

from data import *
from model import Net

model = Net().to(device)
optimizer = optim.Adam(params=model.parameters(), fused=True)
criterion = nn.CrossEntropyLoss()


def train(model, iterator, optimizer, criterion):
    for batch in iterator:
        optimizer.zero_grad()
        output = model(batch.src)
        loss = criterion(output, batch.trg)
        loss.backward()
        optimizer.step()


train(model, loader, optimizer, criterion)
"""

MODEL = """\
from torch import nn


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.a = nn.Linear(512, 512)
        self.b = nn.Linear(512, 512)

    def forward(self, x):
        return self.b(self.a(x))
"""


def test_device_from_a_config_module_through_star_imports(tmp_path):
    files = {"conf.py": CONF.format(other="cpu"), "data.py": DATA, "train.py": SCRIPT, "model.py": MODEL}
    assert ("train.py", 14, "GPU403") in _lint(tmp_path, files, "GPU403")


def test_device_from_a_config_module_that_is_not_cuda(tmp_path):
    files = {"conf.py": CONF.format(other="cpu").replace('"cuda:0" if torch.cuda.is_available() else ', ""),
             "data.py": DATA, "train.py": SCRIPT, "model.py": MODEL}
    assert not _lint(tmp_path, files, "GPU403")


# -- GPU411: a hand-written optimizer's step -----------------------------------------------------------------------
RADAM = """\
import torch
from torch.optim.optimizer import Optimizer


class RAdam(Optimizer):
    def __init__(self, params, lr=1e-3):
        super().__init__(params, dict(lr=lr))

    def step(self, closure=None):
        for group in self.param_groups:
            for p in group["params"]:
                if p.grad is None:
                    continue
                p.data.add_(p.grad, alpha=-group["lr"])
        return None
"""

INIT = """\
from .radam import *  # noqa
from torch.optim import *  # noqa
"""

BUILDER = """\
import torch
import optimizers


def build(model, config):
    model = model.cuda()
    cls = getattr(optimizers, config.get("optimizer_type", "RAdam"))
    return cls(model.parameters(), **config["optimizer_params"])
"""


def test_per_parameter_loop_in_a_hand_written_optimizer_built_by_name(tmp_path):
    files = {"optimizers/__init__.py": INIT, "optimizers/radam.py": RADAM, "train.py": BUILDER}
    findings = _lint(tmp_path, files, "GPU411")
    assert ("radam.py", 11, "GPU411") in findings
    items = check(tmp_path, "--no-cache", "--exit-zero", "--select", "GPU411", ".")
    assert any("in `RAdam.step`, which runs on every optimizer step" in d["message"] for d in items)


def test_optimizer_of_a_cpu_project_or_never_named_is_quiet(tmp_path):
    cpu = {"optimizers/__init__.py": INIT, "optimizers/radam.py": RADAM,
           "train.py": BUILDER.replace("model = model.cuda()", "model = model.cpu()")}
    assert not _lint(tmp_path / "cpu", cpu, "GPU411")
    dead = {"optimizers/__init__.py": "", "optimizers/radam.py": RADAM,
            "train.py": BUILDER.replace('"RAdam"', '"Adam"')}
    assert not _lint(tmp_path / "dead", dead, "GPU411")


def test_optional_branch_of_a_hand_written_step_is_quiet(tmp_path):
    branch = RADAM.replace("        for group in self.param_groups:\n",
                           "        if closure is None:\n            return None\n"
                           "        for group in self.param_groups:\n")
    guarded = RADAM.replace("            for p in group[\"params\"]:\n",
                            "            if group.get(\"amsgrad\"):\n              for p in group[\"params\"]:\n")
    files = {"optimizers/__init__.py": INIT, "optimizers/radam.py": guarded, "train.py": BUILDER}
    assert not _lint(tmp_path / "guarded", files, "GPU411")
    files = {"optimizers/__init__.py": INIT, "optimizers/radam.py": branch, "train.py": BUILDER}
    assert ("radam.py", 13, "GPU411") in _lint(tmp_path / "branch", files, "GPU411")
