"""Project functions that update a model's parameters one by one in a Python loop on every call (GPU411).

A helper such as an EMA `accumulate(ema, model)` or a soft target update `polyak_update(params, target_params,
tau)` holds a `for` over parameters whose body updates each one in place. GPU411 reports that loop where it is
written; this module lets it report the per-step *call* too, in the caller's file: the call site is where the
cost is paid every step (and where a user looks).

Read from the callee's `ast` alone (`Project.module`), with the shapes GPU411's own loop check knows, kept
narrower: the loop must run on every call (only `with`, `for` and a `try` body above it in the function, no `if`,
`while` or handler), its iterable a module's `parameters()`/`named_parameters()`, `zip(...)` of such sequences
(keywords such as `strict=True` ignored), `list(...)` of one, a dict of named parameters built in the function
(`dict(m.named_parameters())`, `m.state_dict()`) iterated by `.items()`/`.values()`/`.keys()` or directly, a
name bound to one of these, or a sequence named for parameters (`params`, `target_params`; not `num_params`); its
body updating a loop variable (or a dict of parameters indexed in the body) in place: `p.data.mul_(d)`,
`p.add_(...)`, `p.data = ...`, `p -= ...`. Nothing else (a loop under a condition, over other iterables) counts.
"""

from __future__ import annotations

import ast

from gpulint import ast_walk
import threading
from pathlib import Path
from typing import Optional

_UPDATES = {"mul_", "add_", "sub_", "div_", "lerp_", "copy_", "addcmul_", "addcdiv_", "clamp_", "clip_",
            "nan_to_num_"}
_ITERATORS = {"parameters", "named_parameters"}
_BUFFERS = {"buffers", "named_buffers"}
_HOST_READS = {"item", "tolist", "cpu", "numpy"}

_CACHE: dict[tuple, Optional[int]] = {}
_LOCK = threading.Lock()


def per_parameter_loop_line(project, path: Path, qualname: str) -> Optional[tuple[int, tuple]]:
    """(the line of a per-parameter update loop that the project function `qualname` of `path` runs on every
    call, the function's parameters the loop iterates as they are given: ((name, position), ...)), else None.
    The caller checks that a call passes parameters there (`polyak_update(critic.parameters(), ...)`, not a list
    of batch-norm statistics). The module counts as a text dependency of the caller's lint (a cached result is
    redone when the helper's loop changes)."""
    from gpulint.analysis.project import _find_function, text_dependency

    with text_dependency():
        info = project.module(path)
    if info is None:
        return None
    key = (str(path), info.digest, qualname)
    with _LOCK:
        if key in _CACHE:
            return _CACHE[key]
    fn = _find_function(info, qualname)[0]
    line = _unconditional_loop(fn) if isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)) else None
    with _LOCK:
        _CACHE[key] = line
    return line


def _unconditional_loop(fn: ast.FunctionDef) -> Optional[tuple[int, tuple]]:
    bindings = _single_bindings(fn)
    positional = [a.arg for a in (*fn.args.posonlyargs, *fn.args.args)]
    stack = list(fn.body)
    while stack:
        stmt = stack.pop(0)
        if isinstance(stmt, ast.For):
            names = _parameter_names(stmt, bindings)
            if names and _updates(stmt, names) or _shadow_updates(stmt, bindings):
                if _may_leave_before(fn, stmt):
                    return None
                given = {n.id for n in _sequences(_unenumerated(stmt.iter, stmt.target)[0])
                         if isinstance(n, ast.Name) and n.id not in bindings}
                passed = tuple((name, i) for i, name in enumerate(positional) if name in given) + tuple(
                    (a.arg, None) for a in fn.args.kwonlyargs if a.arg in given)
                return stmt.lineno, passed
            stack.extend(stmt.body)
        elif isinstance(stmt, (ast.With, ast.AsyncWith)):
            stack.extend(stmt.body)
        elif isinstance(stmt, ast.Try):
            stack.extend(stmt.body)
    return None


def _sequences(it: ast.expr) -> list:
    """The expressions a loop iterates as sequences: the iterable, or `zip(...)`'s positional arguments, each
    through `list(...)`/`tuple(...)` (not `m` of `m.parameters()`: a module, whatever the call passes)."""
    found = []
    for e in (it.args if isinstance(it, ast.Call) and isinstance(it.func, ast.Name) and it.func.id == "zip"
              else [it]):
        while isinstance(e, ast.Call) and isinstance(e.func, ast.Name) and e.func.id in ("list", "tuple") and \
                len(e.args) == 1:
            e = e.args[0]
        found.append(e)
    return found


def _may_leave_before(fn: ast.FunctionDef, loop: ast.For) -> bool:
    """A `return`, `raise` or `continue`/`break` under a test before the loop (`if self.step % n: return`): the
    loop may not run on every call."""
    for node in ast_walk.walk(fn):
        if isinstance(node, ast.If) and node.lineno < loop.lineno and any(
                isinstance(n, (ast.Return, ast.Raise)) for n in ast_walk.walk(node)):
            return True
    return False


