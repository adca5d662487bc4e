"""Modules chosen at run time: `model = importlib.import_module(args.model)`, then `model.get_model(...)`.

Training scripts often pick the network's module by a flag (`--model pointnet2_cls_ssg`) and build the class
every candidate module defines under one name (`get_model`, `get_loss`). Which module runs is a run's choice; in
the run that picks a module, its class is built and called every step. So a call `m.Name(...)` of a name bound
only to `importlib.import_module(<expr>)` (or `__import__(<expr>)`) may build `Name` of any project module the
script can import by that expression: a module whose own name the resolver finds from the script (its folder,
the root, the folders the script puts on `sys.path`), or, for an argument with a constant package prefix
(`importlib.import_module("models." + name)`, `f"models.{name}"`), the modules of that package.

Only the question "may this call build class C of module M" is answered (`may_build`), from M's side: nothing
lists folders or parses the candidates.
"""

from __future__ import annotations

from pathlib import Path
from typing import Optional

import libcst as cst

_IMPORTERS = frozenset({"importlib.import_module", "__import__"})


def module_choice(calls, func: cst.BaseExpression) -> Optional[tuple[str, str]]:
    """For `m.Name` with `m` bound only to `importlib.import_module(<expr>)`: (the constant package prefix of
    the module's name, "" when none or when the whole name is chosen at run time, `Name`). A constant module
    name gives (its name, Name) with no trailing dot. None otherwise."""
    if type(func) is not cst.Attribute or type(func.value) is not cst.Name:
        return None
    bindings = calls.index.visible_bindings(func.value)
    if not bindings or len(bindings) > 4:
        return None
    prefixes = set()
    for b in bindings:
        if b.kind not in ("assign", "annassign") or b.index is not None or type(b.value) is not cst.Call:
            return None
        call = b.value
        name = "__import__" if type(call.func) is cst.Name and call.func.value == "__import__" else \
            calls.analysis.qualified(call.func)
        if name not in _IMPORTERS or not call.args or call.args[0].keyword is not None or call.args[0].star:
            return None
        prefix = _prefix(call.args[0].value)
        if prefix is None:
            return None
        prefixes.add(prefix)
    if len(prefixes) != 1:
        return None
    return prefixes.pop(), func.attr.value


def _prefix(expr: cst.BaseExpression) -> Optional[str]:
    """The constant start of a module name: "" for a name known only at run time (a flag, a config entry),
    "pkg." for `"pkg." + name` / `f"pkg.{name}"`, the whole name (no trailing dot) for a string constant."""
    if type(expr) is cst.SimpleString:
        value = expr.evaluated_value
        return value if isinstance(value, str) and value and not value.endswith(".") else None
    if type(expr) is cst.BinaryOperation and type(expr.operator) is cst.Add:
        left = expr.left
        if type(left) is cst.SimpleString and isinstance(left.evaluated_value, str):
            value = left.evaluated_value
            return value if value.endswith(".") else None
        return None
    if type(expr) is cst.FormattedString:
        first = expr.parts[0] if expr.parts else None
        if type(first) is cst.FormattedStringText and first.value.endswith("."):
            return first.value
        return "" if type(first) is cst.FormattedStringExpression and len(expr.parts) == 1 else None
    if type(expr) in (cst.Name, cst.Attribute, cst.Subscript):
        return ""
    return None


def may_build(calls, project, importer: Path, func: cst.BaseExpression, target: Path, name: str) -> bool:
    """`func` (`m.get_model` of a module chosen at run time in `importer`) may name `name` in the project
    module `target`: the attribute is `name` and `target` is a module the import may pick."""
    choice = module_choice(calls, func)
    if choice is None or choice[1] != name:
        return False
    prefix = choice[0]
    target = target.resolve()
    if target.name == "__init__.py":
        return False
    stem = target.stem
    if prefix and not prefix.endswith("."):  # a constant name: that module only
        return project.resolver.resolve(prefix, importer) == target
    return project.resolver.resolve(f"{prefix}{stem}", importer) == target
