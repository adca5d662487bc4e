"""A plain tensor attribute holding a host tensor, copied to the GPU in every forward (GPU203).

`self.pos_embed = sinusoid_table(n, d)` in `__init__` (a helper returning `torch.tensor(numpy_table)`), then
`x + self.pos_embed.type_as(x).to(x.device)` in `forward`: the attribute is neither a parameter nor a buffer, so
`model.to(device)` leaves it on the host and each forward copies it. A buffer, an attribute reassigned to its
moved copy, or an `nn.Parameter` branch taken by default are fine.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from projects import check, found, write_project

MODEL = '''import numpy as np
import torch
import torch.nn as nn


def sinusoid_table(n, d):
    table = np.array([[p / np.power(10000, 2 * (j // 2) / d) for j in range(d)] for p in range(n)])
    return torch.tensor(table, dtype=torch.float).unsqueeze(0)


class Encoder(nn.Module):
    def __init__(self, d=8, learnable=False):
        super().__init__()
        self.fc = nn.Linear(d, d)
        if learnable:
            self.pos_embed = nn.Parameter(torch.zeros(1, 16, d))
        else:
            self.pos_embed = sinusoid_table(16, d)
        self.scale = torch.ones(1, 16, d)

    def forward(self, x):
        x = x + self.pos_embed.type_as(x).to(x.device).clone().detach()
        return self.fc(x * self.scale.expand(x.shape[0], -1, -1).to(x.device))
'''

TRAIN = '''import torch
from torch.utils.data import DataLoader
from model import Encoder

device = torch.device("cuda")
model = Encoder().to(device)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
loader = DataLoader(torch.randn(64, 16, 8), batch_size=8, pin_memory=True, num_workers=2)
for x in loader:
    loss = model(x.to(device, non_blocking=True)).sum()
    loss.backward()
    opt.step()
    opt.zero_grad(set_to_none=True)
'''


def lint(tmp_path: Path, model: str) -> set:
    root = write_project(tmp_path / "p", {"model.py": model, "train.py": TRAIN})
    return found(check(root, "--no-cache", "--select", "GPU203", "."))


def test_host_attributes_copied_in_forward_are_reported(tmp_path: Path):
    """The table (the default branch of `learnable`) and the torch.ones attribute: both copied every step."""
    assert lint(tmp_path, MODEL) == {("model.py", 22, "GPU203"), ("model.py", 23, "GPU203")}


@pytest.mark.parametrize("change", [
    # a buffer moves with the model: `.to(x.device)` is a no-op
    ("        self.scale = torch.ones(1, 16, d)\n", "        self.register_buffer('scale', torch.ones(1, 16, d))\n"),
    # the attribute is reassigned to its moved copy elsewhere in the class
    ("    def forward(self, x):\n", "    def cache(self, dev):\n        self.scale = self.scale.to(dev)\n\n"
                                  "    def forward(self, x):\n"),
    # built on the device
    ("        self.scale = torch.ones(1, 16, d)\n", "        self.scale = torch.ones(1, 16, d, device='cuda')\n"),
])
def test_fine_attributes_are_not_reported(tmp_path: Path, change):
    assert ("model.py", 23, "GPU203") not in lint(tmp_path, MODEL.replace(*change))


def test_parameter_taken_by_default_is_not_reported(tmp_path: Path):
    """`learnable=True` by default: the default model holds an `nn.Parameter`, which moves with the model."""
    model = MODEL.replace("learnable=False", "learnable=True")
    assert ("model.py", 22, "GPU203") not in lint(tmp_path, model)


def test_not_per_step_when_the_model_is_not_run_in_a_loop(tmp_path: Path):
    train = TRAIN.replace("for x in loader:\n    loss = model(", "x = next(iter(loader))\nif True:\n    loss = model(")
    root = write_project(tmp_path / "p", {"model.py": MODEL, "train.py": train})
    assert found(check(root, "--no-cache", "--select", "GPU203", ".")) == set()


DIFFUSION = '''import torch
import torch.nn as nn


class DDPM(nn.Module):
    def __init__(self, T=1000, learn_logvar=False):
        super().__init__()
        self.net = nn.Linear(8, 8)
        self.learn_logvar = learn_logvar
        self.logvar = torch.full(fill_value=0.0, size=(T,))
        if self.learn_logvar:
            self.logvar = nn.Parameter(self.logvar, requires_grad=True)


class Latent(DDPM):
    def forward(self, x):
        t = torch.randint(0, 1000, (x.shape[0],), device=x.device)
        logvar_t = self.logvar[t].to(x.device)
        return (self.net(x) / torch.exp(logvar_t)[:, None]).mean()
'''


def test_rows_of_a_base_class_host_attribute_are_reported(tmp_path: Path):
    """`self.logvar` (a host `torch.full`, an `nn.Parameter` only under `learn_logvar`, off by default) set in the
    base class; the subclass's forward copies its rows every step."""
    train = TRAIN.replace("Encoder", "Latent")
    root = write_project(tmp_path / "p", {"model.py": DIFFUSION, "train.py": train})
    assert found(check(root, "--no-cache", "--select", "GPU203", ".")) == {("model.py", 18, "GPU203")}
    # learnable by default: the attribute is a parameter, moved with the model
    (root / "model.py").write_text(DIFFUSION.replace("learn_logvar=False", "learn_logvar=True"))
    assert found(check(root, "--no-cache", "--select", "GPU203", ".")) == set()
    # the subclass keeps its own (moved) copy
    (root / "model.py").write_text(DIFFUSION.replace(
        "    def forward(self, x):\n", "    def setup(self, dev):\n        self.logvar = self.logvar.to(dev)\n\n"
                                     "    def forward(self, x):\n"))
    assert found(check(root, "--no-cache", "--select", "GPU203", ".")) == set()


GRAPH = '''import numpy as np
import torch
import torch.nn as nn


class MS_GCN(nn.Module):
    def __init__(self, A_binary, num_scales):
        super().__init__()
        A_scales = np.concatenate([np.linalg.matrix_power(A_binary, k) for k in range(num_scales)])
        self.A_scales = torch.Tensor(A_scales)
        self.mlp = nn.Linear(25, 25)
        self.out = nn.Linear(25, 25)

    def forward(self, x):
        A = self.A_scales.to(x.dtype).to(x.device)
        return self.out(self.mlp(x) @ A)


model = MS_GCN(np.eye(25), 4).cuda()
opt = torch.optim.SGD(model.parameters(), lr=0.1, fused=True)
for x in loader:
    model(x.cuda(non_blocking=True)).sum().backward()
    opt.step()
'''


def test_a_legacy_constructor_attribute_cast_then_copied_is_reported(tmp_path: Path):
    # MS-G3D's graph convolution: `self.A_scales = torch.Tensor(numpy_array)`, then `.to(x.dtype).to(x.device)`
    root = write_project(tmp_path, {"model.py": GRAPH})
    assert ("model.py", 15, "GPU203") in found(check(root, "--no-cache", "--exit-zero", "--select", "GPU203", "."))
    buffered = GRAPH.replace("        self.A_scales = torch.Tensor(A_scales)\n",
                             "        self.register_buffer('A_scales', torch.Tensor(A_scales))\n")
    root = write_project(tmp_path / "buffer", {"model.py": buffered})
    assert check(root, "--no-cache", "--exit-zero", "--select", "GPU203", ".") == []
