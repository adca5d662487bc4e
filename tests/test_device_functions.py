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


DATASETS = """\
from torch.utils.data import DataLoader


def load_data(*, data_dir, batch_size, deterministic=False):
    dataset = ImageDataset(data_dir)
    if deterministic:
        loader = DataLoader(dataset, batch_size=batch_size, shuffle=False, num_workers=1, drop_last=True)
    else:
        loader = DataLoader(dataset, batch_size=batch_size, shuffle=True, num_workers=1, drop_last=True)
    while True:
        yield from loader
"""

EVALUATE = """\
from pkg import dist_util
from pkg.image_datasets import load_data


def main():
    model = create_model().to(dist_util.dev())
    data = load_data(data_dir="x", batch_size=8, deterministic=True)
    done = 0
    while done < 1000:
        batch, extra = next(data)
        batch = batch.to({device})
        done += model(batch).shape[0]
"""


def _generator_project(tmp_path: Path, device: str) -> Path:
    return write_project(tmp_path, {"pkg/__init__.py": "", "pkg/dist_util.py": DIST_UTIL,
                                    "pkg/image_datasets.py": DATASETS, "scripts/evaluate.py": EVALUATE.format(
                                        device=device)})


def test_a_generator_factory_handing_on_its_loader_is_reported_at_its_dataloaders(tmp_path: Path):
    # `while True: yield from loader`: linting the factory module alone reports both of its unpinned loaders
    root = _generator_project(tmp_path, "dist_util.dev()")
    got = found(check(root, "--no-cache", "--select", "GPU201,GPU202", "pkg/image_datasets.py", "scripts/evaluate.py"))
    assert {(path, row, code) for path, row, code in got} == {
        ("pkg/image_datasets.py", 7, "GPU201"), ("pkg/image_datasets.py", 9, "GPU201"),
        ("scripts/evaluate.py", 7, "GPU201"), ("scripts/evaluate.py", 11, "GPU202")}


def test_a_generator_factory_whose_batches_stay_on_the_cpu_is_quiet(tmp_path: Path):
    root = _generator_project(tmp_path, "dist_util.cpu_only()")
    assert found(check(root, "--no-cache", "--select", "GPU201,GPU202", ".")) == set()
