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
            site = _self_call_every_step(project, found, member, owner)
            if site is not None:
                return site
    return None


def _self_call_every_step(project: Project, base: ClassSummary, member: str, owner: str):
    """`self.member(...)` in a method of `base`, run every iteration of a hot loop of `base`'s module."""
    from gpulint.analysis.forward import CallSite, _hot_call_names, _hot_calls, _hot_file, _line_of

    info = project.module(base.path)
    if info is None or project.is_test(info.path):
        return None
    hot, called = _hot_file(project, info)
    if not (hot and member in called) or member not in _hot_call_names(project, info.path):
        return None
    for analysis, node, func in _hot_calls(project, info.path):
        if type(func) is not cst.Attribute or func.attr.value != member or type(func.value) is not cst.Name \
                or func.value.value != "self":
            continue
        if _enclosing_class(analysis, node) != base.name:
            continue
        return CallSite(analysis.path, _line_of(analysis, node), f"{analysis.code(node.func)}(...)",
                        f"{owner}.{member}")
    return None


def _enclosing_class(analysis, node: cst.CSTNode) -> Optional[str]:
    """The name of the top-level class whose method holds `node` (through nested functions), else None."""
    found = None
    for parent in analysis.index.ancestors(node):
        if type(parent) is cst.ClassDef:
            found = parent.name.value
    return found
