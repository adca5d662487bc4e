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
anywhere in the file (a function-local import included) that resolves to the function's module. A caller that
hands on its own parameter (`def fit(model, val_loader): ... evaluate(model, device, val_loader)`) is asked the
same question in turn, a few functions up the chain (melgan's script -> `train` -> `validate`). Unknown (None)
when any such call passes something it cannot tell, or none is found.
"""

from __future__ import annotations

import ast
import threading
from pathlib import Path
from typing import Optional

from gpulint import ast_walk
from gpulint.ast_walk import scope_nodes

_FILES = 12  # caller files read per question


def passed_pinning(project, path: Path, function: str, parameter: str) -> Optional[bool]:
    """True/False where every call found of the top-level function `function` of `path` passes, as `parameter`,
    loaders that all pin / all do not pin; else None."""
    from gpulint.analysis.forward import _remembered

    path = project._resolved(path)
    return _remembered(project, ("passed-pinning", path, function, parameter),
                       lambda: _find(project, path, function, parameter))


def _find(project, path: Path, function: str, parameter: str) -> Optional[bool]:
    positional = _positional(project, path, function)
    if positional is None:
        return None
    position = positional.index(parameter) if parameter in positional else None
    sites = list(_project_calls(project, path, function))
    if not sites:  # called only in its own module (`evaluation(model, eval_loader)` at the end of `train`)
        own = project.module(path)
        node = own.functions.get(function) if own is not None else None
        return _own_calls_pinning(project, own, node, parameter) if node is not None else None
    return _agreed_pinning(project, sites, position, parameter)


def _agreed_pinning(project, sites, position: Optional[int], parameter: str) -> Optional[bool]:
    """The pinning every call in `sites` (`(caller, call, assigns)`) passes for the parameter; None when a call
    passes something unknown or the calls disagree."""
    from gpulint.analysis.project import _UNKNOWN, _argument

    pinning: set = set()
    for caller, call, assigns in sites:
        argument = _argument(call, position, parameter)
        if argument is None or argument is _UNKNOWN:
            return None
        found = _pinning_at(project, caller, argument, assigns, call)
        if found is None:
            return None
        pinning |= found
    return next(iter(pinning)) if len(pinning) == 1 else None


def _positional(project, path: Path, function: str) -> Optional[list]:
    """The positional parameter names of the top-level function `function` of `path`; None when there is none."""
    info = project.module(path)
    node = info.functions.get(function) if info is not None else None
    return [a.arg for a in (*node.args.posonlyargs, *node.args.args)] if node is not None else None


def _project_calls(project, path: Path, function: str):
    """(caller module, call, assigns) for the calls of `function` of `path` in the project's other files (tests
    left out), `_FILES` of the files naming it read at the most: what both questions (pinning, an option) read."""
    files = [f for f in project.files_naming(function) if not project.is_test(f) and project._resolved(f) != path]
    for file in files[:_FILES]:
        caller = project.module(file)
        if caller is None:
            continue
        for call, assigns in _calls_of(project, caller, path, function):
            yield caller, call, assigns


def _calls_of(project, caller, path: Path, function: str) -> list:
    """(call, assigns) of the calls in `caller` of `function` of `path`: by a name an import binds (`f(...)`, an
    alias `g(...)`, a function-local import included) or through its module (`misc.f(...)`)."""
    from gpulint.analysis.project import FunctionSummary

    found = []
    for local in _local_names(project, caller, path, function):
        found.extend((call, assigns) for call, assigns in caller.calls_named(local)
                     if isinstance(call.func, ast.Name) and call.func.id == local)
    for call, assigns in caller.calls_named(function):
        if isinstance(call.func, ast.Attribute):
            from gpulint.analysis.project import _dotted

            dotted = _dotted(call.func)
            target = project.lookup(caller.path, dotted) if dotted else None
            if isinstance(target, FunctionSummary) and target.qualname == function and \
                    project._resolved(target.path) == path:
                found.append((call, assigns))
    return found


def _pinning_at(project, caller, argument: ast.expr, assigns: dict, call: ast.Call) -> Optional[set]:
    """The pinning of the loaders `argument` may hold: a loader call, or a name each of whose assignments in the
    scope (`train_loader = DataLoader(...)` on both branches of an `if`) is one, or a name a loop around the call
    unpacks from `zip(names, loaders, ...)` (`for name, loader, weights in zip(...)`, the zip maybe through a name)
    whose matching argument is a list of loaders (`[DataLoader(env, ...) for env in envs]`); None where one cannot
    be told."""
    from gpulint.analysis.project import LoaderFact

    values = [argument]
    if isinstance(argument, ast.Name) and argument.id not in assigns:
        listed = _zipped_loaders(caller, argument.id, assigns, call)
        if listed is None:
            handed = _handed_on(project, caller, argument.id, call)
            return None if handed is None else {handed}
        values = listed
    elif isinstance(argument, ast.Name) and argument.id in assigns:
        bound = assigns[argument.id]
        if not bound or len(bound) > 4 or any(index is not None for _, index in bound):
            return None
        values = [value for value, _ in bound]
    found: set = set()
    for value in values:
        if isinstance(value, ast.Constant) and value.value is None and len(values) > 1:
            continue  # `eval_loader = None`, then a loader under an option: a loop over None never runs
        made = _loader_class_at(project, caller, value)
        if made is None:
            made = project.loader_at(caller, value, assigns)
        if not isinstance(made, LoaderFact):
            pinned = _method_loaders_pinning(project, caller, value, assigns)
            if pinned is None:
                return None
            found |= pinned
            continue
        if made.pinned is None:
            return None
        found.add(made.pinned)
    return found or None


def _method_loaders_pinning(project, caller, value, assigns: dict) -> Optional[set]:
    """`datamgr.get_data_loader(...)` where `datamgr` is bound to instances of several project classes (on the
    branches of an `if`): the pinning of the loader each class's method returns, when every one returns one whose
    pinning is known (not decided by a parameter); else None."""
    from gpulint.analysis.project import ClassSummary, FunctionSummary

    if not isinstance(value, ast.Call) or not isinstance(value.func, ast.Attribute) or \
            not isinstance(value.func.value, ast.Name) or value.func.value.id not in assigns:
        return None
    bound = assigns[value.func.value.id]
    if not bound or len(bound) > 4:
        return None
    found: set = set()
    for instance, index in bound:
        cls = project.class_at(caller, instance, assigns) if index is None else None
        method = project.method(cls, value.func.attr) if isinstance(cls, ClassSummary) else None
        made = method.returns_loader if isinstance(method, FunctionSummary) else None
        if made is None or made.pinned is None or made.pin_param is not None:
            return None
        found.add(made.pinned)
    return found


_HANDED_DEPTH = 3  # callers followed up a chain of functions handing a loader on
_chain = threading.local()  # .keys: the (path, function, parameter) questions of the chain being followed


def _handed_on(project, caller, name: str, call: ast.Call) -> Optional[bool]:
    """The pinning of the loader a top-level function of `caller` hands on as its own parameter `name`
    (`def fit(model, val_loader): ... check_model(model, val_loader)`): what the calls of that function pass
    it, asked the same way (`Project.parameter_loader`, else `passed_pinning`), up to `_HANDED_DEPTH` functions
    up the chain; None where the parameter is rebound in the function, or a cycle or the depth is reached."""
    function = _enclosing_function(caller.tree, call)
    if function is None or name not in [a.arg for a in (*function.args.posonlyargs, *function.args.args)] or \
            _rebinds(function, name):
        return None
    key = (project._resolved(caller.path), function.name, name)
    handing = _chain.__dict__.setdefault("keys", [])
    if key in handing or len(handing) >= _HANDED_DEPTH:
        return None
    handing.append(key)
    try:
        made = project.parameter_loader(caller.path, function.name, name)
        if made is not None:
            return made.pinned
        found = passed_pinning(project, caller.path, function.name, name)
        return found if found is not None else _own_calls_pinning(project, caller, function, name)
    finally:
        handing.pop()


def _own_calls_pinning(project, caller, function: ast.FunctionDef, name: str) -> Optional[bool]:
    """What the calls of the top-level `function` in its own module (`train(base_loader, ...)` of a script whose
    `base_loader` is built on two branches) pass as `name`, where every project call is there and all agree."""
    if next(iter(_project_calls(project, project._resolved(caller.path), function.name)), None) is not None:
        return None  # called from other files too: `passed_pinning` asked those
    positional = [a.arg for a in (*function.args.posonlyargs, *function.args.args)]
    position = positional.index(name) if name in positional else None
    sites = ((caller, call, assigns) for call, assigns in caller.calls_named(function.name)
             if isinstance(call.func, ast.Name) and call.func.id == function.name)
    return _agreed_pinning(project, sites, position, name)


def _enclosing_function(tree: ast.Module, call: ast.Call):
    """The top-level function of `tree` whose body holds `call` (not a method, not a nested function); None."""
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and \
                node.lineno <= call.lineno <= (node.end_lineno or node.lineno):
            inner = [n for n in ast_walk.walk(node) if n is not node and
                     isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)) and
                     any(c is call for c in ast_walk.walk(n))]
            return None if inner else node
    return None


def _rebinds(function: ast.AST, name: str) -> bool:
    """Whether `function` assigns `name` anywhere (a loop target, a `with ... as`, an assignment)."""
    return any(isinstance(n, ast.Name) and n.id == name and isinstance(n.ctx, (ast.Store, ast.Del))
               for n in ast_walk.walk(function))


def _loader_class_at(project, caller, value: ast.expr):
    """The wrapped loader's fact for a call of a project loader class (analysis/loader_classes.py), else None."""
    from gpulint.analysis.loader_classes import loader_fact
    from gpulint.analysis.project import ClassSummary, _dotted

    if not isinstance(value, ast.Call):
        return None
    dotted = _dotted(value.func)
    found = project.lookup(caller.path, dotted) if dotted else None
    return loader_fact(project, found) if isinstance(found, ClassSummary) else None


