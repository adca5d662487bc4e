"""Values a project object keeps from what it is handed (branch recall57).

A meter or running statistic whose method stores its argument, or arithmetic of it, in an attribute
(`AverageMeter.update(self, val, n=1)`: `self.val = val; self.sum += val * n; self.avg = self.sum / self.count`)
holds whatever it was given. Where a function hands that method a device tensor (`top1.update(acc1[0], n)`,
`meters["top1"].update(acc1[0], n)`) and then reads the attribute on the same object (`top1.avg`,
`meters["top1"].avg`), the attribute is a device tensor: formatting it, `float()` of it or `.item()` waits for
the GPU. A method that converts the argument itself (`val.item()`, `float(val)`, `val.cpu()`) keeps a host value
(and is a sink of its own, which the project summaries already report at the call).

The object's class is the one the call site's analysis resolves (`ProjectCalls.instance_classes`), else every
project class the module defines or imports by name that has a method of that name (`from .utils import
AverageMeter`); all of them must keep the attribute from the same argument, and there must be one.
"""

from __future__ import annotations

import ast
from typing import Optional

import libcst as cst

from gpulint import ast_walk

_HOST_METHODS = frozenset({"item", "cpu", "tolist", "numpy"})
_HOST_BUILTINS = frozenset({"float", "int", "bool", "str", "round"})


def kept_attributes(cls) -> dict:
    """{method: {attribute: (position, parameter)}} of a project class (a `ClassSummary`): the attributes each
    method sets from one of its parameters (directly, through arithmetic, through another attribute it sets
    from it: `self.avg = self.sum / self.count` after `self.sum += val * n`), the parameter never converted to a
    host value in that method. Computed once per class."""
    found = getattr(cls, "_kept_attributes", None)
    if found is not None:
        return found
    found = {}
    for name, fn in cls.methods.items():
        params = [a.arg for a in (*fn.args.posonlyargs, *fn.args.args)][1:]
        kept: dict = {}
        for position, param in enumerate(params):
            if _converted(fn, param):
                continue
            for attribute in _attributes_from(fn, param):
                kept.setdefault(attribute, (position, param))
        if kept:
            found[name] = kept
    try:
        object.__setattr__(cls, "_kept_attributes", found)
    except (AttributeError, TypeError):
        pass
    return found


def _converted(fn: ast.FunctionDef, param: str) -> bool:
    """`param` (or a name bound from it) goes through `.item()`, `.cpu()`, `float(...)` somewhere in `fn`."""
    for node in ast_walk.walk(fn):
        if not isinstance(node, ast.Call):
            continue
        func = node.func
        if isinstance(func, ast.Attribute) and func.attr in _HOST_METHODS and _mentions(func.value, {param}, set()):
            return True
        if isinstance(func, ast.Name) and func.id in _HOST_BUILTINS and \
                any(_mentions(a, {param}, set()) for a in node.args):
            return True
    return False


def _attributes_from(fn: ast.FunctionDef, param: str) -> set:
    names, attributes = {param}, set()
    stores = []
    for node in ast_walk.walk(fn):
        if isinstance(node, ast.Assign):
            stores.extend((t, node.value) for t in node.targets)
        elif isinstance(node, (ast.AugAssign, ast.AnnAssign)) and node.value is not None:
            stores.append((node.target, node.value))
    changed = True
    while changed:
        changed = False
        for target, value in stores:
            if not _mentions(value, names, attributes):
                continue
            if isinstance(target, ast.Attribute) and isinstance(target.value, ast.Name) and \
                    target.value.id == "self" and target.attr not in attributes:
                attributes.add(target.attr)
                changed = True
            elif isinstance(target, ast.Name) and target.id not in names:
                names.add(target.id)
                changed = True
    return attributes


def _mentions(expr: ast.AST, names: set, attributes: set) -> bool:
    for node in ast_walk.walk(expr):
        if isinstance(node, ast.Name) and node.id in names:
            return True
        if isinstance(node, ast.Attribute) and node.attr in attributes and isinstance(node.value, ast.Name) \
                and node.value.id == "self":
            return True
    return False


def kept_device_tensor(analysis, node: cst.Attribute) -> bool:
    """`node` (`top1.avg`, `meters["top1"].avg`) reads an attribute that an earlier call in the same function,
    `top1.update(<device tensor>, ...)`, had the object's class keep from that tensor."""
    return kept_device_attribute(analysis, node.value, node.attr.value, node)


def kept_device_attribute(analysis, base: cst.BaseExpression, attribute: str, node: cst.CSTNode) -> bool:
    """`base.<attribute>` read at `node` (`"{top1.avg:.3f}".format(top1=top1)` names it in a format field) is
    a device tensor an earlier call in the same function had `base`'s class keep."""
    if type(base) is cst.Name and base.value in ("self", "cls"):
        return False
    busy = analysis.fact(_asking)
    if id(node) in busy:  # `a.update(b.val)` ... `b.update(a.val)`: the argument's kind asks about this read
        return False
    busy.add(id(node))
    try:
        return _kept(analysis, base, attribute, node)
    finally:
        busy.discard(id(node))


