"""A base class's method that a subclass's per-step method calls through `self` (issue 11, heldout10's tianshou).

Library hierarchies keep shared step helpers in the base class and call them from each algorithm's per-step
method, in another module:

    class Algorithm:                                 # algorithm_base.py: no loop, no per-step caller of its own
        def compute_nstep_return(self, batch, ...):
            target_q = to_numpy(self._target_q(...))  # a device read on every call

    class DQN(OffPolicyAlgorithm):                   # dqn.py
        def _preprocess_batch(self, batch, buffer, indices):   # per-step code (framework_steps)
            return self.compute_nstep_return(batch, ...)

`Algorithm.compute_nstep_return` runs every step because a subclass's per-step method calls it through `self`.
`inherited_site` finds that call: for a method `member` of a top-level class `owner`, a class of another project
module deriving from `owner` (through project bases, 4 levels) that does not define `member` itself, whose method
calls `self.member(...)` (not under a periodic or flag test) and is per-step code by a project-level answer (a
framework step, a hook the base's loop calls, a method a hot loop calls on an instance), directly or through one
`self.helper(...)` of the same class. Bounded: the files whose text names `member`, at most `_EXAMINED`.
"""

from __future__ import annotations

import ast
from pathlib import Path
from typing import Optional

from gpulint import ast_walk
from gpulint.analysis.hierarchy import defining_class, derives
from gpulint.analysis.project import ClassSummary, Project

_EXAMINED = 24


def inherited_site(project: Project, path: Path, owner: str, member: str):
    """The per-step `self.member(...)` call in a subclass (another module) of the top-level class `owner` of
    `path`, when `owner` defines `member`; else None."""
    from gpulint.analysis.forward import _remembered, _resolved

    path = _resolved(project, path)
    return _remembered(project, ("inherited", path, owner, member),
                       lambda: _find(project, path, owner, member))


def modules_naming(project: Project, member: str, path: Path, limit: int = _EXAMINED):
    """The project modules, other than `path` and test modules, among the first `limit` files whose text names
    `member` (the bound of the searches for calls of `member` in other modules)."""
    for examined, file in enumerate(project.files_naming(member)):
        if examined == limit:
            return
        if project.is_test(file) or project._resolved(file) == path:
            continue
        other = project.module(file)
        if other is not None:
            yield other


def _find(project: Project, path: Path, owner: str, member: str):
    from gpulint.analysis.forward import CallSite

    base = defining_class(project, path, owner, member)
    if base is None or member.startswith("__"):
        return None
    info = project.module(path)
    # the module's own subclasses first (`CNNBase(NNBase)` calling `self._forward_gru(...)` in its `forward`)
    for other in (info, *modules_naming(project, member, path)):
        for cls in other.classes.values():
            if not cls.bases or member in cls.methods or not _derives(project, cls, base, member):
                continue
            found = _per_step_self_call(project, cls, member)
            if found is not None:
                line, via = found
                return CallSite(other.path.resolve(), line, f"self.{member}(...)", f"{owner}.{member}",
                                owner=None)
    return None


def _derives(project: Project, cls: ClassSummary, base: ClassSummary, member: str) -> bool:
    """`cls` derives from `base` through project bases, none of which in between defines `member` (an
    intermediate override takes `self.member` calls)."""
    return derives(project, cls, base, through=lambda found: member not in found.methods)


def _per_step_self_call(project: Project, cls: ClassSummary, member: str) -> Optional[tuple[int, str]]:
    """(line, method) of `self.member(...)` in a per-step method of `cls`, or in a method one of them calls
    through `self`."""
    from gpulint.analysis.framework_steps import framework_site
    from gpulint.analysis.overrides import override_site

    def per_step(method: str) -> bool:
        from gpulint.analysis.forward import member_site

        from gpulint.analysis.forward import per_step_site

        if method == "forward" and project.is_module_class(cls) and \
                per_step_site(project, cls.path, cls.name) is not None:
            return True  # the subclass's `forward` runs every step (a training loop, or its owner's per-step call)
        return framework_site(project, cls.path, cls.name, method) is not None or \
            override_site(project, cls.path, cls.name, method) is not None or \
            member_site(project, cls.path, cls.name, method) is not None

    callers = {name: _self_call(project, fn, member) for name, fn in ((n, cls.methods[n]) for n in cls.methods)}
    for name, call in callers.items():
        if call is not None and per_step(name):
            return call.lineno, name
    for name, call in callers.items():
        if call is None:
            continue
        for outer in cls.methods:
            if outer != name and _self_call(project, cls.methods[outer], name) is not None and per_step(outer):
                return call.lineno, name
    return None


def _self_call(project: Project, fn, name: str) -> Optional[ast.Call]:
    """A call `self.name(...)` in `fn`'s body, not under a periodic or flag test (helper_sites' search)."""
    return first_calls(project, fn, _self_call_name).get(name)


def first_calls(project: Project, fn, name_of) -> dict:
    """For a function of the project model: name -> the first call `name_of` gives that name (`self.name(...)`
    for `_self_call_name`) in `fn`'s body, not under a periodic or flag test, in the order of the search
    (`_collect`). One walk of the function answers every name asked about it (a monorepo's questions asked for
    the same methods' calls once per owner class and member: hundreds of walks of each); kept beside the
    per-step sites (cleared with them), by the node itself (`ast` trees are never modified after the parse)."""
    if not isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)):
        return {}
    key = ("first calls", id(fn), name_of)
    with project._lock:
        known = project.per_step_sites.get(key)
    if known is not None and known[0] is fn:
        return known[1]
    params = {a.arg for a in (*fn.args.posonlyargs, *fn.args.args, *fn.args.kwonlyargs)}
    found: dict = {}
    _collect(fn.body, params, name_of, found)
    with project._lock:
        project.per_step_sites[key] = (fn, found)  # the node is kept alive: its id stays its own
    return found


def _collect(body: list, params: set, name_of, found: dict) -> None:
    """Every call `name_of` names in `body`, not under a periodic or flag test, the first one of each name kept:
    statements in order, a test before its blocks, each expression in `ast.walk` order."""
    from gpulint.analysis.helper_sites import _conditional

    for stmt in body:
        if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            continue
        if isinstance(stmt, ast.If):
            _in_expr(stmt.test, name_of, found)
            if not _conditional(stmt.test, params):
                _collect(stmt.body, params, name_of, found)
            _collect(stmt.orelse, params, name_of, found)
            continue
        for child in ast_walk.iter_child_nodes(stmt):
            if not isinstance(child, ast.stmt):
                _in_expr(child, name_of, found)
        for field in ("body", "orelse", "finalbody"):
            inner = getattr(stmt, field, None)
            if isinstance(inner, list) and inner:
                _collect(inner, params, name_of, found)


def _in_expr(expr: ast.AST, name_of, found: dict) -> None:
    for node in ast_walk.walk(expr):
        if isinstance(node, ast.Call):
            name = name_of(node)
            if name is not None and name not in found:
                found[name] = node


def _self_call_name(node: ast.Call) -> Optional[str]:
    """`name` for a call `self.name(...)`, else None."""
    func = node.func
    if isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name) and func.value.id == "self":
        return func.attr
    return None
