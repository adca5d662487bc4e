"""Callback methods called by an event's name (issue 11, heldout15: PatchTST's fastai-style learner).

A learner runs its callbacks by name on every batch:

    class Learner:                                   # learner.py
        def batch_validate(self):                    # run every iteration of `all_batches`' loop
            self('before_batch_valid')
            self._do_batch_validate()
            self('after_batch_valid')
        def __call__(self, name):
            for cb in self.cbs:
                attr = getattr(cb, name)
                if attr is not None: attr()

    class TrackTrainingCB(Callback):                 # callback/tracking.py
        def after_batch_valid(self): ...             # per-step code: no file calls it by its name

`event_site` finds such a call for a method `member` of the top-level class `owner`: a call with the string
constant `member` as an argument, run every iteration of a hot loop of some project file (`forward._hot_calls`),
whose callee is a project function or method of that file (`self(...)` of the enclosing class's `__call__`,
`self.m(...)`, a top-level function) that calls `getattr(x, p)` on the parameter `p` receiving the string and
calls the result. The dispatching module must see the class (`owner`, or a project base of it, resolves there
through its imports, star imports included): the callbacks it holds are of the classes it knows.

Bounded: files whose text names `member` (the identifier index reads inside strings too) and whose `ast` holds
that string constant (indexed once per module), at most `forward._CALLERS_PER_QUESTION` of them parsed.

A trainer may also hold its hooks in a list and call each by the method's own name (branch recall61, heldout18:
Pointcept's registry-built hooks):

    class TrainerBase:                               # engines/train.py: `from .hooks import HookBase`
        def train(self):
            for batch in self.train_loader:
                self.run_step(batch)
                self.after_step()                    # a per-step method of the trainer ...
        def after_step(self):
            for h in self.hooks:                     # ... runs every hook's `after_step`
                h.after_step()

    class InformationWriter(HookBase):               # engines/hooks/misc.py
        def after_step(self): ...                    # per-step code: `h` is an instance no call names

`listed_site` (asked by `event_site` after the event calls) finds a call `h.member(...)` run every iteration of
a hot loop (`forward._hot_calls`: the trainer's own per-step methods reached through `self` included) whose
receiver is the target of the `for` loop that holds it, over a plain collection (`self.hooks`, `callbacks`,
`enumerate(...)`/`.values()` of one), in a module that sees the class or a project base of it (`_sees`). The
hooks the loop walks are of the classes the trainer knows; a hook list iterated only in an epoch-level method
(`after_epoch`) is no hot call, and a periodic body (`if self.every_n_steps(...)`) stays periodic in the hook's
own module. Bounded as the event calls: files whose text names `member` and whose calls name it (`_hot_file`),
at most `forward._CALLERS_PER_QUESTION` of them parsed.
"""

from __future__ import annotations

import ast
from dataclasses import replace
from pathlib import Path
from typing import Optional

import libcst as cst

from gpulint import ast_walk
from gpulint.analysis.project import ClassSummary, Project


def event_site(project: Project, path: Path, owner: str, member: str):
    """The per-step call that runs `owner.member` by its name (`self('after_batch_valid')`), or None."""
    from gpulint.analysis.forward import _remembered, _resolved

    path = _resolved(project, path)
    return _remembered(project, ("event", path, owner, member), lambda: _find(project, path, owner, member))


def _strings(tree: ast.Module) -> frozenset:
    """The string constants of a module: `_find`'s filter, built once per module (`ModuleInfo.indexed`)."""
    return frozenset(n.value for n in ast_walk.walk(tree) if isinstance(n, ast.Constant) and isinstance(n.value, str)
                     and n.value.isidentifier())


