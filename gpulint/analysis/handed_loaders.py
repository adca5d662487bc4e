"""Loaders whose batches a trainer class moves to the device (GPU201 at the `DataLoader(...)`).

Two shapes hand a `DataLoader` built in one place to a loop somewhere else:

- a script builds the loader and passes it to a project trainer class (`trainer = BERTTrainer(model,
  train_dataloader=train_loader)`), whose `__init__` keeps it (`self.train_data = train_dataloader`) and whose
  methods iterate it (`for i, data in tqdm(enumerate(self.train_data))`, or hand it to another method of the class,
  `self.iteration(epoch, self.train_data)`, that iterates its parameter);
- a base class's method builds the loaders into an attribute (`self.data_loader['train'] = DataLoader(...)`,
  `self.train_loader = DataLoader(...)`) and a method of the class or of a project subclass iterates it
  (`loader = self.data_loader['train']`, `for data, label in loader:`).

`moved_by_a_class(analysis, loader)` answers (path, line) of such a loop when its body copies what the loader
yields to a device (`data.to(self.dev)`, `.cuda()`, a dict comprehension `{k: v.to(self.device) for k, v in
data.items()}`) and the loop's module names CUDA (a "cuda" string, `.cuda(`, `torch.cuda`): the batches leave the
loader in pageable memory for the GPU every step. Read on `ast`, remembered per project state.
"""

from __future__ import annotations

import ast
from pathlib import Path
from typing import Optional

import libcst as cst

from gpulint.ast_walk import walk

_WRAPPERS = frozenset(("enumerate", "tqdm", "zip", "iter"))
_LIMIT = 16  # classes (the class and its project subclasses) looked at per question


def moved_by_a_class(analysis, loader: cst.Call) -> Optional[tuple]:
    from gpulint.analysis.calls import project_calls

    calls = analysis.fact(project_calls)
    if calls is None or analysis.path is None:
        return None
    project = calls.project
    node = loader
    parent = analysis.parent(node)
    if type(parent) is cst.IfExp and parent.body is node:  # `DataLoader(...) if test_set is not None else None`
        node, parent = parent, analysis.parent(parent)
    if type(parent) is not cst.Assign or len(parent.targets) != 1 or parent.value is not node:
        return None
    target = parent.targets[0].target
    attribute = _self_attribute(target)
    if attribute is not None:
        cls = _enclosing_class(analysis, parent)
        if cls is None:
            return None
        info = project.module(Path(analysis.path))
        summary = info.classes.get(cls.name.value) if info is not None else None
        if summary is None:
            return None
        return _consumed(project, summary, attribute)
    if type(target) is not cst.Name:
        return None
    for cls, attribute in _handed_to_classes(analysis, project, target, parent):
        found = _consumed(project, cls, attribute)
        if found is not None:
            return found
    return None


def _self_attribute(target: cst.BaseExpression) -> Optional[str]:
    """`self.X` or `self.X[key]`: "X"."""
    if type(target) is cst.Subscript:
        target = target.value
    if type(target) is cst.Attribute and type(target.value) is cst.Name and target.value.value == "self":
        return target.attr.value
    return None


def _enclosing_class(analysis, node: cst.CSTNode) -> Optional[cst.ClassDef]:
    index = analysis.index
    fn = index.enclosing_function(node)
    if fn is None:
        return None
    parent = analysis.parent(fn)
    if type(parent) is cst.IndentedBlock:
        parent = analysis.parent(parent)
    return parent if type(parent) is cst.ClassDef and type(analysis.parent(parent)) is cst.Module else None


def _handed_to_classes(analysis, project, name: cst.Name, statement: cst.Assign) -> list:
    """(class, attribute) for each project class constructor call of the module that passes `name` to an
    `__init__` parameter the class keeps as `self.<attribute> = parameter`."""
    found = []
    for other in analysis.index.names(name.value):
        arg = analysis.parent(other)
        if type(arg) is not cst.Arg or arg.value is not other or arg.star:
            continue
        call = analysis.parent(arg)
        if type(call) is not cst.Call or type(call.func) not in (cst.Name, cst.Attribute):
            continue
        bindings = analysis.index.visible_bindings(other)
        if not bindings or any(b.source is not statement for b in bindings):
            continue  # the name read there is not (only) the loader
        from gpulint.analysis.imports import dotted_name

        dotted = dotted_name(call.func)
        if dotted is None:
            continue
        from gpulint.analysis.project import ClassSummary

        cls = project.lookup(Path(analysis.path), dotted)
        if not isinstance(cls, ClassSummary):
            continue
        init = cls.methods.get("__init__")
        if init is None:
            continue
        params = [a.arg for a in init.args.posonlyargs + init.args.args][1:]
        if arg.keyword is not None:
            param = arg.keyword.value
        else:
            position = [a for a in call.args if a.keyword is None].index(arg)
            param = params[position] if position < len(params) else None
        if param is None:
            continue
        for stmt in walk(init):
            if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and \
                    isinstance(stmt.value, ast.Name) and stmt.value.id == param:
                t = stmt.targets[0]
                if isinstance(t, ast.Attribute) and isinstance(t.value, ast.Name) and t.value.id == "self":
                    found.append((cls, t.attr))
    return found


