"""What a project helper computes from the device tensors it is given (branch recall57).

The top-1/top-5 `accuracy(output, target, topk=(1, 5))` helper of the ImageNet example, copied into many
projects, returns a list of tensors it computes from `output` and `target` with tensor methods
(`output.topk(...)`, `pred.eq(...)`, `correct[:k].reshape(-1).float().sum(0)`, `.mul_(100.0 / batch_size)`). Its
summary says nothing of it (`returns_tensor` counts only tensors a function makes itself: a parameter's kind is
known only at a call), so `acc1, acc5 = accuracy(out, y)` stayed unknown. At a call that hands it device tensors,
the result is a device tensor when the function computes where its arguments live (`host_values.
computed_where_given`: no device named, nothing moved, only torch/builtins and methods of its own values) and
every `return` hands back a value derived from those arguments by tensor operations (method calls other than
the ones giving numbers or host copies, indexing, arithmetic, `torch.*` functions), or a list, tuple or dict of
such values (`res.append(...)` then `return res`). A count (`len(x)`, `x.size(0)`), `.item()`, or a value derived
from a parameter the call passes no device tensor for, is not.
"""

from __future__ import annotations

import ast
from typing import Optional

import libcst as cst

from gpulint import ast_walk
from gpulint.analysis.kinds import TENSOR_METHODS_NUMBER, TENSOR_METHODS_OTHER

_HOST = frozenset({"item", "tolist", "numpy", "cpu", "size", "dim", "numel", "nelement", "element_size",
                   "data_ptr", "stride", "get_device", "is_contiguous", "__len__", "keys"})


def derived_device_tensor(analysis, call: cst.Call) -> bool:
    """`call` (`accuracy(out, y, topk=(1, 5))`) returns a device tensor, or a list/tuple/dict of them."""
    from gpulint.analysis.host_values import computed_where_given

    if type(call.func) is not cst.Name:
        return False
    given = computed_where_given(analysis, call)
    if not given:
        return False
    busy = analysis.fact(_asking)
    if id(call) in busy:  # `x = scale(x)`: the argument's kind is this call's own result
        return False
    busy.add(id(call))
    try:
        positions = frozenset(i for i, a in enumerate(given) if analysis.is_device_tensor(a))
    finally:
        busy.discard(id(call))
    if not positions:
        return False
    fn = _function(analysis, call)
    if fn is None:
        return False
    cache = analysis.fact(_answers)
    key = (id(fn), positions)
    if key not in cache:
        params = [a.arg for a in (*fn.args.posonlyargs, *fn.args.args)]
        # what the function computes from any of its parameters by tensor operations (`pred` of `_, pred =
        # output.topk(...)`, the output's kind unknown at this call) takes the device of a given tensor it is
        # combined with (`pred.eq(target.reshape(1, -1))`)
        tensorish = _closure(fn, set(params), frozenset())
        given = {params[i] for i in positions if i < len(params)}
        derived = _closure(fn, given, frozenset(tensorish))
        returns = [n for stmt in fn.body for n in ast_walk.walk(stmt) if isinstance(n, ast.Return)]
        cache[key] = bool(returns) and all(r.value is not None and _returned(r.value, derived, tensorish)
                                           for r in returns)
    return cache[key]


def _answers(analysis) -> dict:
    return {}


def _asking(analysis) -> set:
    """Fact provider: the calls `derived_device_tensor` is deciding (a recursion guard)."""
    return set()


def _function(analysis, call: cst.Call) -> Optional[ast.FunctionDef]:
    from gpulint.analysis.calls import project_calls
    from gpulint.analysis.forward import _project_of
    from gpulint.analysis.project import _find_function

    calls = analysis.fact(project_calls)
    target = (calls.callee(call, own_module=True) or calls.local_callee(call)) if calls is not None else None
    if target is None or target[2]:
        return None
    summary = target[1]
    if summary.returns_host_scalar is not None:
        return None
    project, _ = analysis.fact(_project_of)
    info = project.module(summary.path)
    fn = _find_function(info, summary.qualname)[0] if info is not None else None
    return fn if isinstance(fn, ast.FunctionDef) else None


