"""Values in host memory and blocks that run once (analysis/host_values.py, analysis/once.py): reading them
waits for no GPU, so the sync rules stay quiet; the same code on a device tensor, or run every step, is reported."""

from __future__ import annotations

from pathlib import Path

from tests.projects import check, found, write_project

LOOP = """import torch
from torch.utils.data import DataLoader
{head}
model = torch.nn.Linear(4, 2).cuda()
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for x in DataLoader(torch.randn(64, 4), batch_size=8):
    picks = torch.randint(0, 3, (4,){device})
    if picks[0] == 0:
        continue
    model(x.cuda()).sum().backward()
    opt.step()
"""


def _codes(root: Path, name: str) -> set:
    return {(row, code) for path, row, code in found(check(root, "--no-cache", name)) if path.endswith(name)}


def test_factory_without_device_builds_on_the_host(tmp_path: Path) -> None:
    root = write_project(tmp_path / "host", {"train.py": LOOP.format(head="", device="")})
    assert (8, "GPU106") not in _codes(root, "train.py")
    root = write_project(tmp_path / "device", {"train.py": LOOP.format(head="", device=', device="cuda"')})
    assert (8, "GPU106") in _codes(root, "train.py")
    # a CUDA default device makes the same factory build on the GPU
    root = write_project(tmp_path / "default", {"train.py": LOOP.format(head='torch.set_default_device("cuda")',
                                                                        device="")})
    assert (8, "GPU106") in _codes(root, "train.py")


TRAINER = """import torch
from torch.utils.data import DataLoader


class Trainer:
    def __init__(self, model):
        self.model = model.cuda()
        self.opt = torch.optim.SGD(self.model.parameters(), lr=0.1)
        self.step = 0

    def fit_batch(self, x):
        loss = self.model(x.cuda()).sum()
        loss.backward()
        self.opt.step()
        return {returned}

    def running(self, loss, avg):
        if torch.isfinite(loss):
            avg += (float(loss) - avg) / self.step
        return avg

    def fit(self, loader):
        avg = 0.0
        for x in loader:
            self.step += 1
            loss = self.fit_batch(x)
            if loss > 100.0:
                print("large loss")
            avg = self.running(loss, avg)
        return avg


Trainer(torch.nn.Linear(4, 2)).fit(DataLoader(torch.randn(64, 4), batch_size=8))
"""


def test_a_method_returning_a_host_copy_and_the_parameter_it_feeds(tmp_path: Path) -> None:
    """`fit_batch` returns `loss.detach().cpu()`: the loop's test of it and the helper's `torch.isfinite` of the
    parameter every call site passes it to read host memory."""
    root = write_project(tmp_path / "host", {"trainer.py": TRAINER.format(returned="loss.detach().cpu()")})
    codes = _codes(root, "trainer.py")
    assert (27, "GPU106") not in codes and (18, "GPU106") not in codes
    root = write_project(tmp_path / "device", {"trainer.py": TRAINER.format(returned="loss.detach()")})
    codes = _codes(root, "trainer.py")
    assert (18, "GPU106") in codes


def test_a_parameter_also_passed_from_another_file_is_not_known(tmp_path: Path) -> None:
    other = "from trainer import Trainer\n\n\ndef use(t, loss):\n    return t.running(loss, 0.0)\n"
    root = write_project(tmp_path, {"trainer.py": TRAINER.format(returned="loss.detach().cpu()"), "other.py": other})
    assert (18, "GPU106") in _codes(root, "trainer.py")


DROP = """import torch


class Dropper(torch.nn.Module):
    def __init__(self, count):
        super().__init__()
        self.count = count
        self.first = True
        self.masks = None
        self.scale = None

    def build_masks(self, x):
        masks = torch.ones(self.count, x.shape[1], device=x.device)
        drops = torch.randint(0, 3, (self.count,), device=x.device)
        for i in range(self.count):
            if drops[i] == 0:
                continue
            width = torch.randint(1, 3, (1,), device=x.device)
            masks[i, : int(drops[i])] = width * 0.0
        return masks

    def measure(self, x):
        return x.abs().max().item()

    def forward(self, x):
        if self.first:
            self.masks = self.build_masks(x)
            self.scale = self.measure(x)
{clear}
        return x * self.masks[: x.shape[0]] / self.scale
"""

TRAIN = """import torch
from torch.utils.data import DataLoader

from drop import Dropper

layer = torch.nn.Linear(4, 4).cuda()
model = Dropper(64).cuda()
opt = torch.optim.SGD(layer.parameters(), lr=0.1)
for x in DataLoader(torch.randn(64, 4), batch_size=8):
    model(layer(x.cuda())).sum().backward()
    opt.step()
"""


def test_a_block_that_clears_its_own_flag_runs_once(tmp_path: Path) -> None:
    """`if self.first: ...; self.first = False`: the masks are built and the scale read on the first call only;
    neither the setup loop's tests nor the method's `.item()` are per-step syncs."""
    root = write_project(tmp_path / "once", {"drop.py": DROP.format(clear="            self.first = False"),
                                             "train.py": TRAIN})
    codes = _codes(root, "drop.py")
    assert not {c for c in codes if c[1] in ("GPU101", "GPU105", "GPU106")}, codes
    # without the clear, the block runs on every call: the same code is reported
    root = write_project(tmp_path / "every", {"drop.py": DROP.format(clear="            pass"), "train.py": TRAIN})
    codes = _codes(root, "drop.py")
    assert (16, "GPU106") in codes and (23, "GPU101") in codes, codes