def _zipped_loaders(caller, name: str, assigns: dict, call: ast.Call) -> Optional[list]:
    """The loader expressions a `for` loop around `call` binds `name` to from a `zip(...)` of lists, else None.
    Names are followed through their assignments in the scope (each of at most 4 must be such a zip or list)."""
    for loop in ast_walk.walk(caller.tree):
        if not isinstance(loop, ast.For) or not isinstance(loop.target, ast.Tuple) or \
                not any(node is call for node in ast_walk.walk(loop)):
            continue
        names = [e.id if isinstance(e, ast.Name) else None for e in loop.target.elts]
        if name not in names:
            continue
        found: list = []
        for iterable in _values(loop.iter, assigns):
            if not (isinstance(iterable, ast.Call) and isinstance(iterable.func, ast.Name) and
                    iterable.func.id == "zip" and len(iterable.args) == len(names) and not iterable.keywords):
                return None
            for listed in _values(iterable.args[names.index(name)], assigns):
                if isinstance(listed, ast.ListComp):
                    found.append(listed.elt)
                elif isinstance(listed, (ast.List, ast.Tuple)) and listed.elts and \
                        not any(isinstance(e, ast.Starred) for e in listed.elts):
                    found.extend(listed.elts)
                else:
                    return None
        return found or None
    return None


