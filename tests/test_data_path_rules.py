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
