"""Costs inside model code that per-step calls reach without a call expression, and loops inside model methods.

- A `@property` is a call: `self.r` read in a per-step `forward` runs `return self.decoder.r.item()` every read
  (Real-Time-Voice-Cloning's Tacotron), so the body is per-step code (GPU101 there) and each read is a call that
  syncs (GPU112), as is the call of the model whose `forward` reads it.
- A buffer (`register_buffer`) or an `nn.Parameter` the module holds moves with the module: `self.step.data.item()`
  in `get_step()` reads a device tensor, so `model.get_step()` in the loop is reported at the call.
- A decoder's `while True:` loop in a model method, stopped by a `break` on a tensor it computes
  (`if (stop > 0.5).all(): break`), runs once per generated frame: its host reads are per-step reads. What a
  submodule returns (`h, stop = self.decoder(x)`) is tensors.
"""

from __future__ import annotations

from pathlib import Path

from projects import check, found, write_project

MODEL = """\
import torch
from torch import nn


class Decoder(nn.Module):
    def __init__(self):
        super().__init__()
        self.register_buffer("r", torch.tensor(1, dtype=torch.int))
        self.proj = nn.Linear(4, 4)
        self.stop = nn.Linear(4, 1)

    def forward(self, x):
        h = self.proj(x)
        return h, torch.sigmoid(self.stop(h))


class Tacotron(nn.Module):
    def __init__(self):
        super().__init__()
        self.decoder = Decoder()
        self.step = nn.Parameter(torch.zeros(1).long(), requires_grad=False)
        self.n_mels = 4

    @property
    def r(self):
        return self.decoder.r.item()

    @r.setter
    def r(self, value):
        self.decoder.r = self.decoder.r.new_tensor(value)

    @property
    def dims(self):
        return self.n_mels

    def forward(self, x, steps):
        outs = []
        for t in range(0, steps, self.r):
            h, stop = self.decoder(x)
            outs.extend([h] * self.r)
        return torch.stack(outs)[:, :self.dims]

    def generate(self, x):
        outs = []
        while True:
            h, stop = self.decoder(x)
            outs.append(h)
            if (stop > 0.5).all():
                break
        return outs

    def get_step(self):
        return self.step.data.item()
"""

TRAIN = """\
import torch
from model import Tacotron

model = Tacotron().cuda()
opt = torch.optim.Adam(model.parameters(), fused=True)
for step, (x, y) in enumerate(loader):
    out = model(x.cuda(non_blocking=True), 10)
    loss = out.mean()
    loss.backward()
    opt.step()
    k = model.get_step()
    model.r = 2
"""


def _project(root: Path) -> Path:
    return write_project(root, {"model.py": MODEL, "train.py": TRAIN}, pyproject="")


def test_properties_buffers_and_decoding_loops(tmp_path: Path):
    """Reported: the property's read (GPU101 at its body), each read of it in `forward` (GPU112), the model's
    call and `get_step()` in the loop (GPU112), `get_step`'s read, the decoder loop's stopping test (GPU106).
    Quiet: the property returning a plain attribute, the setter, the assignment `model.r = 2`."""
    got = found(check(_project(tmp_path / "p"), "--no-cache", "--select", "GPU1", "."))
    assert got == {
        ("model.py", 26, "GPU101"),  # return self.decoder.r.item()
        ("model.py", 38, "GPU112"),  # for t in range(0, steps, self.r)
        ("model.py", 40, "GPU112"),  # outs.extend([h] * self.r)
        ("model.py", 48, "GPU106"),  # if (stop > 0.5).all(): break
        ("model.py", 53, "GPU101"),  # return self.step.data.item()
        ("train.py", 7, "GPU112"),  # model(...)
        ("train.py", 11, "GPU112"),  # model.get_step()
    }



KINDS = """\
import torch
from torch import nn


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.decoder = nn.Linear(4, 4)

    def forward(self, x):
        a, b = self.decoder(x)
        return a


class Pipeline:
    def __init__(self, model):
        self.model = model

    def __call__(self, x):
        a, b = self.model(x)[:2]
        return a
"""


def test_a_submodule_call_returns_tensors_only_inside_a_module():
    """`a, b = self.decoder(x)` in an `nn.Module`'s method unpacks tensors; `self.model(x)` in a class that is not a
    module (a pipeline that may wrap a TensorFlow model) stays unknown."""
    import libcst as cst

    from gpulint.analysis import ModuleAnalysis
    from gpulint.analysis.kinds import Kind

    analysis = ModuleAnalysis(cst.parse_module(KINDS), KINDS)
    returned = [n.value for n in analysis.index.nodes_of(cst.Return)] if hasattr(analysis.index, "nodes_of") \
        else [n.value for n in _walk(analysis.module) if type(n) is cst.Return]
    assert [analysis.kind(r) for r in returned] == [Kind.TENSOR, Kind.UNKNOWN]


def _walk(node):
    yield node
    for child in node.children:
        yield from _walk(child)


GRID = """\
import torch
from torch import nn

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")


class GridGenerator(nn.Module):
    def build(self, c):
        pad = torch.zeros(c.size(0), 3, 2).float().to(device)
        return torch.cat([c, pad], dim=1)

    def describe(self):
        return torch.zeros(3).to(device)


class Warp(nn.Module):
    def __init__(self):
        super().__init__()
        self.grid = GridGenerator()
        self.loc = nn.Linear(4, 4)

    def forward(self, x):
        return self.grid.build(self.loc(x))
"""

GRID_TRAIN = """\
import torch
from warp import Warp

model = Warp().cuda()
opt = torch.optim.Adam(model.parameters(), fused=True)
for x in loader:
    loss = model(x.cuda(non_blocking=True)).mean()
    loss.backward()
    opt.step()
"""


def test_a_method_of_a_submodule_called_in_forward(tmp_path: Path):
    """`self.grid.build(...)` in a per-step `forward`, where `self.grid = GridGenerator()` is a class of the same
    module: `build` runs every step too (its host-built `torch.zeros(...).to(device)`); `describe`, which forward
    never calls, does not."""
    root = tmp_path / "p"
    root.mkdir()
    (root / "pyproject.toml").write_text("")
    (root / "warp.py").write_text(GRID)
    (root / "train.py").write_text(GRID_TRAIN)
    assert found(check(root, "--no-cache", "--select", "GPU2", ".")) == {("warp.py", 9, "GPU203")}
