"""A project helper computing its result from the device tensors a call hands it (branch recall57,
analysis/derived_returns.py): the ImageNet example's `accuracy(output, target, topk=(1, 5))` returns a list of
tensors made from `output` and `target` by tensor methods, so `acc1, acc5 = accuracy(out, y, topk=(1, 5))` are
device tensors at a call given device tensors, and formatting `acc1[0]` every step waits for the GPU
(mdistiller's meters, heldout15). A helper returning a count, one given host tensors, or one that moves what it
computes elsewhere stays unknown."""

from __future__ import annotations

import pytest

from tests.projects import check, found, write_project

METRICS = """\
import torch


def accuracy(output, target, topk=(1,)):
    with torch.no_grad():
        maxk = max(topk)
        batch_size = target.size(0)
        _, pred = output.topk(maxk, 1, True, True)
        pred = pred.t()
        correct = pred.eq(target.reshape(1, -1).expand_as(pred))
        res = []
        for k in topk:
            correct_k = correct[:k].reshape(-1).float().sum(0, keepdim=True)
            res.append(correct_k.mul_(100.0 / batch_size))
        return res


def error_rate(output, target):
    return 100.0 - output.argmax(1).eq(target).float().mean() * 100


def count_right(output, target):
    return int((output.argmax(1) == target).sum())


def batch_count(output, target):
    return target.size(0)


def scaled(t):
    return t * 2


def pair(a, b):
    return a * 2, b * 2
"""

TRAIN = """\
import torch
from torch.utils.data import DataLoader
from metrics import accuracy, error_rate, count_right, batch_count, scaled, pair


def train(model, dataset, optimizer):
    loader = DataLoader(dataset, batch_size=32, pin_memory=True, num_workers=4)
    for step, (x, y) in enumerate(loader):
        x, y = x.cuda(non_blocking=True), y.cuda(non_blocking=True)
        out = model(x)
        loss = torch.nn.functional.cross_entropy(out, y)
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        optimizer.step()
        {line}
"""


def _found(tmp_path, line: str) -> set:
    write_project(tmp_path, {"metrics.py": METRICS, "train.py": TRAIN.format(line=line)})
    return {(row, code) for path, row, code in found(check(tmp_path, "--select", "GPU1", "--no-cache"))
            if path == "train.py"}


@pytest.mark.parametrize("line,code", [
    ('acc1, acc5 = accuracy(out, y, topk=(1, 5)); print(f"top-1 {acc1[0]:.2f}")', "GPU107"),
    ("acc1, = accuracy(out, y); top1 = float(acc1)", "GPU105"),
    ('print("error {:.3f}".format(error_rate(out, y)))', "GPU107"),
])
def test_a_helper_result_computed_from_device_tensors_is_a_device_tensor(tmp_path, line, code):
    assert (15, code) in _found(tmp_path, line)


@pytest.mark.parametrize("line", [
    'print("right {}".format(count_right(out, y)))',  # a host number (the helper's own read: GPU112)
    'print("batch {}".format(batch_count(out, y)))',  # a count
    'acc1, = accuracy(out.cpu(), y.cpu()); print(f"top-1 {acc1[0]:.2f}")',  # given host tensors
    'if step % 100 == 0: print(f"top-1 {accuracy(out, y)[0][0]:.2f}")',  # periodic
])
def test_counts_host_results_and_periodic_reads_are_fine(tmp_path, line):
    assert {f for f in _found(tmp_path, line) if f[1] in ("GPU105", "GPU107")} == set()


@pytest.mark.parametrize("line", [
    "z = scaled(out)\n        z = scaled(z)\n        print(f'{z}')",
    # LoRA's `lm_net, optimizer = distributed_opt(args, lm_net, optimizer, ...)` recursed
    "p, q = out, y\n        p, q = pair(p, q)\n        print(f'{p}')",
    "for _ in range(2):\n            out, y = pair(out, y)\n        print(f'{out}')",
])
def test_a_name_rebound_to_the_helper_s_result_is_linted(tmp_path, line):
    assert any(code == "GPU107" for _, code in _found(tmp_path, line))


EXISTS = '''import torch


def exists(val):
    return val is not None


def train(model, loader, optimizer):
    model = model.cuda()
    for x, mask in loader:
        x = x.cuda(non_blocking=True)
        mask = mask.cuda(non_blocking=True)
        if exists(mask):
            x = x.masked_fill(~mask, 0.0)
        loss = model(x).sum()
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
'''


def test_an_identity_test_of_a_device_tensor_is_a_python_bool(tmp_path):
    # `exists(mask)` returns `mask is not None`: branching on it reads nothing from the GPU
    got = found(check(write_project(tmp_path / "p", {"train.py": EXISTS}), "--no-cache"))
    assert ("train.py", 13, "GPU106") not in got