def _closure(fn: ast.FunctionDef, tensors: set, tensorish: frozenset) -> set:
    """The names `fn` binds to values derived from `tensors` (and the lists it fills with only such values)."""
    derived = set(tensors)
    containers: set = set()  # names bound to `[]`/`{}`/`()` that only ever receive derived values
    spoiled: set = set()
    statements = [n for stmt in fn.body for n in ast_walk.walk(stmt)]
    changed = True
    while changed:
        changed = False
        for node in statements:
            if isinstance(node, ast.Assign) and _derived(node.value, derived, tensorish):
                for target in node.targets:
                    for name in _names(target):
                        if name not in derived:
                            derived.add(name)
                            changed = True
            elif isinstance(node, ast.Assign) and isinstance(node.value, (ast.List, ast.Dict, ast.Tuple)) and \
                    not _elements(node.value) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
                containers.add(node.targets[0].id)
            elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and \
                    isinstance(node.func.value, ast.Name) and node.func.attr in ("append", "extend"):
                name = node.func.value.id
                if all(_derived(a, derived, tensorish) for a in node.args) and node.args and not node.keywords:
                    if name in containers and name not in spoiled and name not in derived:
                        derived.add(name)
                        changed = True
                else:
                    spoiled.add(name)
    # a container that also received something else, or was rebound, is not one of derived values
    return derived - {n for n in spoiled if n not in tensors}


def _elements(value) -> list:
    return value.values if isinstance(value, ast.Dict) else value.elts


def _returned(value: ast.expr, derived: set, tensorish) -> bool:
    if isinstance(value, (ast.Tuple, ast.List)):
        return bool(value.elts) and all(_derived(e, derived, tensorish) for e in value.elts)
    if isinstance(value, ast.Dict):
        return bool(value.values) and all(_derived(v, derived, tensorish) for v in value.values)
    return _derived(value, derived, tensorish)


def _derived(expr: ast.expr, derived: set, tensorish=frozenset()) -> bool:
    """`expr` is a tensor computed from the `derived` names by tensor operations (a method of a `tensorish`
    value given a derived argument included)."""
    if isinstance(expr, ast.Name):
        return expr.id in derived
    if isinstance(expr, ast.Subscript):
        return _derived(expr.value, derived, tensorish)
    if isinstance(expr, ast.BinOp):
        return _derived(expr.left, derived, tensorish) or _derived(expr.right, derived, tensorish)
    if isinstance(expr, ast.UnaryOp) and not isinstance(expr.op, ast.Not):
        return _derived(expr.operand, derived, tensorish)
    if isinstance(expr, ast.Compare):  # `output.argmax(1) == target`: an element-wise comparison
        # `val is not None` (the `exists(val)` helper), `k in cache`: a Python bool, whatever the operands
        if any(isinstance(op, (ast.Is, ast.IsNot, ast.In, ast.NotIn)) for op in expr.ops):
            return False
        return any(_derived(side, derived, tensorish) for side in (expr.left, *expr.comparators))
    if isinstance(expr, ast.Attribute):
        return expr.attr in ("T", "data", "mT", "real", "imag") and _derived(expr.value, derived, tensorish)
    if isinstance(expr, ast.Call):
        func = expr.func
        if isinstance(func, ast.Attribute):
            if func.attr in _HOST or func.attr in TENSOR_METHODS_NUMBER or func.attr in TENSOR_METHODS_OTHER:
                return False
            if _derived(func.value, derived, tensorish):
                return True
            given = any(_derived(a, derived, tensorish) for a in expr.args)
            if given and tensorish and _derived(func.value, set(tensorish)):
                return True  # `pred.eq(target.reshape(1, -1))`
            root = func.value
            return given and isinstance(root, ast.Name) and root.id == "torch"
    return False


def _names(target: ast.expr) -> list:
    if isinstance(target, ast.Name):
        return [target.id]
    if isinstance(target, (ast.Tuple, ast.List)):
        return [n for e in target.elts for n in _names(e)]
    return []
