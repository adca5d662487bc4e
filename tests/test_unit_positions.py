"""Findings' positions from the smallest statement that holds them (gpulint/unit_positions.py)."""

from __future__ import annotations

import ast
from pathlib import Path

import libcst as cst
import pytest
from libcst.metadata import MetadataWrapper, PositionProvider

from gpulint import runner
from gpulint.analysis import ModuleAnalysis
from gpulint.runner import first_lines, lint_source
from gpulint.rule import all_rules
from gpulint.unit_positions import UnitPositions

ROOT = Path(__file__).resolve().parent.parent
DEFAULT = frozenset(code for code, rule in all_rules().items() if not rule.preview)


def _both(text: str):
    module = cst.parse_module(text)
    full = MetadataWrapper(module, unsafe_skip_copy=True).resolve(PositionProvider)
    analysis = ModuleAnalysis(module, text)
    return analysis, full, UnitPositions(analysis, text, first_lines(ast.parse(text)))


def _expressions(analysis):
    return [n for n in analysis.index.nodes if isinstance(n, (cst.Call, cst.Name, cst.Attribute, cst.Subscript))]


@pytest.mark.parametrize("path", sorted((ROOT / "fixtures").rglob("*.py")), ids=lambda p: p.name)
def test_every_position_a_unit_gives_is_the_one_of_the_whole_module(path):
    text = path.read_text(encoding="utf-8")
    try:
        ast.parse(text)
    except SyntaxError:
        pytest.skip("not Python")
    analysis, full, units = _both(text)
    nodes = _expressions(analysis)
    given = {n: units.position(n) for n in nodes}
    assert all(where == full[n] for n, where in given.items() if where is not None)
    calls = [n for n in nodes if isinstance(n, cst.Call) and isinstance(analysis.parent(n), cst.Expr)
             or isinstance(n, cst.Call) and isinstance(analysis.parent(n), (cst.Assign, cst.AugAssign))]
    if calls:  # calls in statements of their own or assigned: nearly always a simple statement's
        assert sum(given[n] is not None for n in calls) >= 0.9 * len(calls)


TRICKY = (
    "import torch\n"
    "\n"
    "def train(model, loader, opt):\n"
    "\ttotal = 0\n"  # a tab-indented function
    "\tfor x, y in loader:  # the loop\n"
    "\t\tloss = model(x,\n"
    "\t\t             y).sum()\n"
    "\n"
    "\t\t# a comment before the statement\n"
    "\t\ttotal += (loss\n"
    "\t\t          .item())\n"
    "\t\tif loss.item() > 3: print('big')\n"
    "\t\telif loss.item() < 0:\n"
    "\t\t\tpass\n"
    "\t\twith torch.no_grad():\n"
    "\t\t\tfor p in model.parameters(): p.add_(1)\n"
    "\treturn total\n"
)


@pytest.mark.parametrize("newline", ["\n", "\r\n"])
def test_continuation_lines_tabs_comments_and_crlf(newline):
    text = TRICKY.replace("\n", newline)
    analysis, full, units = _both(text)
    nodes = _expressions(analysis)
    handled = [n for n in nodes if units.position(n) is not None]
    assert handled and all(units.position(n) == full[n] for n in handled)
    # the `.item()` on a continuation line
    item = next(n for n in nodes if isinstance(n, cst.Call) and full[n].start.line == 10)
    assert full[item].end.line == 11 and units.position(item) == full[item]
    # `elif` tests and one-line suites are left to the whole-statement path
    elif_call = next(n for n in nodes if isinstance(n, cst.Call) and analysis.code(n) == "loss.item()"
                     and full[n].start.line == 13)
    assert units.position(elif_call) is None
    suite_call = next(n for n in nodes if isinstance(n, cst.Call) and analysis.code(n) == "p.add_(1)")
    assert units.position(suite_call) is None


def test_a_finding_deep_in_a_long_function_never_prints_the_function(monkeypatch):
    body = "".join(f"        x{i} = model(x) + {i}\n" for i in range(400))
    text = ("import torch\n\ndef train(model, loader):\n    model.cuda()\n    for x in loader:\n" + body +
            "        print(x.sum().item())\n")
    expected = lint_source(text, "t.py", DEFAULT).diagnostics
    assert [(d.code, d.location.row, d.location.column) for d in expected if d.code == "GPU101"] == [
        ("GPU101", 406, 15)]

    def whole_statement(*args, **kwargs):
        raise AssertionError("the whole top-level statement was printed for a position")

    monkeypatch.setattr(runner, "_statement_positions", whole_statement)
    found = lint_source(text, "t.py", DEFAULT).diagnostics
    assert [(d.code, d.location, d.end_location) for d in found] == \
        [(d.code, d.location, d.end_location) for d in expected]
