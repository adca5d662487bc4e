"""Library objects handed down from another file (branch recall69).

A detection trainer builds its TensorBoard writer in the launcher and hands it down two functions:

    # tools/train.py
    tb_log = SummaryWriter(log_dir=...) if cfg.LOCAL_RANK == 0 else None
    train_model(model, optimizer, ..., tb_log=tb_log)

    # tools/train_utils/train_utils.py
    def train_model(..., tb_log=None, ...):
        ... train_one_epoch(..., tb_log=tb_log, ...)

    def train_one_epoch(..., tb_log=None, ...):
        for cur_it in range(...):
            ...
            if tb_log is not None:
                tb_log.add_scalar('train/loss', loss, accumulated_iter)   # the device loss, every step

The module's own analysis (`ModuleCalls._passed_library_classes`) follows `train_one_epoch`'s call in
`train_model`, then stops: nothing in the module calls `train_model`. This module answers for a top-level
function's parameter from the project's call sites (read with `ast`): the library classes of the reviewed table
(analysis/libraries.py) every site passes, each built at the site (`SummaryWriter(...)`), bound to a name in the
site's scope, chosen with `None` (`W(...) if rank == 0 else None`: the code using it runs when it is not `None`,
the stance `Project.parameter_class` takes), or handed on from a parameter of the site's own top-level function
(a few levels). Unknown (None) as soon as a site passes anything else, or no site passes an instance.
"""

from __future__ import annotations

import ast
from pathlib import Path
from typing import Optional

from gpulint.analysis.libraries import is_library_class
from gpulint.analysis.project import _UNKNOWN, FunctionSummary, Project, _argument, _dotted

_MAX_DEPTH = 3


def parameter_library_classes(project: Project, path: Path, function: str, parameter: str,
                              depth: int = 0) -> Optional[frozenset]:
    """The qualified names of the table's classes every project call site of the top-level `function` (in
    `path`) passes as `parameter` (or `None`); None when unknown. Remembered per project state."""
    from gpulint.analysis.forward import _remembered

    if depth > _MAX_DEPTH:
        return None
    key = ("passed library classes", project._resolved(path), function, parameter)
    found = _remembered(project, key, lambda: _classes(project, key[1], function, parameter, depth) or ())
    return frozenset(found) if found else None


def _classes(project: Project, path: Path, function: str, parameter: str, depth: int) -> tuple:
    info = project.module(path)
    node = info.functions.get(function) if info is not None else None
    if node is None:
        return ()
    positional = [a.arg for a in (*node.args.posonlyargs, *node.args.args)]
    position = positional.index(parameter) if parameter in positional else None
    found: set = set()
    for file in project._files_mentioning(function):
        caller = project.module(file)
        if caller is None:
            continue
        for call, assigns in caller.calls_named(function):
            dotted = _dotted(call.func)
            target = project.lookup(caller.path, dotted) if dotted else None
            if not isinstance(target, FunctionSummary) or target.path != path or target.qualname != function:
                continue
            if any(isinstance(a, ast.Starred) for a in call.args) or any(k.arg is None for k in call.keywords):
                return ()  # `f(*args)`, `f(**kw)`: what reaches the parameter is not told
            argument = _argument(call, position, parameter)
            if argument is _UNKNOWN:
                return ()
            if argument is None:
                continue  # left at its default
            classes = _argument_classes(project, caller, call, argument, assigns, depth)
            if classes is None:
                return ()
            found |= classes
    return tuple(sorted(found))


def _argument_classes(project: Project, caller, call: ast.Call, argument: ast.expr, assigns: dict,
                      depth: int, names: int = 0) -> Optional[set]:
    """The table's classes one site's argument may be (empty for `None`); None when it may be anything else."""
    if isinstance(argument, ast.Constant) and argument.value is None:
        return set()
    if isinstance(argument, ast.IfExp):  # `SummaryWriter(...) if rank == 0 else None`
        body = _argument_classes(project, caller, call, argument.body, assigns, depth, names)
        orelse = _argument_classes(project, caller, call, argument.orelse, assigns, depth, names)
        return None if body is None or orelse is None else body | orelse
    if isinstance(argument, ast.Call):
        dotted = _dotted(argument.func)
        qualified = caller.qualify(dotted) if dotted else None
        external = project.external_name(caller.path, dotted) if dotted else None
        for name in (qualified, external):
            if name and is_library_class(name):
                return {name}
        return None
    if not isinstance(argument, ast.Name):
        return None
    if argument.id in assigns:
        if names > 2:
            return None
        found: set = set()
        for value, index in assigns[argument.id]:
            if index is not None:
                return None
            one = _argument_classes(project, caller, call, value, assigns, depth, names + 1)
            if one is None:
                return None
            found |= one
        return found
    owner = _enclosing_function(caller.tree, call)
    if owner is None or argument.id not in {a.arg for a in (*owner.args.posonlyargs, *owner.args.args,
                                                            *owner.args.kwonlyargs)}:
        return None
    handed = parameter_library_classes(project, caller.path, owner.name, argument.id, depth + 1)
    return set(handed) if handed else None


def _enclosing_function(tree: ast.Module, call: ast.Call) -> Optional[ast.FunctionDef]:
    """The top-level function whose body holds `call`."""
    from gpulint.analysis.param_unions import _enclosing_function as enclosing

    return enclosing(tree, call)
