"""Shared helpers for the rule fixtures of fixtures/rules/<CODE>/ (used by tests/test_rule_snapshots.py).

Layout: fixtures/rules/<CODE>/positive*.py and negative*.py. Each is linted with only <CODE> enabled; findings are
marked inline with `# expect: CODE`, negative cases are labelled `# case:`, and a fixture that needs
`report_periodic` says so with `# gpulint-fixture: report-periodic`.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from gpulint.runner import FixMode, lint_source

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures" / "rules"
EXPECT = re.compile(r"#.*?expect:\s*((?:GPU\d{3}[\s,]*)+)")
CASE = re.compile(r"^\s*# case:", re.MULTILINE)

# Fixtures whose rule change is still to come: id ("GPU301/positive_returned.py") -> reason (strict xfail, so the
# marker must go when the rule is fixed).
PENDING: dict[str, str] = {}


def fixture_files():
    for path in sorted(FIXTURES.glob("GPU*/*.py")):
        param_id = f"{path.parent.name}/{path.name}"
        reason = PENDING.get(param_id)
        marks = () if reason is None else (pytest.mark.xfail(reason=reason, strict=True),)
        yield pytest.param(path, id=param_id, marks=marks)


def expected_findings(text: str) -> list[tuple[int, str]]:
    found = []
    for row, line in enumerate(text.splitlines(), start=1):
        m = EXPECT.search(line)
        if m:
            found.extend((row, code) for code in re.findall(r"GPU\d{3}", m.group(1)))
    return sorted(found)


def options(text: str) -> dict:
    return {"report_periodic": "# gpulint-fixture: report-periodic" in text}


def lint(text: str, code: str, fix: FixMode = FixMode.NONE, report_periodic: bool = False):
    return lint_source(text, "fixture.py", frozenset({code}), fix=fix, report_periodic=report_periodic)
