"""Generators that hand on the items of what they are given or build: `def cycle(dl): while True: yield from dl`,
`def infinite(loader): for batch in loader: yield batch`, `def load_data(...): loader = DataLoader(...);
while True: yield from loader`. Iterating one of them yields the loader's batches, so the loop over it is a
loop over batches, and the loader's `pin_memory` decides whether its copies can overlap.

Only a function whose every `yield` hands on an item of one and the same iterable counts (`yield from x`, or
`yield v` / `yield v.to(device)` ... where `v` is the target of `for v in x`): a generator that yields anything
else (a computed value, two sources in turn) is not a pass-through.
"""

from __future__ import annotations

import ast
from typing import Optional, Union

import libcst as cst

from gpulint import ast_walk
from gpulint.analysis.tree import child_nodes

_Function = Union[cst.FunctionDef, ast.FunctionDef]


def yielded_source(fn: cst.FunctionDef) -> Optional[cst.BaseExpression]:
    """The iterable whose items every `yield` of `fn` hands on (LibCST), or None."""
    sources: list[cst.BaseExpression] = []
    ok = True

    def visit(node: cst.CSTNode, loops: list[cst.For]) -> None:
        nonlocal ok
        if not ok or type(node) in (cst.FunctionDef, cst.ClassDef, cst.Lambda) and node is not fn:
            return
        if type(node) is cst.Yield:
            if type(node.value) is cst.From:
                sources.append(node.value.item)
            else:
                loop = next((l for l in reversed(loops) if node.value is not None and
                             _uses_target(node.value, l.target)), None)
                if loop is None:
                    ok = False
                    return
                sources.append(_without_iter(loop.iter))
            return
        inner = loops + [node] if type(node) is cst.For else loops
        for child in child_nodes(node):  # LibCST's `children` rebuilds every node it passes (tree.py)
            visit(child, inner)

    visit(fn.body, [])
    if not ok or not sources:
        return None
    code = cst.Module([]).code_for_node
    first = code(sources[0])
    return sources[0] if all(code(s) == first for s in sources[1:]) else None


def _uses_target(value: cst.BaseExpression, target: cst.BaseExpression) -> bool:
    """`value` is the loop's target or built from it alone (`batch`, `batch.to(device)`, `(x, y)` of `x, y`)."""
    names = {n.value for n in _names(target)}
    used = {n.value for n in _names(value)}
    return bool(names) and bool(used & names)


def _names(node: cst.CSTNode):
    if type(node) is cst.Name:
        yield node
    for child in child_nodes(node):
        yield from _names(child)


def yielded_source_ast(fn: ast.FunctionDef) -> Optional[ast.expr]:
    """The same as `yielded_source`, on CPython's tree (the project model's summaries)."""
    sources: list[ast.expr] = []
    ok = True

    def visit(node: ast.AST, loops: list[ast.For]) -> None:
        nonlocal ok
        if not ok or isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)) \
                and node is not fn:
            return
        if isinstance(node, ast.YieldFrom):
            sources.append(node.value)
            return
        if isinstance(node, ast.Yield):
            targets = {n.id for l in loops for n in ast_walk.walk(l.target) if isinstance(n, ast.Name)}
            loop = next((l for l in reversed(loops) if node.value is not None and
                         {n.id for n in ast_walk.walk(node.value) if isinstance(n, ast.Name)} &
                         {n.id for n in ast_walk.walk(l.target) if isinstance(n, ast.Name)}), None)
            if loop is None or not targets:
                ok = False
                return
            sources.append(_without_iter_ast(loop.iter))
            return
        inner = loops + [node] if isinstance(node, ast.For) else loops
        for child in ast_walk.iter_child_nodes(node):
            visit(child, inner)

    for stmt in fn.body:
        visit(stmt, [])
    if not ok or not sources:
        return None
    first = ast.dump(sources[0])
    return sources[0] if all(ast.dump(s) == first for s in sources[1:]) else None


def _without_iter(iterable: cst.BaseExpression) -> cst.BaseExpression:
    """`iter(dataloader)` iterates what `dataloader` yields: the loader itself (`for x, y in iter(dataloader):
    yield x`, an infinite-loop generator over a loader)."""
    if type(iterable) is cst.Call and type(iterable.func) is cst.Name and iterable.func.value == "iter" and \
            len(iterable.args) == 1 and iterable.args[0].keyword is None and not iterable.args[0].star:
        return iterable.args[0].value
    return iterable


def _without_iter_ast(iterable: ast.expr) -> ast.expr:
    """`_without_iter` on CPython's tree."""
    if isinstance(iterable, ast.Call) and isinstance(iterable.func, ast.Name) and iterable.func.id == "iter" and \
            len(iterable.args) == 1 and not iterable.keywords and not isinstance(iterable.args[0], ast.Starred):
        return iterable.args[0]
    return iterable
