"""Class hierarchy of project classes: the project bases of a class, and whether one class derives from another.

Several call-site searches walk a class's bases through the project's imports (`overrides.override_site`,
`inherited_calls.inherited_site`, `forward._Instances`): they share this walk. A base is looked up where the
class is written (`project.lookup(cls.path, base)`), so `sb.core.Brain` and `from .base import BaseVAE` both
resolve; a base that is not a project class (`nn.Module`, a library class) ends the walk on that branch.

Bounded: `DEPTH` levels up (a deeper hierarchy is rare in a project and each level is one lookup per base), and a
class is visited once (a cycle through re-exports or shadowed names ends there). A caller that reads further up
passes `depth` (`framework_steps.framework_bases`, which also reads the library bases where the walk ends).

`Project.is_module_class` asks whether any class of this walk (`any_class`, lazily: it stops at the first) has
`nn.Module` among its written bases. `Project.method` does not use it: it goes depth first, each base's whole chain
before the next base (Python's method resolution order for the usual single chain: the first method found wins),
where this walk lists the bases nearest first.

The other walk is a chain of first bases (`first_bases`): a class, its first base, that one's first base...
(`forward._Instances._matches`: a subclass whose method runs through `super()`; `module_attrs._holds_module`:
what a base declares for an attribute; `training._torch_optimizer_base`: the `torch.optim` class under a project
optimizer). Python's method resolution order follows that chain for single inheritance, and the readers judge
each class of it in turn.
"""

from __future__ import annotations

from pathlib import Path
from typing import Callable, Iterator, Optional

from gpulint.analysis.project import ClassSummary, Project

DEPTH = 4  # levels of project bases followed up the hierarchy


def project_bases(project: Project, cls: ClassSummary,
                  through: Optional[Callable[[ClassSummary], bool]] = None, depth: int = DEPTH) -> list[ClassSummary]:
    """The project classes `cls` derives from, direct or not, breadth first (nearest first), `depth` levels up.
    With `through`, the walk goes on above a base only when `through(base)` holds (the base itself is listed)."""
    if through is None:
        return list(_cached_bases(project, cls, depth))
    return _walk(project, cls, through, depth)


def defining_class(project: Project, path: Path, owner: str, member: str) -> Optional[ClassSummary]:
    """The top-level class `owner` of the module `path` when it defines the method `member`, else None: where the
    searches for a per-step caller of `owner.member` through the hierarchy start (`overrides`, `inherited_calls`,
    `dispatched_calls`, `framework_steps`)."""
    info = project.module(path)
    cls = info.classes.get(owner) if info is not None else None
    return cls if cls is not None and member in cls.methods else None


def derives(project: Project, cls: ClassSummary, base: ClassSummary,
            through: Optional[Callable[[ClassSummary], bool]] = None) -> bool:
    """`cls` is a proper project subclass of `base` (found within `DEPTH` levels; with `through`, every class
    in between satisfies it)."""
    return any(same_class(found, base) for found in project_bases(project, cls, through))


def same_class(a: ClassSummary, b: ClassSummary) -> bool:
    return a is b or (a.name == b.name and (a.path == b.path or a.path.resolve() == b.path.resolve()))


def _cached_bases(project: Project, cls: ClassSummary, depth: int) -> tuple:
    from gpulint.analysis.forward import _remembered, _resolved  # once per project state, its lookups recorded

    return _remembered(project, ("project bases", _resolved(project, cls.path), cls.name, depth),
                       lambda: tuple(_walk(project, cls, None, depth)))


def any_class(project: Project, cls: ClassSummary, test: Callable[[ClassSummary], bool], depth: int = DEPTH) -> bool:
    """`test` holds for `cls` or one of its project bases within `depth` levels (breadth first, stopping at the
    first that passes; not remembered, as `project_bases` is: a test that passes early reads no further bases)."""
    return test(cls) or any(test(base) for base in _bases(project, cls, None, depth))


def first_bases(project: Project, cls: ClassSummary, limit: int, written_first: bool = False) -> Iterator[ClassSummary]:
    """`cls`, then the class each one derives from first, `limit` classes at the most, ending at a class met
    before (a cycle through re-exports). By default the first base that is a project class, library bases written
    before it passed over (`class Net(Mixin, Base)`: `Base` when `Mixin` is a library class) and a base naming the
    class itself too; with `written_first`, the first base as written, the chain ending where that one is not a
    project class (`class Policy(nn.Module, Base)` declares nothing through `Base`)."""
    seen: set[int] = set()
    current: Optional[ClassSummary] = cls
    while current is not None and len(seen) < limit and id(current) not in seen:
        seen.add(id(current))
        yield current
        looked_up = (project.lookup(current.path, name) for name in current.bases if name)
        if written_first:
            base = next(looked_up, None)
            current = base if isinstance(base, ClassSummary) else None
        else:
            following = current
            current = next((b for b in looked_up if isinstance(b, ClassSummary) and b is not following), None)


def _walk(project: Project, cls: ClassSummary, through, depth: int) -> list[ClassSummary]:
    return list(_bases(project, cls, through, depth))


def _bases(project: Project, cls: ClassSummary, through, depth: int) -> Iterator[ClassSummary]:
    seen: set[int] = {id(cls)}
    frontier = [cls]
    for _ in range(depth):
        following = []
        for current in frontier:
            for name in current.bases:
                base = project.lookup(current.path, name) if name else None
                if not isinstance(base, ClassSummary) or id(base) in seen:
                    continue
                seen.add(id(base))
                yield base
                if through is None or through(base):
                    following.append(base)
        if not following:
            break
        frontier = following
