"""Every rule's fixtures: findings marked inline with `# expect: CODE`, fixes compared with `.fixed.py` twins.

Layout: fixtures/rules/<CODE>/positive*.py and negative*.py. Each is linted with only <CODE> enabled.
A `.fixed.py` twin holds the expected result of `--fix --unsafe-fixes`; fixing it again must change nothing.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from gpulint.rule import all_rules
from gpulint.runner import FixMode, lint_source

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures" / "rules"
EXPECT = re.compile(r"#.*?expect:\s*((?:GPU\d{3}[\s,]*)+)")
CASE = re.compile(r"^\s*# case:", re.MULTILINE)


def fixture_files():
    for path in sorted(FIXTURES.glob("GPU*/*.py")):
        if not path.name.endswith(".fixed.py"):
            yield pytest.param(path, id=f"{path.parent.name}/{path.name}")


def expected_findings(text: str) -> list[tuple[int, str]]:
    found = []
    for row, line in enumerate(text.splitlines(), start=1):
        m = EXPECT.search(line)
        if m:
            found.extend((row, code) for code in re.findall(r"GPU\d{3}", m.group(1)))
    return sorted(found)


# Issue 13: GPU301 still treats a returned accumulator as deliberate when the loss was already backpropagated
# in the loop. The change belongs to rules/ (being split into one file per rule); strict, so the marker must go
# when the rule is fixed.
PENDING: dict[str, str] = {}  # fixtures whose rule change is still to come: id -> reason (strict xfail)


def _with_pending(params):
    for param in params:
        reason = PENDING.get(param.id)
        yield param if reason is None else pytest.param(
            *param.values, id=param.id, marks=pytest.mark.xfail(reason=reason, strict=True))


def lint(text: str, code: str, fix=FixMode.NONE, report_periodic=False):
    return lint_source(text, "fixture.py", frozenset({code}), fix=fix, report_periodic=report_periodic)


def options(text: str) -> dict:
    return {"report_periodic": "# gpulint-fixture: report-periodic" in text}


@pytest.mark.parametrize("path", list(_with_pending(fixture_files())))
def test_findings_match_markers(path: Path):
    code = path.parent.name
    text = path.read_text(encoding="utf-8")
    result = lint(text, code, **options(text))
    assert not result.errors
    got = sorted((d.location.row, d.code) for d in result.diagnostics)
    assert got == expected_findings(text)


@pytest.mark.parametrize("path", list(_with_pending(fixture_files())))
def test_fix_matches_fixed_twin(path: Path):
    code = path.parent.name
    text = path.read_text(encoding="utf-8")
    twin = path.with_name(path.stem + ".fixed.py")
    result = lint(text, code, FixMode.UNSAFE, **options(text))
    assert not result.errors
    if not twin.exists():
        assert result.source == text, f"{path.name} has fixes but no {twin.name}"
        return
    expected = twin.read_text(encoding="utf-8")
    assert result.source == expected
    compile(result.source, str(twin), "exec")
    # Idempotent: fixing the fixed file changes nothing.
    assert lint(expected, code, FixMode.UNSAFE, **options(text)).source == expected
    # The fix removed what it claimed to.
    assert len(lint(expected, code, **options(text)).diagnostics) < len(lint(text, code, **options(text)).diagnostics)


@pytest.mark.parametrize("code", sorted(all_rules()))
def test_every_rule_has_enough_cases(code: str):
    folder = FIXTURES / code
    positives = [p for p in folder.glob("positive*.py") if not p.name.endswith(".fixed.py")]
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
