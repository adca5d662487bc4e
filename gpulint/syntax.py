"""Small helpers over LibCST nodes that rules share (argument lookup, method-call matching)."""

from __future__ import annotations

import functools
from typing import Optional, Sequence

import libcst as cst

from gpulint import legacy_syntax


@functools.lru_cache(maxsize=512)
def parse_statement(code: str) -> cst.BaseStatement:
    """`cst.parse_statement(code)`, parsed once per text: a rule building the same fix statement for many findings
    (a dense buffer, re-linted on every edit in an editor) gets the same node; nodes are immutable, and LibCST
    shares unchanged nodes between trees anyway."""
    return cst.parse_statement(code)


@functools.lru_cache(maxsize=512)
def parse_expression(code: str) -> cst.BaseExpression:
    """`cst.parse_expression(code)`, parsed once per text (see `parse_statement`)."""
    return cst.parse_expression(code)


def argument(call: cst.Call, keyword: str, position: Optional[int] = None) -> Optional[cst.Arg]:
    """The argument bound to a parameter, by keyword or by position (as TorchFix's helper does)."""
    for arg in call.args:
        if arg.keyword is not None and (arg.keyword.value == keyword or
                                        keyword == "non_blocking" and legacy_syntax.is_non_blocking(arg.keyword.value)):
            return arg
    if position is not None and position >= 0:
        positional = [a for a in call.args if a.keyword is None and not a.star]
        if position < len(positional):
            return positional[position]
    return None


def positional_names(fn: cst.FunctionDef) -> list[str]:
    """The names of the parameters of `fn` that a call may pass by position (positional-only ones first)."""
    return [p.name.value for p in (*fn.params.posonly_params, *fn.params.params)]


def argument_for(call: cst.Call, params: list, name: str) -> Optional[cst.Arg]:
    """The argument `call` passes to parameter `name` of a function whose positional parameters are `params`
    (a method called as `obj.m(...)` gets its `self`/`cls` from the receiver, not from a positional argument)."""
    index = params.index(name) if name in params else None
    if index is not None and params[0] in ("self", "cls") and type(call.func) is cst.Attribute:
        index -= 1
    return argument(call, name, index)


STARRED = object()  # `passed_argument`: a `*args`/`**kwargs` came first and may hold the parameter


def passed_argument(call: cst.Call, position: Optional[int], keyword: str) -> object:
    """The Arg `call` passes to the parameter at `position` (among positional parameters; None: keyword only)
    or named `keyword`; None when it passes none; `STARRED` when a starred argument met before it could hold it
    (unlike `argument`, which skips starred arguments)."""
    positional = 0
    for arg in call.args:
        if arg.star:
            return STARRED
        if arg.keyword is not None:
            if arg.keyword.value == keyword:
                return arg
            continue
        if positional == position:
            return arg
        positional += 1
    return None


NOT_CONSTANT = object()  # `literal_value` of anything but a plain literal


def literal_value(node: cst.BaseExpression) -> object:
    """The value of a string, integer or True/False/None literal, else `NOT_CONSTANT`."""
    if type(node) is cst.SimpleString:
        try:
            return node.evaluated_value
        except Exception:  # noqa: BLE001 - an odd literal is not a constant anyone compares
            return NOT_CONSTANT
    if type(node) is cst.Integer:
        try:
            return int(node.value.replace("_", ""), 0)
        except ValueError:
            return NOT_CONSTANT
    if type(node) is cst.Name and node.value in ("True", "False", "None"):
        return {"True": True, "False": False, "None": None}[node.value]
    return NOT_CONSTANT


def positional(call: cst.Call) -> list[cst.BaseExpression]:
    return [a.value for a in call.args if a.keyword is None and not a.star]


def method_call(node: cst.CSTNode, names: Sequence[str] | str) -> Optional[cst.Attribute]:
    """`node` is `<receiver>.<name>(...)`: return its Attribute, else None."""
    if isinstance(names, str):
        names = (names,)
    if type(node) is cst.Call and type(node.func) is cst.Attribute and node.func.attr.value in names:
        return node.func
    return None


def is_true(node: Optional[cst.BaseExpression]) -> bool:
    return type(node) is cst.Name and node.value == "True"


def string_value(node: Optional[cst.BaseExpression]) -> Optional[str]:
    if type(node) is cst.SimpleString:
        value = node.evaluated_value
        return value if isinstance(value, str) else None
    return None


def statement_of(node: cst.CSTNode, parent_of) -> Optional[cst.CSTNode]:
    """The statement (simple statement line or compound statement) that holds `node`."""
    current: Optional[cst.CSTNode] = node
    while current is not None and not isinstance(current, (cst.SimpleStatementLine, cst.BaseCompoundStatement)):
        current = parent_of(current)
    return current


def flat_statements(suite: cst.BaseSuite) -> list[cst.BaseSmallStatement | cst.BaseCompoundStatement]:
    """The statements of a block, with `a; b` lines split."""
    out: list = []
    body = suite.body
    for item in body:
        if type(item) is cst.SimpleStatementLine:
            out.extend(item.body)
        else:
            out.append(item)
    return out


_EMPTY_MODULE = cst.Module(body=[])


def code_of(node: cst.CSTNode) -> str:
    """The source text of a node, rendered without its module (default formatting of a detached module)."""
    return _EMPTY_MODULE.code_for_node(node)


def target_names(target: cst.BaseExpression) -> list[str]:
    """The names an assignment target binds (`a`, `a, (b, c)`, `*rest`), not attributes or subscripts."""
    if isinstance(target, cst.Name):
        return [target.value]
    if isinstance(target, (cst.Tuple, cst.List)):
        return [n for e in target.elements for n in target_names(e.value)]
    if isinstance(target, cst.StarredElement):
        return target_names(target.value)
    return []
