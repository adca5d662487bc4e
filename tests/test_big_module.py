"""The mechanisms that keep one big module's lint linear and cheap (issue 13, "Bounded cost per file").

No timed test: each test checks a mechanism through what it does (how often a statement is printed, how often a
loop's body is walked) and that the results are those of the plain way (LibCST's position provider, CPython's
whole-file parse).
"""

from __future__ import annotations

import ast
from pathlib import Path

import libcst as cst
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from libcst.metadata import MetadataWrapper, PositionProvider

from gpulint import bigfile
from gpulint.analysis import data_facts as data_facts_module
from gpulint.rule import all_rules
from gpulint.runner import _alone_positions, first_lines, lint_source
from test_faults import _generated  # the benchmark's module, N functions of it

REPO = Path(__file__).resolve().parent.parent
CODES = frozenset(all_rules())


def _sources() -> list[Path]:
    return sorted([*REPO.glob("fixtures/**/*.py"), *REPO.glob("rules/host_sync/*.py")])[::2]


def test_one_rendering_gives_a_statements_code_and_libcsts_positions():
    """`_alone_positions` (the lean codegen state) gives, for every top-level statement of the fixtures and rule
    files, the code LibCST prints for it and the positions LibCST's PositionProvider gives its nodes."""
    checked = 0
    for path in _sources():
        try:
            module = cst.parse_module(path.read_text(encoding="utf-8"))
        except cst.ParserSyntaxError:
            continue
        for statement in module.body:
            alone = cst.Module(body=[statement], header=(), footer=(), default_newline=module.default_newline,
                               default_indent=module.default_indent, has_trailing_newline=True)
            expected = MetadataWrapper(alone, unsafe_skip_copy=True).resolve(PositionProvider)
            code, ranges = _alone_positions(module, statement)
            assert code == module.code_for_node(statement), path
            assert ranges == {id(node): (r.start.line, r.start.column, r.end.line, r.end.column)
                              for node, r in expected.items() if node is not alone}, path
            checked += 1
    assert checked > 100


@pytest.fixture
def printed(monkeypatch) -> list:
    """Every statement printed through `Module.code_for_node` while the test runs."""
    calls: list = []
    original = cst.Module.code_for_node

    def counting(self, node):
        if isinstance(node, cst.BaseStatement):  # rules print expressions for their messages
            calls.append(node)
        return original(self, node)

    monkeypatch.setattr(cst.Module, "code_for_node", counting)
    return calls


def test_positions_of_findings_print_no_statement_again(printed):
    """A statement holding findings is rendered once, for its code and its positions together; nothing is
    printed again to find where it starts or to check its code (that was twice the positions' own cost)."""
    result = lint_source(_generated(5), "big.py", CODES)
    assert len(result.diagnostics) >= 5 * 4
    assert printed == []


def test_a_big_file_finds_its_statements_from_the_pieces_lines(printed, monkeypatch):
    """Parsed piece by piece, a big file still knows each top-level statement's first line (from the pieces'
    `ast` trees), so its findings are placed without printing every statement before them; the places are those
    of the whole parse."""
    text = _generated(20)
    monkeypatch.setattr(bigfile, "PIECE", 10**9)
    whole = [(d.code, d.location, d.end_location) for d in lint_source(text, "big.py", CODES).diagnostics]
    monkeypatch.setattr(bigfile, "PIECE", 2_000)
    assert len(bigfile.pieces(text)) > 4
    printed.clear()
    pieces = [(d.code, d.location, d.end_location) for d in lint_source(text, "big.py", CODES).diagnostics]
    assert pieces == whole and len(whole) > 70
    assert printed == []


SHAPES = '''# header comment

import torch; import functools


@functools.lru_cache()
# between decorators
@functools.wraps(print)
def first():
    return """
def not_a_cut():
"""
x = 1; y = 2
class Second:
    pass

# comment before a def
def third(): pass
'''


@pytest.mark.parametrize("repeat", [1, 40])
def test_the_pieces_first_lines_are_the_whole_trees(monkeypatch, repeat):
    text = SHAPES * repeat
    monkeypatch.setattr(bigfile, "PIECE", 200)
    firsts: list[int] = []
    tree = bigfile.python_parse(text, "x.py", firsts)
    expected = first_lines(ast.parse(text))
    if len(bigfile.pieces(text)) == 1:
        assert tree is not None and firsts == []  # the caller has the whole tree
    else:
        assert tree is None and firsts == expected


