"""A subclass's override called every step through an attribute typed only by a project base class (issue 11,
heldout11's PyTorch-VAE): class hierarchy analysis for framework step methods.

    class VAEXperiment(pl.LightningModule):        # experiment.py
        def __init__(self, vae_model: BaseVAE, params):
            self.model = vae_model
        def training_step(self, batch, batch_idx):    # Lightning runs it every step (framework_steps)
            loss = self.model.loss_function(...)      # BaseVAE.loss_function is abstract

    class FactorVAE(BaseVAE):                         # models/fvae.py: one of many subclasses
        def loss_function(self, *args, **kwargs):     # per-step code in the run that builds a FactorVAE
            ...

No file names the concrete class where the call is made: the receiver is declared as the base. Each project
subclass of the declared base is a possible class of the value, so its own `member` is a possible callee.
`dispatched_site` finds such a call for a method `member` that the top-level class `owner` of `path` defines:
a call `self.<attr>.member(...)` (not under a periodic or flag test) in a method of another module's class that
a framework calls every step (`framework_steps.framework_step_call`), where `self.<attr>` is assigned in an
`__init__` of that class (or of a project base of it, hierarchy.py) from a parameter annotated with a project
class `D` that has `member` and that `owner` derives from.

Bounded: project classes only (the declared class and `owner` are project classes, related through at most
`hierarchy.DEPTH` levels of project bases: a library base says nothing of the project's subclasses), only
files whose text names `member` (at most `_EXAMINED`), and only a declared type (an annotation): a value built
by a construction is that class, never a subclass.
"""

from __future__ import annotations

import ast
from pathlib import Path
from typing import Optional

from gpulint import ast_walk
from gpulint.analysis.hierarchy import defining_class, derives, project_bases, same_class
from gpulint.analysis.inherited_calls import first_calls, modules_naming
from gpulint.analysis.project import ClassSummary, Project, annotation_class

_EXAMINED = 24


def dispatched_site(project: Project, path: Path, owner: str, member: str):
    """The per-step framework-method call `self.<attr>.member(...)` whose receiver is declared as a project base
    class of the top-level class `owner` of `path` (which defines `member`); else None."""
    from gpulint.analysis.forward import _remembered, _resolved

    path = _resolved(project, path)
    return _remembered(project, ("dispatched", path, owner, member),
                       lambda: _find(project, path, owner, member))


def _find(project: Project, path: Path, owner: str, member: str):
    from gpulint.analysis.forward import CallSite
    from gpulint.analysis.framework_steps import framework_step_call

    cls = defining_class(project, path, owner, member)
    if cls is None or member.startswith("__") or not cls.bases:
        return None
    declared_bases = [b for b in project_bases(project, cls) if project.method(b, member) is not None]
    if not declared_bases:
        return None
    for other in modules_naming(project, member, path, _EXAMINED):
        found: list = []

        def called_in(fn, name, other=other, found=found):
            call = _attribute_call(project, fn, name)
            if call is None:
                return None
            holder = _holder_class(other, fn)
            declared = _declared_attribute(project, holder, call.func.value.attr) if holder is not None else None
            if declared is not None and any(same_class(declared, b) for b in declared_bases) \
                    and derives(project, cls, declared):
                found.append(declared)
                return call
            return None

        call = framework_step_call(project, other, member, called_in)
        if call is not None:
            return CallSite(other.path.resolve(), call.lineno, f"self.{call.func.value.attr}.{member}(...)",
                            f"{owner}.{member}")
    return None


def _attribute_call(project: Project, fn, name: str) -> Optional[ast.Call]:
    """`self.<attr>.name(...)` in `fn`, not under a periodic or flag test (inherited_calls' search, one walk per
    function for every name: `first_calls`)."""
    return first_calls(project, fn, _attribute_call_name).get(name)


def _attribute_call_name(node: ast.Call) -> Optional[str]:
    """`name` for a call `self.<attr>.name(...)`, else None."""
    func = node.func
    if isinstance(func, ast.Attribute) and isinstance(func.value, ast.Attribute) \
            and isinstance(func.value.value, ast.Name) and func.value.value.id == "self":
        return func.attr
    return None


def _holder_class(info, fn) -> Optional[ClassSummary]:
    for cls in info.classes.values():
        if any(method is fn for method in cls.methods.values()):
            return cls
    return None


def _declared_attribute(project: Project, cls: ClassSummary, attr: str) -> Optional[ClassSummary]:
    """The project class of the parameter annotation that `self.<attr> = <param>` in `__init__` of `cls` (or of
    a project base of it) assigns from; None when unannotated, assigned otherwise, or assigned more than once."""
    if _assigned_outside_init(cls, attr):
        return None
    declared = None
    for owner in (cls, *project_bases(project, cls)):
        init = owner.methods.get("__init__")
        if not isinstance(init, (ast.FunctionDef, ast.AsyncFunctionDef)):
            continue
        annotations = {a.arg: a.annotation for a in (*init.args.posonlyargs, *init.args.args,
                                                     *init.args.kwonlyargs)}
        for node in ast_walk.walk(init):
            targets = node.targets if isinstance(node, ast.Assign) else \
                [node.target] if isinstance(node, ast.AnnAssign) and node.value is not None else []
            for target in targets:
                if not (isinstance(target, ast.Attribute) and target.attr == attr
                        and isinstance(target.value, ast.Name) and target.value.id == "self"):
                    continue
                value = node.value
                if declared is not None or not (isinstance(value, ast.Name) and annotations.get(value.id)):
                    return None
                declared = annotation_class(project, owner.path, annotations[value.id])
                if declared is None:
                    return None
        if declared is not None:
            return declared
    return None


def _assigned_outside_init(cls: ClassSummary, attr: str) -> bool:
    """`self.<attr> = ...` in a method of `cls` other than `__init__`: the declared type is not all it holds."""
    for name, fn in cls.methods.items():
        if name == "__init__" or not isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)):
            continue
        for node in ast_walk.walk(fn):
            targets = node.targets if isinstance(node, ast.Assign) else \
                [node.target] if isinstance(node, (ast.AnnAssign, ast.AugAssign)) else []
            if any(isinstance(t, ast.Attribute) and t.attr == attr and isinstance(t.value, ast.Name)
                   and t.value.id == "self" for t in targets):
                return True
    return False
