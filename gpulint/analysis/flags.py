"""The defaults of a script's own command-line flags, where the module declares them with argparse.

`parser.add_argument('--pin-mem', action='store_true', default=False)` makes `args.pin_mem` False unless the run
passes `--pin-mem`: `DataLoader(..., pin_memory=args.pin_mem)` does not pin in the default run (timm's and
DeiT's training scripts; DeiT and MAE turn it on with `parser.set_defaults(pin_mem=True)`, which wins).

Only booleans are read: `action='store_true'` (False), `action='store_false'` (True), or a literal
`default=True`/`False` (a `type=str2bool` flag). A destination declared more than once with different defaults,
or set by `set_defaults` to anything but a literal, is unknown. A flag is read as `<name>.<dest>` (`args.pin_mem`,
`opt.pin_memory`); the receiver is not checked, but the destination must be declared in the same module.

`option_default(analysis, expr)` reads any literal default (a boolean, a number, `None`) of the option `expr` reads
(`opt.debug`, `self.opt.eval_oracle_wh`), declared in this module or, where this module declares no such option,
in the project's other modules (`opts.py` holding the parser of a project whose trainers receive `opt`): every
declaration of that destination in the project must agree, and a module that assigns `<x>.<dest> = ...` (this one
or a declaring one, which may adjust the parsed options) makes it unknown. The declaring modules' text is a
dependency of a cached result.
"""

from __future__ import annotations

import ast
from pathlib import Path
from typing import Optional

import libcst as cst

from gpulint import ast_walk
from gpulint.analysis.node_types import of_types
from gpulint.syntax import positional

_UNKNOWN = object()


UNKNOWN = _UNKNOWN
_MAX_DECLARING_FILES = 8
_DECLARATIONS: dict = {}  # (path, digest) of a declaring module -> its `_ast_declarations`


class FlagDefaults:
    def __init__(self, values: dict, assigned: frozenset = frozenset()) -> None:
        self.values = values  # dest -> a literal default (bool, int, float, None) / _UNKNOWN
        self.assigned = assigned  # attribute names this module assigns (`opt.debug = 1`)

    def default(self, expr: cst.BaseExpression) -> Optional[bool]:
        """True/False: `expr` reads a boolean flag of this module's parser whose default that is; else None."""
        if type(expr) is not cst.Attribute or type(expr.value) is not cst.Name:
            return None
        found = self.values.get(expr.attr.value)
        return found if isinstance(found, bool) else None


def _string(expr: cst.BaseExpression) -> Optional[str]:
    if type(expr) is cst.SimpleString:
        value = expr.evaluated_value
        return value if isinstance(value, str) else None
    return None


def _literal(expr: cst.BaseExpression) -> object:
    """A boolean, number or `None` written as a literal (`-1` too), else _UNKNOWN."""
    if type(expr) is cst.Name:
        return {"True": True, "False": False, "None": None}.get(expr.value, _UNKNOWN)
    if type(expr) in (cst.Integer, cst.Float):
        return expr.evaluated_value  # type: ignore[attr-defined]
    if type(expr) is cst.UnaryOperation and type(expr.operator) is cst.Minus and \
            type(expr.expression) in (cst.Integer, cst.Float):
        return -expr.expression.evaluated_value  # type: ignore[attr-defined]
    return _UNKNOWN


def _ast_literal(expr: ast.expr) -> object:
    if isinstance(expr, ast.Constant) and (expr.value is None or isinstance(expr.value, (bool, int, float))):
        return expr.value
    if isinstance(expr, ast.UnaryOp) and isinstance(expr.op, ast.USub) and isinstance(expr.operand, ast.Constant) \
            and isinstance(expr.operand.value, (int, float)) and not isinstance(expr.operand.value, bool):
        return -expr.operand.value
    return _UNKNOWN


