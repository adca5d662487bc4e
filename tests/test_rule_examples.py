"""Every VALID and INVALID example of every rule (class attributes, Fixit-style), run automatically."""

from __future__ import annotations

import pytest

from gpulint.diagnostics import FixMode
from gpulint.rule import all_rules
from gpulint.runner import lint_source


def _examples(kind: str):
    for code, cls in all_rules().items():
        for i, example in enumerate(getattr(cls, kind)):
            yield pytest.param(code, example, id=f"{code}-{kind.lower()}-{i}")


def _lint(code: str, text: str, fix: FixMode = FixMode.NONE, periodic: bool = False):
    result = lint_source(text, "example.py", frozenset({code}), fix=fix, report_periodic=periodic)
    assert result.errors == []
    return result


@pytest.mark.parametrize("code, text", list(_examples("VALID")))
def test_valid_example_has_no_finding(code: str, text: str):
    assert [d.code for d in _lint(code, text).diagnostics] == []


@pytest.mark.parametrize("code, example", list(_examples("INVALID")))
def test_invalid_example_is_reported_and_fixed(code: str, example):
    found = _lint(code, example.code, periodic=example.periodic).diagnostics
    assert [d.code for d in found] == [code] * example.count
    assert all(example.message in d.message for d in found)
    fixed = _lint(code, example.code, FixMode.UNSAFE, example.periodic).source
    assert fixed == (example.fixed if example.fixed is not None else example.code)
    if example.fixed is not None:  # the fix compiles, removes what it fixed, and fixing again changes nothing
        compile(fixed, "fixed.py", "exec")
        assert _lint(code, fixed, periodic=example.periodic).diagnostics == []
        assert _lint(code, fixed, FixMode.UNSAFE, example.periodic).source == fixed


def test_every_rule_has_examples():
    missing = [code for code, cls in all_rules().items() if not cls.pseudo and not (cls.VALID and cls.INVALID)]
    assert missing == []
