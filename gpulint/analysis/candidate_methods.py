"""Method calls on objects whose exact class is not known: the project classes that may run them (branch recall63).

A library-style framework keeps the step in a generic base and the work in implementations it never names:

    TImpl = TypeVar("TImpl", bound="ImplBase")           # base.py
    class LearnableBase(Generic[TImpl]):
        _impl: Optional[TImpl]                           # built later by a factory (`create_impl`)
        def update(self, batch):
            return self._impl.update(batch)              # which class? ImplBase has no `update`

    class QImplBase(ImplBase):
        def update(self, batch):
            return self.inner_update(batch)              # abstract here
        @abstractmethod
        def inner_update(self, batch): ...

    class DQNImpl(QImplBase):                            # dqn_impl.py, one implementation of many
        def inner_update(self, batch):
            ...; return {"loss": float(loss.cpu())}      # a sync every update

The function summaries (`project._Summarizer._callee`) resolve two such calls to their **candidates**, the project
methods that may run:

- `self.m(...)` where the method `m` that the class resolves is abstract (`@abstractmethod`, or a body that only
  raises `NotImplementedError`): the concrete overrides of `m` in the project subclasses of the class
  (`dispatched_method`);
- `self.<attr>.m(...)` where `<attr>` is declared, not built: a class-body annotation of the class or of a project
  base (`_impl: Optional[TImpl]`, a union of project classes, a `TypeVar`'s `bound=` class: `project.
  annotation_class`, `config_fields.field_classes`) names project classes; the candidates are each declared
  class's own `m` where concrete, and the overrides of `m` in its project subclasses (`declared_method`).

Only positive evidence names a receiver's class: the receiver is `self` or an attribute the class declares with a
project type. A method name alone never does, so `self.meters.update(...)`, `self.optimizer.step()` or an
attribute declared `Dict[str, float]` stay unresolved (no annotation naming a project class).

The stance is **all candidates**: a call's summary facts (a sync on every call, an argument reaching a host read)
hold only when every candidate has them (`merged`: a sync of the first candidate, in the project's file order, is
the one named; an argument's read holds when every candidate's same argument reaches one). A stub or default hook
among them (`pass`, `return {}`) keeps the call silent. Abstract candidates are not implementations and are
skipped.

Bounded: subclasses are found through the project's identifier index (`Project.files_naming`: only files whose
text names the base), at most `MAX_SUBCLASSES` classes `_LEVELS` levels down; more than `MAX_CANDIDATES`
candidates, or none, resolve nothing; each answer is memoised per project state (`forward._remembered`).
"""

from __future__ import annotations

import ast
from dataclasses import replace
from typing import Optional

from gpulint.analysis.project import ClassSummary, FunctionSummary, Project, Sink, _find_function

MAX_CANDIDATES = 24  # implementations of one method; more resolve nothing
MAX_SUBCLASSES = 64  # project subclasses of one class looked at
_LEVELS = 4  # levels of subclasses followed down
_FILES = 96  # files naming a class read for its subclasses


def is_abstract(fn: ast.AST) -> bool:
    """`@abstractmethod`, or a body (after a docstring) that only raises `NotImplementedError` (or `pass`/`...`
    under `@abstractmethod`): a method no instance runs as written."""
    if not isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)):
        return False
    if any((_dotted_name(d) or "").rsplit(".", 1)[-1] == "abstractmethod" for d in fn.decorator_list):
        return True
    body = [s for s in fn.body if not (isinstance(s, ast.Expr) and isinstance(s.value, ast.Constant))]
    if len(body) != 1 or not isinstance(body[0], ast.Raise) or body[0].exc is None:
        return False
    exc = body[0].exc.func if isinstance(body[0].exc, ast.Call) else body[0].exc
    return (_dotted_name(exc) or "").rsplit(".", 1)[-1] == "NotImplementedError"


def project_subclasses(project: Project, cls: ClassSummary) -> tuple:
    """The top-level project classes deriving from `cls` (directly or not, `_LEVELS` levels down), in the
    project's file order; at most `MAX_SUBCLASSES`."""
    from gpulint.analysis.forward import _remembered, _resolved

    key = ("project subclasses", _resolved(project, cls.path), cls.name, cls.line)
    return _remembered(project, key, lambda: _subclasses(project, cls)) or ()


def _subclasses(project: Project, cls: ClassSummary) -> tuple:
    from gpulint.analysis.hierarchy import same_class

    found: list[ClassSummary] = []
    level = [cls]
    for _ in range(_LEVELS):
        below: list[ClassSummary] = []
        for parent in level:
            for path in project.files_naming(parent.name)[:_FILES]:
                if project.is_test(path):
                    continue
                info = project.module(path)
                if info is None:
                    continue
                for child in info.classes.values():
                    if not any(b.rsplit(".", 1)[-1] == parent.name for b in child.bases):
                        continue
                    if any(same_class(child, c) for c in (cls, *found)):
                        continue
                    if not any(isinstance(base := project.lookup(child.path, b), ClassSummary)
                               and same_class(base, parent) for b in child.bases
                               if b.rsplit(".", 1)[-1] == parent.name):
                        continue
                    found.append(child)
                    below.append(child)
                    if len(found) >= MAX_SUBCLASSES:
                        return tuple(found)
        if not below:
            break
        level = below
    return tuple(found)


