"""The GPU204 fix and the behaviour a user would notice: the fixed program trains on the same data.

The data-path rules' own VALID/INVALID examples run in tests/test_rule_examples.py."""

from __future__ import annotations

import pytest

from gpulint.runner import FixMode, lint_source

def _lint(code: str, text: str, fix: FixMode = FixMode.NONE):
    result = lint_source(text, "example.py", frozenset({code}), fix=fix)
    assert not result.errors
    return result


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
