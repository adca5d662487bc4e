"""GPU203: a host factory cast with `.to(other)` of a tensor (branch recall39, heldout10's DomainBed, heldout13's
demucs, heldout8's stylegan2 augmentation).

`torch.hann_window(n).to(x)` is `.to(x.device, x.dtype)`: in per-step code of a GPU program it builds the window on
the host and copies it every step, as `.type_as(x)` does. The argument must be a tensor: its kind says so, or its
function reads it as one (`x.shape`, `x.reshape(...)`, `torch.isfinite(x)`). A dtype, a host tensor, a factory
that already names a device, `zeros_like(x)` (built where `x` lives), code run once and a CPU-only program stay quiet.
"""

from __future__ import annotations

from pathlib import Path

from projects import check, found, write_project

PROGRAM = '''
import torch
from torch.utils.data import DataLoader


def spectro(x, n_fft=16):
    *other, length = x.shape
    x = x.reshape(-1, length)
    z = torch.stft(x, n_fft, window=CAST, return_complex=True)
    return z.abs().view(*other, -1)


model = torch.nn.Linear(8, 2).cuda()
opt = torch.optim.SGD(model.parameters(), lr=0.1)
loader = DataLoader(torch.randn(64, 64), batch_size=8, pin_memory=True)
for x in loader:
    x = x.cuda(non_blocking=True)
    model(spectro(x)[..., :8]).sum().backward()
    opt.step()
'''


def lint(root: Path, text: str) -> set:
    items = check(write_project(root, {"train.py": text}), "--no-cache", "--exit-zero", "--select", "GPU203")
    return {row for _, row, _ in found(items)}


def test_a_host_factory_cast_to_a_tensor_every_step(tmp_path: Path):
    for cast in ("torch.hann_window(n_fft).to(x)", "torch.zeros(1, 8).to(x)", "torch.tensor(0.0).to(x)",
                 "torch.as_tensor((1.0, 2.0)).to(x)", "torch.ones(8).fill_(2.0).to(x)"):
        assert 9 in lint(tmp_path, PROGRAM.replace("CAST", cast)), cast


def test_a_tensor_known_only_by_how_its_function_reads_it(tmp_path: Path):
    # `finite_mean(x)`: `x` is read by `torch.isfinite`, a tensor function, and nothing else says what it is
    text = PROGRAM.replace("def spectro(", '''def finite_mean(x):
    mean = torch.where(torch.isfinite(x), x, torch.tensor(0.0).to(x)).sum()
    return mean


def spectro(''').replace("model(spectro(x)[..., :8]).sum().backward()",
                         "finite_mean(model(spectro(x)[..., :8])).backward()").replace("CAST", "None")
    assert 7 in lint(tmp_path, text)


def test_casts_that_copy_nothing_stay_quiet(tmp_path: Path):
    for cast in ("torch.zeros(8).to(x.dtype)", "torch.zeros(8).to(x.cpu())", "torch.zeros(8).to(torch.float16)",
                 "torch.zeros(8, device=x.device).to(x)", "torch.zeros_like(x).to(x)",
                 "torch.zeros_like(x).type_as(x)"):
        assert 9 not in lint(tmp_path, PROGRAM.replace("CAST", cast)), cast


def test_an_argument_nothing_reads_as_a_tensor_stays_quiet(tmp_path: Path):
    # `dt` may be a dtype (`.to(torch.float16)` copies nothing): no evidence, no finding
    text = PROGRAM.replace("def spectro(x, n_fft=16):", "def spectro(x, n_fft=16, dt=torch.float32):").replace(
        "CAST", "torch.hann_window(n_fft).to(dt)")
    assert 9 not in lint(tmp_path, text)


def test_once_or_without_a_gpu_stays_quiet(tmp_path: Path):
    cast = PROGRAM.replace("CAST", "torch.hann_window(n_fft).to(x)")
    # called once, before the loop
    once = cast.replace("    model(spectro(x)[..., :8]).sum().backward()\n", "    model(x[..., :8]).sum().backward()\n") \
        .replace("for x in loader:", "spectro(torch.randn(2, 64))\nfor x in loader:")
    assert 9 not in lint(tmp_path, once)
    # a CPU-only program: nothing is copied
    cpu = cast.replace(".cuda()", "").replace("x = x.cuda(non_blocking=True)", "x = x.float()") \
        .replace(", pin_memory=True", "")
    assert 9 not in lint(tmp_path, cpu)


LOOP = '''
import torch
from torch.utils.data import DataLoader

model = torch.nn.Linear(8, 2).cuda()
loader = DataLoader(torch.randn(64, 8), batch_size=8)
for x in loader:
    MOVE
    w = torch.ones(8).to(x)
    model(x * w).sum().backward()
'''


def test_a_cast_to_a_batch_follows_where_the_batch_is(tmp_path: Path):
    # moved to the GPU first: the cast copies the host factory there every step
    assert 9 in lint(tmp_path, LOOP.replace("MOVE", "x = x.cuda()"))
    # never moved: the batch is on the host, and so is the cast
    assert 9 not in lint(tmp_path, LOOP.replace("MOVE", "x = x.float()"))
