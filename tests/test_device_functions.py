"""`.to(dist_util.dev())`: a project function whose every `return` is a device, one of them an accelerator, names
the accelerator (analysis/device_functions.py), so a loop copying its loader's batches there feeds a GPU (GPU201,
GPU202). A function that returns only the CPU, or something else on some path, is not read as a device."""

from __future__ import annotations

from pathlib import Path

from projects import check, found, write_project

DIST_UTIL = """\
import torch as th


def dev():
    if th.cuda.is_available():
        return th.device(f"cuda")
    return th.device("cpu")


def cpu_only():
    return th.device("cpu")


def chosen(name):
    return th.device(name)


def rank_device():
    return "cuda:0" if th.cuda.is_available() else "cpu"


def through():
    return dev()
"""

TRAIN = """\
import torch
from torch.utils.data import DataLoader
from pkg import dist_util

dataset = torch.load("data.pt")
loader = DataLoader(dataset, batch_size=32, shuffle=True, num_workers=4)
for x, y in loader:
    x = x.to({device})
    model(x).sum().backward()
"""


def _found(root: Path) -> set:
    return {(row, code) for _, row, code in found(check(root, "--no-cache", "--select", "GPU201,GPU202", "train.py"))}


def _project(tmp_path: Path, device: str) -> Path:
    return write_project(tmp_path, {"pkg/__init__.py": "", "pkg/dist_util.py": DIST_UTIL,
                                    "train.py": TRAIN.format(device=device)})


def test_a_project_function_returning_the_accelerator_is_a_gpu_target(tmp_path: Path):
    assert _found(_project(tmp_path, "dist_util.dev()")) == {(6, "GPU201"), (8, "GPU202")}


def test_a_conditional_string_and_a_function_returning_another_count_too(tmp_path: Path):
    assert _found(_project(tmp_path / "a", "dist_util.rank_device()")) == {(6, "GPU201"), (8, "GPU202")}
    assert _found(_project(tmp_path / "b", "dist_util.through()")) == {(6, "GPU201"), (8, "GPU202")}


def test_functions_returning_the_cpu_or_a_chosen_value_are_not_accelerators(tmp_path: Path):
    assert _found(_project(tmp_path / "a", "dist_util.cpu_only()")) == set()
    assert _found(_project(tmp_path / "b", 'dist_util.chosen("cpu")')) == set()
