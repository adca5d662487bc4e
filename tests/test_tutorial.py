"""The PyTorch Quickstart tutorial's train/test loops, as users copy them: each per-step cost reported once,
with line and column; the periodic `if batch % 100 == 0: loss.item()` left alone; fixes that still parse."""

from __future__ import annotations

from pathlib import Path

from gpulint.rule import all_rules
from gpulint.runner import FixMode, lint_source

SOURCE = (Path(__file__).parent / "data" / "quickstart_tutorial.py").read_text()
ALL = frozenset(all_rules())


def test_each_per_step_cost_is_reported_once():
    found = [(d.location.row, d.location.column, d.code) for d in lint_source(SOURCE, "q.py", ALL).diagnostics]
    assert found == [
        (11, 20, "GPU201"), (12, 19, "GPU201"),  # loaders feeding the GPU, not pinned
        (38, 16, "GPU202"), (38, 30, "GPU202"),  # train: X.to(device), y.to(device)
        (56, 20, "GPU202"), (56, 34, "GPU202"),  # test: the same copies
        (58, 26, "GPU302"),  # test_loss += loss_fn(pred, y).item()
        (59, 24, "GPU303"),  # correct += (...).sum().item()
        (60, 33, "GPU107"),  # an every-batch print of a tensor
    ]
    periodic_row = next(i for i, line in enumerate(SOURCE.splitlines(), 1) if "loss, current = loss.item()" in line)
    assert periodic_row not in {row for row, _, _ in found}


def test_fixes_parse_and_leave_fewer_findings():
    safe = lint_source(SOURCE, "q.py", ALL, fix=FixMode.SAFE)
    unsafe = lint_source(SOURCE, "q.py", ALL, fix=FixMode.UNSAFE)
    for result in (safe, unsafe):
        compile(result.source, "q.py", "exec")
        assert not result.errors
    assert "pin_memory=torch.cuda.is_available()" in safe.source and "non_blocking=True" in safe.source
    assert "test_loss += loss_fn(pred, y).item()" in safe.source  # unsafe fixes wait for --unsafe-fixes
    assert len(unsafe.diagnostics) < len(safe.diagnostics) < 9
    assert [d.code for d in unsafe.diagnostics] == ["GPU107"]
