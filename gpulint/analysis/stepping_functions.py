"""A module instance a script hands to a project function whose step loop calls it every step.

    # train.py                                         # utils/utils_fit.py
    yolo_loss = YOLOLoss(anchors, num_classes, ...)     def fit_one_epoch(model_train, model, yolo_loss, ..., gen, ...):
    for epoch in range(start, end):                         for iteration, batch in enumerate(gen):
        fit_one_epoch(model_train, model, yolo_loss,            ...
                      ..., gen, gen_val, ...)                    for l in range(len(outputs)):
                                                                     loss_item = yolo_loss(l, outputs[l], targets)

The script's own loop is an epoch loop, so none of its calls runs every step, and the loss's class is called in
no file that builds it. The call that runs `YOLOLoss.forward` every step is in the helper, through its parameter:
`stepping_site(project, path, cls)` finds it. Every file naming the class (tests left out, a few at most) is read
for names bound to an instance of it (`name = Cls(...)`, the constructor resolved through the file's imports) and
for calls of a project top-level function that pass such a name; the function's module is analysed (its loop
analysis decides) and the first call of that parameter that runs every iteration of a hot loop is the site.
"""

from __future__ import annotations

import ast
from pathlib import Path
from typing import Optional

import libcst as cst

from gpulint import ast_walk
from gpulint.analysis.lazy_module import LazyModuleInfo

_FILES = 8  # files naming the class that build an instance of it, read per question
_EXAMINED = 24  # files naming the class looked at per question, building one or not


def stepping_site(project, path: Path, cls):
    """The CallSite of the per-step call `p(...)` in a project function that a script hands an instance of `cls`
    as `p`; None when there is none."""
    from gpulint.analysis.forward import _remembered, _resolved

    path = _resolved(project, path)
    return _remembered(project, ("stepping function", path, cls.name), lambda: _find(project, cls))


def _find(project, cls):
    from gpulint.analysis.forward import _same
    from gpulint.analysis.project import ClassSummary, FunctionSummary, _dotted

    read = 0
    for examined, file in enumerate(project.files_naming(cls.name)):
        if examined == _EXAMINED:
            break  # a name many files mention (`Model`): the first ones in the project's order
        if project.is_test(file):
            continue
        info = project.module(file)
        if info is None or isinstance(info, LazyModuleInfo):
            continue  # a big module keeps no whole tree (each `.tree` parses all of it): not read for this
        tree = info.tree
        instances: set[str] = set()
        for node in ast_walk.walk(tree):
            if isinstance(node, ast.Assign) and isinstance(node.value, ast.Call):
                dotted = _dotted(node.value.func)
                built = project.lookup(file, dotted) if dotted else None
                if isinstance(built, ClassSummary) and _same(built, cls):
                    instances.update(t.id for t in node.targets if isinstance(t, ast.Name))
        if not instances:
            continue
        read += 1
        if read > _FILES:
            break
        for node in ast_walk.walk(tree):
            if not isinstance(node, ast.Call) or any(isinstance(a, ast.Starred) for a in node.args):
                continue
            passed = [(i, None) for i, a in enumerate(node.args) if isinstance(a, ast.Name) and a.id in instances]
            passed += [(None, k.arg) for k in node.keywords
                       if k.arg is not None and isinstance(k.value, ast.Name) and k.value.id in instances]
            if not passed:
                continue
            dotted = _dotted(node.func)
            callee = project.lookup(file, dotted) if dotted else None
            if not isinstance(callee, FunctionSummary) or "." in callee.qualname:
                continue  # a top-level function only: a method's calls go through its instance
            for position, keyword in passed:
                name = keyword if keyword is not None else (
                    callee.params[position] if position < len(callee.params) else None)
                site = _called_every_step(project, callee, name, cls) if name else None
                if site is not None:
                    return site
    return None


def _called_every_step(project, callee, param: str, cls):
    """The first call of the parameter `param` in the top-level function `callee` that runs every iteration of a
    hot loop there (the function's module analysed as a caller file)."""
    from gpulint.analysis.forward import CallSite, _line_of, caller_analysis
    from gpulint.analysis.node_types import of_types
    from gpulint.analysis.tree import own_scope_nodes

    analysis = caller_analysis(project, callee.path)
    if analysis is None:
        return None
    fn = next((f for f in of_types(analysis.index, cst.FunctionDef)
               if f.name.value == callee.qualname and type(analysis.parent(f)) is cst.Module), None)
    if fn is None:
        return None
    calls = [node for node in own_scope_nodes([fn.body])
             if type(node) is cst.Call and type(node.func) is cst.Name and node.func.value == param and
             len(analysis.index.visible_bindings(node.func)) == 1 and analysis.execution(node).every_iteration]
    if not calls:
        return None
    first = min(calls, key=lambda c: analysis.index.order(c) or 0)
    return CallSite(Path(callee.path).resolve(), _line_of(analysis, first), f"{param}(...)", f"{cls.name}.forward")