def _values(expr: ast.expr, assigns: dict) -> list:
    """`expr`, or for a name, what its plain assignments in the scope bind (at most 4)."""
    if isinstance(expr, ast.Name) and expr.id in assigns:
        bound = assigns[expr.id]
        if len(bound) > 4 or any(index is not None for _, index in bound):
            return [None]
        return [value for value, _ in bound]
    return [expr]


def _local_names(project, caller, path: Path, function: str) -> list[str]:
    """The names `caller` calls `function` of `path` by: its top-level import of it, and every
    `from <module> import function [as alias]` in the file (inside functions too) resolving to `path`."""
    names: list[str] = []
    for node in ast_walk.walk(caller.tree):
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


def passed_option(project, path: Path, function: str, parameter: str, key: str) -> Optional[bool]:
    """True/False where every call found of the top-level function `function` of `path` passes, as `parameter`
    (a dict of options its body hands on as `**parameter`), a dict whose `key` is that literal: `f(loader_kwargs=
    dict(pin_memory=True))`, or `f(**c)` with `c.loader_kwargs = EasyDict(pin_memory=True, ...)` set in the
    caller's scope (EDM's `training_loop(**c)`); else None (a call that leaves it out, or one that cannot be read)."""
    from gpulint.analysis.forward import _remembered

    path = project._resolved(path)
    return _remembered(project, ("passed-option", path, function, parameter, key),
                       lambda: _find_option(project, path, function, parameter, key))


