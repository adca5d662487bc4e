"""A name rebound to a host read of its own value (`loss = loss.item()` on one configuration's path) holds a
tensor before that read: its other bindings decide what it is elsewhere, so `.item()` on another path is still a
per-step sync (GPU101), and a loss backpropagated through a GradScaler (`scaler.scale(loss).backward()`) is a
tensor a helper may read (GPU112)."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

TRAIN = '''
import torch
from torch.utils.data import DataLoader

import checks


def train(model, criterion, loader, opt, scaler, detection, metrics_fn):
    for x, y in loader:
        x, y = x.cuda(non_blocking=True), y.cuda(non_blocking=True)
        with torch.autocast("cuda"):
            loss = criterion(model(x), y)
        checks.assert_finite(loss)
        scaler.scale(loss).backward()
        scaler.step(opt)
        scaler.update()
        if detection:
            loss = loss.item()
            print(loss)
        else:
            acc = 0.0
            if metrics_fn is not None:
                acc = metrics_fn(x, y)
                acc = acc.item()
            loss, acc = loss.item(), acc
            print(loss, acc)
'''

CHECKS = '''
import math


def assert_finite(loss):
    if math.isnan(loss):
        raise RuntimeError("nan loss")
'''

NUMBERS = '''
def report(loader, step_fn):
    for batch in loader:
        total = 0.0
        total = step_fn(batch)
        value = float(total)
        print(value.hex())
'''


def lint(root: Path, *args: str) -> set:
    out = subprocess.run([sys.executable, "-m", "gpulint", "check", "--output-format", "json", "--no-cache",
                          "--exit-zero", *args], cwd=root, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    return {(d["location"]["row"], d["code"]) for d in json.loads(out.stdout)}


def test_item_on_every_path_of_a_name_rebound_to_its_own_read(tmp_path: Path):
    (tmp_path / "pyproject.toml").write_text("[project]\nname = 'p'\n")
    (tmp_path / "train.py").write_text(textwrap.dedent(TRAIN))
    (tmp_path / "checks.py").write_text(textwrap.dedent(CHECKS))
    found = lint(tmp_path, "train.py")
    assert (18, "GPU101") in found  # loss.item() for detection configs
    assert (24, "GPU101") in found  # acc.item(): `acc = 0.0` is only the path without metrics
    assert (25, "GPU101") in found  # loss.item() on the other path
    assert (13, "GPU112") in found  # checks.assert_finite(loss): math.isnan reads the scaled, backpropagated loss
    # after the rebinding the names hold numbers: printing them formats no tensor
    assert not {f for f in found if f[0] in (19, 26)}


def test_a_number_the_name_really_holds_stays_quiet(tmp_path: Path):
    (tmp_path / "report.py").write_text(textwrap.dedent(NUMBERS))
    assert not {f for f in lint(tmp_path, "report.py") if f[1].startswith("GPU1")}
