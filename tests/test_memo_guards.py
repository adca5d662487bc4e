"""A project method that keeps what it builds (in its object, or in a module-level dict) and hands the kept value
back when it has it runs the build once per key (an input size, a device), not once per call: a host array built
with NumPy and copied with `torch.from_numpy(...).to(device)` after `if k in self.cache: return self.cache[k]`
(and stored in `self.cache[k]`), or inside `if self.grid is None: self.grid = ...`, is no per-step copy at the
call site (analysis/memo_guards.py). The same build without the early return, or with a return that keeps nothing,
still reports."""

from __future__ import annotations

from tests.projects import lint_files

HELPERS = '''
import numpy as np
import torch

_GRIDS = {}


def host_anchors(n):
    return np.arange(n * 4, dtype=np.float32).reshape(n, 4)


class Anchors(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.last_anchors = {}
        self.last_shape = None

    def forward(self, image):
        shape = image.shape[2:]
        if shape == self.last_shape and image.device in self.last_anchors:
            return self.last_anchors[image.device]
        self.last_shape = shape
        anchors = torch.from_numpy(host_anchors(shape[0])).to(image.device)
        self.last_anchors[image.device] = anchors
        return anchors


class Grid(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.grid = None

    def forward(self, image):
        if self.grid is None or self.grid.shape[0] != image.shape[2]:
            self.grid = torch.from_numpy(host_anchors(image.shape[2])).to(image.device)
        return self.grid


def module_grid(image):
    key = tuple(image.shape)
    if key in _GRIDS:
        return _GRIDS[key]
    grid = torch.from_numpy(host_anchors(image.shape[2])).to(image.device)
    _GRIDS[key] = grid
    return grid


class Fresh(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.last = None

    def forward(self, image):
        if self.last is not None and image.shape[0] == 0:
            return self.last
        return torch.from_numpy(host_anchors(image.shape[2])).to(image.device)


class Rebuilt(torch.nn.Module):
    def forward(self, image):
        return torch.from_numpy(host_anchors(image.shape[2])).to(image.device)
'''

TRAIN = '''
import torch

from helpers import Anchors, Fresh, Grid, Rebuilt, module_grid

anchors = Anchors().cuda()
grid = Grid().cuda()
fresh = Fresh().cuda()
rebuilt = Rebuilt().cuda()
net = torch.nn.Linear(4, 4).cuda()
opt = torch.optim.SGD(net.parameters(), lr=0.1)
for step in range(100):
    x = torch.randn(2, 3, 64, 64, device="cuda")
    a = anchors(x)
    g = grid(x)
    m = module_grid(x)
    f = fresh(x)
    r = rebuilt(x)
    loss = net(a + g + m + f + r).mean()
    loss.backward()
    opt.step()
'''


def _row(text: str, needle: str) -> int:
    return next(i for i, line in enumerate(text.splitlines(), 1) if needle in line)


def test_a_build_kept_in_a_memo_is_not_a_per_step_copy(tmp_path):
    found = lint_files(tmp_path, {"helpers.py": HELPERS, "train.py": TRAIN}, "GPU112", "GPU410", "GPU203")
    train = {row for name, row, code in found if name == "train.py"}
    helpers = {row for name, row, code in found if name == "helpers.py"}
    # cached per image size (a dict kept in the object, an attribute filled when missing, a module-level dict):
    # built on the first call for a size, not at the call sites nor at the copies
    assert {_row(TRAIN, "anchors(x)"), _row(TRAIN, "grid(x)"), _row(TRAIN, "module_grid(x)")} & train == set()
    copies = [i for i, line in enumerate(HELPERS.splitlines(), 1) if "torch.from_numpy" in line]
    assert set(copies[:3]) & helpers == set()
    # a return that keeps nothing built, or no cache at all: built on every call
    assert {_row(TRAIN, "fresh(x)"), _row(TRAIN, "rebuilt(x)")} <= train
    assert set(copies[3:]) <= helpers
