"""A library function that builds the DataLoader (timm's `create_loader(..., pin_memory=False)` by default) is a
loader factory: unpinned (its default, `pin_memory=False`, or a flag off by default) with batches going to the GPU,
GPU201 reports the call (no fix: the loader is built in the library) and GPU202 the blocking copies of its
batches. Pinned by the call, or with batches that stay on the host, it is quiet (analysis/data_facts.py)."""

from __future__ import annotations

from pathlib import Path

from projects import check, found, write_project

TRAIN = """\
import argparse
import torch
from timm.data import create_loader

parser = argparse.ArgumentParser()
parser.add_argument("--pin-mem", action="store_true", default=False)
args = parser.parse_args()
dataset = torch.load("data.pt")
loader = create_loader(dataset, input_size=(3, 224, 224), batch_size=64, is_training=True{pin})
for input, target in loader:
    input, target = input.cuda(), target.cuda()
    model(input).sum().backward()
"""


def _found(tmp_path: Path, text: str) -> set:
    root = write_project(tmp_path, {"train.py": text})
    return {(row, code) for _, row, code in found(check(root, "--no-cache", "--select", "GPU201,GPU202", "."))}


NO_PREFETCHER = ", use_prefetcher=False"


def test_an_unpinned_timm_loader_feeding_the_gpu_is_reported(tmp_path: Path):
    expected = {(9, "GPU201"), (11, "GPU202")}
    assert _found(tmp_path / "a", TRAIN.format(pin=NO_PREFETCHER)) == expected
    assert _found(tmp_path / "b", TRAIN.format(pin=", pin_memory=args.pin_mem" + NO_PREFETCHER)) == expected
    assert _found(tmp_path / "c", TRAIN.format(pin=", pin_memory=False" + NO_PREFETCHER)) == expected


def test_a_pinned_timm_loader_is_not_asked_to_pin(tmp_path: Path):
    # its blocking copies are still GPU202 (a pinned batch copied without `non_blocking=True`)
    assert _found(tmp_path, TRAIN.format(pin=", pin_memory=True" + NO_PREFETCHER)) == {(11, "GPU202")}


def test_the_prefetcher_moves_the_batches_itself(tmp_path: Path):
    """`use_prefetcher=True` (timm's default) wraps the loader in a `PrefetchLoader` that yields CUDA tensors:
    the loop's `.cuda()` copies nothing (no GPU202), while the prefetcher's own copy of the unpinned batch is
    still pageable (GPU201 at the call). A flag (`use_prefetcher=args.prefetcher`) may turn it off, and then the
    loop's copies are real ones."""
    assert _found(tmp_path / "a", TRAIN.format(pin="")) == {(9, "GPU201")}
    assert _found(tmp_path / "b", TRAIN.format(pin=", use_prefetcher=True")) == {(9, "GPU201")}
    flag = TRAIN.format(pin=", use_prefetcher=args.prefetcher").replace(
        "args = parser", 'parser.add_argument("--prefetcher", action="store_true")\nargs = parser')
    assert _found(tmp_path / "c", flag) == {(10, "GPU201"), (12, "GPU202")}


def test_a_timm_loader_whose_batches_stay_on_the_host_is_quiet(tmp_path: Path):
    text = TRAIN.format(pin="").replace("    input, target = input.cuda(), target.cuda()\n", "")
    assert _found(tmp_path, text) == set()
