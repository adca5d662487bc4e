"""Code reached only after a failure (an `except RuntimeError:` out-of-memory fallback, and a mode that only such a
fallback passes to a helper) runs once per failure, not every step: the labels' stance on error paths. A handler of
a control-flow exception (`except StopIteration:`, `except KeyError:`) may run every step and stays reported."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

FALLBACK = '''
import torch
from torch.utils.data import DataLoader


def assign(preds, targets, mode="gpu"):
    if mode == "cpu":
        preds = preds.cpu()
        targets = targets.cpu()
    return (preds - targets).abs()


model = torch.nn.Linear(4, 2).cuda()
opt = torch.optim.SGD(model.parameters(), lr=0.1)
loader = DataLoader(list(range(8)), batch_size=2, pin_memory=True)
for x, y in loader:
    x, y = x.cuda(non_blocking=True), y.cuda(non_blocking=True)
    out = model(x)
    try:
        cost = assign(out, y)
    except RuntimeError as e:
        if "out of memory" not in str(e):
            raise
        torch.cuda.empty_cache()
        cost = assign(out, y, "cpu")
    out.sum().backward()
    opt.step()
'''


def lint(root: Path, *args: str) -> set:
    out = subprocess.run([sys.executable, "-m", "gpulint", "check", "--output-format", "json", "--no-cache",
                          "--exit-zero", *args], cwd=root, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    return {(d["location"]["row"], d["code"]) for d in json.loads(out.stdout)}


def write(root: Path, text: str) -> None:
    (root / "pyproject.toml").write_text("[project]\nname = 'p'\n")
    (root / "train.py").write_text(textwrap.dedent(text))


def test_an_out_of_memory_fallback_and_the_mode_it_switches_to_are_quiet(tmp_path: Path):
    write(tmp_path, FALLBACK)
    found = lint(tmp_path, "train.py")
    assert not {f for f in found if f[1] in ("GPU104", "GPU110")}, found


def test_the_same_mode_passed_outside_a_handler_is_reported(tmp_path: Path):
    write(tmp_path, FALLBACK.replace("cost = assign(out, y)\n", "cost = assign(out, y, \"cpu\")\n", 1))
    found = lint(tmp_path, "train.py")
    assert (8, "GPU104") in found and (9, "GPU104") in found


def test_a_handler_of_a_control_flow_exception_stays_reported(tmp_path: Path):
    write(tmp_path, FALLBACK.replace("except RuntimeError as e:", "except KeyError as e:"))
    found = lint(tmp_path, "train.py")
    assert (24, "GPU110") in found
    assert (8, "GPU104") in found
