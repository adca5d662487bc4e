"""The contract between GPU3xx and GPU1xx, linted with all of them on: every `.item()` sync in an accumulation is
reported once, by one rule, and its fix leaves none of them. Single-rule cases are the rules' VALID/INVALID examples."""

from __future__ import annotations

import textwrap

from gpulint.runner import FixMode, lint_source

PRELUDE = """\
import torch
import torch.nn as nn
from torch.utils.data import DataLoader
device = torch.device("cuda")
model = nn.Linear(8, 2).to(device)
criterion = nn.CrossEntropyLoss()
loader = DataLoader([1, 2], batch_size=1, pin_memory=True)
"""
SYNC_CODES = ("GPU101", "GPU104", "GPU105", "GPU301", "GPU302", "GPU303")


def lint(body: str, codes=SYNC_CODES, fix=FixMode.NONE):
    return lint_source(PRELUDE + textwrap.dedent(body), "t.py", frozenset(codes), fix=fix)


def codes(body: str, **kw) -> list[str]:
    return sorted(d.code for d in lint(body, **kw).diagnostics)


def test_accumulated_item_is_reported_by_gpu302_not_gpu101():
    assert codes("""
        total = 0.0
        for x, y in loader:
            loss = criterion(model(x), y)
            loss.backward()
            total += loss.item()
    """) == ["GPU302"]


def test_a_shape_gpu302_declines_is_still_reported_by_gpu101():
    # `total += loss.item() * w` with a tensor weight is not a plain number sum: GPU101 keeps it.
    assert codes("""
        total = 0.0
        for x, y in loader:
            loss = criterion(model(x), y)
            loss.backward()
            total += loss.item() * y.float().mean()
    """) == ["GPU101"]


def test_cpu_copy_in_a_metric_counter_is_gpu303s():
    assert codes("""
        correct = 0
        for x, y in loader:
            out = model(x)
            out.sum().backward()
            correct += (out.argmax(1) == y).sum().cpu()
    """) == ["GPU303"]


def test_float_of_loss_in_a_sum_is_gpu302s_not_gpu105s():
    assert codes("""
        total = 0.0
        for x, y in loader:
            loss = criterion(model(x), y)
            loss.backward()
            total += float(loss)
    """) == ["GPU302"]


def test_running_loss_printed_bare_is_converted_where_it_is_printed():
    result = lint("""
        running = 0.0
        for step, (x, y) in enumerate(loader):
            loss = criterion(model(x), y)
            loss.backward()
            running += loss.item()
            if step % 10 == 9:
                print("loss", running / 10)
                running = 0.0
    """, fix=FixMode.UNSAFE)
    assert "running += loss.detach()" in result.source
    assert 'print("loss", float(running) / 10)' in result.source  # prints a number, not `tensor(...)`
    assert not result.diagnostics


def test_no_fix_when_the_sum_is_read_every_step():
    result = lint("""
        running = 0.0
        for x, y in loader:
            loss = criterion(model(x), y)
            loss.backward()
            running += loss.item()
            best = min(best, running)
    """, fix=FixMode.UNSAFE)
    assert "running += loss.item()" in result.source
    assert [d.code for d in result.diagnostics] == ["GPU302"]


def test_no_fix_for_a_global_accumulator():
    result = lint("""
        total = 0.0
        def step(x, y):
            global total
            loss = criterion(model(x), y)
            loss.backward()
            total += loss.item()
        for x, y in loader:
            step(x, y)
    """, fix=FixMode.UNSAFE)
    assert "total += loss.item()" in result.source
    assert [d.code for d in result.diagnostics] == ["GPU302"]