def _single_bindings(fn: ast.FunctionDef) -> dict[str, ast.expr]:
    """Names of `fn` assigned exactly once (`par1 = dict(model1.named_parameters())`), with their values."""
    found: dict[str, Optional[ast.expr]] = {}
    for node in ast_walk.walk(fn):
        if isinstance(node, ast.Assign):
            for target in node.targets:
                if isinstance(target, ast.Name):
                    found[target.id] = node.value if target.id not in found else None
        elif isinstance(node, (ast.AugAssign, ast.AnnAssign, ast.For, ast.comprehension, ast.NamedExpr)):
            target = node.target
            for n in ast_walk.walk(target):
                if isinstance(n, ast.Name):
                    found[n.id] = None
    return {k: v for k, v in found.items() if v is not None}


def _is_parameters_call(expr: ast.expr) -> bool:
    return isinstance(expr, ast.Call) and isinstance(expr.func, ast.Attribute) and expr.func.attr in _ITERATORS


def _dict_of_parameters(expr: ast.expr, bindings: dict, depth: int = 0) -> bool:
    if isinstance(expr, ast.Name) and depth < 3:
        value = bindings.get(expr.id)
        return value is not None and _dict_of_parameters(value, bindings, depth + 1)
    if not isinstance(expr, ast.Call):
        return False
    func = expr.func
    if isinstance(func, ast.Attribute) and func.attr == "state_dict" and not expr.args:
        return True
    last = func.attr if isinstance(func, ast.Attribute) else (func.id if isinstance(func, ast.Name) else None)
    return last in ("dict", "OrderedDict") and len(expr.args) == 1 and not expr.keywords and \
        _is_parameters_call(expr.args[0]) and expr.args[0].func.attr == "named_parameters"  # type: ignore


def _yields(expr: ast.expr, bindings: dict, depth: int = 0) -> Optional[str]:
    """"each", "named", "keys" (see GPU411's `_yields_parameters`), else None."""
    if depth > 3:
        return None
    if _is_parameters_call(expr):
        return "named" if expr.func.attr == "named_parameters" else "each"  # type: ignore[attr-defined]
    if isinstance(expr, ast.Call) and isinstance(expr.func, ast.Attribute) and expr.func.attr in _BUFFERS:
        return "named" if expr.func.attr == "named_buffers" else "each"  # buffers copied like parameters
    if isinstance(expr, ast.Call) and not expr.args and isinstance(expr.func, ast.Attribute) and \
            expr.func.attr in ("items", "values", "keys") and _dict_of_parameters(expr.func.value, bindings):
        return {"items": "named", "values": "each", "keys": "keys"}[expr.func.attr]
    if isinstance(expr, ast.Call) and isinstance(expr.func, ast.Name) and expr.func.id in ("list", "tuple") and \
            len(expr.args) == 1 and not isinstance(expr.args[0], ast.Starred):
        return _yields(expr.args[0], bindings, depth + 1)
    if isinstance(expr, ast.Subscript) and isinstance(expr.value, ast.Name) and \
            expr.value.id.lower().endswith("group") and isinstance(expr.slice, ast.Constant) and \
            expr.slice.value == "params":
        return "each"
    if isinstance(expr, ast.Name):
        if _dict_of_parameters(expr, bindings):
            return "keys"
        value = bindings.get(expr.id)
        if value is not None:
            return _yields(value, bindings, depth + 1)
        name = expr.id
    elif isinstance(expr, ast.Attribute) and isinstance(expr.value, ast.Name) and expr.value.id == "self":
        name = expr.attr
    else:
        return None
    lowered = name.lower()
    return "each" if lowered.endswith(("params", "parameters")) and not lowered.startswith("num_") else None


def _unenumerated(it: ast.expr, target: ast.expr) -> tuple:
    """rules/throughput/per_parameter_loop.py `_unenumerated` on `ast`: `enumerate(X)` iterated as `i, T` is `X`
    iterated as `T`."""
    if isinstance(it, ast.Call) and isinstance(it.func, ast.Name) and it.func.id == "enumerate" and \
            len(it.args) == 1 and not isinstance(it.args[0], ast.Starred) and \
            all(k.arg == "start" for k in it.keywords) and isinstance(target, ast.Tuple) and len(target.elts) == 2:
        return it.args[0], target.elts[1]
    return it, target


