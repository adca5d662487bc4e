"""The shipped tutorial-style script, fixed with `--fix --unsafe-fixes`, computes the same numbers.

This is the promise the GPU2xx/GPU3xx fixes (with GPU108's) make to a user: the desynchronised version (pinned
loader, non_blocking copies, device-side loss sum, accuracy count and NaN flag, syncs only where it prints)
prints what the original printed, up to float32 rounding of the sums.
"""

from __future__ import annotations

import importlib.util
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from gpulint.rule import all_rules
from gpulint.runner import FixMode, fix_source, lint_source

ROOT = Path(__file__).resolve().parent.parent
NAIVE = ROOT / "fixtures" / "examples" / "naive_train.py"
NUMBER = re.compile(r"-?\d+(?:\.\d+)?")


def findings(text: str) -> list[str]:
    return [d.code for d in lint_source(text, "naive_train.py", frozenset(c for c, r in all_rules().items() if not r.preview)).diagnostics]


@pytest.fixture(scope="module")
def fixed_copy(tmp_path_factory) -> Path:
    target = tmp_path_factory.mktemp("fixed") / "naive_train.py"
    target.write_text(fix_source(NAIVE.read_text(encoding="utf-8"), unsafe=True), encoding="utf-8")
    return target


def test_fix_desynchronises_the_loop(fixed_copy: Path):
    fixed = fixed_copy.read_text(encoding="utf-8")
    compile(fixed, str(fixed_copy), "exec")
    assert "pin_memory=torch.cuda.is_available()" in fixed
    assert fixed.count("non_blocking=True") == 4
    assert "running_loss += loss.detach()" in fixed
    assert ".item()" not in fixed  # no per-step sync is left: sums and the NaN flag stay on the device
    assert "found_nan |= torch.isnan(loss).any()" in fixed
    before, after = findings(NAIVE.read_text(encoding="utf-8")), findings(fixed)
    assert len(after) < len(before)
    assert set(after) <= {"GPU204"}  # the TensorDataset advice has no automatic fix


def test_safe_fixes_alone_pin_and_copy_asynchronously():
    fixed = lint_source(NAIVE.read_text(encoding="utf-8"), "naive_train.py", frozenset(c for c, r in all_rules().items() if not r.preview),
                        fix=FixMode.SAFE).source
    assert "pin_memory=torch.cuda.is_available()" in fixed and fixed.count("non_blocking=True") == 4
    assert "loss.item()" in fixed  # the accumulation's fix is unsafe: --fix alone leaves it


@pytest.mark.skipif(importlib.util.find_spec("torch") is None, reason="torch is not installed")
def test_fixed_script_prints_the_same_numbers(fixed_copy: Path):
    env = {**os.environ, "CUDA_VISIBLE_DEVICES": "", "PYTHONWARNINGS": "ignore"}
    procs = [subprocess.Popen([sys.executable, str(path)], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                              text=True, env=env, cwd=path.parent) for path in (NAIVE, fixed_copy)]
    (original, err_a), (fixed, err_b) = (p.communicate(timeout=120) for p in procs)
    assert procs[0].returncode == 0, err_a
    assert procs[1].returncode == 0, err_b
    lines_a, lines_b = original.splitlines(), fixed.splitlines()
    assert len(lines_a) == len(lines_b) > 5
    for a, b in zip(lines_a, lines_b):
        assert NUMBER.sub("#", a) == NUMBER.sub("#", b)  # same text around the numbers: no `tensor(...)`
        for x, y in zip(NUMBER.findall(a), NUMBER.findall(b)):
            assert float(x) == pytest.approx(float(y), rel=1e-3, abs=1e-4), (a, b)
