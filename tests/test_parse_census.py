"""benchmarks/parse_census.py: which files a cold check parses with LibCST, and why."""

from __future__ import annotations

import importlib.util
import textwrap
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def _census():
    spec = importlib.util.spec_from_file_location("parse_census", ROOT / "benchmarks" / "parse_census.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.census


TRAIN = """\
import torch
from torch.utils.data import DataLoader
from model import Net

device = torch.device("cuda")
model = Net().to(device)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
loader = DataLoader(list(range(10)), batch_size=2)
total = 0.0
for x in loader:
    x = x.to(device)
    loss = model(x).sum()
    opt.zero_grad()
    loss.backward()
    opt.step()
    total += loss.item()
print(total)
"""
MODEL = """\
import torch


class Net(torch.nn.Module):
    def forward(self, x):
        return x * 2
"""
# a `for` loop in a module that names a loader: the `ast` conditions let it through, the loop analysis finds
# it cold (it iterates a list of strings)
NAMES = """\
import torch

loader_names = ["train", "val"]


def describe(device):
    for name in loader_names:
        print(name, device)
"""
PLAIN = "def add(a, b):\n    return a + b\n"


def test_files_are_sorted_by_why_they_are_parsed(tmp_path):
    for name, text in [("train.py", TRAIN), ("model.py", MODEL), ("names.py", NAMES), ("plain.py", PLAIN)]:
        (tmp_path / name).write_text(textwrap.dedent(text))
    paths: dict = {}
    counts, seconds = _census()(tmp_path, paths)
    assert dict(counts) == {
        ("found", "hot loop"): 1,  # the training script: its loop is hot, `.item()` every step is reported
        ("silent", "run every step"): 1,  # the model: no loop, but the script runs its forward every step
        ("silent", "neither"): 1,  # parsed only because the `ast` conditions over-approximate
        ("skipped", "-"): 1,  # no rule can report in it: never parsed
    }
    assert [str(p) for p in paths[("silent", "neither")]] == ["names.py"]
    assert set(seconds) == set(counts) and all(s >= 0 for s in seconds.values())
