"""Project functions that return the device to run on: `.to(dist_util.dev())` is a copy to the accelerator.

    def dev():                                   # guided_diffusion/dist_util.py
        if th.cuda.is_available():
            return th.device(f"cuda")
        return th.device("cpu")

    batch = batch.to(dist_util.dev())            # a training script: a host-to-device copy of every batch

`returned_device(analysis, call)` answers, for a call of a project function (in this module or another, found
through the project's imports), what every `return` of that function hands back: ACCELERATOR when each returns a
device (`torch.device("cuda")`, `torch.device(f"cuda:{rank}")`, a `"cuda"` string, or `torch.device("cpu")`) and
at least one of them an accelerator, the same reading as `"cuda" if torch.cuda.is_available() else "cpu"`
(`DataFacts.device_of`); CPU when every return is the CPU; None otherwise. A returned name counts as what every
assignment of it in the function holds, and an element of a returned tuple is asked for by its position
(`device, ids = prepare_device(n)`: `return device, list_ids`) (a `return` of anything else, a
parameter, no return at all, a function of a library). Read from the function's `ast`, at most one call deep
(`def dev(): return get_device()` with `get_device` a project function of the same kind counts).
"""

from __future__ import annotations

import ast
from typing import Optional

import libcst as cst

from gpulint import ast_walk
from gpulint.analysis.imports import dotted_name

CPU, ACCELERATOR = "cpu", "accelerator"  # as analysis/data_facts.py names them
_ACCELERATORS = ("cuda", "mps", "xpu", "npu", "hpu")
_MAX_DEPTH = 2


def returned_device(analysis, call: cst.Call, index: Optional[int] = None) -> Optional[str]:
    """ACCELERATOR, CPU or None for a call of a project function returning a device (the module docstring);
    with `index`, for element `index` of the tuple every `return` hands back (`device, device_ids =
    prepare_device(n_gpu)`)."""
    dotted = dotted_name(call.func)
    if dotted is None or dotted.split(".")[0] == "self":
        return None
    memo = analysis.fact(_Memo)
    key = (dotted, index)
    if key not in memo.found:
        memo.found[key] = None
        from gpulint.analysis.calls import project_calls

        calls = analysis.fact(project_calls)
        if calls is not None:
            memo.found[key] = _function_device(calls.project, calls.path, dotted, 0, index)
    return memo.found[key]


class _Memo:
    def __init__(self, analysis) -> None:
        self.found: dict[tuple, Optional[str]] = {}


def _function_device(project, importer, dotted: str, depth: int, index: Optional[int] = None) -> Optional[str]:
    from gpulint.analysis.project import FunctionSummary, _find_function

    if depth > _MAX_DEPTH:
        return None
    summary = project.lookup(importer, dotted)
    if not isinstance(summary, FunctionSummary) or "." in summary.qualname:
        return None  # a method or a nested function: its device may be the object's
    info = project.module(summary.path)
    fn = _find_function(info, summary.qualname)[0] if info is not None else None
    if fn is None:
        return None
    kinds = set()
    assigned: dict[str, list] = {}  # name -> the values the function assigns it outright
    returned: list = []
    for node in ast_walk.walk(fn):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)) and node is not fn:
            return None  # a nested function's returns are mixed into the walk: not read
        if isinstance(node, ast.Return):
            value = node.value
            if index is not None:
                value = value.elts[index] if isinstance(value, ast.Tuple) and index < len(value.elts) and \
                    not any(isinstance(e, ast.Starred) for e in value.elts) else None
            returned.append(value)
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            assigned.setdefault(node.targets[0].id, []).append(node.value)
    for value in returned:
        if isinstance(value, ast.Name):  # `device = torch.device('cuda:0' if n > 0 else 'cpu'); return device, ids`
            values = assigned.get(value.id)
            kinds.update(_device(project, info, v, depth) for v in values) if values else kinds.add(None)
        else:
            kinds.add(_device(project, info, value, depth) if value is not None else None)
    if not kinds or None in kinds:
        return None
    return ACCELERATOR if ACCELERATOR in kinds else CPU


def _device(project, info, value: ast.expr, depth: int) -> Optional[str]:
    from gpulint.analysis.project import _dotted

    if isinstance(value, ast.Constant) and isinstance(value.value, str):
        head = value.value.split(":")[0]
        return CPU if head == "cpu" else (ACCELERATOR if head in _ACCELERATORS else None)
    if isinstance(value, ast.JoinedStr):
        head = "".join(p.value for p in value.values if isinstance(p, ast.Constant) and isinstance(p.value, str))
        return ACCELERATOR if head.split(":")[0] in _ACCELERATORS else None
    if isinstance(value, ast.IfExp):
        sides = {_device(project, info, value.body, depth), _device(project, info, value.orelse, depth)}
        return None if None in sides else (ACCELERATOR if ACCELERATOR in sides else CPU)
    if isinstance(value, ast.Call):
        dotted = _dotted(value.func) or ""
        if info.qualify(dotted) == "torch.device" and value.args and not value.keywords:
            return _device(project, info, value.args[0], depth)
        if dotted and not value.args and not value.keywords:
            return _function_device(project, info.path, dotted, depth + 1)
    return None
