"""Hooks a framework's step calls, overridden in another module (issue 11, heldout8: SpeechBrain's recipes).

A framework keeps the step loop in a base class and calls hooks through `self` every step:

    class Brain:                                   # speechbrain/core.py
        def fit_batch(self, batch):
            outputs = self.compute_forward(batch)  # run every iteration of `_fit_train`'s loop
            ...

    class ASR(sb.core.Brain):                      # recipes/.../train.py: no loop of its own
        def compute_forward(self, batch, stage):
            ...

`ASR.compute_forward` runs every step although no file calls it by an instance: the base class's per-step code
does, through `self`. `override_site` finds that call: for a method `member` that a class of the linted module
defines, a project base class of it (direct or not, looked up through the project's imports) in another module
whose code calls `self.member(...)` every iteration of a hot loop of that module, inside the base class itself.
The base module's own loop analysis decides what runs every iteration (`forward._hot_calls`: its helpers
reached through `self` included), so a hook called only once (`on_fit_start`) or periodically is not per-step.
Overrides in the base's own module are `LoopAnalysis.overrides`' business.

The same holds for a model's `forward` in a template-method trainer (DeepCTR's `BaseModel.fit`, Keras-style):
the base class's training loop runs the model it is, `self(x)`, `self.forward(x)`, or a name bound only to
`self` or to a module method returning it (`model = self.train()`, `self.eval()`, `self.to(device)`); a subclass
that defines `forward` and inherits that loop runs its `forward` every step (`template_site`, asked by
`forward.per_step_site` when no file calls an instance of the class in a hot loop). The base may be in the same
module.

Bounded: only classes with a project base in another module are looked at, a base module only when its `ast`
tree may hold a hot loop calling that name (`forward._hot_file`), and its LibCST analysis is the one the other
call-site searches share (`forward._hot_calls`).
"""

from __future__ import annotations

from pathlib import Path
from typing import Optional

import libcst as cst

from gpulint.analysis.hierarchy import defining_class, project_bases
from gpulint.analysis.project import ClassSummary, Project
from gpulint.analysis.tree import descendants


def override_site(project: Project, path: Path, owner: str, member: str):
    """The call `self.member(...)` in a project base class (another module) of the top-level class `owner` of
    `path` that runs every iteration of a hot loop there, when `owner` defines `member`; else None."""
    from gpulint.analysis.forward import _remembered, _resolved

    path = _resolved(project, path)
    return _remembered(project, ("override", path, owner, member),
                       lambda: _find_override_site(project, path, owner, member))


def _find_override_site(project: Project, path: Path, owner: str, member: str):
    from gpulint.analysis.forward import _resolved

    cls = defining_class(project, path, owner, member)
    if cls is None or not cls.bases:
        return None
    for found in project_bases(project, cls):
        if _resolved(project, found.path) != path:
            site = _self_call_every_step(project, found, member, owner) or \
                _called_by_per_step_forward(project, found, member, owner)
            if site is not None:
                return site
    return None