def _parameter_names(loop: ast.For, bindings: dict) -> set[str]:
    it, target = _unenumerated(loop.iter, loop.target)
    kind = _yields(it, bindings)
    if kind == "named":
        if isinstance(target, ast.Tuple) and len(target.elts) == 2 and isinstance(target.elts[1], ast.Name):
            return {target.elts[1].id} | _indexed_dicts(loop, bindings)
        return set()
    if kind == "each":
        return {target.id} if isinstance(target, ast.Name) else set()
    if kind == "keys":
        return _indexed_dicts(loop, bindings) if isinstance(target, ast.Name) else set()
    if isinstance(it, ast.Call) and isinstance(it.func, ast.Name) and it.func.id == "zip" and it.args and \
            all(not isinstance(a, ast.Starred) and _yields(a, bindings) == "each" for a in it.args) and \
            isinstance(target, ast.Tuple):
        return {e.id for e in target.elts if isinstance(e, ast.Name)}
    return set()


def _indexed_dicts(loop: ast.For, bindings: dict) -> set[str]:
    return {n.value.id for stmt in loop.body for n in ast_walk.walk(stmt)
            if isinstance(n, ast.Subscript) and isinstance(n.value, ast.Name)
            and _dict_of_parameters(n.value, bindings)}


def _shadow_updates(loop: ast.For, bindings: dict) -> bool:
    """The body of `for name, p in m.named_parameters():` (or a parameters dict's `.items()`) updates a tensor
    kept per parameter under the loop's key, as GPU411's `_shadow_update` reads it: written in place
    (`self.shadow[name].mul_(d)`, `.data = ...`, `+=`) or rebound to a value computed from itself and the
    parameter (`self.shadow[name] = d * self.shadow[name] + (1 - d) * p`), never read back to the host."""
    target = loop.target
    if _yields(loop.iter, bindings) != "named" or not isinstance(target, ast.Tuple) or len(target.elts) != 2 or \
            not all(isinstance(e, ast.Name) for e in target.elts):
        return False
    key, param = target.elts[0].id, target.elts[1].id  # type: ignore[attr-defined]

    def keyed(expr: ast.expr) -> bool:
        while True:
            if isinstance(expr, ast.Attribute) and expr.attr == "data":
                expr = expr.value
            elif isinstance(expr, ast.Call) and isinstance(expr.func, ast.Attribute) and expr.func.attr in _UPDATES:
                expr = expr.func.value
            else:
                break
        return isinstance(expr, ast.Subscript) and isinstance(expr.slice, ast.Name) and expr.slice.id == key

    def from_parameter(value: ast.expr, itself: Optional[ast.expr]) -> bool:
        nodes = list(ast_walk.walk(value))
        return any(isinstance(n, ast.Name) and n.id == param for n in nodes) and not any(
            isinstance(n, ast.Call) and (isinstance(n.func, ast.Attribute) and n.func.attr in _HOST_READS or
                                         isinstance(n.func, ast.Name) and n.func.id in ("float", "int"))
            for n in nodes) and (itself is None or any(
                isinstance(n, ast.Subscript) and ast.dump(n.value) == ast.dump(itself.value) and  # type: ignore
                isinstance(n.slice, ast.Name) and n.slice.id == key for n in nodes))

    for stmt in loop.body:
        for node in ast_walk.walk(stmt):
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and \
                    node.func.attr in _UPDATES and keyed(node.func.value):
                return True
            if isinstance(node, ast.AugAssign) and keyed(node.target) and from_parameter(node.value, None):
                return True
            if isinstance(node, ast.Assign) and len(node.targets) == 1:
                t = node.targets[0]
                if isinstance(t, ast.Attribute) and t.attr == "data" and keyed(t.value) and \
                        from_parameter(node.value, None):
                    return True
                if isinstance(t, ast.Subscript) and keyed(t) and from_parameter(node.value, t):
                    return True
    return False


def _root(expr: ast.expr) -> Optional[str]:
    while True:
        if isinstance(expr, ast.Attribute) and expr.attr in ("data", "grad"):
            expr = expr.value
        elif isinstance(expr, ast.Call) and not expr.args and isinstance(expr.func, ast.Attribute) and \
                expr.func.attr == "detach":
            expr = expr.func.value
        elif isinstance(expr, ast.Subscript) and isinstance(expr.value, ast.Name):
            expr = expr.value
        elif isinstance(expr, ast.Call) and isinstance(expr.func, ast.Attribute) and expr.func.attr in _UPDATES:
            expr = expr.func.value
        else:
            break
    return expr.id if isinstance(expr, ast.Name) else None


def _updates(loop: ast.For, names: set[str]) -> bool:
    for stmt in loop.body:
        for node in ast_walk.walk(stmt):
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and \
                    node.func.attr in _UPDATES and _root(node.func.value) in names:
                return True
            if isinstance(node, ast.Assign) and any(
                    isinstance(t, ast.Attribute) and t.attr == "data" and _root(t.value) in names
                    for t in node.targets):
                return True
            if isinstance(node, ast.AugAssign) and _root(node.target) in names:
                return True
            if isinstance(node, ast.Call) and any(  # `torch.nan_to_num(p.grad, out=p.grad)`, a wrapper of it
                    k.arg == "out" and _root(k.value) in names for k in node.keywords) and \
                    isinstance(node.func, (ast.Attribute, ast.Name)):
                return True
    return False
