"""Project subclasses of torch's DataLoader are DataLoaders: `DataLoaderMasking(dataset, batch_size=32)` (a class
that only sets its `collate_fn` and passes `**kwargs` on) without `pin_memory` whose batches a loop moves to the GPU
is GPU201 (the fix adds `pin_memory=True`, which its `**kwargs` hand to torch's loader) and the blocking moves of
its batches GPU202. A class that decides pinning itself, moves batches, takes no `**kwargs` to pass on, or replaces
the iteration stays quiet (analysis/loader_classes.py)."""

from __future__ import annotations

from pathlib import Path

from projects import check, found, write_project

LOADERS = """\
import torch
from torch.utils.data import DataLoader
from prefetch_generator import BackgroundGenerator


class DataLoaderMasking(torch.utils.data.DataLoader):
    def __init__(self, dataset, batch_size=1, shuffle=True, **kwargs):
        super(DataLoaderMasking, self).__init__(dataset, batch_size, shuffle, collate_fn=collate, **kwargs)


class DataLoaderX(DataLoader):
    def __iter__(self):
        return BackgroundGenerator(super().__iter__())


class Masked(DataLoaderMasking):
    pass


class NoKwargs(DataLoader):
    def __init__(self, dataset, batch_size=1):
        super().__init__(dataset, batch_size, collate_fn=collate)


class SelfPinned(DataLoader):
    def __init__(self, dataset, **kwargs):
        kwargs.setdefault("pin_memory", False)
        super().__init__(dataset, **kwargs)


class OnDevice(DataLoader):
    def __iter__(self):
        for batch in super().__iter__():
            yield batch.cuda()


class OwnIteration(DataLoader):
    def __iter__(self):
        return iter(self.dataset)


def collate(items):
    return items
"""

TRAIN = """\
import torch
from loaders import DataLoaderMasking, DataLoaderX, Masked, NoKwargs, SelfPinned, OnDevice, OwnIteration

device = torch.device("cuda")
dataset = torch.load("data.pt")
loaders = []
masking = DataLoaderMasking(dataset, batch_size=32, num_workers=4)
background = DataLoaderX(dataset, batch_size=32)
masked = Masked(dataset, batch_size=32)
pinned = DataLoaderMasking(dataset, batch_size=32, pin_memory=True)


def train(loader):
    for batch in loader:
        batch = batch.to(device)
        model(batch).sum().backward()


train(masking)
train(background)
train(masked)
for batch in pinned:
    model(batch.to(device, non_blocking=True)).sum().backward()
"""

QUIET = """\
import torch
from loaders import DataLoaderMasking, NoKwargs, SelfPinned, OnDevice, OwnIteration

device = torch.device("cuda")
dataset = torch.load("data.pt")
no_kwargs = NoKwargs(dataset, batch_size=32)
self_pinned = SelfPinned(dataset, batch_size=32)
on_device = OnDevice(dataset, batch_size=32)
own = OwnIteration(dataset, batch_size=32)
for batch in no_kwargs:
    model(batch.to(device)).sum().backward()
for batch in self_pinned:
    model(batch.to(device)).sum().backward()
for batch in on_device:
    model(batch.to(device)).sum().backward()
for batch in own:
    model(batch.to(device)).sum().backward()
"""

CPU_ONLY = """\
import torch
from loaders import DataLoaderMasking

dataset = torch.load("data.pt")
loader = DataLoaderMasking(dataset, batch_size=32)
for batch in loader:
    model(batch).sum().backward()
"""


def _found(root: Path, *paths: str) -> set:
    return {(path, row, code) for path, row, code in
            found(check(root, "--no-cache", "--select", "GPU201,GPU202", *(paths or (".",))))}


def test_subclasses_of_torch_dataloader_without_pinning_are_reported(tmp_path: Path):
    root = write_project(tmp_path, {"loaders.py": LOADERS, "train.py": TRAIN})
    assert {(row, code) for path, row, code in _found(root, "train.py")} == \
        {(7, "GPU201"), (8, "GPU201"), (9, "GPU201"), (15, "GPU202")}


def test_the_fix_pins_a_subclass_loader(tmp_path: Path):
    root = write_project(tmp_path, {"loaders.py": LOADERS, "train.py": TRAIN})
    check(root, "--no-cache", "--select", "GPU201", "--fix", "train.py")
    fixed = (root / "train.py").read_text()
    assert "DataLoaderMasking(dataset, batch_size=32, num_workers=4, pin_memory=True)" in fixed
    assert "DataLoaderX(dataset, batch_size=32, pin_memory=True)" in fixed
    assert "Masked(dataset, batch_size=32, pin_memory=True)" in fixed


def test_subclasses_that_decide_pinning_move_batches_or_take_no_kwargs_are_quiet(tmp_path: Path):
    root = write_project(tmp_path, {"loaders.py": LOADERS, "train.py": QUIET})
    assert _found(root, "train.py") == set()


def test_a_subclass_loader_in_a_cpu_only_script_is_quiet(tmp_path: Path):
    root = write_project(tmp_path, {"loaders.py": LOADERS, "train.py": CPU_ONLY})
    assert _found(root, "train.py") == set()