def _find_option(project, path: Path, function: str, parameter: str, key: str) -> Optional[bool]:
    positional = _positional(project, path, function)
    if positional is None:
        return None
    values: set = set()
    for caller, call, _ in _project_calls(project, path, function):
        found = _option_at(caller.tree, call, positional, parameter, key)
        if found is None:
            return None
        values.add(found)
    return next(iter(values)) if len(values) == 1 else None


def _option_at(tree: ast.Module, call: ast.Call, positional: list, parameter: str, key: str) -> Optional[bool]:
    """The literal `key` of the options dict `call` passes as `parameter`: a keyword, or an attribute (or item)
    `parameter` of the one `**name` the call unpacks, set in the call's scope."""
    value = next((k.value for k in call.keywords if k.arg == parameter), None)
    if value is None and parameter in positional and positional.index(parameter) < len(call.args):
        value = call.args[positional.index(parameter)]
    if value is None:
        stars = [k.value for k in call.keywords if k.arg is None]
        if len(stars) != 1 or not isinstance(stars[0], ast.Name) or call.args and \
                any(isinstance(a, ast.Starred) for a in call.args):
            return None
        set_values = _members_set(_scope_of(tree, call), stars[0].id, parameter)
        if len(set_values) != 1:
            return None
        value = set_values[0]
    return _literal_key(value, key)


def _scope_of(tree: ast.Module, call: ast.Call) -> ast.AST:
    """The innermost function holding `call` (the module when none)."""
    scope: ast.AST = tree
    for node in ast_walk.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and \
                node.lineno <= call.lineno <= (node.end_lineno or node.lineno) and \
                (scope is tree or node.lineno >= scope.lineno):  # type: ignore[attr-defined]
            scope = node
    return scope


def _members_set(scope: ast.AST, name: str, member: str) -> list:
    """The values `scope` assigns to `name.member` or `name["member"]` (not in nested functions)."""
    found = []
    for node in scope_nodes(scope):
        if isinstance(node, ast.Assign):
            for target in node.targets:
                owner = target.value if isinstance(target, (ast.Attribute, ast.Subscript)) else None
                if not isinstance(owner, ast.Name) or owner.id != name:
                    continue
                if isinstance(target, ast.Attribute) and target.attr == member or \
                        isinstance(target, ast.Subscript) and isinstance(target.slice, ast.Constant) and \
                        target.slice.value == member:
                    found.append(node.value)
    return found


def _literal_key(value: ast.expr, key: str) -> Optional[bool]:
    """`key` of `dict(k=v, ...)`, `EasyDict(k=v, ...)` (a call of keywords only of a `...dict` class) or `{"k": v}`, where `v` is a
    literal True/False; None otherwise."""
    found = None
    if isinstance(value, ast.Call) and not value.args:
        from gpulint.analysis.project import _dotted

        if not (_dotted(value.func) or "").rsplit(".", 1)[-1].lower().endswith("dict") or \
                any(k.arg is None for k in value.keywords):
            return None
        found = next((k.value for k in value.keywords if k.arg == key), None)
    elif isinstance(value, ast.Dict):
        if any(k is None for k in value.keys):
            return None
        found = next((v for k, v in zip(value.keys, value.values)
                      if isinstance(k, ast.Constant) and k.value == key), None)
    if isinstance(found, ast.Constant) and isinstance(found.value, bool):
        return found.value
    return None


def stored_option(project, key: str, option: str) -> Optional[bool]:
    """True/False where every assignment in the project (tests left out) of the member `key` of some object
    (`args.key = ...`, `cfg["key"] = ...`, `vars(args)["key"] = ...`) stores a dict of options whose `option` is
    that literal: `vars(args)['dataloader_kwargs'] = {'pin_memory': True, ...}` read as
    `DataLoader(ds, **args.dataloader_kwargs)`; None when an assignment stores something else, leaves the option
    out, or none is found (at most `_FILES` files naming the key are read)."""
    from gpulint.analysis.forward import _remembered

    return _remembered(project, ("stored-option", key, option), lambda: _find_stored(project, key, option))


