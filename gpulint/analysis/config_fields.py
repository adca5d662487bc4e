"""Objects held in a field of a configuration class (branch recall55).

Trainers often keep their collaborators in a configuration dataclass rather than build them in the loop's module:

    @dataclass
    class Config:
        strategy: DefaultStrategy = field(default_factory=DefaultStrategy)

    class Runner:
        def __init__(self, cfg: Config):
            self.cfg = cfg
        def train(self):
            for step in ...:
                self.cfg.strategy.step_post_backward(...)       # gsplat's simple_trainer

`cfg.strategy` holds an instance of the class the field declares: the annotation's class (every member of a
`Union[A, B]` / `A | B`, each of them a project class, or the one class of `Optional[A]`), or, where the annotation
names no project class (none, `Any`, a library base), the class its default builds (`field(default_factory=C)`,
`= C(...)`). Anything else is unknown. The owner (`cfg`) must resolve to one project class first
(`ProjectCalls.instance_classes`: an annotated parameter, an attribute stored from one, a construction).

Read from the project's `ast` (the class body of the owner), once per class and field.
"""

from __future__ import annotations

import ast
from typing import Optional

from gpulint.analysis.project import ClassSummary, Project, _dotted, annotation_class

_UNIONS = ("Union", "typing.Union")


def field_classes(project: Project, owner: ClassSummary, name: str) -> tuple:
    """The project classes the class-body field `name` of `owner` holds an instance of; () when not known."""
    from gpulint.analysis.forward import _remembered

    key = ("config field classes", owner.path, owner.name, owner.line, name)
    return _remembered(project, key, lambda: _field_classes(project, owner, name)) or ()


def _field_classes(project: Project, owner: ClassSummary, name: str) -> tuple:
    from gpulint.analysis.module_attrs import class_node

    node = class_node(project, owner)
    if node is None:
        return ()
    for stmt in node.body:
        if isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name) and stmt.target.id == name:
            declared = _annotated(project, owner, stmt.annotation)
            if declared:
                return declared
            built = _default_class(project, owner, stmt.value)
            return (built,) if built is not None else ()
    return ()


def _annotated(project: Project, owner: ClassSummary, annotation: ast.expr) -> tuple:
    """Every class of a union annotation (all project classes), or the one class of a plain or optional one."""
    members = _union_members(annotation)
    if members is None:
        found = annotation_class(project, owner.path, annotation)
        return (found,) if found is not None else ()
    classes = []
    for member in members:
        if isinstance(member, ast.Constant) and member.value is None:
            continue
        found = annotation_class(project, owner.path, member)
        if found is None:
            return ()
        if all(found is not c for c in classes):
            classes.append(found)
    return tuple(classes)


def _union_members(annotation: ast.expr) -> Optional[list]:
    if isinstance(annotation, ast.Subscript) and (_dotted(annotation.value) or "") in _UNIONS:
        inner = annotation.slice
        return list(inner.elts) if isinstance(inner, ast.Tuple) else [inner]
    if isinstance(annotation, ast.BinOp) and isinstance(annotation.op, ast.BitOr):
        return (_union_members(annotation.left) or [annotation.left]) + \
            (_union_members(annotation.right) or [annotation.right])
    return None


def _default_class(project: Project, owner: ClassSummary, value: Optional[ast.expr]) -> Optional[ClassSummary]:
    """The class a field's default builds: `field(default_factory=C)` or `C(...)`."""
    if isinstance(value, ast.Call):
        func = _dotted(value.func) or ""
        if func.rsplit(".", 1)[-1] == "field":
            factory = next((k.value for k in value.keywords if k.arg == "default_factory"), None)
            dotted = _dotted(factory) if isinstance(factory, (ast.Name, ast.Attribute)) else None
        else:
            dotted = func or None
        found = project.lookup(owner.path, dotted) if dotted else None
        return found if isinstance(found, ClassSummary) else None
    return None