def _called_by_per_step_forward(project: Project, base: ClassSummary, member: str, owner: str):
    """`self.member(...)` in the `forward` of the project module class `base` (another module), outside loops and
    nested functions, when that `forward` is per-step model code (`forward.per_step_site`: a loop elsewhere calls
    an instance every step). A distiller's `forward` dispatching `return self.forward_train(**kwargs)` to the
    subclass the configuration picks runs that subclass's `forward_train` every step."""
    import ast

    from gpulint import ast_walk
    from gpulint.analysis.forward import CallSite, per_step_site

    fn = base.methods.get("forward")
    if fn is None or member == "forward":
        return None
    key = ("self calls of forward", base.path, base.name, base.line)
    called = project.per_step_sites.get(key)
    if called is None:  # {name: line} of `self.name(...)` in `forward`, outside loops and nested functions
        called = {}
        nested = [n for n in ast_walk.walk(fn) if n is not fn and isinstance(
            n, (ast.For, ast.While, ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef))]
        inside = {id(m) for n in nested for m in ast_walk.walk(n)}
        for n in ast_walk.walk(fn):
            if isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and isinstance(n.func.value, ast.Name) \
                    and n.func.value.id == "self" and id(n) not in inside:
                called.setdefault(n.func.attr, n.lineno)
            prefix = _getattr_prefix(n) if id(n) not in inside else None
            if prefix is not None:
                called.setdefault(_PREFIX + prefix, n.lineno)
        project.per_step_sites[key] = called
    line = called.get(member)
    shown = f"self.{member}(...)"
    if line is None:  # `getattr(self, "_" + mode)(*args, **kwargs)`: the mode's method, one of those named so
        line, shown = next(((n, f"getattr(self, {k[len(_PREFIX):]!r} + ...)(...)") for k, n in called.items()
                            if k.startswith(_PREFIX) and member.startswith(k[len(_PREFIX):])), (None, shown))
    if line is None or not project.is_module_class(base) or \
            per_step_site(project, base.path, base.name) is None:
        return None
    return CallSite(base.path, line, shown, f"{owner}.{member}")


_PREFIX = "getattr prefix:"


def _getattr_prefix(node) -> Optional[str]:
    """`getattr(self, "_" + mode)(...)` / `getattr(self, f"_{mode}")(...)`: the constant prefix ("_") of the
    names of the methods such a call may run; a prefix of two characters at least, or one that is not a
    letter (`_`), else None."""
    import ast

    if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Call) and
            isinstance(node.func.func, ast.Name) and node.func.func.id == "getattr" and
            len(node.func.args) >= 2 and isinstance(node.func.args[0], ast.Name) and node.func.args[0].id == "self"):
        return None
    name = node.func.args[1]
    prefix = None
    if isinstance(name, ast.BinOp) and isinstance(name.op, ast.Add) and isinstance(name.left, ast.Constant) and \
            isinstance(name.left.value, str):
        prefix = name.left.value
    elif isinstance(name, ast.JoinedStr) and name.values and isinstance(name.values[0], ast.Constant):
        prefix = str(name.values[0].value)
    if not prefix or len(prefix) < 2 and prefix.isalnum():
        return None
    return prefix


def template_site(project: Project, path: Path, owner: str):
    """The call that runs the model itself (`self(x)`, `model(x)` after `model = self.train()`) every iteration
    of a hot loop in a method of a project base class of the module class `owner` of `path`, a method `owner`
    inherits, when `owner` defines `forward`; else None."""
    from gpulint.analysis.forward import _remembered, _resolved

    path = _resolved(project, path)
    return _remembered(project, ("template", path, owner),
                       lambda: _find_template_site(project, path, owner))


def _find_template_site(project: Project, path: Path, owner: str):
    cls = defining_class(project, path, owner, "forward")
    if cls is None or not cls.bases or not project.is_module_class(cls):
        return None
    overridden = set(cls.methods)  # a loop method the class (or a nearer base) defines again is not inherited
    for found in project_bases(project, cls):
        site = _self_call_every_step(project, found, "forward", owner, overridden, training=True)
        if site is not None:
            return site
        overridden |= set(found.methods)
    return None


