"""analysis/tree.py's `child_nodes`: the children of a LibCST node less its layout tokens, read only from the
fields whose declared types may hold other nodes. On every fixture and rule module: the same nodes, in the same
order, as reading every field; and the same nodes as LibCST's own `children` with the layout tokens left out."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import libcst as cst
import pytest

from gpulint.analysis import tree

ROOT = Path(__file__).resolve().parent.parent
SOURCES = sorted(p for folder in ("fixtures", "rules") for p in (ROOT / folder).rglob("*.py"))

# Field types that are easy to miss: a decorator, a lambda's parameters, starred and keyword arguments, a
# subscript's slices, f-strings, `match`, walrus, `global`, annotations, `async` constructs, `try`/`except*`.
ODD = '''
@decorator(arg)
class C(Base, metaclass=M):
    x: int = 1
    async def f(self, a, /, b: "T" = 1, *args, c, d=2, **kw) -> list[int]:
        async with lock as held, other():
            async for item in aiter(x):
                yield (v := item[1:2, ::3, ...])
        return [y for y in range(3) if y] + {k: v for k, v in {}.items()} + {*s} + (lambda q=1, *r: q)()
def g():
    global G
    nonlocal_value = f"{x!r:>{width}} {y=}"
    match command:
        case Point(x=0, y=yy) | [1, *rest] if yy > 0:
            pass
        case {"k": 1, **others}:
            pass
    try:
        del a[0], b.c
    except (ValueError, TypeError) as e:
        raise RuntimeError from e
    finally:
        assert x, "message"
    return not -x if a < b <= c is not None else ~y ** 2
'''


def _every_field(node: cst.CSTNode) -> list[cst.CSTNode]:
    out = []
    for field in dataclasses.fields(node):
        value = getattr(node, field.name)
        values = value if isinstance(value, (list, tuple)) else [value]
        out += [v for v in values if isinstance(v, cst.CSTNode) and not isinstance(v, tree._TRIVIA)]
    return out


def _modules():
    yield "odd", cst.parse_module(ODD)
    for path in SOURCES:
        try:
            yield str(path.relative_to(ROOT)), cst.parse_module(path.read_text(encoding="utf-8"))
        except (cst.ParserSyntaxError, UnicodeDecodeError):
            continue


def test_there_are_sources():
    assert len(SOURCES) > 100


def test_child_nodes_match_every_field_and_libcst():
    checked = 0
    for name, module in _modules():
        stack: list[cst.CSTNode] = [module]
        while stack:
            node = stack.pop()
            found = tree.child_nodes(node)
            assert [id(n) for n in found] == [id(n) for n in _every_field(node)], (name, type(node).__name__)
            theirs = [n for n in node.children if not isinstance(n, tree._TRIVIA)]
            assert sorted(map(id, found)) == sorted(map(id, theirs)), (name, type(node).__name__)
            stack.extend(found)
            checked += 1
    assert checked > 50_000


@pytest.mark.parametrize("kind", [cst.Name, cst.Call, cst.Arg, cst.FunctionDef, cst.SimpleString])
def test_layout_fields_are_not_read(kind):
    fields = {f.name for f in dataclasses.fields(kind)}
    read = set(tree._node_fields(kind))
    assert read < fields and not read & {"lpar", "rpar", "comma", "whitespace_after_func", "whitespace_before_args"}
