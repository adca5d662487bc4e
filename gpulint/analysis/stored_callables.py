"""A top-level function that a class keeps on `self` and a hot loop calls through that attribute.

A trainer often binds its helpers once, in `__init__`, and calls them by the attribute every step:

    class BaseTrainer:                       # audio_zen/trainer/base_trainer.py
        def __init__(self, ...):
            self.torch_stft = partial(stft, n_fft=n_fft, hop_length=hop, win_length=win)

    class Trainer(BaseTrainer):              # recipes/.../trainer.py
        def _train_epoch(self, epoch):
            for noisy, clean in self.train_dataloader:
                noisy_complex = self.torch_stft(noisy)

The function `stft` (another module, no name of it in the loop's file) runs on every iteration of that loop. The
call names only the attribute, so the searches by the function's name (`forward.member_site`) never see it.
Here: the classes of the files naming the function that assign it to one attribute (`self.a = f` or
`self.a = functools.partial(f, ...)`, the class's only assignment of `self.a`), then a hot call `self.a(...)` in a
method of that class or of a project subclass (`hierarchy.derives`), found through the same bounded caller search
as `member_site` (`forward.hot_callers`). The call site is the finding's related location.

Stance: only the attribute's single assignment counts (an attribute rebound elsewhere may hold another
callable); only `self.a(...)` inside the class hierarchy (an instance reached from elsewhere is left to the
existing routes); at most `_HOLDERS` (class, attribute) pairs are searched per function.
"""

from __future__ import annotations

import ast
from pathlib import Path
from typing import Optional

import libcst as cst

_HOLDERS = 4


def _stored_callable(value: ast.expr) -> Optional[ast.expr]:
    """`f` for `f`, `mod.f` or `partial(f, ...)`/`functools.partial(f, ...)`, else None."""
    if isinstance(value, (ast.Name, ast.Attribute)):
        return value
    if isinstance(value, ast.Call) and value.args and not isinstance(value.args[0], ast.Starred):
        func = value.func
        last = func.id if isinstance(func, ast.Name) else func.attr if isinstance(func, ast.Attribute) else None
        if last == "partial" and isinstance(value.args[0], (ast.Name, ast.Attribute)):
            return value.args[0]
    return None


def holders(project, path: Path, member: str) -> list:
    """(class, attribute) for each project class (not in a test) that stores the top-level function `member` of
    `path` in one attribute of `self`."""
    from gpulint.analysis.project import FunctionSummary, _dotted, _self_stores

    found = []
    for file in project.files_naming(member):
        if project.is_test(file):
            continue
        info = project.module(file)
        if info is None:
            continue
        for cls in info.classes.values():
            if "__init__" not in cls.methods:
                continue
            for attr, nodes in _self_stores(cls).items():
                values = [n.value for n in nodes if not isinstance(n, ast.AugAssign) and n.value is not None]
                target = _stored_callable(values[0]) if len(values) == 1 else None
                dotted = _dotted(target) if target is not None else None
                if dotted is None or dotted.startswith("self.") or dotted.rsplit(".", 1)[-1] != member:
                    continue
                callee = project.lookup(cls.path, dotted)
                if isinstance(callee, FunctionSummary) and callee.qualname == member and \
                        project._resolved(Path(callee.path)) == path:
                    found.append((cls, attr))
    return found


def stored_callable_site(project, path: Path, member: str):
    """The hot call `self.<attr>(...)` that runs the top-level function `member` of `path` every iteration,
    through an attribute a class stores it in (see the module's documentation), as a `forward.CallSite`."""
    from gpulint.analysis.forward import CallSite, _line_of, hot_callers
    from gpulint.analysis.hierarchy import derives, same_class

    for cls, attr in holders(project, path, member)[:_HOLDERS]:
        for analysis, _calls, hot_calls, _names in hot_callers(project, path, attr):
            info = project.module(analysis.path)
            if info is None:
                continue
            for _, node, func in hot_calls:
                if not (type(func) is cst.Attribute and func.attr.value == attr and type(func.value) is cst.Name
                        and func.value.value == "self"):
                    continue
                owner = next((a for a in analysis.index.ancestors(node) if type(a) is cst.ClassDef), None)
                caller_cls = info.classes.get(owner.name.value) if owner is not None else None
                if caller_cls is None or not (same_class(caller_cls, cls) or derives(project, caller_cls, cls)):
                    continue
                return CallSite(analysis.path, _line_of(analysis, node), f"{analysis.code(node.func)}(...)", member)
    return None


def stored_function(project, cls, attr: str):
    """The project function that `self.<attr>` holds in instances of `cls`: the one assignment of the attribute
    in `cls` or its nearest project base that has one is `self.<attr> = f` or `self.<attr> = partial(f, k=v, ...)`
    (keywords only, so a call's positional arguments are the function's own), else None. For the call-site costs
    of `self.torch_stft(x)` (GPU112: the function copies host data every call)."""
    from gpulint.analysis.hierarchy import project_bases
    from gpulint.analysis.project import FunctionSummary, _dotted, _self_stores

    for holder in (cls, *project_bases(project, cls)):
        nodes = _self_stores(holder).get(attr)
        if not nodes:
            continue
        values = [n.value for n in nodes if not isinstance(n, ast.AugAssign) and n.value is not None]
        if len(values) != 1 or len(nodes) != 1:
            return None
        value = values[0]
        if isinstance(value, ast.Call) and (len(value.args) != 1 or any(k.arg is None for k in value.keywords)):
            return None  # `partial(f, model, ...)` binds positional arguments: the call's would shift
        target = _stored_callable(value)
        dotted = _dotted(target) if target is not None else None
        if dotted is None or dotted.startswith("self."):
            return None
        found = project.lookup(holder.path, dotted)
        return found if isinstance(found, FunctionSummary) and "." not in found.qualname else None
    return None