def _find(project: Project, path: Path, owner: str, member: str):
    from gpulint.analysis.forward import _remembered
    from gpulint.analysis.hierarchy import project_bases

    info = project.module(path)
    cls = info.classes.get(owner) if info is not None else None
    if cls is None or member not in cls.methods or member.startswith("__"):
        return None
    # the dispatching calls of an event do not depend on the class: found once per name and project state
    calls = _remembered(project, ("event calls", member), lambda: _event_calls(project, member)) or ()
    bases = None
    for caller_path, site in calls:
        if bases is None:
            bases = list(project_bases(project, cls))
        if _sees(project, caller_path, cls, bases):
            return replace(site, runs=f"{owner}.{member}")
    # `for h in self.hooks: h.after_step()` in per-step code: found once per name and project state
    calls = _remembered(project, ("listed calls", member), lambda: _listed_calls(project, member)) or ()
    for caller_path, site in calls:
        if bases is None:
            bases = list(project_bases(project, cls))
        if _sees(project, caller_path, cls, bases):
            return replace(site, runs=f"{owner}.{member}")
    return None


def _listed_calls(project: Project, member: str) -> tuple:
    """(caller path, call site) of each per-step call `h.member(...)` whose receiver `h` is the target of the
    `for` loop over a plain collection that holds the call (`for h in self.hooks:`)."""
    from gpulint.analysis.forward import _CALLERS_PER_QUESTION, CallSite, _hot_calls, _hot_file, _line_of

    found: list = []
    looked_at = 0
    for file in project.files_naming(member, training=True):
        caller = None if project.is_test(file) else project.module(file)
        if caller is None or getattr(caller, "statements", None) is not None:
            continue
        hot, called = _hot_file(project, caller)
        if not hot or member not in called or member not in caller.indexed(_listed_members):
            continue  # only the modules that write the shape are parsed (LibCST) and walked for hot calls
        if looked_at == _CALLERS_PER_QUESTION:
            break
        looked_at += 1
        for analysis, node, func in _hot_calls(project, caller.path):
            if type(func) is cst.Attribute and func.attr.value == member and type(func.value) is cst.Name and \
                    _listed_receiver(analysis, node, func.value.value):
                found.append((caller.path, CallSite(analysis.path, _line_of(analysis, node),
                                                    f"{analysis.code(node.func)}(...)", f"?.{member}")))
                break
    return tuple(found)


def _listed_members(tree: ast.Module) -> frozenset:
    """The methods a module calls on the target of a `for` loop holding the call (`for h in self.hooks:
    h.after_step()`): `_listed_calls`' filter, built once per module (`ModuleInfo.indexed`)."""
    found = set()
    for loop in ast_walk.walk(tree):
        if not isinstance(loop, ast.For):
            continue
        targets = {n.id for n in ast_walk.walk(loop.target) if isinstance(n, ast.Name)}
        for stmt in loop.body:
            for node in ast_walk.walk(stmt):
                if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and \
                        isinstance(node.func.value, ast.Name) and node.func.value.id in targets:
                    found.add(node.func.attr)
    return frozenset(found)


def _listed_receiver(analysis, node: cst.Call, name: str) -> bool:
    """`name` is a target of the innermost `for` loop holding `node`, a loop over a plain collection: a name or
    an attribute (`self.hooks`), or `enumerate(...)`/`reversed(...)`/`x.values()` of one."""
    parent = analysis.parent(node)
    while parent is not None and type(parent) is not cst.For:
        if type(parent) in (cst.FunctionDef, cst.ClassDef, cst.Lambda):
            return False
        parent = analysis.parent(parent)
    if parent is None or not _binds(parent.target, name):
        return False
    # the loop over the collection must run inside per-step code, not be the hot loop itself (accelerate's
    # `save_state`: `for i, model in enumerate(self._models): model.save_checkpoint(...)`, judged a loop that
    # runs models, is no step of training)
    return _plain_collection(parent.iter) and analysis.execution(node).loop is not parent


def _binds(target: cst.BaseExpression, name: str) -> bool:
    if type(target) is cst.Name:
        return target.value == name
    if type(target) in (cst.Tuple, cst.List):
        return any(_binds(e.value, name) for e in target.elements)
    return False


def _plain_collection(node: cst.BaseExpression) -> bool:
    if type(node) is cst.Call and not node.args and type(node.func) is cst.Attribute and \
            node.func.attr.value == "values":
        return _plain_collection(node.func.value)
    if type(node) is cst.Call and type(node.func) is cst.Name and node.func.value in ("enumerate", "reversed") \
            and len(node.args) == 1 and node.args[0].keyword is None and not node.args[0].star:
        return _plain_collection(node.args[0].value)
    while type(node) is cst.Attribute:
        node = node.value
    return type(node) is cst.Name


