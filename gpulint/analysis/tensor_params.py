"""Parameters that hold device tensors because of what their callers pass (`KindInference.parameter_hook`).

A function's parameter says nothing of its kind by itself: `def build_targets(self, p, targets, imgs)` may be
given anything. It holds a device tensor where

- every call of the function in its own module passes one (`self.build_targets(p, targets, imgs)` in the same
  class, or `helper(x)` for a top-level function, each argument a tensor not known to be in host memory), and no
  other project file calls it (`.build_targets(` or `def build_targets` elsewhere: a caller there could pass
  anything); or
- the function is run every step from another module (`forward.per_step_caller`: `compute_loss(pred,
  targets.to(device))` runs `ComputeLoss.__call__`) and that call passes a copy to a device for the parameter
  (`.to(device)`, `.cuda()`, read from the call as written).

A value whose device is not known stays unknown: a parameter that one call gives a host tensor, a number or an
unknown value is not a device tensor here (`tests/test_tensor_params.py`).
"""
from __future__ import annotations

import ast
from pathlib import Path
from typing import Optional

import libcst as cst

from gpulint.analysis.tree import of_types
from gpulint.syntax import passed_argument


def device_tensor_parameter(analysis, binding) -> bool:
    fn, param = binding.source, binding.value
    if type(fn) is not cst.FunctionDef or type(param) is not cst.Param or analysis.path is None or \
            not analysis.targets_gpu:
        return False
    answers = analysis.fact(_answers)
    key = (id(fn), param.name.value)
    found = answers.get(key)
    if found is None:
        answers[key] = False  # a recursive question (a function passing its parameter to itself) says no
        found = answers[key] = _from_own_module(analysis, fn, param) or _from_per_step_site(analysis, fn, param)
    return found


def _answers(analysis) -> dict:
    return {}


def _position(analysis, fn: cst.FunctionDef, param: cst.Param) -> tuple[Optional[int], Optional[bool]]:
    """The parameter's position among the arguments a call passes (after `self` for a method), and whether `fn`
    is a method of a top-level class (True), a top-level function (False) or neither (None)."""
    from gpulint.analysis.host_values import _method_of

    method = _method_of(analysis, fn)
    params = list(fn.params.posonly_params) + list(fn.params.params)
    if param not in params or method is None:
        return None, method
    position = params.index(param) - (1 if method else 0)
    return (position if position >= 0 else None), method


def _from_own_module(analysis, fn: cst.FunctionDef, param: cst.Param) -> bool:
    position, method = _position(analysis, fn, param)
    if position is None:
        return False
    name = fn.name.value
    if method:
        cls = analysis.index.up.get(id(analysis.index.up.get(id(fn))))
        sites = [call for call in of_types(analysis.index, cst.Call) if type(call.func) is cst.Attribute and
                 call.func.attr.value == name and type(call.func.value) is cst.Name and
                 call.func.value.value == "self" and analysis.index.is_ancestor_or_self(cls, call)]
    else:
        sites = [call for call in of_types(analysis.index, cst.Call)
                 if type(call.func) is cst.Name and call.func.value == name]
    if not sites or _called_elsewhere(analysis, name):
        return False
    for call in sites:
        arg = passed_argument(call, position, param.name.value)
        if not isinstance(arg, cst.Arg) or arg.star or not analysis.is_device_tensor(arg.value):
            return False
    return True


def _called_elsewhere(analysis, name: str) -> bool:
    """Another project file calls `name` (`x.name(...)`, `name(...)`): what it passes is not read here."""
    from gpulint.analysis.project import project_for

    here = Path(analysis.path).resolve()
    project = project_for(here)
    for file in project.files_naming(name):
        if Path(file).resolve() == here:
            continue
        info = project.module(Path(file))
        if info is None or info.calls_named(name):
            return True  # unreadable, or a call there
    return False


def _from_per_step_site(analysis, fn: cst.FunctionDef, param: cst.Param) -> bool:
    position, method = _position(analysis, fn, param)
    if position is None:
        return False
    from gpulint.analysis.forward import per_step_caller

    site = per_step_caller(analysis, fn)
    if site is None or site.owner is not None or site.runs.rsplit(".", 1)[-1] != fn.name.value:
        return False  # the site runs another entry that reaches `fn`: its arguments are not `fn`'s
    from gpulint.analysis.project import project_for

    callee = site.code.split("(", 1)[0].rsplit(".", 1)[-1].strip()
    info = project_for(Path(analysis.path).resolve()).module(site.path) if callee else None
    calls = [c for c, _ in info.calls_named(callee) if c.lineno == site.line] if info is not None else []
    if len(calls) != 1 or any(type(a) is ast.Starred for a in calls[0].args):
        return False
    call = calls[0]
    arg = next((k.value for k in call.keywords if k.arg == param.name.value), None)
    if arg is None and position < len(call.args):
        arg = call.args[position]
    return arg is not None and _device_copy(arg)


def _device_copy(node: ast.expr) -> bool:
    """`x.to(device)`, `x.to(self.device, non_blocking=True)`, `x.cuda()`, `x.float().cuda(rank)`: a copy to a
    device, not to the CPU nor to a dtype."""
    if type(node) is not ast.Call or type(node.func) is not ast.Attribute:
        return False
    if node.func.attr == "cuda":
        return True
    if node.func.attr != "to":
        return False
    target = next((k.value for k in node.keywords if k.arg == "device"), None)
    if target is None and node.args:
        target = node.args[0]
    if target is None:
        return False
    text = ast.unparse(target).lower()
    return "cpu" not in text and any(word in text for word in ("device", "cuda", "gpu"))
