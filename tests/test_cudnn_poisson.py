"""GPU413 and Opacus' Poisson sampling: a loader handed to `make_private` draws batches of a random size every
step, so cuDNN's benchmark mode would time every new shape again; the rule stays quiet there, and reports the
same script where Poisson sampling is turned off."""

from __future__ import annotations

from gpulint.runner import lint_source

SCRIPT = """import torch
import torch.nn as nn
from torch.utils.data import DataLoader, TensorDataset
from opacus import PrivacyEngine

images, labels = torch.randn(512, 3, 32, 32), torch.randint(0, 10, (512,))
loader = DataLoader(TensorDataset(images, labels), batch_size=64, shuffle=True)
model = nn.Sequential(nn.Conv2d(3, 64, 3), nn.ReLU(), nn.Conv2d(64, 256, 3), nn.Flatten(), nn.LazyLinear(10)).cuda()
opt = torch.optim.SGD(model.parameters(), lr=0.1)
engine = PrivacyEngine()
model, opt, loader = engine.{make}(module=model, optimizer=opt, data_loader=loader,
                                    noise_multiplier=1.0, max_grad_norm=1.0{extra})
for epoch in range(10):
    for x, y in loader:
        loss = nn.functional.cross_entropy(model(x.cuda()), y.cuda())
        loss.backward()
        opt.step()
        opt.zero_grad()
"""


def _gpu413(text: str) -> list:
    return [d for d in lint_source(text, "train.py", frozenset({"GPU413"})).diagnostics if d.code == "GPU413"]


def test_poisson_sampled_loader_is_not_reported() -> None:
    assert _gpu413(SCRIPT.format(make="make_private", extra="")) == []
    assert _gpu413(SCRIPT.format(make="make_private_with_epsilon", extra="")) == []


def test_fixed_batches_are_still_reported() -> None:
    assert len(_gpu413(SCRIPT.format(make="make_private", extra=", poisson_sampling=False"))) == 1