def test_pieces_with_carriage_returns_give_no_first_lines(monkeypatch):
    """`\\r` line ends might count lines otherwise than CPython: no first lines, the positions are then found by
    printing (still right)."""
    monkeypatch.setattr(bigfile, "PIECE", 200)
    firsts: list[int] = []
    bigfile.python_parse((SHAPES * 40).replace("\n", "\r\n"), "x.py", firsts)
    assert firsts == []
    text = _generated(12).replace("\n", "\r\n")
    monkeypatch.setattr(bigfile, "PIECE", 10**9)
    whole = [(d.code, d.location) for d in lint_source(text, "big.py", CODES).diagnostics]
    monkeypatch.setattr(bigfile, "PIECE", 1_500)
    assert [(d.code, d.location) for d in lint_source(text, "big.py", CODES).diagnostics] == whole
    assert len(whole) > 40


def test_a_loops_body_is_walked_once_for_all_its_copies(monkeypatch):
    """GPU202 asks, for each blocking copy of a loop's batch, whether another copy of it is non-blocking: the
    loop's body is walked once for all of them, not once per copy."""
    copies = "".join(f"        x{i} = x.to(device)\n" for i in range(30))
    source = ("import torch\ndevice = torch.device('cuda')\n\ndef train(model, loader, opt):\n"
              "    for x, y in loader:\n        z = y.to(device, non_blocking=True)\n" + copies +
              "        model(x).sum().backward()\n        opt.step()\n")
    walks: list = []
    original = data_facts_module.DataFacts.body_calls

    def counting(self, loop):
        walks.append(loop)
        return original(self, loop)

    monkeypatch.setattr(data_facts_module.DataFacts, "body_calls", counting)
    found = [d for d in lint_source(source, "t.py", frozenset({"GPU202"})).diagnostics if d.code == "GPU202"]
    assert len(found) == 30
    assert len(walks) == 1


_TEMPLATE_PARTS = ["def f{i}(model, loader, opt):\n    for x, y in loader:\n        x = x.to(device)\n"
                   "        loss = model(x).sum()\n        loss.backward()\n        opt.step()\n",
                   "@decorator\ndef g{i}():\n    return 1\n",
                   "class C{i}:\n    def fit(self, loader):\n        for x in loader:\n"
                   "            print(self.model(x.cuda()).sum().item())\n",
                   "TABLE_{i} = [\n    1,\n    2,\n]\n",
                   "# a comment\n\n"]


@settings(max_examples=30, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.tuples(st.sampled_from(_TEMPLATE_PARTS), st.sampled_from(["", "\n", "\n\n"])),
                min_size=1, max_size=40))
def test_findings_and_places_of_pieces_equal_the_whole_parse(parts):
    """Generated modules linted whole and in pieces (small `PIECE`): the same findings at the same places, with
    the same fixes."""
    text = "import torch\ndevice = torch.device('cuda')\n" + "".join(
        part.format(i=i) + gap for i, (part, gap) in enumerate(parts))
    saved = bigfile.PIECE
    try:
        bigfile.PIECE = 10**9
        whole = lint_source(text, "g.py", CODES, want_edits=True).diagnostics
        bigfile.PIECE = 150
        pieces = lint_source(text, "g.py", CODES, want_edits=True).diagnostics
    finally:
        bigfile.PIECE = saved
    assert [(d.code, d.location, d.end_location, d.message, d.edits) for d in pieces] == \
        [(d.code, d.location, d.end_location, d.message, d.edits) for d in whole]


def test_a_names_uses_are_walked_once_per_module_not_once_per_function(monkeypatch):
    """The kind inference asks, for a name in each function, whether `.backward()` or a str-only method is called
    on it there; GPU403 asks, for each training loop, whether the module builds a GroupNorm. Each walked the whole
    module's uses of the name (or all its calls) per question: on the benchmark's module, where every function
    names `loss`, the cost grew with the square of the size (1 MB took 128 CPU s at 6512714). Now each name's
    uses are walked once per question kind, and the calls once per module."""
    from gpulint.analysis.tree import SyntaxIndex

    functions = 40
    asked: dict = {}
    original = SyntaxIndex.names

    def counting(self, value):
        asked[value] = asked.get(value, 0) + 1
        return original(self, value)

    from gpulint.analysis import node_types

    calls_walked: list = []
    original_of_types = node_types.of_types

    def counting_of_types(index, *types):
        if types == (cst.Call,):
            calls_walked.append(1)
        return original_of_types(index, *types)

    monkeypatch.setattr(SyntaxIndex, "names", counting)
    monkeypatch.setattr(node_types, "of_types", counting_of_types)
    found = lint_source(_generated(functions), "big.py", CODES).diagnostics
    assert sum(d.code == "GPU403" for d in found) == functions  # every function asked the GroupNorm question
    assert asked["loss"] <= 4  # before: about 2 per function
    assert len(calls_walked) < functions  # before: once per GPU403 finding, and more
