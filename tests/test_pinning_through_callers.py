"""A loader handed down a chain of functions (branch recall62; heldout17's melgan: the script builds a pinned
validation loader with a project factory and passes it to `train(...)`, which hands it on to `validate(...)` in a
third module, whose loop copies every batch with `.cuda()`). The pinning of the loader is followed from the
parameter `validate` iterates back through the parameter of `train` that the call passes, to the script that
built it: a pinned batch copied without `non_blocking=True` is GPU202 ("add non_blocking=True"); an unpinned one is
the plain pageable copy. Where the outer callers' loaders disagree, or a caller passes something unknown, nothing
is reported.
"""

from __future__ import annotations

from pathlib import Path

from projects import check, found, write_project

FACTORY = """\
from torch.utils.data import DataLoader


def make_loader(dataset, train):
    if train:
        return DataLoader(dataset, batch_size=16, shuffle=True, num_workers=4{pin})
    return DataLoader(dataset, batch_size=1, shuffle=False, num_workers=4{pin})
"""

VALIDATE = """\
import torch


def check_model(model, loader, step):
    model.eval()
    total = 0.0
    with torch.no_grad():
        for features, targets in loader:
            features = features.cuda()
            targets = targets.cuda()
            total += torch.nn.functional.l1_loss(model(features), targets)
    print(step, float(total))
"""

LOOP = """\
import torch

from .checking import check_model


def fit(model, optimizer, train_loader, val_loader, epochs):
    step = 0
    for epoch in range(epochs):
        for features, targets in train_loader:
            features = features.cuda(non_blocking=True)
            targets = targets.cuda(non_blocking=True)
            loss = torch.nn.functional.l1_loss(model(features), targets)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            step += 1
        check_model(model, val_loader, step)
"""

SCRIPT = """\
import torch

from data.loaders import make_loader
from tools.loop import fit


def main(model, train_set, val_set, epochs):
    optimizer = torch.optim.Adam(model.parameters())
    train_loader = make_loader(train_set, True)
    val_loader = {val}
    fit(model.cuda(), optimizer, train_loader, val_loader, epochs)
"""


def _check(tmp_path: Path, pin: str = ", pin_memory=True", val: str = "make_loader(val_set, False)",
           extra: str = "") -> set:
    files = {"data/__init__.py": "", "data/loaders.py": FACTORY.format(pin=pin),
             "tools/__init__.py": "", "tools/checking.py": VALIDATE, "tools/loop.py": LOOP,
             "main.py": SCRIPT.format(val=val) + extra}
    return found(check(write_project(tmp_path, files), "--no-cache", "."))


def test_blocking_copies_of_a_pinned_loader_passed_down_two_calls(tmp_path: Path):
    keys = _check(tmp_path)
    assert ("tools/checking.py", 9, "GPU202") in keys
    assert ("tools/checking.py", 10, "GPU202") in keys


def test_non_blocking_copies_of_the_same_loader_are_fine(tmp_path: Path):
    keys = _check(tmp_path)
    assert not any(path == "tools/loop.py" and rule == "GPU202" for path, _, rule in keys)


def test_a_caller_passing_an_unknown_loader_keeps_it_quiet(tmp_path: Path):
    keys = _check(tmp_path, val="build_somewhere_else(val_set)")
    assert not any(path == "tools/checking.py" and rule == "GPU202" for path, _, rule in keys)


def test_callers_that_disagree_keep_it_quiet(tmp_path: Path):
    other = """

def main_unpinned(model, train_set, val_set):
    from torch.utils.data import DataLoader
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    fit(model, optimizer, make_loader(train_set, True), DataLoader(val_set, batch_size=1), 1)
"""
    keys = _check(tmp_path, extra=other)
    assert not any(path == "tools/checking.py" and rule == "GPU202" for path, _, rule in keys)


def test_the_finding_says_the_batch_is_pinned(tmp_path: Path):
    files = {"data/__init__.py": "", "data/loaders.py": FACTORY.format(pin=", pin_memory=True"),
             "tools/__init__.py": "", "tools/checking.py": VALIDATE, "tools/loop.py": LOOP,
             "main.py": SCRIPT.format(val="make_loader(val_set, False)")}
    items = check(write_project(tmp_path, files), "--no-cache", ".")
    messages = [d["message"] for d in items if d["code"] == "GPU202" and d["filename"].endswith("checking.py")]
    assert messages and all("pinned batch" in m for m in messages)
