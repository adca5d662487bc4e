"""Calls of a linted module into the project's own helpers, and what each costs (see analysis/project.py).

The question a rule asks here: "this call (or `with` item) runs every step: does the helper it reaches read a
tensor back to the host?" Receivers resolve through what the module itself shows: `logger =
utils.MetricLogger(...)`, `self.meter = AverageMeter()` anywhere in the class, `dt = (Profile(), Profile())`
then `with dt[1]:`, or a direct `utils.all_reduce_mean(loss)`.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from pathlib import Path
from typing import Optional

import libcst as cst

from gpulint.analysis.imports import dotted_name
from gpulint.analysis.libraries import Effect, LibraryFact, fact_for_function, fact_for_method
from gpulint.analysis.project import ClassSummary, FunctionSummary, Project, Sink

MAX_BINDINGS = 4


@dataclass(frozen=True)
class HelperCost:
    """A call whose callee reads a tensor back: `sink` is where, `callee` the helper's name, `argument` the
    argument that reaches it (None when the helper syncs whatever it is given, as a timer does)."""

    callee: str
    sink: Optional[Sink]  # None for a library call: `library` says what it does instead
    argument: Optional[cst.BaseExpression] = None
    library: Optional[LibraryFact] = None


class ModuleCalls:
    """Calls of one module resolved with what the module alone shows: library objects and their classes."""

    def __init__(self, analysis) -> None:
        self.analysis = analysis
        self.index = analysis.index
        self._self_attributes: Optional[dict[tuple[int, str], list[cst.BaseExpression]]] = None

    def library_cost(self, call: cst.Call) -> Optional[tuple[LibraryFact, Optional[cst.BaseExpression]]]:
        """A library call the table (analysis/libraries.py) says reads tensors back: (fact, the tensor argument
        that is read, or None when the call reads device state of its own, as `scaler.get_scale()` does)."""
        func = call.func
        fact = None
        if isinstance(func, cst.Attribute):
            fact = fact_for_method(self.constructor(func.value), func.attr.value)
        if fact is None:
            fact = fact_for_function(self.analysis.qualified(func))
        if fact is None:
            return None
        if fact.effect is Effect.SYNCS:
            return fact, None
        if fact.effect is Effect.SYNCS_TENSOR_ARGS:
            for arg in call.args:
                for value in _argument_values(arg.value):
                    if self.analysis.is_tensor(value):
                        return fact, value
        return None

    def constructor(self, expr: cst.BaseExpression) -> Optional[str]:
        """The qualified name of the class an object was built from (`scaler = torch.cuda.amp.GradScaler()`,
        `self.writer = SummaryWriter(...)`), when every binding agrees."""
        values: list[cst.BaseExpression] = []
        if isinstance(expr, cst.Name):
            bindings = self.index.visible_bindings(expr)
            if not bindings or any(b.kind != "assign" or b.index is not None for b in bindings):
                return None
            values = [b.value for b in bindings]
        elif isinstance(expr, cst.Attribute) and isinstance(expr.value, cst.Name) and expr.value.value == "self":
            values = self.self_attributes(expr)
        elif isinstance(expr, cst.Subscript) and len(expr.slice) == 1 and isinstance(expr.value, cst.Name):
            # `dt[1]` with `dt = Profile(), Profile()`: every element must be built from the same class
            bindings = self.index.visible_bindings(expr.value)
            if len(bindings) != 1 or not isinstance(bindings[0].value, (cst.Tuple, cst.List)):
                return None
            values = [e.value for e in bindings[0].value.elements]
        names = {self.class_name(v.func) if isinstance(v, cst.Call) else None for v in values}
        return names.pop() if len(names) == 1 else None

    def class_name(self, func: cst.BaseExpression) -> Optional[str]:
        """The qualified name a constructor call names, through the module's imports."""
        return self.analysis.qualified(func)

    def self_attributes(self, attr: cst.Attribute) -> list[cst.BaseExpression]:
        """Every value assigned to `self.<name>` in the class around `attr`."""
        if self._self_attributes is None:
            found: dict[tuple[int, str], list[cst.BaseExpression]] = {}
            for node in self.index.nodes:
                if isinstance(node, cst.Assign) and len(node.targets) == 1:
                    target = node.targets[0].target
                    if isinstance(target, cst.Attribute) and isinstance(target.value, cst.Name) \
                            and target.value.value == "self":
                        cls = self._class_of(node)
                        if cls is not None:
                            found.setdefault((id(cls), target.attr.value), []).append(node.value)
            self._self_attributes = found
        cls = self._class_of(attr)
        if cls is None:
            return []
        return self._self_attributes.get((id(cls), attr.attr.value), [])

    def _class_of(self, node: cst.CSTNode) -> Optional[cst.ClassDef]:
        for ancestor in self.index.ancestors(node):
            if isinstance(ancestor, cst.ClassDef):
                return ancestor
        return None


