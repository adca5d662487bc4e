"""Per-rule snapshots (syrupy): each fixture file of fixtures/rules/<CODE>/ -> its findings and its fixed text.

Regenerate after an intended change with `python -m pytest tests/test_rule_snapshots.py --snapshot-update`
and review the diff of tests/__snapshots__/test_rule_snapshots.ambr. The `# expect: CODE` markers in the
fixtures stay as readable labels: the findings must also sit on exactly the marked lines.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from gpulint.diagnostics import FixMode
from gpulint.runner import lint_source
from test_fixtures import expected_findings, fixture_files, options


@pytest.mark.parametrize("path", list(fixture_files()))
def test_rule_fixture_snapshot(path: Path, snapshot):
    code = path.parent.name
    text = path.read_text(encoding="utf-8")
    found = lint_source(text, "fixture.py", frozenset({code}), **options(text))
    fixed = lint_source(text, "fixture.py", frozenset({code}), fix=FixMode.UNSAFE, **options(text))
    assert found.errors == [] and fixed.errors == []
    assert sorted((d.location.row, d.code) for d in found.diagnostics) == expected_findings(text)
    findings = [f"{d.location.row}:{d.location.column} {d.code} "
                f"{'[' + d.fix.applicability.value + ' fix] ' if d.fix else ''}{d.message}" for d in found.diagnostics]
    assert {"findings": findings, "fixed": fixed.source if fixed.source != text else None} == snapshot
