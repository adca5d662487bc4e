"""Class hierarchy of project classes: the project bases of a class, and whether one class derives from another.

Several call-site searches walk a class's bases through the project's imports (`overrides.override_site`,
`inherited_calls.inherited_site`, `forward._Instances`): they share this walk. A base is looked up where the
class is written (`project.lookup(cls.path, base)`), so `sb.core.Brain` and `from .base import BaseVAE` both
resolve; a base that is not a project class (`nn.Module`, a library class) ends the walk on that branch.

Bounded: `DEPTH` levels up (a deeper hierarchy is rare in a project and each level is one lookup per base), and a
class is visited once (a cycle through re-exports or shadowed names ends there).
"""

from __future__ import annotations

from typing import Callable, Optional

from gpulint.analysis.project import ClassSummary, Project

DEPTH = 4  # levels of project bases followed up the hierarchy


def project_bases(project: Project, cls: ClassSummary,
                  through: Optional[Callable[[ClassSummary], bool]] = None) -> list[ClassSummary]:
    """The project classes `cls` derives from, direct or not, breadth first (nearest first), `DEPTH` levels up.
    With `through`, the walk goes on above a base only when `through(base)` holds (the base itself is listed)."""
    if through is None:
        return list(_cached_bases(project, cls))
    return _walk(project, cls, through)


def derives(project: Project, cls: ClassSummary, base: ClassSummary,
            through: Optional[Callable[[ClassSummary], bool]] = None) -> bool:
    """`cls` is a proper project subclass of `base` (found within `DEPTH` levels; with `through`, every class
    in between satisfies it)."""
    return any(same_class(found, base) for found in project_bases(project, cls, through))


def same_class(a: ClassSummary, b: ClassSummary) -> bool:
    return a is b or (a.name == b.name and (a.path == b.path or a.path.resolve() == b.path.resolve()))


def _cached_bases(project: Project, cls: ClassSummary) -> tuple:
    from gpulint.analysis.forward import _remembered, _resolved  # once per project state, its lookups recorded

    return _remembered(project, ("project bases", _resolved(project, cls.path), cls.name),
                       lambda: tuple(_walk(project, cls, None)))


def _walk(project: Project, cls: ClassSummary, through) -> list[ClassSummary]:
    found: list[ClassSummary] = []
    seen: set[int] = {id(cls)}
    frontier = [cls]
    for _ in range(DEPTH):
        following = []
        for current in frontier:
            for name in current.bases:
                base = project.lookup(current.path, name) if name else None
                if not isinstance(base, ClassSummary) or id(base) in seen:
                    continue
                seen.add(id(base))
                found.append(base)
                if through is None or through(base):
                    following.append(base)
        if not following:
            break
        frontier = following
    return found
