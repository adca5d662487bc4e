"""Reads a helper makes only for some constant value of one of its parameters (`if reduction == "mean": return
x.mean().item()`) cost nothing at a call passing another constant (`reduction="none"`): neither at the call
(GPU112, through the project summary) nor inside the helper when the module's own calls never take the branch
(GPU101 in per-step helper code)."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

METRICS = '''
import torch


def accuracy(logits, labels, reduction="mean"):
    hits = (logits.argmax(-1) == labels).float()
    if reduction == "mean":
        return hits.mean().item()
    elif reduction == "none":
        return hits


def scores(logits, mode):
    if mode in ("host", "numpy"):
        return logits.cpu()
    return logits


def summed(logits, labels, reduction="none"):
    return accuracy(logits, labels, reduction=reduction)
'''

TRAIN = '''
import torch
from torch.utils.data import DataLoader

import metrics

model = torch.nn.Linear(4, 2).cuda()
opt = torch.optim.SGD(model.parameters(), lr=0.1)
loader = DataLoader(list(range(8)), batch_size=2, pin_memory=True)
for x, y in loader:
    x, y = x.cuda(non_blocking=True), y.cuda(non_blocking=True)
    out = model(x)
    out.sum().backward()
    opt.step()
    per_sample = metrics.accuracy(out, y, reduction="none")
    per_sample_positional = metrics.accuracy(out, y, "none")
    mean = metrics.accuracy(out, y)
    mean_named = metrics.accuracy(out, y, reduction="mean")
    chosen = metrics.accuracy(out, y, reduction=args.reduction)
    kept = metrics.scores(out, "device")
    moved = metrics.scores(out, "numpy")
'''

LOCAL = '''
import torch
from torch.utils.data import DataLoader


def top_k(logits, labels, k, reduction="mean"):
    _, idx = torch.topk(logits, k, dim=-1)
    if reduction == "mean":
        return (idx == labels[:, None]).float().sum(-1).mean().item()
    return (idx == labels[:, None]).float().sum(-1)


def main(top_k_reduction):
    model = torch.nn.Linear(4, 2).cuda()
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    loader = DataLoader(list(range(8)), batch_size=2, pin_memory=True)
    for x, y in loader:
        x, y = x.cuda(non_blocking=True), y.cuda(non_blocking=True)
        out = model(x)
        out.sum().backward()
        opt.step()
        acc1 = top_k(out, y, k=1, reduction="none")
        acc5 = top_k(out, y, 5, "none")
'''


def lint(root: Path, *args: str) -> set:
    out = subprocess.run([sys.executable, "-m", "gpulint", "check", "--output-format", "json", "--no-cache",
                          "--exit-zero", *args], cwd=root, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    return {(Path(d["filename"]).as_posix(), d["location"]["row"], d["code"]) for d in json.loads(out.stdout)}


def write(root: Path, files: dict) -> None:
    (root / "pyproject.toml").write_text("[project]\nname = 'p'\n")
    for name, text in files.items():
        (root / name).write_text(textwrap.dedent(text))


def test_a_call_passing_another_constant_skips_the_helpers_read(tmp_path: Path):
    write(tmp_path, {"metrics.py": METRICS, "train.py": TRAIN})
    found = {row for path, row, code in lint(tmp_path, "--select", "GPU112", "train.py") if code == "GPU112"}
    # reported: the default ("mean"), "mean" named, a value the call does not show, and "numpy" in the tested set
    assert found == {17, 18, 19, 21}


def test_a_wrapper_forwarding_the_parameter_keeps_the_condition(tmp_path: Path):
    extra = TRAIN + '''
    wrapped_default = metrics.summed(out, y)
    wrapped_mean = metrics.summed(out, y, reduction="mean")
'''
    write(tmp_path, {"metrics.py": METRICS, "train.py": extra})
    found = {row for path, row, code in lint(tmp_path, "--select", "GPU112", "train.py") if code == "GPU112"}
    # `summed` hands its own parameter on, a value its call of `accuracy` does not show: the read stays its
    # read whatever `summed` is given (not narrowed further, never dropped)
    assert {23, 24} <= found


def test_per_step_helper_code_under_a_branch_no_call_takes_is_quiet(tmp_path: Path):
    write(tmp_path, {"train.py": LOCAL})
    assert not {f for f in lint(tmp_path, "train.py") if f[2] in ("GPU101", "GPU112")}


def test_per_step_helper_code_under_a_branch_one_call_takes_is_reported(tmp_path: Path):
    taken = LOCAL + "        acc_mean = top_k(out, y, 1)\n"
    write(tmp_path, {"train.py": taken})
    found = lint(tmp_path, "train.py")
    assert ("train.py", 9, "GPU101") in found
    assert ("train.py", 24, "GPU112") in found