def _find_stored(project, key: str, option: str) -> Optional[bool]:
    files = [f for f in project.files_naming(key) if not project.is_test(f)]
    if len(files) > _FILES:
        return None
    values: set = set()
    for file in files:
        info = project.module(file)
        if info is None:
            continue
        for node in ast_walk.walk(info.tree):
            if _changes_member(node, key):
                return None
            targets = node.targets if isinstance(node, ast.Assign) else \
                [node.target] if isinstance(node, (ast.AnnAssign, ast.AugAssign)) else []
            for target in targets:
                if not _names_member(target, key):
                    continue
                if isinstance(node, ast.AugAssign) or node.value is None:
                    return None
                found = _literal_key(node.value, option)
                if found is None:
                    return None
                values.add(found)
    return next(iter(values)) if len(values) == 1 else None


def _names_member(target: ast.expr, key: str) -> bool:
    """`x.key` or `x["key"]` (x anything: `vars(args)["key"]`)."""
    if isinstance(target, ast.Attribute):
        return target.attr == key
    return isinstance(target, ast.Subscript) and isinstance(target.slice, ast.Constant) and \
        target.slice.value == key


def _changes_member(node: ast.AST, key: str) -> bool:
    """`x.key[...] = v`, `del x.key[...]`, `x.key.update(...)` / `.setdefault(...)` / `.pop(...)`: the stored
    options changed after they were built."""
    if isinstance(node, (ast.Assign, ast.AugAssign, ast.AnnAssign, ast.Delete)):
        targets = node.targets if isinstance(node, (ast.Assign, ast.Delete)) else [node.target]
        return any(isinstance(t, ast.Subscript) and _names_member(t.value, key) for t in targets)
    return isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and \
        node.func.attr in ("update", "setdefault", "pop", "__setitem__") and _names_member(node.func.value, key)


_WRAPPERS = ("enumerate", "tqdm", "iter")  # `for i, batch in enumerate(tqdm(loader))`: the loader's batches


def handed_batch_pinning(project, path: Path, owner: Optional[str], function: str, parameter: str,
                         subscripted: bool) -> Optional[bool]:
    """True where every call found in the project's other files of the method `function` (of the class `owner`
    of `path`: `model.feed_data(train_data)`, by the method's name) or of the top-level function `function` passes,
    as `parameter`, the batch a `for` loop over a pinned loader binds (`for i, train_data in
    enumerate(train_loader):` with `train_loader = DataLoader(..., pin_memory=True)`); False where all of them
    are unpinned loaders' batches; else None (a call passing anything else, loaders that disagree, none found).
    A whole batch counts only where the copy takes an item of it (`subscripted`: `data['L'].to(device)`): the
    `.to()` of a whole batch may be a custom batch object's, which may not take `non_blocking`."""
    from gpulint.analysis.forward import _remembered

    path = project._resolved(path)
    return _remembered(project, ("handed-batch", path, owner, function, parameter, subscripted),
                       lambda: _find_handed(project, path, owner, function, parameter, subscripted))


def _find_handed(project, path: Path, owner: Optional[str], function: str, parameter: str,
                 subscripted: bool) -> Optional[bool]:
    info = project.module(path)
    if info is None:
        return None
    if owner is None:
        node = info.functions.get(function)
    else:
        cls = info.classes.get(owner)
        node = cls.methods.get(function) if cls is not None else None
    if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) or function.startswith("__") or \
            function == "forward":
        return None
    names = [a.arg for a in (*node.args.posonlyargs, *node.args.args)]
    if owner is not None:
        names = names[1:]
    position = names.index(parameter) if parameter in names else None
    if owner is None:
        sites = list(_project_calls(project, path, function))
    else:
        files = [f for f in project.files_naming(function) if not project.is_test(f) and project._resolved(f) != path]
        if len(files) > 2 * _FILES:
            return None
        sites = []
        for file in files:
            caller = project.module(file)
            if caller is None:
                continue
            sites.extend((caller, call, assigns) for call, assigns in caller.calls_named(function)
                         if isinstance(call.func, ast.Attribute) and call.func.attr == function)
    if not sites:
        return None
    from gpulint.analysis.project import _UNKNOWN, _argument

    pinning: set = set()
    for caller, call, assigns in sites:
        argument = _argument(call, position, parameter)
        if not isinstance(argument, ast.Name) or argument is _UNKNOWN:
            return None
        found_loop = _batch_loader(caller.tree, call, argument.id)
        if found_loop is None or found_loop[1] and not subscripted:
            return None
        loader = found_loop[0]
        found = _pinning_at(project, caller, loader, assigns, call)
        if found is None:
            return None
        pinning |= found
    return next(iter(pinning)) if len(pinning) == 1 else None


