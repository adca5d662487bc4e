"""The defaults of a script's own command-line flags, where the module declares them with argparse.

`parser.add_argument('--pin-mem', action='store_true', default=False)` makes `args.pin_mem` False unless the run
passes `--pin-mem`: `DataLoader(..., pin_memory=args.pin_mem)` does not pin in the default run (timm's and
DeiT's training scripts; DeiT and MAE turn it on with `parser.set_defaults(pin_mem=True)`, which wins).

Only booleans are read: `action='store_true'` (False), `action='store_false'` (True), or a literal
`default=True`/`False` (a `type=str2bool` flag). A destination declared more than once with different defaults,
or set by `set_defaults` to anything but a literal, is unknown. A flag is read as `<name>.<dest>` (`args.pin_mem`,
`opt.pin_memory`); the receiver is not checked, but the destination must be declared in the same module.
"""

from __future__ import annotations

from typing import Optional

import libcst as cst

from gpulint.analysis.node_types import of_types
from gpulint.syntax import positional

_UNKNOWN = object()


class FlagDefaults:
    def __init__(self, defaults: dict) -> None:
        self._defaults = defaults  # dest -> True / False / _UNKNOWN

    def default(self, expr: cst.BaseExpression) -> Optional[bool]:
        """True/False: `expr` reads a boolean flag of this module's parser whose default that is; else None."""
        if type(expr) is not cst.Attribute or type(expr.value) is not cst.Name:
            return None
        found = self._defaults.get(expr.attr.value)
        return found if isinstance(found, bool) else None


def _literal_bool(expr: cst.BaseExpression) -> object:
    if type(expr) is cst.Name and expr.value in ("True", "False"):
        return expr.value == "True"
    return _UNKNOWN


def _string(expr: cst.BaseExpression) -> Optional[str]:
    if type(expr) is cst.SimpleString:
        value = expr.evaluated_value
        return value if isinstance(value, str) else None
    return None


def flag_defaults(analysis) -> FlagDefaults:
    """Fact provider: the boolean defaults of the flags this module declares with argparse."""
    declared: dict[str, object] = {}
    overrides: dict[str, object] = {}
    for node in of_types(analysis.index, cst.Call):
        func = node.func  # type: ignore[attr-defined]
        if type(func) is not cst.Attribute:
            continue
        method = func.attr.value
        if method == "set_defaults":
            for arg in node.args:  # type: ignore[attr-defined]
                if arg.keyword is not None:
                    overrides[arg.keyword.value] = _literal_bool(arg.value)
            continue
        if method != "add_argument":
            continue
        keywords = {a.keyword.value: a.value for a in node.args if a.keyword is not None}  # type: ignore
        options = [_string(a) for a in positional(node)]  # type: ignore[arg-type]
        dest = _string(keywords["dest"]) if "dest" in keywords else next(
            (o[2:].replace("-", "_") for o in options if o and o.startswith("--")), None)
        if not dest:
            continue
        action = _string(keywords["action"]) if "action" in keywords else None
        if "default" in keywords:
            value = _literal_bool(keywords["default"])
        elif action == "store_true":
            value = False
        elif action == "store_false":
            value = True
        else:
            value = _UNKNOWN
        if dest in declared and declared[dest] != value:
            value = _UNKNOWN
        declared[dest] = value
    declared.update(overrides)
    return FlagDefaults(declared)