SAMPLER = """import torch
from torch.utils.data import DataLoader


def draw(n, k, device=None):
    return torch.randperm(n, device=device)[:k]


model = torch.nn.Linear(4, 2).cuda()
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for x in DataLoader(torch.randn(64, 4), batch_size=8):
    picks = draw(100, 10, device={device})
    chosen = picks.numpy(force=True)
    model(x.cuda()).sum().backward()
    opt.step()
"""


def test_a_call_naming_the_cpu_as_its_device_builds_there(tmp_path: Path) -> None:
    root = write_project(tmp_path / "cpu", {"train.py": SAMPLER.format(device='"cpu"')})
    assert (13, "GPU103") not in _codes(root, "train.py")
    root = write_project(tmp_path / "cuda", {"train.py": SAMPLER.format(device='"cuda"')})
    assert (13, "GPU103") in _codes(root, "train.py")


TYPE_AS = """import torch
from torch.utils.data import DataLoader

model = torch.nn.Linear(4, 2).cuda()
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for x in DataLoader(torch.randn(64, 4), batch_size=8):
    out = model(x.cuda())
    keep = torch.ones(out.shape[0]){cast}
    rows = keep.nonzero()
    out[rows].sum().backward()
    opt.step()
"""


def test_a_host_factory_cast_to_a_device_tensor_is_on_the_device(tmp_path: Path) -> None:
    """`torch.ones(n).type_as(out)` builds on the host and goes where `out` is: its `nonzero()` syncs."""
    root = write_project(tmp_path / "cast", {"train.py": TYPE_AS.format(cast=".type_as(out)")})
    assert (9, "GPU111") in _codes(root, "train.py")
    root = write_project(tmp_path / "host", {"train.py": TYPE_AS.format(cast="")})
    assert (9, "GPU111") not in _codes(root, "train.py")


EVAL_COPIES = """import torch
import numpy as np

model = torch.nn.Conv2d(3, 2, 1).cuda()
dataset = [(torch.randn(3, 8, 8), torch.randn(2, 8, 8)) for _ in range(4)]
errors, means = [], []
with torch.no_grad():
    for image, target in dataset:
        pred = model(image[None].cuda())
        flow = pred[0]{copy}
        err = torch.sum((flow - target) ** 2, dim=0).sqrt()
        errors.append(err.view(-1).numpy())
        means.append(err.mean().item())
"""


def test_arithmetic_with_a_host_copy_stays_on_the_host(tmp_path: Path) -> None:
    """`flow = pred.cpu()` then `(flow - target)`: PyTorch runs that only with `target` on the host too, so the
    error map is a host tensor and its `.numpy()`/`.item()` wait for nothing (the `.cpu()` is the sync). Without
    the copy the same lines read the device."""
    root = write_project(tmp_path / "copied", {"eval.py": EVAL_COPIES.format(copy=".cpu()")})
    codes = _codes(root, "eval.py")
    assert (12, "GPU103") not in codes and (13, "GPU101") not in codes, codes
    assert (10, "GPU104") in codes, codes
    root = write_project(tmp_path / "device", {"eval.py": EVAL_COPIES.format(copy="")})
    codes = _codes(root, "eval.py")
    assert (13, "GPU101") in codes, codes


NORM_RATIO = """import torch
from torch.utils.data import DataLoader

model = torch.nn.Linear(4, 4).cuda()
opt = torch.optim.SGD(model.parameters(), lr=0.1)
norms = []
for x in DataLoader(torch.randn(64, 4), batch_size=8):
    model(x.cuda()).sum().backward()
    opt.step()
    norm = model.weight.norm()
    ratio = torch.clamp(norm, max=1.0).cpu() / norm.cpu()
    scaled = model.weight.norm() * ratio
    norms.append(scaled.item())
"""


def test_a_copied_scalar_still_mixes_with_device_tensors(tmp_path: Path) -> None:
    """`ratio = clamp(norm).cpu() / norm.cpu()` is a 0-dim CPU tensor (a full reduction copied): PyTorch runs
    `weight.norm() * ratio` on the GPU, so `scaled.item()` is a device read and stays reported."""
    root = write_project(tmp_path / "ratio", {"train.py": NORM_RATIO})
    assert (13, "GPU101") in _codes(root, "train.py")


CPU_DEFAULT_HELPER = """import torch
from torch.utils.data import DataLoader


def sample_shift(p, size, device="cpu"):
    return torch.eye(3, device=device).unsqueeze(0).repeat(size, 1, 1) * p


def augment(img, p):
    shift = torch.inverse(sample_shift(p, img.shape[0]{passed}))
    return img * shift.sum().item()


model = torch.nn.Linear(4, 2).cuda()
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for x in DataLoader(torch.randn(64, 4), batch_size=8):
    x = augment(x.cuda(), 0.5)
    model(x).sum().backward()
    opt.step()
"""


def test_helper_whose_device_defaults_to_the_cpu_builds_on_the_host(tmp_path: Path) -> None:
    # `def sample_shift(..., device="cpu")` called without a device builds its matrix on the host: reading it
    # waits for no GPU
    root = write_project(tmp_path / "host", {"train.py": CPU_DEFAULT_HELPER.format(passed="")})
    assert (11, "GPU101") not in _codes(root, "train.py")
    # the same helper told to build on the image's device: the read waits for the GPU
    root = write_project(tmp_path / "device", {"train.py": CPU_DEFAULT_HELPER.format(passed=", device=img.device")})
    assert (11, "GPU101") in _codes(root, "train.py")
