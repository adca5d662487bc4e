"""The data-path throughput rules (GPU409-GPU413) and the GPU204 fix: each rule's own VALID/INVALID examples,
and the behaviour a user would notice (the fixed program trains on the same data)."""

from __future__ import annotations

import pytest

from gpulint.rule import all_rules
from gpulint.runner import FixMode, lint_source

CODES = [c for c in ("GPU204", "GPU409", "GPU410", "GPU412", "GPU413") if c in all_rules()]


def _lint(code: str, text: str, fix: FixMode = FixMode.NONE):
    result = lint_source(text, "example.py", frozenset({code}), fix=fix)
    assert not result.errors
    return result


@pytest.mark.parametrize("code", CODES)
def test_valid_examples_are_silent(code):
    for text in all_rules()[code].VALID:
        assert [d.message for d in _lint(code, text).diagnostics] == [], text


@pytest.mark.parametrize("code", CODES)
def test_invalid_examples_report_and_fix(code):
    cls = all_rules()[code]
    assert cls.INVALID, f"{code} has no INVALID example"
    for example in cls.INVALID:
        found = _lint(code, example.code).diagnostics
        assert len(found) == example.count, example.code
        assert all(example.message in d.message for d in found)
        fixed = _lint(code, example.code, FixMode.UNSAFE).source
        if example.fixed is None:
            assert fixed == example.code
        else:
            assert fixed == example.fixed
            compile(fixed, "fixed.py", "exec")
            assert _lint(code, fixed, FixMode.UNSAFE).source == fixed  # idempotent


# -- GPU204's fix keeps the training data: run the original and the fixed program on the CPU ----------------------
LOADER_PROGRAM = """\
import torch
from torch.utils.data import DataLoader, TensorDataset

device = "cuda" if torch.cuda.is_available() else "cpu"
torch.manual_seed(0)
X = torch.randn(103, 4)
Y = torch.arange(103)
loader = DataLoader(TensorDataset(X, Y), batch_size=10, shuffle={shuffle}, drop_last={drop_last})
seen = []
for epoch in range(3):
    for x, y in loader:
        x, y = x.to(device), y.to(device)
        seen.append((epoch, x.cpu(), y.cpu()))
"""


def _run(source: str):
    namespace: dict = {}
    exec(compile(source, "program.py", "exec"), namespace)
    return namespace["seen"]


@pytest.mark.parametrize("drop_last", [False, True])
@pytest.mark.parametrize("shuffle", [False, True])
def test_gpu204_fix_trains_on_the_same_batches(shuffle, drop_last):
    torch = pytest.importorskip("torch")
    original = LOADER_PROGRAM.format(shuffle=shuffle, drop_last=drop_last)
    fixed = _lint("GPU204", original, FixMode.UNSAFE).source
    assert "DataLoader(TensorDataset" not in fixed
    assert ("torch.randperm" if shuffle else "torch.arange") in fixed
    before, after = _run(original), _run(fixed)
    assert [(e, len(y)) for e, _, y in before] == [(e, len(y)) for e, _, y in after]  # same batch sizes
    if not shuffle:  # bit-identical batches
        for (_, xb, yb), (_, xa, ya) in zip(before, after):
            assert torch.equal(xb, xa) and torch.equal(yb, ya)
        return
    for epoch in range(3):  # the same samples each epoch, each row still paired with its label
        got_b = torch.cat([y for e, _, y in before if e == epoch]).sort().values
        got_a = torch.cat([y for e, _, y in after if e == epoch]).sort().values
        if not drop_last:
            assert torch.equal(got_a, torch.arange(103)) and torch.equal(got_b, got_a)
        else:
            assert len(got_a) == len(got_b) == 100 and len(set(got_a.tolist())) == 100
    xs = {int(y): x for _, xb, yb in before for x, y in zip(xb, yb)}
    assert all(torch.equal(xs[int(y)], x) for _, xa, ya in after for x, y in zip(xa, ya))
