"""Loaders passed to another module's epoch functions (issue 11, tenth set: graph benchmarks whose scripts import
`train_epoch_sparse as train_epoch` inside a function and hand an evaluation function the validation, test and
training loaders in turn). Where every call found passes unpinned `DataLoader`s, the function's copies of their
batches are blocking copies of pageable memory every step (GPU202, "with the loader pinned (GPU201) it can
overlap"); where the callers' loaders disagree or cannot be told, nothing is reported.
"""

from __future__ import annotations

from pathlib import Path

from projects import check, found, write_project

EPOCHS = """\
import torch


def train_epoch_sparse(model, optimizer, device, data_loader):
    model.train()
    for step, (inputs, targets) in enumerate(data_loader):
        inputs = inputs.to(device)
        targets = targets.to(device)
        optimizer.zero_grad()
        loss = torch.nn.functional.mse_loss(model(inputs), targets)
        loss.backward()
        optimizer.step()


def evaluate_sparse(model, device, data_loader):
    model.eval()
    total = 0.0
    with torch.no_grad():
        for step, (inputs, targets) in enumerate(data_loader):
            inputs = inputs.to(device)
            targets = targets.to(device)
            total += torch.nn.functional.mse_loss(model(inputs), targets)
    return total
"""

MAIN = """\
import torch
from torch.utils.data import DataLoader


def run(model, train_set, val_set, test_set, dense, epochs):
    device = torch.device("cuda")
    if dense:
        from training.epochs import train_epoch_sparse as train_epoch, evaluate_sparse as evaluate
        train_loader = DataLoader(train_set, shuffle=True{pin})
    else:
        from training.epochs import train_epoch_sparse as train_epoch, evaluate_sparse as evaluate
        train_loader = DataLoader(train_set, batch_size=64, shuffle=True{pin})
    val_loader = DataLoader(val_set, batch_size=64{pin})
    test_loader = DataLoader(test_set, batch_size=64{pin_test})
    optimizer = torch.optim.Adam(model.parameters())
    for epoch in range(epochs):
        train_epoch(model, optimizer, device, train_loader)
        evaluate(model, device, val_loader)
        evaluate(model, device, test_loader)
"""


def _check(tmp_path: Path, pin: str = "", pin_test: str = "") -> set:
    root = write_project(tmp_path, {"training/__init__.py": "", "training/epochs.py": EPOCHS,
                                    "main.py": MAIN.format(pin=pin, pin_test=pin_test)})
    return found(check(root, "--no-cache", "."))


def test_copies_of_unpinned_loaders_passed_under_an_alias_block(tmp_path: Path):
    keys = _check(tmp_path)
    assert ("training/epochs.py", 7, "GPU202") in keys
    assert ("training/epochs.py", 8, "GPU202") in keys


def test_an_evaluation_handed_several_unpinned_loaders_blocks_too(tmp_path: Path):
    keys = _check(tmp_path)
    assert ("training/epochs.py", 20, "GPU202") in keys
    assert ("training/epochs.py", 21, "GPU202") in keys


def test_loaders_that_disagree_are_not_judged(tmp_path: Path):
    """The test loader pins, the validation loader does not: the evaluation's copies are left alone."""
    keys = _check(tmp_path, pin_test=", pin_memory=True")
    assert ("training/epochs.py", 20, "GPU202") not in keys
    assert ("training/epochs.py", 7, "GPU202") in keys


def test_pinned_loaders_everywhere_ask_only_for_non_blocking(tmp_path: Path):
    keys = _check(tmp_path, pin=", pin_memory=True", pin_test=", pin_memory=True")
    assert ("training/epochs.py", 20, "GPU202") in keys  # pinned batches copied blocking (the older path)
    assert not any(code == "GPU201" for _, _, code in keys)


HELPERS = """\
import torch


def accuracy(network, loader, device):
    correct = 0
    for x, y in loader:
        x = x.to(device)
        y = y.to(device)
        correct += (network(x).argmax(1) == y).sum()
    return correct
"""

WRAPPER = """\
import torch


class OnePass:
    def __init__(self, dataset, batch_size):
        self._it = iter(torch.utils.data.DataLoader(dataset, batch_size=batch_size{pin}))
        self._n = len(dataset) // batch_size

    def __iter__(self):
        for _ in range(self._n):
            yield next(self._it)
"""

SCRIPT = """\
import torch
from lib import helpers
from lib.wrapper import OnePass


def main(network, splits, names, steps):
    device = "cuda"
    eval_loaders = [OnePass(split, 64) for split in splits]
    for step in range(steps):
        if step % 500 == 0:
            evals = zip(names, eval_loaders)
            for name, loader in evals:
                print(name, helpers.accuracy(network, loader, device))
"""


def _check_zip(tmp_path: Path, pin: str = "") -> set:
    root = write_project(tmp_path, {"lib/__init__.py": "", "lib/helpers.py": HELPERS,
                                    "lib/wrapper.py": WRAPPER.format(pin=pin), "run.py": SCRIPT})
    return found(check(root, "--no-cache", "."))


def test_loaders_unpacked_from_a_zip_of_lists_are_followed(tmp_path: Path):
    """`for name, loader in zip(names, eval_loaders)` around `helpers.accuracy(network, loader, device)`, the
    list holding instances of a project class wrapping an unpinned DataLoader: the helper's copies block."""
    keys = _check_zip(tmp_path)
    assert ("lib/helpers.py", 7, "GPU202") in keys
    assert ("lib/helpers.py", 8, "GPU202") in keys


def test_pinned_loaders_unpacked_from_a_zip_are_pinned(tmp_path: Path):
    keys = _check_zip(tmp_path, pin=", pin_memory=True")
    assert ("lib/helpers.py", 7, "GPU202") in keys  # a pinned batch copied blocking
    assert not any(code == "GPU201" for _, _, code in keys)
