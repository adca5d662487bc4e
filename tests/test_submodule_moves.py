"""A model handed to a project `nn.Module` wrapper that keeps it as a submodule, the wrapper moved to CUDA where it
is built (`trainer = GaussianDiffusionTrainer(net_model, ...).to(device)`): `Module.to` moves the submodules, so an
optimizer over `net_model.parameters()` updates CUDA parameters (GPU402; heldout33a's pytorch-ddpm). A wrapper that
does not keep the model, or one moved to the CPU, says nothing of it."""

from __future__ import annotations

from projects import check, found, write_project

TRAIN = """\
import torch

from diffusion import GaussianDiffusionTrainer
from model import UNet


def train(loader, steps):
    device = torch.device("cuda:0")
    net_model = UNet(ch=128)
    optim = torch.optim.Adam(net_model.parameters(), lr=2e-4)
    trainer = GaussianDiffusionTrainer(net_model, 1e-4, 0.02, 1000).to({device})
    for step, x_0 in zip(range(steps), loader):
        loss = trainer(x_0.to({device})).mean()
        optim.zero_grad()
        loss.backward()
        optim.step()
"""

DIFFUSION = """\
import torch.nn as nn


class GaussianDiffusionTrainer(nn.Module):
    def __init__(self, model, beta_1, beta_T, T):
        super().__init__()
        {keep}
        self.T = T

    def forward(self, x_0):
        return (self.model(x_0) - x_0).square()
"""

MODEL = """\
import torch.nn as nn


class UNet(nn.Module):
    def __init__(self, ch):
        super().__init__()
        self.down = nn.Conv2d(3, ch, 3, padding=1)
        self.up = nn.Conv2d(ch, 3, 3, padding=1)

    def forward(self, x):
        return self.up(self.down(x).relu())
"""


def _lint(tmp_path, device="device", keep="self.model = model"):
    root = write_project(tmp_path, {"train.py": TRAIN.format(device=device), "model.py": MODEL,
                                    "diffusion.py": DIFFUSION.format(keep=keep)})
    return check(root, "--no-cache", "--exit-zero", "--select", "GPU402", "train.py")


def test_a_model_kept_by_a_moved_wrapper_is_on_the_gpu(tmp_path):
    assert found(_lint(tmp_path)) == {("train.py", 10, "GPU402")}


def test_a_wrapper_moved_to_the_cpu_says_nothing(tmp_path):
    assert _lint(tmp_path, device='"cpu"') == []


def test_a_wrapper_that_does_not_keep_the_model_says_nothing(tmp_path):
    assert _lint(tmp_path, keep="self.shape = model.down.weight.shape") == []
