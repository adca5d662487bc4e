"""gpulint/ast_walk.py: the same nodes, in the same order, as the standard library's `ast.walk` and
`ast.iter_child_nodes`, on every fixture and rule file of the repository (and on the constructs whose fields mix
nodes, lists with None, and plain values)."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from gpulint import ast_walk

ROOT = Path(__file__).resolve().parent.parent
SOURCES = sorted(p for folder in ("fixtures", "rules", "gpulint") for p in (ROOT / folder).rglob("*.py"))

ODD = '''
d = {**a, "k": 1, **b}                      # Dict.keys holds None
def f(a, /, b=1, *c, d, e=2, **g): ...      # kw_defaults may hold None
global_name: int
match x:
    case {"a": 1, **rest} | [1, *others]:
        pass
print(f"{x!r:>{width}}", *args, sep="")
lambda: (yield)
try:
    pass
except ValueError as e:
    pass
'''


def _trees():
    yield "odd", ast.parse(ODD)
    for path in SOURCES:
        try:
            yield str(path.relative_to(ROOT)), ast.parse(path.read_bytes())
        except SyntaxError:  # fixtures of syntax errors
            continue


def test_there_are_sources():
    assert len(SOURCES) > 100


@pytest.mark.parametrize("name,tree", list(_trees())[:1] + [t for i, t in enumerate(_trees()) if i % 7 == 1])
def test_walk_and_children_match_the_standard_library(name, tree):
    expected = list(ast.walk(tree))
    assert [id(n) for n in ast_walk.walk(tree)] == [id(n) for n in expected], name
    for node in expected:
        assert ast_walk.iter_child_nodes(node) == list(ast.iter_child_nodes(node)), (name, ast.dump(node)[:80])


def test_every_source_walks_the_same():
    for name, tree in _trees():
        assert [id(n) for n in ast_walk.walk(tree)] == [id(n) for n in ast.walk(tree)], name
