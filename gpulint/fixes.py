"""Applying fixes: node replacements on the syntax tree, so every byte a fix does not touch stays as it was."""

from __future__ import annotations

import difflib
from typing import Callable, Iterable, Optional, Sequence

import libcst as cst

from gpulint.diagnostics import Diagnostic, Edit, Fix, Position
from gpulint.files import source_lines


def fresh_name(analysis, base: str) -> str:
    """`base`, or `base_2`, ... : a name no scope of the module binds yet."""
    taken = analysis.index.bound_names()
    name, n = base, 2
    while name in taken:
        name, n = f"{base}_{n}", n + 1
    return name


def statement_removal(analysis, call: cst.Call) -> Optional[dict]:
    """The changes that remove the expression statement `call` (`torch.cuda.empty_cache()` on a line of its own,
    or one of several `;`-separated statements): the line goes, or becomes `pass` where it is its block's only
    statement. None when the call is not a statement of its own."""
    expr = analysis.parent(call)
    line = analysis.parent(expr)
    if type(expr) is not cst.Expr or type(line) is not cst.SimpleStatementLine:
        return None
    if len(line.body) > 1:
        rest = [s for s in line.body if s is not expr]
        rest[-1] = rest[-1].with_changes(semicolon=cst.MaybeSentinel.DEFAULT)
        return {line: line.with_changes(body=rest)}
    block = analysis.parent(line)
    others = [s for s in getattr(block, "body", ()) if s is not line]
    return {line: cst.RemoveFromParent() if others else line.with_changes(body=[cst.Pass()])}


class Replace(cst.CSTTransformer):
    def __init__(self, changes: dict) -> None:
        super().__init__()
        self.changes = changes

    def on_leave(self, original_node, updated_node):
        replacement = self.changes.get(original_node)
        if replacement is None:
            return updated_node
        if callable(replacement):
            return replacement(updated_node)
        return replacement


def apply(module: cst.Module, fixes: Iterable[Fix]) -> cst.Module:
    changes: dict = {}
    for fix in fixes:
        changes.update(fix.changes)
    return module.visit(Replace(changes))


def non_overlapping(fixes: Sequence[Fix], is_ancestor_or_self: Callable) -> list[Fix]:
    """Fixes that touch disjoint parts of the tree, first come first served; the rest wait for the next pass."""
    chosen: list[Fix] = []
    touched: list = []
    for fix in fixes:
        targets = list(fix.changes)
        clash = any(is_ancestor_or_self(a, b) or is_ancestor_or_self(b, a) for a in targets for b in touched)
        if not clash:
            chosen.append(fix)
            touched.extend(targets)
    return chosen


def text_edits(before: str, after: str) -> tuple[Edit, ...]:
    """The changed line ranges between two versions of a file, as Ruff-style edits (1-based rows/columns)."""
    a = source_lines(before)
    b = source_lines(after)
    edits = []
    for tag, i1, i2, j1, j2 in difflib.SequenceMatcher(None, a, b, autojunk=False).get_opcodes():
        if tag == "equal":
            continue
        edits.append(Edit("".join(b[j1:j2]), Position(i1 + 1, 1), Position(i2 + 1, 1)))
    return tuple(edits)


def edits_for(diagnostic: Diagnostic, module: cst.Module, original: str) -> tuple[Edit, ...]:
    if diagnostic.fix is None:
        return ()
    return text_edits(original, apply(module, [diagnostic.fix]).code)
