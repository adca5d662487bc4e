"""Entries of a batch dictionary that the training loop's copy loop leaves in host memory.

    for batch in loader:                                  # trainer.py
        for k in batch:
            if k != 'meta':                               # every entry but `meta` goes to the GPU
                batch[k] = batch[k].to(device, non_blocking=True)
        ...
        self.save_result(output, batch)                   # every step

    def save_result(self, output, batch):                 # another module: a subclass's method
        ids = batch['meta']['img_id'].cpu().numpy()       # a host tensor: the copy costs nothing

`host_entry(analysis, node)` (asked by `KindInference.on_host` through `host_entry_hook`): `node` is
`<param>['<key>']` where `<param>` is a parameter of a function or method that a loop of another module runs every
step (`forward.per_step_caller`), the call there passes the loop's batch (the `for` target) at that parameter, and
the loop body copies the batch's entries with a `for k in batch:` loop whose test excludes that key
(`if k != 'meta':`, `if k not in ('meta', 'name'):`) and nothing else in the loop body stores that key. Read from
the caller's `ast`; the caller's text is a dependency of a cached result. Anything else: unknown (False).
"""

from __future__ import annotations

import ast
from pathlib import Path
from typing import Optional

import libcst as cst

from gpulint import ast_walk
from gpulint.ast_walk import scope_nodes
from gpulint.syntax import positional_names

_MOVES = frozenset({"to", "cuda"})


def host_entry(analysis, node: cst.Subscript) -> bool:
    base = node.value
    if type(base) is not cst.Name or len(node.slice) != 1:
        return False
    index = node.slice[0].slice
    key = index.value.evaluated_value if type(index) is cst.Index and type(index.value) is cst.SimpleString \
        else None
    if not isinstance(key, str) or analysis.path is None:
        return False
    located = analysis.index.parameter_of(base)
    if located is None:
        return False
    fn, param = located
    cache = _cache(analysis)
    found = cache.get((id(fn), base.value))
    if found is None:
        found = cache[(id(fn), base.value)] = _skipped(analysis, fn, param)
    return key in found


def _cache(analysis) -> dict:
    cache = getattr(analysis, "_skipped_keys", None)
    if cache is None:
        cache = analysis._skipped_keys = {}
    return cache


def _skipped(analysis, fn: cst.FunctionDef, param: cst.Param) -> frozenset:
    """The keys the per-step caller's copy loop leaves on the host, of the batch it passes at `param`."""
    from gpulint.analysis.forward import per_step_caller
    from gpulint.analysis.project import project_for, text_dependency

    site = per_step_caller(analysis, fn)
    if site is None or getattr(site, "path", None) is None:
        return frozenset()
    project = project_for(Path(analysis.path).resolve())
    with text_dependency():
        info = project.module(Path(site.path))
    tree = getattr(info, "tree", None) if info is not None else None
    if tree is None:
        return frozenset()
    params = positional_names(fn)
    for caller in ast_walk.walk(tree):
        if not isinstance(caller, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Module)):
            continue
        for loop in _loops(caller):
            for call in _calls_at(loop, site.line, fn.name.value):
                bound = isinstance(call.func, ast.Attribute)
                names = params[1:] if bound and params and params[0] in ("self", "cls") else params
                arg = _argument(call, names, param.name.value)
                if isinstance(arg, ast.Name) and arg.id in _targets(loop.target):
                    return _excluded_keys(loop, arg.id)
    return frozenset()


def _loops(scope: ast.AST):
    """The `for` loops of a function (not of functions nested in it)."""
    return (node for node in scope_nodes(scope) if isinstance(node, ast.For))


def _calls_at(loop: ast.For, line: int, name: str):
    for stmt in loop.body:
        for node in ast_walk.walk(stmt):
            if isinstance(node, ast.Call) and node.lineno == line and (
                    (isinstance(node.func, ast.Attribute) and node.func.attr == name) or
                    (isinstance(node.func, ast.Name) and node.func.id == name)):
                yield node


