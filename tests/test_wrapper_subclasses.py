"""A project subclass of a model wrapper (`class MyDataParallel(torch.nn.DataParallel)` that only adds
`__getattr__`, StyleTTS2's shape) hands back the module it wraps, as `DataParallel` does: `dl = MyDataParallel(dl)`
keeps `dl` an instance of the loss class, so the loss's per-step `.item()` is reported at the call (GPU112). A
subclass with a `forward` of its own runs something else: nothing is known of it.
"""

from __future__ import annotations

from pathlib import Path

from projects import check, found, write_project

LOSSES = '''\
import torch
from torch import nn


class DiscriminatorLoss(nn.Module):
    def __init__(self, disc):
        super().__init__()
        self.disc = disc

    def forward(self, real, fake):
        loss = (self.disc(real) - self.disc(fake)).mean()
        self.last = loss.item()
        return loss
'''

TRAIN = '''\
import torch
from torch.utils.data import DataLoader
from losses import DiscriminatorLoss


class MyDataParallel(torch.nn.DataParallel):
    def __getattr__(self, name):
        try:
            return super().__getattr__(name)
        except AttributeError:
            return getattr(self.module, name)
EXTRA


def main(dataset):
    device = "cuda"
    disc = torch.nn.Linear(8, 1).to(device)
    dl = DiscriminatorLoss(disc).to(device)
    dl = MyDataParallel(dl)
    optimizer = torch.optim.Adam(disc.parameters())
    loader = DataLoader(dataset, batch_size=16, pin_memory=True, num_workers=2)
    for real, fake in loader:
        real, fake = real.to(device, non_blocking=True), fake.to(device, non_blocking=True)
        d_loss = dl(real, fake)
        optimizer.zero_grad()
        d_loss.backward()
        optimizer.step()


if __name__ == "__main__":
    main(None)
'''

CALL = ("train.py", 24, "GPU112")


def _findings(tmp_path: Path, extra: str = "") -> set:
    root = write_project(tmp_path, {"losses.py": LOSSES, "train.py": TRAIN.replace("EXTRA", extra)})
    return found(check(root, "--no-cache", "--select", "GPU112", "."))


def test_a_wrapper_subclass_keeps_the_wrapped_loss(tmp_path: Path):
    assert CALL in _findings(tmp_path)


def test_a_wrapper_subclass_with_its_own_forward_is_unknown(tmp_path: Path):
    extra = "\n    def forward(self, *inputs):\n        return inputs[0].sum()\n"
    assert not {f for f in _findings(tmp_path, extra) if f[0] == "train.py"}
