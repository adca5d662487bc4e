"""`ast.walk` and `ast.iter_child_nodes`, the same nodes in the same order, at a fraction of the cost.

The standard library's pair goes through two generators per node (`iter_child_nodes` over `iter_fields`); the
prefilter, the rule gate and the project model walk CPython's trees of every file (and of every caller file a
model's `forward` is looked for in), so the walk itself was a visible share of a cold run. Here a node's
children are collected into a list in one loop over its `_fields`, and `walk` is the same breadth-first order
over a list instead of a deque (tests/test_ast_walk.py compares both on every fixture).
"""

from __future__ import annotations

import ast
from ast import AST
from collections import deque as _drain
from itertools import chain
from typing import Iterator, Optional


def iter_child_nodes(node: AST) -> list[AST]:
    """`ast.iter_child_nodes(node)`, as a list."""
    out: list[AST] = []
    for name in node._fields:
        value = getattr(node, name, None)
        if isinstance(value, AST):
            out.append(value)
        elif isinstance(value, list):
            for item in value:
                if isinstance(item, AST):
                    out.append(item)
    return out


# Roots whose walk is kept: the project model's ~80 per-module indexes each walk the module, and its per-function
# questions walk each function again and again (a cold fairseq lint visited ~10M nodes, most of them in repeated
# walks of the same module and function trees). The breadth-first list of a module, class or function is made at once
# and kept on the node the first time it is walked; later walks iterate that list. The trees are never changed
# after parsing, and the list goes with its tree.
_KEPT_ROOTS = (ast.Module, ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)
_KEPT = "_gpulint_walk"
walks_made = 0  # walks that visited nodes afresh rather than iterating a kept list (tests count them)


def walk(node: AST) -> Iterator[AST]:
    """`ast.walk(node)`: the node, then breadth-first every node below it."""
    kept = node.__dict__.get(_KEPT)
    if kept is None:
        if not isinstance(node, _KEPT_ROOTS):
            return _walk(node)
        kept = _breadth_first(node)
        setattr(node, _KEPT, kept)
    return chain((node,), kept)


def _breadth_first(node: AST) -> list[AST]:
    """The nodes `_walk` yields after `node` itself, made at once (a module's or function's walk is kept whole,
    even when the first walk that asks for it stops early: the next index asks for the rest): `_walk`'s own list,
    its generator run to the end in C (`deque(..., maxlen=0)`). The root is left out of the list kept on it: a
    list holding its own owner would make every kept tree a reference cycle, freed only by the cyclic collector,
    so a chunk's tree would outlive its chunk (tests/test_lazy_module.py's peak)."""
    todo = [node]
    _drain(_walk(node, todo), maxlen=0)
    del todo[0]
    return todo


def _walk(node: AST, todo: Optional[list[AST]] = None) -> Iterator[AST]:
    """Breadth first from `node`, appending each node's children to `todo` (a new `[node]` unless given, then
    the list `_breadth_first` keeps) as it goes. A list iterator sees the items appended while it runs, so one
    `for` over the growing list is the whole queue (faster than an index into it)."""
    global walks_made
    walks_made += 1
    if todo is None:
        todo = [node]
    for current in todo:
        for name in current._fields:
            value = getattr(current, name, None)
            if isinstance(value, AST):
                todo.append(value)
            elif isinstance(value, list):
                for item in value:
                    if isinstance(item, AST):
                        todo.append(item)
        yield current


_SCOPES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)


def scope_nodes(scope: AST) -> Iterator[AST]:
    """The nodes below `scope` that run in it: not those of nested functions, lambdas or classes (nor those
    nodes themselves), depth first, last child first."""
    stack = list(ast.iter_child_nodes(scope))
    while stack:
        node = stack.pop()
        if isinstance(node, _SCOPES):
            continue
        yield node
        stack.extend(ast.iter_child_nodes(node))