def _event_calls(project: Project, member: str) -> tuple:
    """(caller path, call site) of each per-step call passing the string `member` to a project callee of its
    module that calls `getattr(x, <that parameter>)` and then the result."""
    from gpulint.analysis.forward import _CALLERS_PER_QUESTION, CallSite, _hot_calls, _hot_file, _line_of

    found: list = []
    looked_at = 0
    dispatching = set(project.files_naming("getattr", training=True))  # the callee is of the caller's module
    for file in project.files_naming(member, training=True):
        if file not in dispatching:
            continue
        caller = None if project.is_test(file) else project.module(file)
        if caller is None or getattr(caller, "statements", None) is not None or \
                member not in caller.indexed(_strings) or not _hot_file(project, caller)[0]:
            continue
        if looked_at == _CALLERS_PER_QUESTION:
            break
        looked_at += 1
        for analysis, node, func in _hot_calls(project, caller.path):
            position = next((i for i, a in enumerate(node.args) if a.keyword is None and not a.star
                             and type(a.value) is cst.SimpleString and a.value.evaluated_value == member), None)
            if position is None:
                continue
            dispatcher = _callee(caller, analysis, node, func)
            if dispatcher is None:
                continue
            fn, bound = dispatcher
            params = [a.arg for a in (*fn.args.posonlyargs, *fn.args.args)][1 if bound else 0:]
            if position < len(params) and _dispatches_by_name(fn, params[position]):
                found.append((caller.path, CallSite(analysis.path, _line_of(analysis, node),
                                                    f"{analysis.code(node.func)}(...)", f"?.{member}")))
                break
    return tuple(found)


def _sees(project: Project, importer: Path, cls: ClassSummary, bases) -> bool:
    """`cls` or one of its project bases is what its name means in `importer`."""
    for one in (cls, *bases):
        found = project.lookup(importer, one.name)
        if isinstance(found, ClassSummary) and found.name == one.name and found.path.resolve() == one.path.resolve():
            return True
    return False


def _callee(caller, analysis, node: cst.Call, func: cst.BaseExpression) -> Optional[tuple[ast.FunctionDef, bool]]:
    """The `ast` function the call runs, of the caller's own module, and whether it is bound (a method):
    `self(...)` the enclosing class's `__call__`, `self.m(...)` its method `m`, `f(...)` a top-level function."""
    enclosing = analysis.index.enclosing_class(node)
    own = caller.classes.get(enclosing.name.value) if enclosing is not None else None
    if type(func) is cst.Name and func.value == "self" and own is not None:
        fn = own.methods.get("__call__")
        return (fn, True) if fn is not None else None
    if type(func) is cst.Attribute and type(func.value) is cst.Name and func.value.value == "self" and own is not None:
        fn = own.methods.get(func.attr.value)
        return (fn, True) if fn is not None else None
    if type(func) is cst.Name and func.value in caller.functions:
        return caller.functions[func.value], False
    return None


def _dispatches_by_name(fn: ast.FunctionDef, param: str) -> bool:
    """`fn` calls `getattr(x, param)(...)`, or binds `a = getattr(x, param[, None])` and calls `a(...)`."""
    bound: set = set()
    looked_up = []
    for node in ast_walk.walk(fn):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "getattr" and \
                len(node.args) >= 2 and isinstance(node.args[1], ast.Name) and node.args[1].id == param:
            looked_up.append(node)
    if not looked_up:
        return False
    for node in ast_walk.walk(fn):
        if isinstance(node, ast.Call) and any(node.func is g for g in looked_up):
            return True
        if isinstance(node, ast.Assign) and any(node.value is g for g in looked_up):
            bound.update(t.id for t in node.targets if isinstance(t, ast.Name))
    return any(isinstance(n, ast.Call) and isinstance(n.func, ast.Name) and n.func.id in bound
               for n in ast_walk.walk(fn))
