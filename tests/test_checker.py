"""gpulint.checker.run_rules: one pass, deference from the rules' metadata, crashes returned as data."""

from __future__ import annotations

import libcst as cst
import pytest

from gpulint import rule as rule_module
from gpulint.analysis import ModuleAnalysis
from gpulint.checker import RuleError, run_rules
from gpulint.rule import Family, GpuRule, all_rules
from gpulint.runner import lint_source

LOOP = """import torch
model = torch.nn.Linear(2, 2).cuda()
total = 0.0
for x in loader:
    loss = model(x).sum()
    loss.backward()
    total += loss.item()
print(total)
"""


def analyse(text: str) -> ModuleAnalysis:
    return ModuleAnalysis(cst.parse_module(text), text)


def test_deference_is_resolved_from_metadata():
    assert "GPU302" in all_rules()["GPU101"].defers_to
    found, errors = run_rules(analyse(LOOP), {"GPU101", "GPU302"})
    assert errors == []
    assert [d.code for d in found] == ["GPU302"]  # GPU101's finding on the same `.item()` is dropped


def test_deferred_to_rule_silences_even_when_not_enabled():
    found, _ = run_rules(analyse(LOOP), {"GPU101"})
    assert found == []  # enabling fewer rules never adds findings


FP32_STEP = """import torch
model = torch.nn.Sequential(torch.nn.Linear(512, 512), torch.nn.Linear(512, 10)).cuda()
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for x in loader:
    loss = model(x).sum()
    loss.backward()
    opt.step()
"""


def test_tf32_is_not_suggested_where_autocast_is():
    """GPU404 defers, module-wide, to an enabled GPU403: under bf16 autocast TF32 adds nothing. With GPU403 off
    (no mixed precision wanted), TF32 is the lever left and GPU404 reports it."""
    assert all_rules()["GPU404"].defers_in_module_to == ("GPU403",)
    found, _ = run_rules(analyse(FP32_STEP), {"GPU403", "GPU404"})
    assert [d.code for d in found] == ["GPU403"]
    found, _ = run_rules(analyse(FP32_STEP), {"GPU404"})
    assert [d.code for d in found] == ["GPU404"]


@pytest.fixture
def broken_rule(monkeypatch):
    class Broken(GpuRule):
        """Always crashes."""
        family = Family.HOST_SYNC

        def visit_Call(self, node):
            raise ValueError("boom")

    Broken.code, Broken.name = "GPU999", "broken"
    Broken._visitors = {"Call": "visit_Call"}
    monkeypatch.setitem(rule_module.REGISTRY, "GPU999", Broken)
    return Broken


def test_rule_crash_is_returned_as_structured_error(broken_rule):
    found, errors = run_rules(analyse(LOOP), {"GPU999", "GPU302"})
    assert [d.code for d in found] == ["GPU302"]  # the other rules still run
    assert len(errors) == 1
    error = errors[0]
    assert isinstance(error, RuleError) and error.code == "GPU999" and "ValueError: boom" in error.reason
    assert isinstance(error.node, cst.Call)
    result = lint_source(LOOP, "train.py", frozenset({"GPU999"}))
    assert result.errors and "internal error in GPU999" in result.errors[0]