def _declare(declared: dict, options: list, keywords: dict, literal) -> None:
    """One `add_argument(*options, **keywords)`: its destination's literal default into `declared` (a destination
    declared again with another default, or one of another type (`True`, then `1`), becomes _UNKNOWN). The one
    reading of a declaration, for an `ast` tree (`_ast_declarations`) and a LibCST one (`flag_defaults`); a
    `dest=` that is not a literal string names no known destination."""
    if "dest" in keywords:
        dest = keywords["dest"] if isinstance(keywords["dest"], str) else None
    else:
        dest = next((o[2:].replace("-", "_") for o in options if isinstance(o, str) and o.startswith("--")), None)
    if not dest:
        return
    action = keywords.get("action")
    if "default" in keywords:
        value = literal(keywords["default"])
    elif action == "store_true":
        value = False
    elif action == "store_false":
        value = True
    elif action is None and "type" not in keywords and "choices" not in keywords and "nargs" not in keywords:
        value = None  # argparse's default for an option given no default
    else:
        value = _UNKNOWN
    if dest in declared and (declared[dest] != value or type(declared[dest]) is not type(value)):
        value = _UNKNOWN
    declared[dest] = value


def _ast_declarations(tree: ast.AST, literal=_ast_literal, override=_ast_literal) -> tuple[dict, set]:
    """The literal defaults of the options a module declares (`ast`), and the attribute names it assigns;
    `literal` reads a declared default, `override` a `set_defaults(...)` value."""
    declared: dict = {}
    overrides: dict = {}
    assigned: set = set()
    for node in ast_walk.walk(tree):
        if isinstance(node, (ast.Assign, ast.AugAssign, ast.AnnAssign)):
            for target in node.targets if isinstance(node, ast.Assign) else [node.target]:
                if isinstance(target, ast.Attribute):
                    assigned.add(target.attr)
            continue
        if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)):
            continue
        if node.func.attr == "set_defaults":
            overrides.update({k.arg: override(k.value) for k in node.keywords if k.arg})
        elif node.func.attr == "add_argument":
            options = [a.value if isinstance(a, ast.Constant) else None for a in node.args]
            keywords = {k.arg: (k.value.value if isinstance(k.value, ast.Constant) and isinstance(k.value.value, str)
                                and k.arg in ("dest", "action") else k.value) for k in node.keywords if k.arg}
            _declare(declared, options, keywords, literal)
    declared.update(overrides)
    return declared, assigned


def _ast_text(expr: ast.expr) -> object:
    return expr.value if isinstance(expr, ast.Constant) and isinstance(expr.value, str) else _UNKNOWN


def _unknown(expr: ast.expr) -> object:
    return _UNKNOWN


_TEXT_DECLARATIONS: dict = {}  # (path, digest) -> `_ast_declarations` reading string defaults (`ast_option_text`)


def ast_option_text(info, expr: ast.expr) -> Optional[str]:
    """The literal string default of the command-line option `expr` reads (`FLAGS.model`, `--model` declared
    with `default='votenet'`) in the parser of the module `info` itself, when the module never assigns that
    attribute nor changes its default with `set_defaults`; None otherwise. Strings are read only here (for a
    module a program imports by name), not by `option_default`, whose readers test truth and numbers."""
    if not isinstance(expr, ast.Attribute) or not isinstance(expr.value, ast.Name):
        return None
    key = (info.path, info.digest)
    found = _TEXT_DECLARATIONS.get(key)
    if found is None:
        if len(_TEXT_DECLARATIONS) > 256:
            _TEXT_DECLARATIONS.clear()
        found = _TEXT_DECLARATIONS[key] = _ast_declarations(info.tree, _ast_text, _unknown)
    declared, assigned = found
    value = declared.get(expr.attr)
    return value if isinstance(value, str) and expr.attr not in assigned else None


def option_default(analysis, expr: cst.BaseExpression) -> object:
    """The literal default of the command-line option `expr` reads (`opt.debug`, `self.opt.debug`), from this
    module's parser or the project's (see the module's docstring); _UNKNOWN when not known."""
    if type(expr) is not cst.Attribute:
        return _UNKNOWN
    receiver = expr.value
    if not (type(receiver) is cst.Name or (type(receiver) is cst.Attribute and type(receiver.value) is cst.Name
                                           and receiver.value.value == "self")):
        return _UNKNOWN
    return option_default_of(analysis, expr.attr.value)


