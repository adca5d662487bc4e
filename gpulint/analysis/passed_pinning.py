"""Whether the loaders a function's callers pass it pin, where the callers pass different loaders or import the
function under another name inside a function.

    # train/train_graphs.py                           # main_graphs.py
    def train_epoch_sparse(model, opt, device, loader):    def run(params):
        for graphs, targets in loader:                         if params["dense"]:
            graphs = graphs.to(device)                             from train.train_graphs import train_epoch_dense as train_epoch
            ...                                                else:
                                                                   from train.train_graphs import train_epoch_sparse as train_epoch
                                                               train_loader = DataLoader(train_set, batch_size=128)
                                                               val_loader = DataLoader(val_set, batch_size=128)
                                                               train_epoch(model, opt, device, train_loader)
                                                               evaluate(model, device, val_loader)
                                                               evaluate(model, device, train_loader)

`Project.parameter_loader` wants one loader passed by every call site of the function's own name, found through
the module's top-level imports. Here the callers import it under an alias inside a function, and an evaluation
function is handed the validation, test and training loaders in turn. What GPU202 needs is only whether those
loaders pin: `passed_pinning` answers that when every call found passes a `DataLoader(...)` (or a project
factory's or loader class's) and all of them agree (all unpinned, or all pinned). Calls are looked for in the files
naming the function: `f(...)` of the module's import, or of an alias bound by a `from <module> import f as g`
anywhere in the file (a function-local import included) that resolves to the function's module. Unknown (None)
when any such call passes something it cannot tell, or none is found.
"""

from __future__ import annotations

import ast
from pathlib import Path
from typing import Optional

_FILES = 12  # caller files read per question


def passed_pinning(project, path: Path, function: str, parameter: str) -> Optional[bool]:
    """True/False where every call found of the top-level function `function` of `path` passes, as `parameter`,
    loaders that all pin / all do not pin; else None."""
    from gpulint.analysis.forward import _remembered

    path = project._resolved(path)
    return _remembered(project, ("passed-pinning", path, function, parameter),
                       lambda: _find(project, path, function, parameter))


def _find(project, path: Path, function: str, parameter: str) -> Optional[bool]:
    from gpulint.analysis.project import _UNKNOWN, LoaderFact, _argument

    info = project.module(path)
    node = info.functions.get(function) if info is not None else None
    if node is None:
        return None
    positional = [a.arg for a in (*node.args.posonlyargs, *node.args.args)]
    position = positional.index(parameter) if parameter in positional else None
    pinning: set = set()
    files = [f for f in project.files_naming(function) if not project.is_test(f) and project._resolved(f) != path]
    for file in files[:_FILES]:
        caller = project.module(file)
        if caller is None:
            continue
        for local in _local_names(project, caller, path, function):
            for call, assigns in caller.calls_named(local):
                if not isinstance(call.func, ast.Name) or call.func.id != local:
                    continue
                argument = _argument(call, position, parameter)
                if argument is None or argument is _UNKNOWN:
                    return None
                found = _pinning_at(project, caller, argument, assigns)
                if found is None:
                    return None
                pinning |= found
    return next(iter(pinning)) if len(pinning) == 1 else None


def _pinning_at(project, caller, argument: ast.expr, assigns: dict) -> Optional[set]:
    """The pinning of the loaders `argument` may hold: a loader call, or a name each of whose assignments in the
    scope (`train_loader = DataLoader(...)` on both branches of an `if`) is one; None where one cannot be told."""
    from gpulint.analysis.project import LoaderFact

    values = [argument]
    if isinstance(argument, ast.Name) and argument.id in assigns:
        bound = assigns[argument.id]
        if not bound or len(bound) > 4 or any(index is not None for _, index in bound):
            return None
        values = [value for value, _ in bound]
    found: set = set()
    for value in values:
        made = project.loader_at(caller, value, assigns)
        if not isinstance(made, LoaderFact) or made.pinned is None:
            return None
        found.add(made.pinned)
    return found


def _local_names(project, caller, path: Path, function: str) -> list[str]:
    """The names `caller` calls `function` of `path` by: its top-level import of it, and every
    `from <module> import function [as alias]` in the file (inside functions too) resolving to `path`."""
    names: list[str] = []
    for node in ast.walk(caller.tree):
        if not isinstance(node, ast.ImportFrom):
            continue
        for alias in node.names:
            if alias.name != function:
                continue
            target = project.resolver.resolve(node.module or "", caller.path, node.level)
            if target is not None and project._resolved(target) == path:
                local = alias.asname or alias.name
                if local not in names:
                    names.append(local)
    return names