def _consumed(project, cls, attribute: str) -> Optional[tuple]:
    from gpulint.analysis.candidate_methods import project_subclasses
    from gpulint.analysis.forward import _remembered

    key = ("loader attribute consumed", str(cls.path), cls.name, cls.line, attribute)

    def find():
        classes = [cls, *project_subclasses(project, cls)][:_LIMIT]
        for c in classes:
            found = _consuming_loop(project, c, classes, attribute)
            if found is not None:
                return found
        return None

    return _remembered(project, key, find)


def _consuming_loop(project, cls, classes: list, attribute: str) -> Optional[tuple]:
    if not _names_cuda(project, cls.path):
        return None
    for fn in cls.methods.values():
        # parameters of this method that some method of the classes passes `self.<attribute>` to
        params = _fed_parameters(classes, fn, attribute)
        local: dict[str, ast.expr] = {}
        for node in walk(fn):
            if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
                local[node.targets[0].id] = node.value
        for node in walk(fn):
            if isinstance(node, ast.For) and _holds_loader(node.iter, attribute, params, local, 0) and \
                    _moves_targets(node):
                return cls.path, node.lineno
    return None


def _holds_loader(expr: ast.expr, attribute: str, params: set, local: dict, depth: int) -> bool:
    if depth > 4:
        return False
    if isinstance(expr, ast.Subscript):
        expr = expr.value
    if isinstance(expr, ast.Attribute) and isinstance(expr.value, ast.Name) and expr.value.id == "self":
        return expr.attr == attribute
    if isinstance(expr, ast.Name):
        if expr.id in params:
            return True
        value = local.get(expr.id)
        return value is not None and _holds_loader(value, attribute, params, local, depth + 1)
    if isinstance(expr, ast.Call) and expr.args:
        func = expr.func
        name = func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else ""
        if name in _WRAPPERS:
            return _holds_loader(expr.args[0], attribute, params, local, depth + 1)
    return False


def _fed_parameters(classes: list, fn: ast.FunctionDef, attribute: str) -> set:
    names = [a.arg for a in fn.args.posonlyargs + fn.args.args][1:]
    found = set()
    for c in classes:
        for method in c.methods.values():
            for node in walk(method):
                if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and
                        isinstance(node.func.value, ast.Name) and node.func.value.id == "self" and
                        node.func.attr == fn.name):
                    continue
                for i, a in enumerate(node.args):
                    if _is_attribute(a, attribute) and i < len(names):
                        found.add(names[i])
                for k in node.keywords:
                    if k.arg is not None and _is_attribute(k.value, attribute):
                        found.add(k.arg)
    return found


def _is_attribute(expr: ast.expr, attribute: str) -> bool:
    if isinstance(expr, ast.Subscript):
        expr = expr.value
    return isinstance(expr, ast.Attribute) and isinstance(expr.value, ast.Name) and expr.value.id == "self" and \
        expr.attr == attribute


def _moves_targets(loop: ast.For) -> bool:
    """The loop's body copies a loop variable (or a value of a comprehension over one) with `.to(`/`.cuda(`."""
    names = {n.id for n in walk(loop.target) if isinstance(n, ast.Name)}
    for node in walk(loop):
        if isinstance(node, ast.comprehension) and _root(node.iter) in names:
            names.update(n.id for n in walk(node.target) if isinstance(n, ast.Name))
    for stmt in loop.body:
        for node in walk(stmt):
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and \
                    node.func.attr in ("to", "cuda") and _root(node.func.value) in names:
                return True
    return False


def _root(expr: ast.expr) -> Optional[str]:
    while True:
        if isinstance(expr, ast.Name):
            return expr.id
        if isinstance(expr, (ast.Attribute, ast.Subscript)):
            expr = expr.value
        elif isinstance(expr, ast.Call) and isinstance(expr.func, ast.Attribute):
            expr = expr.func.value
        else:
            return None


def _names_cuda(project, path: Path) -> bool:
    """The module (or the module of the class's project bases, for `self.dev` set there) spells CUDA."""
    info = project.module(path)
    if info is None:
        return False
    try:
        text = Path(path).read_text(errors="replace")
    except OSError:
        return False
    if "cuda" in text:
        return True
    # a device chosen in a base class's module (`self.dev = "cuda:0"` in an IO base class)
    from gpulint.analysis.project import ClassSummary

    level = list(info.classes.values())
    seen = {str(path)}
    for _ in range(3):
        above = []
        for cls in level:
            for base in cls.bases:
                found = project.lookup(cls.path, base)
                if not isinstance(found, ClassSummary):
                    continue
                above.append(found)
                if str(found.path) in seen:
                    continue
                seen.add(str(found.path))
                try:
                    if "cuda" in Path(found.path).read_text(errors="replace"):
                        return True
                except OSError:
                    continue
        level = above
    return False