def option_default_of(analysis, dest: str) -> object:
    """The literal default of the command-line option whose destination is `dest` (see `option_default`)."""
    local = analysis.fact(flag_defaults)
    if dest in local.assigned:
        return _UNKNOWN
    if dest in local.values:
        return local.values[dest]
    if analysis.path is None:
        return _UNKNOWN
    from gpulint.analysis.project import project_for

    here = Path(analysis.path).resolve()
    return _project_default(project_for(here), here, dest)


def ast_option_default(project, info, expr: ast.expr) -> object:
    """`option_default` for an `ast` expression of the project module `info` (`pin_memory=args.pin_memory` at a
    loader's call site read by a project summary): its parser's literal default, else the project's; _UNKNOWN."""
    if not isinstance(expr, ast.Attribute) or not isinstance(expr.value, ast.Name):
        return _UNKNOWN
    dest = expr.attr
    key = (info.path, info.digest)
    local = _DECLARATIONS.get(key)
    if local is None:
        if len(_DECLARATIONS) > 256:
            _DECLARATIONS.clear()
        local = _DECLARATIONS[key] = _ast_declarations(info.tree)
    declared, assigned = local
    if dest in assigned:
        return _UNKNOWN
    if dest in declared:
        return declared[dest]
    return _project_default(project, Path(info.path).resolve(), dest)


def _project_default(project, here: Path, dest: str) -> object:
    """The default every other parser module of the project declaring `dest` agrees on; _UNKNOWN."""
    from gpulint.analysis.project import text_dependency

    found: list = []
    parsers = set(project.files_naming("add_argument"))
    files = [f for f in project.files_naming(dest) if f in parsers and Path(f).resolve() != here]
    for file in files[:_MAX_DECLARING_FILES]:
        with text_dependency():
            info = project.module(Path(file))
        tree = getattr(info, "tree", None) if info is not None else None
        if tree is None:
            continue
        key = (info.path, info.digest)
        found_here = _DECLARATIONS.get(key)
        if found_here is None:
            if len(_DECLARATIONS) > 256:  # an editor session edits parsers: keep the table small
                _DECLARATIONS.clear()
            found_here = _DECLARATIONS[key] = _ast_declarations(tree)
        declared, assigned = found_here
        if dest in declared:
            if dest in assigned:
                return _UNKNOWN
            found.append(declared[dest])
    if not found or len(files) > _MAX_DECLARING_FILES or any(v is _UNKNOWN or v != found[0] or type(v) is not
                                                                 type(found[0]) for v in found):
        return _UNKNOWN
    return found[0]


def flag_defaults(analysis) -> FlagDefaults:
    """Fact provider: the literal defaults of the flags this module declares with argparse (`values`; `default`
    reads the boolean ones)."""
    values: dict[str, object] = {}
    value_overrides: dict[str, object] = {}
    assigned: set = set()
    for node in of_types(analysis.index, cst.Assign, cst.AugAssign, cst.AnnAssign):
        for target in [t.target for t in node.targets] if type(node) is cst.Assign else [node.target]:  # type: ignore
            if type(target) is cst.Attribute:
                assigned.add(target.attr.value)
    for node in of_types(analysis.index, cst.Call):
        func = node.func  # type: ignore[attr-defined]
        if type(func) is not cst.Attribute:
            continue
        method = func.attr.value
        if method == "set_defaults":
            for arg in node.args:  # type: ignore[attr-defined]
                if arg.keyword is not None:
                    value_overrides[arg.keyword.value] = _literal(arg.value)
            continue
        if method != "add_argument":
            continue
        keywords = {a.keyword.value: a.value for a in node.args if a.keyword is not None}  # type: ignore
        options = [_string(a) for a in positional(node)]  # type: ignore[arg-type]
        _declare(values, options, {k: (_string(v) if k in ("dest", "action") else v) for k, v in keywords.items()},
                 _literal)
    values.update(value_overrides)
    return FlagDefaults(values, frozenset(assigned))
