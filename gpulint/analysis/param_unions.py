"""A function's parameter that holds one of several project classes (issue 11, sixth set).

A text-recognition script builds its label converter by option and hands it to the evaluation function:

    if "CTC" in opt.Prediction:
        converter = CTCLabelConverter(opt.character)
    else:
        converter = AttnLabelConverter(opt.character)
    ...
    validation(model, criterion, valid_loader, converter, opt)

and `validation`'s batch loop calls `converter.decode(...)`. `Project.parameter_class` answers only when every call
site passes the same class; here the sites pass one of two, and one site passes its own parameter on
(`def benchmark_all_eval(model, criterion, converter, opt): ... validation(..., converter, opt)`). This module
answers with every class the sites may pass: a class built at the site, a name the site's function binds to
classes only (in any branch), or a parameter of the site's own top-level function, answered the same way (a few
levels deep). Unknown (no answer) as soon as one site passes anything else. Call sites' methods on such a
parameter cost what every candidate's method costs (`calls.ProjectCalls._union_cost`), so one class that does
not pay keeps the call quiet.
"""

from __future__ import annotations

import ast
from pathlib import Path
from typing import Optional

from gpulint import ast_walk
from gpulint.analysis.project import _UNKNOWN, ClassSummary, FunctionSummary, Project, _argument, _dotted

_MAX_DEPTH = 3


def parameter_classes(project: Project, path: Path, function: str, parameter: str, depth: int = 0) -> tuple:
    """The project classes the call sites of the top-level `function` (in `path`) may pass as `parameter`,
    when there are at least two and every site's argument is one of them; () otherwise. Remembered per project
    state, with the modules read on the way recorded again for the caller's dependencies."""
    from gpulint.analysis.forward import _remembered

    key = ("parameter classes", project._resolved(path), function, parameter)
    return _remembered(project, key, lambda: _classes(project, key[1], function, parameter, depth)) or ()


def _classes(project: Project, path: Path, function: str, parameter: str, depth: int) -> tuple:
    if depth > _MAX_DEPTH:
        return ()
    info = project.module(path)
    node = info.functions.get(function) if info is not None else None
    if node is None:
        return ()
    positional = [a.arg for a in (*node.args.posonlyargs, *node.args.args)]
    position = positional.index(parameter) if parameter in positional else None
    union: dict[int, ClassSummary] = {}
    for file in project._files_mentioning(function):
        caller = project.module(file)
        if caller is None:
            continue
        for call, assigns in caller.calls_named(function):
            dotted = _dotted(call.func)
            target = project.lookup(caller.path, dotted) if dotted else None
            if not isinstance(target, FunctionSummary) or target.path != path or target.qualname != function:
                continue
            argument = _argument(call, position, parameter)
            if argument is _UNKNOWN:
                return ()
            if argument is None:
                continue  # left at its default: the code using it runs when something is passed
            classes = _argument_classes(project, caller, call, argument, assigns, depth)
            if classes is None:
                return ()
            for cls in classes:
                union[id(cls)] = cls
    return tuple(union.values()) if len(union) >= 2 else ()


def _argument_classes(project: Project, caller, call: ast.Call, argument: ast.expr, assigns: dict,
                      depth: int) -> Optional[list]:
    """The classes one site's argument may be an instance of; None when it may be anything else."""
    found = project.class_at(caller, argument, assigns)
    if isinstance(found, ClassSummary):
        return [found]
    if found is None:
        return []  # the literal None
    if not isinstance(argument, ast.Name):
        return None
    if argument.id in assigns:
        classes = []
        for value, index in assigns[argument.id]:
            if index is not None:
                return None
            one = project.class_at(caller, value, assigns)
            if not isinstance(one, ClassSummary):
                return None
            classes.append(one)
        return classes
    owner = _enclosing_function(caller.tree, call)
    if owner is None or argument.id not in {a.arg for a in (*owner.args.posonlyargs, *owner.args.args,
                                                            *owner.args.kwonlyargs)}:
        return None
    single = project.parameter_class(caller.path, owner.name, argument.id)
    if single is not None:
        return [single]
    passed = parameter_classes(project, caller.path, owner.name, argument.id, depth + 1)
    return list(passed) or None


def _enclosing_function(tree: ast.Module, call: ast.Call) -> Optional[ast.FunctionDef]:
    """The top-level function whose body holds `call` (not a method, not a nested function's)."""
    for stmt in tree.body:
        if isinstance(stmt, ast.FunctionDef) and stmt.lineno <= call.lineno <= (stmt.end_lineno or stmt.lineno):
            for node in ast_walk.walk(stmt):
                if node is call:
                    return stmt
            return None
    return None