def _asking(analysis) -> set:
    """Fact provider: the reads `kept_device_attribute` is deciding (a recursion guard)."""
    return set()


def _kept(analysis, base: cst.BaseExpression, attribute: str, node: cst.CSTNode) -> bool:
    index = analysis.index
    fn = index.enclosing_function(node)
    at = index.order(node)
    if at is None:
        return False
    code = _key(analysis, base)
    for call in _method_calls(analysis, fn):
        func = call.func
        order = index.order(call)
        if order is None or order >= at or _key(analysis, func.value) != code or index.is_ancestor_or_self(call, node):
            continue  # (`buffer.append(x, buffer.max)`: the read is the call's own argument, made before it)
        argument = _kept_argument(analysis, call, func.value, func.attr.value, attribute)
        if argument is not None and analysis.is_device_tensor(argument):
            return True
    return False


def _key(analysis, expr) -> str:
    """The object an expression names, quotes aside (`meters['top1']` is `meters["top1"]`), kept per node for
    the module: each read asked about compares it with the receiver of every method call before it in its
    function, and a receiver that is not a plain name or attribute is LibCST code generation (on fairseq 14,000
    codegens, 2% of a cold lint, for a few hundred receivers)."""
    keys = analysis.fact(_keys)
    kept = keys.get(id(expr))
    if kept is not None and kept[0] is expr:
        return kept[1]
    found = _key_of(analysis, expr)
    keys[id(expr)] = (expr, found)
    return found


def _keys(analysis) -> dict:
    """Fact provider: id(expression) -> (the expression, its `_key`). The expression is held, so that a node
    made for one question (a format field's parse) cannot leave its id to another."""
    return {}


def _key_of(analysis, expr) -> str:
    if type(expr) is cst.Name:
        return expr.value
    if type(expr) is cst.Attribute:
        return f"{_key_of(analysis, expr.value)}.{expr.attr.value}"
    if type(expr) is cst.Subscript and len(expr.slice) == 1 and type(expr.slice[0].slice) is cst.Index and \
            type(expr.slice[0].slice.value) in (cst.SimpleString, cst.Integer):
        return f"{_key_of(analysis, expr.value)}[{expr.slice[0].slice.value.evaluated_value!r}]"
    return analysis.code(expr)


def _method_calls(analysis, fn) -> list:
    """The calls `x.method(...)` in `fn` itself (not in functions nested in it), or at module level."""
    return analysis.fact(_calls_by_function).get(id(fn), [])


def _calls_by_function(analysis) -> dict:
    """Fact provider: id(function, or None for module level) -> its calls `x.method(arg, ...)`, one pass."""
    index = analysis.index
    found: dict = {}
    for n in index.nodes:
        if type(n) is cst.Call and type(n.func) is cst.Attribute and n.args:
            fn = index.enclosing_function(n)
            found.setdefault(id(fn) if fn is not None else id(None), []).append(n)
    return found


def _kept_argument(analysis, call: cst.Call, receiver, method: str, attribute: str) -> Optional[cst.BaseExpression]:
    """The argument of `call` that the receiver's class keeps in `attribute`, when every candidate class agrees."""
    kept = None
    for cls in _candidate_classes(analysis, receiver, method):
        where = kept_attributes(cls).get(method, {}).get(attribute)
        if where is None or kept is not None and where != kept:
            return None
        kept = where
    if kept is None:
        return None
    position, name = kept
    if any(a.star for a in call.args):
        return None
    keyword = next((a.value for a in call.args if a.keyword is not None and a.keyword.value == name), None)
    if keyword is not None:
        return keyword
    positional = [a.value for a in call.args if a.keyword is None]
    return positional[position] if position < len(positional) else None


def _candidate_classes(analysis, receiver, method: str) -> tuple:
    from gpulint.analysis.calls import project_calls

    calls = analysis.fact(project_calls)
    if calls is None:
        return ()
    classes = calls.instance_classes(receiver)
    if classes:
        return tuple(c for c in classes if method in c.methods) if all(method in c.methods for c in classes) \
            else ()
    return tuple(c for c in analysis.fact(_named_classes) if method in c.methods)


def _named_classes(analysis) -> tuple:
    """The project classes the module defines or imports by name (`from .utils import AverageMeter`)."""
    from gpulint.analysis.calls import project_calls
    from gpulint.analysis.project import ClassSummary

    calls = analysis.fact(project_calls)
    if calls is None:
        return ()
    names = [s.name.value for s in analysis.module.body if type(s) is cst.ClassDef]
    for stmt in analysis.module.body:
        for small in stmt.body if type(stmt) is cst.SimpleStatementLine else ():
            if type(small) is cst.ImportFrom and not isinstance(small.names, cst.ImportStar):
                names.extend(alias.evaluated_alias or alias.evaluated_name for alias in small.names)
    found = []
    for name in dict.fromkeys(names):
        summary = calls.project.lookup(calls.path, name)
        if isinstance(summary, ClassSummary):
            found.append(summary)
    return tuple(found)
