"""The throughput rules (GPU4xx): each rule's own VALID/INVALID examples, and the numerics of GPU405's fix.

The examples follow `gpulint.rule.Example`'s contract: VALID code gives no finding of the rule; INVALID code gives
`count` findings whose message contains `message`, and `--fix --unsafe-fixes` turns it into `fixed` (None: no fix),
which compiles and is left alone by a second pass.
"""

from __future__ import annotations

import pytest

from gpulint.diagnostics import FixMode
from gpulint.rule import all_rules
from gpulint.runner import lint_source

RULES = {code: rule for code, rule in all_rules().items() if code.startswith("GPU4")}
VALID = [pytest.param(code, src, id=f"{code}-valid-{i}") for code, rule in RULES.items()
         for i, src in enumerate(rule.VALID)]
INVALID = [pytest.param(code, ex, id=f"{code}-invalid-{i}") for code, rule in RULES.items()
           for i, ex in enumerate(rule.INVALID)]


def lint(code: str, source: str, fix=FixMode.NONE):
    result = lint_source(source, "example.py", frozenset({code}), fix=fix)
    assert not result.errors
    return result


@pytest.mark.parametrize("code, source", VALID)
def test_valid_examples_are_silent(code, source):
    assert lint(code, source).diagnostics == []


@pytest.mark.parametrize("code, example", INVALID)
def test_invalid_examples_report_and_fix(code, example):
    found = lint(code, example.code).diagnostics
    assert len(found) == example.count
    assert all(example.message in d.message for d in found)
    fixed = lint(code, example.code, FixMode.UNSAFE).source
    if example.fixed is None:
        assert fixed == example.code
        return
    assert fixed == example.fixed
    compile(fixed, "fixed.py", "exec")
    assert lint(code, fixed, FixMode.UNSAFE).source == fixed
    assert lint(code, fixed).diagnostics == []


def test_every_throughput_rule_has_examples():
    assert sorted(RULES) == ["GPU402", "GPU403", "GPU404", "GPU405", "GPU406", "GPU407", "GPU408"]
    for rule in RULES.values():
        assert rule.VALID and rule.INVALID