def _batch_loader(tree: ast.Module, call: ast.Call, name: str) -> Optional[tuple]:
    """The loader expression of the innermost `for` loop around `call` whose target binds `name` to its batch or
    a part of it (`for batch in loader`, `for i, batch in enumerate(tqdm(loader))`, `for x, y in loader`), where the loop body never rebinds `name`;
    (the loader, whether `name` is the whole batch); None otherwise."""
    loops = [n for n in ast_walk.walk(tree) if isinstance(n, ast.For) and
             any(c is call for s in n.body for c in ast_walk.walk(s))]
    loops.sort(key=lambda n: n.lineno)
    for loop in reversed(loops):
        iterable, target = loop.iter, loop.target
        while isinstance(iterable, ast.Call) and len(iterable.args) >= 1 and \
                (getattr(iterable.func, "id", None) or getattr(iterable.func, "attr", None)) in _WRAPPERS:
            if (getattr(iterable.func, "id", None) or getattr(iterable.func, "attr", None)) == "enumerate":
                if not (isinstance(target, ast.Tuple) and len(target.elts) == 2):
                    return None
                target = target.elts[1]
            iterable = iterable.args[0]
        bound = [n.id for n in ast_walk.walk(loop.target) if isinstance(n, ast.Name)]
        if name not in bound:
            continue
        if not (isinstance(target, ast.Name) and target.id == name or isinstance(target, ast.Tuple) and
                any(isinstance(e, ast.Name) and e.id == name for e in target.elts)):
            return None  # bound deeper (`for i, (x, y) in ...` through an unknown wrapper)
        if any(isinstance(n, ast.Name) and n.id == name and isinstance(n.ctx, (ast.Store, ast.Del))
               for s in loop.body for n in ast_walk.walk(s)):
            return None
        return iterable, isinstance(target, ast.Name)
    return None


def passed_method_pinning(project, path: Path, owner: str, method: str, parameter: str) -> Optional[bool]:
    """True/False where every call found in the project's other files of the method `method` (of the top-level
    class `owner` of `path`), matched by its name (`model.train_loop(epoch, base_loader, optimizer)`), passes as
    `parameter` loaders that all pin / all do not pin (`base_loader = datamgr.get_data_loader(...)` of a project
    class whose method builds a pinned `DataLoader` included); else None: a call passing anything else (another
    class's method of the same name, `model.train()`, passes no loader), none found, or too many files naming it."""
    from gpulint.analysis.forward import _remembered

    path = project._resolved(path)
    return _remembered(project, ("passed-method-pinning", path, owner, method, parameter),
                       lambda: _find_method(project, path, owner, method, parameter))


def _find_method(project, path: Path, owner: str, method: str, parameter: str) -> Optional[bool]:
    from gpulint.analysis.project import _UNKNOWN, _argument

    info = project.module(path)
    cls = info.classes.get(owner) if info is not None else None
    node = cls.methods.get(method) if cls is not None else None
    if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) or method.startswith("__"):
        return None
    names = [a.arg for a in (*node.args.posonlyargs, *node.args.args)][1:]
    position = names.index(parameter) if parameter in names else None
    files = [f for f in project.files_naming(method) if not project.is_test(f) and project._resolved(f) != path]
    if len(files) > _FILES:
        return None
    pinning: set = set()
    for file in files:
        caller = project.module(file)
        if caller is None:
            continue
        for call, assigns in caller.calls_named(method):
            if not isinstance(call.func, ast.Attribute) or call.func.attr != method:
                continue
            if isinstance(call.func.value, ast.Name) and call.func.value.id == "self":
                return None  # another class's method of that name, or a subclass's: not told here
            argument = _argument(call, position, parameter)
            if argument is None or argument is _UNKNOWN:
                return None
            found = _pinning_at(project, caller, argument, assigns, call)
            if found is None:
                return None
            pinning |= found
    return next(iter(pinning)) if len(pinning) == 1 else None