def _self_call_every_step(project: Project, base: ClassSummary, member: str, owner: str,
                          overridden: frozenset = frozenset(), training: bool = False):
    """`self.member(...)` in a method of `base`, run every iteration of a hot loop of `base`'s module (for
    `forward`, also the model called as itself: `self(x)`, `model(x)` with `model = self.train()`), in a method
    not in `overridden`; with `training`, only in a method that calls `backward` (a base class's `fit` loop; a
    generation or prediction loop of a library mixin, `GenerationMixin.greedy_search`'s `self(...)`, would make
    every subclass's `forward` per-step, with its training-only branches)."""
    from gpulint.analysis.forward import CallSite, _hot_call_names, _hot_calls, _hot_file, _line_of

    info = project.module(base.path)
    if info is None or project.is_test(info.path):
        return None
    hot, called = _hot_file(project, info)
    itself = member == "forward"
    if not hot or not itself and (member not in called or member not in _hot_call_names(project, info.path)):
        return None
    for analysis, node, func in _hot_calls(project, info.path):
        if type(func) is cst.Attribute and func.attr.value == member and type(func.value) is cst.Name \
                and func.value.value == "self":
            pass
        elif not (itself and type(func) is cst.Name and _holds_self(analysis, node, func)):
            continue
        if _outermost_name(analysis, node, cst.ClassDef) != base.name or \
                _outermost_name(analysis, node, cst.FunctionDef) in overridden:
            continue
        if training and not _calls_backward(analysis, node):
            continue
        return CallSite(analysis.path, _line_of(analysis, node), f"{analysis.code(node.func)}(...)",
                        f"{owner}.{member}")
    return None


def _calls_backward(analysis, node: cst.CSTNode) -> bool:
    """The function enclosing `node` calls `<something>.backward(...)`."""
    fn = next((a for a in analysis.index.ancestors(node) if type(a) is cst.FunctionDef), None)
    return fn is not None and any(type(n) is cst.Call and type(n.func) is cst.Attribute and
                                  n.func.attr.value == "backward" for n in descendants(fn))


def _holds_self(analysis, node: cst.CSTNode, name: cst.Name) -> bool:
    """`name` is `self`, or a local name of the enclosing method every binding of which is `self` or a module
    method that returns it (`model = self.train()`)."""
    if name.value == "self":
        return True
    fn = next((a for a in analysis.index.ancestors(node) if type(a) is cst.FunctionDef), None)
    if fn is None:
        return False
    values = []
    for stmt in descendants(fn):
        if type(stmt) is cst.Assign and any(type(t.target) is cst.Name and t.target.value == name.value
                                            for t in stmt.targets):
            if len(stmt.targets) != 1:
                return False
            values.append(stmt.value)
        elif type(stmt) in (cst.AnnAssign, cst.AugAssign, cst.For, cst.With, cst.NamedExpr) and \
                name.value in _bound_names(stmt):
            return False
    from gpulint.analysis.forward import _WRAPPERS

    def rewraps(value) -> bool:  # `model = torch.nn.DataParallel(model, ...)`: the name's other bindings decide
        return type(value) is cst.Call and value.args and value.args[0].keyword is None and \
            type(value.args[0].value) is cst.Name and value.args[0].value.value == name.value and \
            analysis.qualified(value.func) in _WRAPPERS
    values = [v for v in values if not rewraps(v)]
    return bool(values) and all(_is_self(v) for v in values)


def _is_self(value: cst.BaseExpression) -> bool:
    """`self`, or a module method that returns it: `self.train()`, `self.to(device)`."""
    from gpulint.analysis.forward import _SELF_METHODS

    if type(value) is cst.Name:
        return value.value == "self"
    return type(value) is cst.Call and type(value.func) is cst.Attribute and \
        value.func.attr.value in _SELF_METHODS and _is_self(value.func.value)


def _bound_names(stmt: cst.CSTNode) -> set:
    """The plain names a non-`Assign` binding statement binds (conservatively: every name in its targets)."""
    targets = []
    if type(stmt) in (cst.AnnAssign, cst.AugAssign):
        targets = [stmt.target]
    elif type(stmt) is cst.For:
        targets = [stmt.target]
    elif type(stmt) is cst.With:
        targets = [i.asname.name for i in stmt.items if i.asname is not None]
    elif type(stmt) is cst.NamedExpr:
        targets = [stmt.target]
    return {n.value for t in targets for n in descendants(t) if type(n) is cst.Name}


def _outermost_name(analysis, node: cst.CSTNode, node_type: type) -> Optional[str]:
    """The name of the outermost class (or function) holding `node`: the top-level class whose method holds it,
    or that method."""
    found = analysis.index.outermost(node, node_type)
    return found.name.value if found is not None else None
