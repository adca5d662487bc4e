"""GPU402 where the optimizer or its training loop is named indirectly (branch recall81): transformers' own
`AdamW` (a per-parameter Python loop, no `fused=`) over a CUDA model is reported without a fix; a loop whose
backward pass and step run inside timm's `loss_scaler(loss, optimizer, ...)` trains, so the optimizer built
before the model is moved (`model.cuda()` after the optimizer line) is reported. CPU-only models stay quiet.
"""

from __future__ import annotations

from projects import check, found, write_project

HF = """\
import torch
from transformers import AdamW


def main(loader):
    model = torch.nn.Sequential(torch.nn.Linear(512, 512), torch.nn.ReLU(), torch.nn.Linear(512, 10)){move}
    optimizer = AdamW(model.parameters(), lr=1e-4)
    for x, y in loader:
        loss = torch.nn.functional.cross_entropy(model(x.cuda(non_blocking=True)), y.cuda(non_blocking=True))
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()
"""

SCALED = """\
import torch
import torch.optim as optim
from timm.utils import NativeScaler


def main(loader):
    model = torch.nn.Sequential(torch.nn.Conv2d(3, 64, 3), torch.nn.ReLU(), torch.nn.Conv2d(64, 3, 3))
    optimizer = optim.AdamW(model.parameters(), lr=2e-4)
    model = torch.nn.DataParallel(model)
    model{move}
    loss_scaler = NativeScaler()
    for x, y in loader:
        optimizer.zero_grad()
        x, y = x.cuda(non_blocking=True), y.cuda(non_blocking=True)
        with torch.cuda.amp.autocast():
            loss = torch.nn.functional.l1_loss(model(x), y)
        loss_scaler(loss, optimizer, parameters=model.parameters())
"""


def _lint(tmp_path, text):
    return check(write_project(tmp_path, {"train.py": text}), "--no-cache", "--exit-zero", "--select", "GPU402", ".")


def test_transformers_adamw_over_a_cuda_model_is_reported_without_a_fix(tmp_path):
    items = _lint(tmp_path, HF.format(move=".cuda()"))
    assert found(items) == {("train.py", 7, "GPU402")}
    assert "transformers' `AdamW`" in items[0]["message"] and "torch.optim.AdamW" in items[0]["message"]
    assert not items[0].get("fix")


def test_transformers_adamw_over_a_host_model_is_silent(tmp_path):
    assert found(_lint(tmp_path, HF.format(move=""))) == set()


def test_a_loop_stepping_through_timm_loss_scaler_trains_whatever_the_order_of_the_move(tmp_path):
    items = _lint(tmp_path, SCALED.format(move=".cuda()"))
    assert found(items) == {("train.py", 8, "GPU402")}
    assert "fused=True" in str(items[0]["fix"])  # the same fix as any torch.optim.AdamW


def test_a_loss_scaler_loop_on_a_model_never_moved_to_cuda_is_silent(tmp_path):
    assert found(_lint(tmp_path, SCALED.format(move=".cpu()"))) == set()


GAN = """\
import torch
from torch import nn, optim


class Generator(nn.Module):
    def __init__(self):
        super().__init__()
        self.body = nn.Sequential(nn.Conv2d(3, 64, 3, padding=1), nn.ReLU(), nn.Conv2d(64, 3, 3, padding=1))

    def forward(self, x):
        return self.body(x)


def build_model(config, device):
    g_model = Generator()
    g_model = g_model.to(device)
    if config["ema"]:
        ema_model = torch.optim.swa_utils.AveragedModel(g_model, device=device)
    else:
        ema_model = None
    if config["compile"]:
        g_model = torch.compile(g_model)
    return g_model, ema_model


def define_optimizer(g_model, config):
    if config["optim"] == "Adam":
        optimizer = optim.Adam(g_model.parameters(), config["lr"])
    else:
        raise NotImplementedError(config["optim"])
    return optimizer


def main(config, loader):
    device = {device}
    g_model, ema_model = build_model(config, device)
    optimizer = define_optimizer(g_model, config)
    for lr, hr in loader:
        lr, hr = lr.to(device, non_blocking=True), hr.to(device, non_blocking=True)
        loss = nn.functional.mse_loss(g_model(lr), hr)
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        optimizer.step()
"""


def test_a_model_factory_moving_to_its_device_parameter_gives_cuda_models_to_a_caller_passing_cuda(tmp_path):
    items = _lint(tmp_path, GAN.format(device='torch.device("cuda", 0)'))
    assert found(items) == {("train.py", 28, "GPU402")}
    assert any(r["location"]["row"] == 37 for r in items[0]["related"])  # the call building it for the model
    assert "fused=True" in str(items[0]["fix"])


def test_a_model_factory_given_a_device_that_may_be_the_cpu_keeps_it_silent(tmp_path):
    assert found(_lint(tmp_path, GAN.format(device='torch.device(config["device"])'))) == set()
    assert found(_lint(tmp_path / "cpu", GAN.format(device='"cpu"'))) == set()