class ProjectCalls(ModuleCalls):
    """Resolves calls and `with` items of one module to summaries of the project's functions and classes."""

    def __init__(self, analysis, project: Project, path: Path) -> None:
        super().__init__(analysis)
        self.project = project
        self.path = path.resolve()
        self._found: dict[str, object] = {}

    def class_name(self, func: cst.BaseExpression) -> Optional[str]:
        """Through the project's re-exports as well (`from utils.general import Profile`, a library class)."""
        dotted = dotted_name(func)
        external = self.project.external_name(self.path, dotted) if dotted else None
        return external or self.analysis.qualified(func)

    # -- what a node costs ----------------------------------------------------------------------------------
    def call_cost(self, call: cst.Call) -> Optional[HelperCost]:
        """The host read a call reaches through one of its tensor arguments, or that it makes always."""
        target = self.callee(call)
        if target is None:
            return None
        name, summary, bound = target
        if summary.always_syncs is not None:
            return HelperCost(name, summary.always_syncs)
        position = 0
        for arg in call.args:
            if arg.star:
                continue
            keyword = arg.keyword.value if arg.keyword is not None else None
            sink = summary.sink_for_argument(None if keyword else position, keyword, bound)
            if keyword is None:
                position += 1
            if sink is not None and self.analysis.is_tensor(arg.value):
                return HelperCost(name, sink, arg.value)
        return None

    def with_cost(self, item: cst.WithItem) -> Optional[HelperCost]:
        """A context manager whose `__enter__` or `__exit__` synchronises (a timer)."""
        cls = self.instance_class(item.item)
        if cls is None and isinstance(item.item, cst.Call):
            found = self._lookup(item.item.func)
            cls = found if isinstance(found, ClassSummary) else None
        if cls is None:
            return self._library_with(item)
        for method in ("__enter__", "__exit__"):
            summary = self.project.method(cls, method)
            if summary is not None and summary.always_syncs is not None:
                return HelperCost(f"{cls.name}.{method}", summary.always_syncs)
        return None

    def _library_with(self, item: cst.WithItem) -> Optional[HelperCost]:
        target = item.item.func if isinstance(item.item, cst.Call) else item.item
        name = self.class_name(target) if isinstance(item.item, cst.Call) else self.constructor(item.item)
        for method in ("__enter__", "__exit__"):
            fact = fact_for_method(name, method)
            if fact is not None and fact.effect is Effect.SYNCS:
                return HelperCost(f"{name.rsplit('.', 1)[-1]}.{method}", None, library=fact)
        return None

    # -- resolution -------------------------------------------------------------------------------------------
    def callee(self, call: cst.Call) -> Optional[tuple[str, FunctionSummary, bool]]:
        """(display name, summary, called through an instance) for a call into the project, else None.

        Calls the module's own loop analysis already follows (`helper(...)`, `self.helper(...)` of this file) are
        left to it, so no cost is reported twice.
        """
        func = call.func
        if self.analysis.loops.local_function(call) is not None:
            return None
        if isinstance(func, cst.Attribute):
            cls = self.instance_class(func.value)
            if cls is not None:
                method = self.project.method(cls, func.attr.value)
                return (f"{cls.name}.{func.attr.value}", method, True) if method is not None else None
        else:
            cls = self.instance_class(func)
            if cls is not None:  # `meter(x)`: __call__ of an instance
                method = self.project.method(cls, "__call__")
                return (f"{cls.name}.__call__", method, True) if method is not None else None
        found = self._lookup(func)
        if isinstance(found, FunctionSummary):
            if found.path == self.path and isinstance(func, cst.Name):
                return None  # a function of this module: the in-file analysis owns it
            return found.qualname, found, False
        return None

    def instance_class(self, expr: cst.BaseExpression, depth: int = 0) -> Optional[ClassSummary]:
        """The project class `expr` is an instance of, when every binding the module shows agrees."""
        if depth > 3:
            return None
        if isinstance(expr, cst.Call):
            found = self._lookup(expr.func)
            return found if isinstance(found, ClassSummary) else None
        if isinstance(expr, cst.Subscript) and len(expr.slice) == 1:
            # `dt[1]` with `dt = (Profile(), Profile())`: every element must be the same class
            return self._element_class(expr.value, depth)
        values: list[cst.BaseExpression] = []
        if isinstance(expr, cst.Name):
            bindings = self.index.visible_bindings(expr)
            if not bindings or len(bindings) > MAX_BINDINGS or any(
                    b.kind not in ("assign", "walrus") or b.index is not None for b in bindings):
                return None
            values = [b.value for b in bindings]
        elif isinstance(expr, cst.Attribute) and isinstance(expr.value, cst.Name) and expr.value.value == "self":
            values = self.self_attributes(expr)
        return self._agree([self.instance_class(v, depth + 1) for v in values if v is not None] if values else [])

    def _element_class(self, container: cst.BaseExpression, depth: int) -> Optional[ClassSummary]:
        values: list[cst.BaseExpression] = []
        if isinstance(container, cst.Name):
            bindings = self.index.visible_bindings(container)
            if len(bindings) != 1 or bindings[0].kind != "assign" or bindings[0].index is not None:
                return None
            values = [bindings[0].value]
        elif isinstance(container, cst.Attribute):
            values = self.self_attributes(container)
        classes = []
        for value in values:
            if isinstance(value, (cst.Tuple, cst.List)):
                classes.extend(self.instance_class(e.value, depth + 1) for e in value.elements)
            elif isinstance(value, (cst.ListComp, cst.GeneratorExp)):
                classes.append(self.instance_class(value.elt, depth + 1))
            else:
                return None
        return self._agree(classes)

    @staticmethod
    def _agree(classes: list[Optional[ClassSummary]]) -> Optional[ClassSummary]:
        if not classes or any(c is None for c in classes):
            return None
        first = classes[0]
        return first if all(c is first for c in classes) else None

    def _lookup(self, func: cst.BaseExpression):
        dotted = dotted_name(func)
        if dotted is None or dotted.split(".")[0] == "self":
            return None
        if dotted not in self._found:  # one project lookup per name in this module
            self._found[dotted] = self.project.lookup(self.path, dotted)
        return self._found[dotted]


def _argument_values(value: cst.BaseExpression):
    """An argument and, for a dict or list literal (`wandb.log({"loss": loss})`), its values."""
    yield value
    if isinstance(value, cst.Dict):
        for element in value.elements:
            if isinstance(element, cst.DictElement):
                yield element.value
    elif isinstance(value, (cst.List, cst.Tuple)):
        for element in value.elements:
            yield element.value


def project_calls(analysis) -> Optional[ProjectCalls]:
    """Fact provider (`analysis.fact(project_calls)`): calls into the project of the linted file, or None when
    the module has no file. The linted text is used for the file itself when it differs from the disk (an
    editor's unsaved buffer, stdin, a notebook's joined cells)."""
    from gpulint.analysis.project import project_for

    if analysis.path is None:
        return None
    path = Path(analysis.path)
    project = project_for(path)
    text = analysis.source if analysis.source is not None else analysis.module.code
    on_disk = project.module(path)
    if on_disk is None or on_disk.digest != hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest():
        project.set_text(path, text)
    return ProjectCalls(analysis, project, path)


def module_calls(analysis) -> ModuleCalls:
    """Fact provider: calls of the module resolved with what the module alone shows (no file needed)."""
    return ModuleCalls(analysis)
