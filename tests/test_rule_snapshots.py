"""Per-rule snapshots (syrupy): each fixture file of fixtures/rules/<CODE>/ -> its findings and its fixed text.

Regenerate after an intended change with `python -m pytest tests/test_rule_snapshots.py --snapshot-update`
and review the diff of tests/__snapshots__/test_rule_snapshots.ambr. The `# expect: CODE` markers in the
fixtures stay as readable labels: the findings must also sit on exactly the marked lines. The snapshot's `fixed`
is the result of `--fix --unsafe-fixes` (None: the fix changes nothing); fixing it again must change nothing.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from gpulint.diagnostics import FixMode
from gpulint.rule import all_rules
from rulecases import CASE, FIXTURES, expected_findings, fixture_files, lint, options


@pytest.mark.parametrize("path", list(fixture_files()))
def test_rule_fixture_snapshot(path: Path, snapshot):
    code = path.parent.name
    text = path.read_text(encoding="utf-8")
    found = lint(text, code, **options(text))
    fixed = lint(text, code, FixMode.UNSAFE, **options(text))
    assert found.errors == [] and fixed.errors == []
    assert sorted((d.location.row, d.code) for d in found.diagnostics) == expected_findings(text)
    findings = [f"{d.location.row}:{d.location.column} {d.code} "
                f"{'[' + d.fix.applicability.value + ' fix] ' if d.fix else ''}{d.message}" for d in found.diagnostics]
    assert {"findings": findings, "fixed": fixed.source if fixed.source != text else None} == snapshot
    if fixed.source != text:
        compile(fixed.source, str(path), "exec")
        # Idempotent: fixing the fixed text changes nothing.
        assert lint(fixed.source, code, FixMode.UNSAFE, **options(text)).source == fixed.source
        # The fix removed what it claimed to.
        assert len(lint(fixed.source, code, **options(text)).diagnostics) < len(found.diagnostics)


@pytest.mark.parametrize("code", sorted(all_rules()))
def test_every_rule_has_enough_cases(code: str):
    folder = FIXTURES / code
    positives = list(folder.glob("positive*.py"))
    negatives = list(folder.glob("negative*.py"))
    assert positives and negatives, f"{code} needs positive and negative fixtures"
    n_pos = sum(len([c for _, c in expected_findings(p.read_text())]) for p in positives)
    n_neg = sum(len(CASE.findall(p.read_text())) for p in negatives)
    assert n_pos >= 4, f"{code}: {n_pos} positive findings marked, want >= 4"
    assert n_neg >= 4, f"{code}: {n_neg} negative cases (`# case:` comments), want >= 4"
    for neg in negatives:
        assert not expected_findings(neg.read_text()), f"{neg.name} should expect nothing"


@pytest.mark.parametrize("code", sorted(all_rules()))
def test_every_rule_is_documented_in_the_shared_shape(code: str):
    doc = all_rules()[code].__doc__ or ""
    for section in ("## What it does", "## Why it is slow", "## Example", "## Fix", "## Fix safety",
                    "## When it is fine"):
        assert section in doc, f"{code} docs lack {section!r}"
