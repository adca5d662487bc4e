"""Project classes that wrap a DataLoader and hand on its batches are loaders (issue 11, tenth set: a
domain-generalisation benchmark's infinite loaders). A class whose `__init__` keeps `iter(DataLoader(...))` (or the
loader itself) and whose `__iter__` yields `next(self._it)` (or the loader's items) gives batches: a step loop
drawing `next(zip(*[Cls(...) for ...]))` is a training loop, its copies are copies of that loader's batches, the
methods it calls every step are per-step code, and GPU201 reports the wrapped `DataLoader(...)` in the class.
"""

from __future__ import annotations

from pathlib import Path

from projects import check, found, write_project

LOADERS = """\
import torch


class _Forever(torch.utils.data.Sampler):
    def __init__(self, sampler):
        self.sampler = sampler

    def __iter__(self):
        while True:
            for indices in self.sampler:
                yield indices


class EndlessLoader:
    def __init__(self, dataset, batch_size, workers):
        sampler = torch.utils.data.RandomSampler(dataset, replacement=True)
        batches = torch.utils.data.BatchSampler(sampler, batch_size=batch_size, drop_last=True)
        self._stream = iter(torch.utils.data.DataLoader(
            dataset, num_workers=workers, batch_sampler=_Forever(batches){pin}))

    def __iter__(self):
        while True:
            yield next(self._stream)
"""

METHODS = """\
import torch


class Plain(torch.nn.Module):
    def __init__(self, net):
        super().__init__()
        self.net = net
        self.opt = torch.optim.SGD(self.net.parameters(), lr=0.1)

    def update(self, minibatches):
        x = torch.cat([x for x, y in minibatches])
        y = torch.cat([y for x, y in minibatches])
        loss = torch.nn.functional.cross_entropy(self.net(x), y.to(x.device))
        self.opt.zero_grad()
        loss.backward()
        self.opt.step()
        return {"loss": loss.item()}
"""

TRAIN = """\
import torch
from loaders import EndlessLoader
from methods import Plain


def main(envs, net, n_steps, device="cuda"):
    env_loaders = [EndlessLoader(env, 32, 4) for env in envs]
    batches = zip(*env_loaders)
    algorithm = Plain(net)
    algorithm.to(device)
    for step in range(n_steps):
        on_device = [(x.to(device), y.to(device)) for x, y in next(batches)]
        values = algorithm.update(on_device)
        if step % 100 == 0:
            print(values)
"""


def _check(tmp_path: Path, loaders: str = LOADERS.format(pin=""), train: str = TRAIN) -> set:
    root = write_project(tmp_path, {"loaders.py": loaders, "methods.py": METHODS, "train.py": train})
    return found(check(root, "--no-cache", "."))


def test_copies_of_a_wrapped_loaders_batches_block_every_step(tmp_path: Path):
    """The batches come from an unpinned DataLoader inside the class: both copies are blocking (GPU202)."""
    keys = _check(tmp_path)
    assert ("train.py", 12, "GPU202") in keys


def test_the_wrapped_dataloader_is_reported_where_it_is_built(tmp_path: Path):
    """GPU201 at the `DataLoader(` inside the class, where `pin_memory=True` goes."""
    keys = _check(tmp_path)
    assert ("loaders.py", 18, "GPU201") in keys


def test_the_method_the_step_loop_calls_is_per_step_code(tmp_path: Path):
    """`algorithm.update(...)` runs every step: its `.item()` is reported in the method's body too (the caller
    file is found as a training file by its text, `zip(*<...loader...>)`, as `for x in <...loader...>:` is)."""
    keys = _check(tmp_path)
    assert ("methods.py", 17, "GPU101") in keys
    assert ("train.py", 13, "GPU112") in keys


def test_a_pinned_wrapped_loader_asks_for_no_pinning(tmp_path: Path):
    keys = _check(tmp_path, LOADERS.format(pin=", pin_memory=True"))
    assert not any(code == "GPU201" for _, _, code in keys)
    assert ("methods.py", 17, "GPU101") in keys


def test_a_class_handing_on_a_held_loaders_items_is_a_loader(tmp_path: Path):
    """`for batch in self.loader: yield batch`, iterated directly by an epoch's loop."""
    loaders = """\
from torch.utils.data import DataLoader


class Epochs:
    def __init__(self, dataset):
        self.loader = DataLoader(dataset, batch_size=64)

    def __iter__(self):
        for batch in self.loader:
            yield batch
"""
    train = """\
import torch
from loaders import Epochs


def evaluate(net, dataset, device="cuda"):
    total = 0.0
    for x, y in Epochs(dataset):
        x = x.to(device)
        total += net(x).sum()
    return total
"""
    keys = _check(tmp_path, loaders, train)
    assert ("train.py", 8, "GPU202") in keys
    assert ("loaders.py", 6, "GPU201") in keys


def test_a_class_that_changes_the_items_is_not_a_loader(tmp_path: Path):
    """An `__iter__` yielding something other than the loader's items (a transformed batch) is not known to hand
    on the loader's batches: the wrapped DataLoader is not reported from the class."""
    loaders = LOADERS.format(pin="").replace("yield next(self._stream)", "yield self.augment(next(self._stream))")
    keys = _check(tmp_path, loaders)
    assert not any(path == "loaders.py" and code == "GPU201" for path, _, code in keys)