def _own_method(project: Project, cls: ClassSummary, member: str) -> Optional[tuple[FunctionSummary, bool]]:
    """The summary of `member` as `cls` defines it itself, and whether it is abstract; None when `cls` does not."""
    fn = cls.methods.get(member)
    if fn is None:
        return None
    summary = project.function(cls.path, f"{cls.name}.{member}")
    return (summary, is_abstract(fn)) if summary is not None else None


def implementations(project: Project, classes: tuple, member: str, inherited: bool = True) -> Optional[tuple]:
    """The concrete methods `member` that an instance of one of `classes` (or of a project subclass) may run:
    each class's own (or, with `inherited`, the one it inherits from a project base) where concrete, and the
    concrete overrides in their subclasses. None when there are none or more than `MAX_CANDIDATES`."""
    found: list[FunctionSummary] = []

    def add(summary: FunctionSummary) -> bool:
        if all(summary is not f for f in found):
            found.append(summary)
        return len(found) <= MAX_CANDIDATES

    for cls in classes:
        if inherited:
            resolved = project.method(cls, member)
            fn = _method_node(project, resolved) if resolved is not None else None
            if resolved is not None and fn is not None and not is_abstract(fn) and not add(resolved):
                return None
        for sub in project_subclasses(project, cls):
            own = _own_method(project, sub, member)
            if own is not None and not own[1] and not add(own[0]):
                return None
    return tuple(found) or None


def _method_node(project: Project, summary: FunctionSummary) -> Optional[ast.AST]:
    info = project.module(summary.path)
    return _find_function(info, summary.qualname)[0] if info is not None else None


def dispatched_method(project: Project, cls: ClassSummary, member: str,
                      resolved: FunctionSummary) -> Optional[FunctionSummary]:
    """`self.member(...)` in a method of `cls` that resolves to the abstract `resolved`: the overrides in the
    project subclasses of `cls`, merged (`merged`); None when `resolved` is concrete or nothing implements it."""
    fn = _method_node(project, resolved)
    if fn is None or not is_abstract(fn):
        return None
    candidates = implementations(project, (cls,), member, inherited=False)
    return merged(candidates) if candidates else None


def declared_method(project: Project, cls: ClassSummary, attr: str, member: str) -> Optional[FunctionSummary]:
    """`self.<attr>.member(...)` in a method of `cls`, where a class-body annotation of `cls` (or of a project
    base) declares `<attr>` as project classes: their implementations of `member`, merged; else None."""
    from gpulint.analysis.config_fields import field_classes
    from gpulint.analysis.hierarchy import project_bases

    if member.startswith("__"):
        return None
    for owner in (cls, *project_bases(project, cls)):
        declared = field_classes(project, owner, attr)
        if declared:
            candidates = implementations(project, tuple(declared), member)
            return merged(candidates) if candidates else None
    return None


def merged(candidates: tuple) -> Optional[FunctionSummary]:
    """One summary for a call that runs one of `candidates` (all-candidates stance, see the module's text): the
    first candidate's signature, a sync on every call when each candidate has one (the first named), and an
    argument's read where every candidate's argument at that place reaches one. Nothing else is claimed."""
    if not candidates:
        return None
    if len(candidates) == 1:
        return candidates[0]
    first = candidates[0]
    result = FunctionSummary(first.qualname, first.path, first.line, first.params, first.keyword_only,
                             first.star, first.double_star)
    if all(c.always_syncs is not None and c.syncs_on_device_of is None for c in candidates):
        result.always_syncs = _naming(first.always_syncs, first)  # type: ignore[arg-type]
    positional = first.params[1:] if first.params and first.params[0] == "self" else first.params
    for position, name in enumerate(positional):
        sinks = [c.sink_for_argument(position, None, bound_method=True) for c in candidates]
        if all(s is not None and not s.when for s in sinks):
            result.sink_params[name] = _naming(sinks[0], first)  # type: ignore[arg-type]
    result.dependencies = frozenset().union(*(c.dependencies for c in candidates))
    result.consulted = frozenset().union(*(c.consulted for c in candidates))
    return result


def _naming(sink: Sink, candidate: FunctionSummary) -> Sink:
    """The sink with the candidate that pays named (kept where a deeper choice named one already)."""
    return sink if sink.candidate else replace(sink, candidate=candidate.qualname)


def _dotted_name(node: Optional[ast.AST]) -> Optional[str]:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        inner = _dotted_name(node.value)
        return f"{inner}.{node.attr}" if inner else None
    return None