def _argument(call: ast.Call, params: list, name: str) -> Optional[ast.expr]:
    if any(isinstance(a, ast.Starred) for a in call.args) or any(k.arg is None for k in call.keywords):
        return None
    for k in call.keywords:
        if k.arg == name:
            return k.value
    position = params.index(name) if name in params else -1
    return call.args[position] if 0 <= position < len(call.args) else None


def _targets(target: ast.expr) -> set:
    if isinstance(target, ast.Name):
        return {target.id}
    if isinstance(target, (ast.Tuple, ast.List)):
        return {t.id for t in target.elts if isinstance(t, ast.Name)}
    return set()


def _excluded_keys(loop: ast.For, batch: str) -> frozenset:
    """The keys the loop body's `for k in batch: if k != '<key>': batch[k] = batch[k].to(...)` leaves out, when no
    other statement of the body stores or rebinds anything of the batch."""
    excluded: Optional[frozenset] = None
    for stmt in loop.body:
        keys = _copy_loop(stmt, batch)
        if keys is not None:
            if excluded is not None:
                return frozenset()
            excluded = keys
            continue
        for node in ast_walk.walk(stmt):
            targets = node.targets if isinstance(node, ast.Assign) else \
                [node.target] if isinstance(node, (ast.AugAssign, ast.AnnAssign, ast.For)) else []
            for target in targets:
                if isinstance(target, ast.Subscript) and isinstance(target.value, ast.Name) and \
                        target.value.id == batch:
                    return frozenset()  # `batch['meta'] = ...`: stored again
                if batch in _targets(target):
                    return frozenset()  # the name is rebound
    return excluded or frozenset()


def _copy_loop(stmt: ast.stmt, batch: str) -> Optional[frozenset]:
    """`for k in batch:` (or `batch.keys()`) whose body is one `if` excluding constant keys whose body moves
    `batch[k]` to the device: the keys excluded, else None."""
    if not isinstance(stmt, ast.For) or not isinstance(stmt.target, ast.Name) or stmt.orelse:
        return None
    source = stmt.iter
    if isinstance(source, ast.Call) and isinstance(source.func, ast.Attribute) and source.func.attr == "keys" \
            and not source.args:
        source = source.func.value
    if not (isinstance(source, ast.Name) and source.id == batch) or len(stmt.body) != 1:
        return None
    test = stmt.body[0]
    if not isinstance(test, ast.If) or test.orelse:
        return None
    keys = _excluding(test.test, stmt.target.id)
    if keys is None or not test.body or not all(_moves_entry(s, batch, stmt.target.id) for s in test.body):
        return None
    return keys


def _excluding(test: ast.expr, key: str) -> Optional[frozenset]:
    """`k != 'meta'` -> {'meta'}; `k not in ('meta', 'name')` -> both; else None."""
    if not (isinstance(test, ast.Compare) and len(test.ops) == 1 and isinstance(test.left, ast.Name)
            and test.left.id == key):
        return None
    right = test.comparators[0]
    if isinstance(test.ops[0], ast.NotEq) and isinstance(right, ast.Constant) and isinstance(right.value, str):
        return frozenset({right.value})
    if isinstance(test.ops[0], ast.NotIn) and isinstance(right, (ast.Tuple, ast.List, ast.Set)) and \
            all(isinstance(e, ast.Constant) and isinstance(e.value, str) for e in right.elts):
        return frozenset(e.value for e in right.elts)  # type: ignore[attr-defined]
    return None


def _moves_entry(stmt: ast.stmt, batch: str, key: str) -> bool:
    """`batch[k] = batch[k].to(...)` / `.cuda(...)`."""
    if not (isinstance(stmt, ast.Assign) and len(stmt.targets) == 1):
        return False
    entry = stmt.targets[0]
    value = stmt.value
    return _is_entry(entry, batch, key) and isinstance(value, ast.Call) and \
        isinstance(value.func, ast.Attribute) and value.func.attr in _MOVES and _is_entry(value.func.value, batch, key)


def _is_entry(node: ast.expr, batch: str, key: str) -> bool:
    return isinstance(node, ast.Subscript) and isinstance(node.value, ast.Name) and node.value.id == batch and \
        isinstance(node.slice, ast.Name) and node.slice.id == key
