"""Callable wrappers a per-step method builds and hands to a function that calls them (issue 11: the diffusion
repositories' `SpacedDiffusion.training_losses(model, ...)`, which returns `super().training_losses(
self._wrap_model(model), ...)`; `_wrap_model` builds a `_WrappedModel` whose `__call__` copies a Python list of
timesteps to the GPU on every model call).

The `__call__` of a top-level class of the module runs every step when a method or function of the same module
that is itself per-step code (`forward.per_step_caller`) hands an instance of the class, built right there
(`_WrappedModel(...)`) or by a function of the module every `return` of which builds one or hands back its own
parameter (`_wrap_model`), to a project function that calls that parameter on every call (`calls_params`,
transitively: analysis/runs_model.py), at the method's own level (not under a test or in a loop). The call
site reported is the per-step call of the outer method.
"""

from __future__ import annotations


import libcst as cst

from gpulint.analysis.node_types import of_types
from gpulint.syntax import positional_names


def wrapper_call_site(analysis, cls: cst.ClassDef):
    from gpulint.analysis.forward import CallSite, per_step_caller

    name = cls.name.value
    if name not in (analysis.source or ""):
        return None
    for call in of_types(analysis.index, cst.Call):
        fn = analysis.index.enclosing_function(call)
        if fn is None or analysis.index.is_ancestor_or_self(cls, fn):
            continue
        for position, arg in enumerate(call.args):
            if arg.star or arg.keyword is not None or not _builds(analysis, arg.value, name):
                continue
            if not _at_function_level(analysis, call, fn) or not _runs_argument(analysis, call, position):
                continue
            site = per_step_caller(analysis, fn)
            if site is not None:
                return CallSite(site.path, site.line, site.code, f"{name}.__call__")
    return None


def _at_function_level(analysis, call: cst.Call, fn: cst.FunctionDef) -> bool:
    for parent in analysis.index.ancestors(call):
        if parent is fn:
            return True
        if type(parent) in (cst.If, cst.For, cst.While, cst.Try, cst.With, cst.IfExp, cst.Lambda,
                            cst.BooleanOperation, cst.ListComp, cst.DictComp, cst.GeneratorExp):
            return False
    return False


def _builds(analysis, value: cst.BaseExpression, name: str) -> bool:
    if type(value) is not cst.Call:
        return False
    if type(value.func) is cst.Name and value.func.value == name:
        return True
    fn = analysis.loops.local_function(value)
    if fn is None:
        return False
    params = set(positional_names(fn))
    built = False
    for node in of_types(analysis.index, cst.Return):
        if analysis.index.enclosing_function(node) is not fn or node.value is None:
            continue
        returned = node.value
        if type(returned) is cst.Call and type(returned.func) is cst.Name and returned.func.value == name:
            built = True
        elif not (type(returned) is cst.Name and returned.value in params):
            return False
    return built


def _runs_argument(analysis, call: cst.Call, position: int) -> bool:
    """The project function `call` reaches (also `super().m(...)`: the method of the class's project base)
    calls, on every call, the parameter this positional argument binds."""
    from gpulint.analysis import runs_passed_callable

    if runs_passed_callable(analysis, call, [position]):
        return True
    func = call.func
    if not (type(func) is cst.Attribute and type(func.value) is cst.Call and type(func.value.func) is cst.Name
            and func.value.func.value == "super" and not func.value.args):
        return False
    owner = analysis.index.enclosing_class(call)
    if owner is None or analysis.path is None:
        return False
    from gpulint.analysis.calls import project_calls
    from gpulint.analysis.runs_model import model_runners

    calls = analysis.fact(project_calls)
    if calls is None:
        return False
    info = calls.project.module(calls.path)
    cls = info.classes.get(owner.name.value) if info is not None else None
    if cls is None:
        return False
    method = calls.project.base_method(cls, func.attr.value)  # what `super().name(...)` calls
    if method is None:
        return False
    params = method.params[1:] if method.params else ()
    index = sum(1 for a in call.args[:position] if a.keyword is None)
    return index < len(params) and model_runners(calls.project).runs_parameter(method, params[index])
