"""An edited top-level function parsed again only where it changed (gpulint.incremental, in an editor).

Typing inside a 700-line `main()` used to parse all of `main()` again with LibCST. Here the lines that changed
are located with CPython's parser (fast) in the previous version of the piece: the run of statements of one
indented block that holds them, with a statement of the block before and after the run. Only that run's new
text is parsed by LibCST (dedented to the block's level, as a module of its own), and its statements replace
the old ones in the previous tree; every other statement keeps its node, so what is kept by node (the syntax
index's walks, the rules' findings: gpulint.rule_reuse) stays valid for it.

The result is the tree a whole parse gives (tests/test_splice.py compares them with `deep_equals`, after random
edits). Whatever this does not handle gives None, and the piece is parsed whole: an edit outside a function's
block, at a block's first or last statement, a block of a `class`, tabs, a backslash continuation, a
multi-line string, a form feed, a comment or a line less indented than its block inside the run, or a
blank line made of spaces.
"""

from __future__ import annotations

import ast
from typing import Optional

import libcst as cst

_COMPOUND = (ast.For, ast.AsyncFor, ast.While, ast.If, ast.With, ast.AsyncWith, ast.Try, ast.FunctionDef,
             ast.AsyncFunctionDef, ast.ClassDef, ast.Match, *((ast.TryStar,) if hasattr(ast, "TryStar") else ()))
_UNSAFE = ("\t", "\\\n", "\\\r", '"""', "'''", "\f", "\r")


def splice(old_text: str, old: cst.Module, new_text: str) -> Optional[cst.Module]:
    """`cst.parse_module(new_text)`, from `old` (the tree of `old_text`) and a parse of the changed lines only;
    None where that cannot be done (then the caller parses `new_text`)."""
    if len(old.body) != 1 or not isinstance(old.body[0], cst.FunctionDef):
        return None
    old_lines = old_text.splitlines(keepends=True)
    new_lines = new_text.splitlines(keepends=True)
    if not old_text.endswith("\n") or not new_text.endswith("\n"):
        return None
    prefix = 0
    limit = min(len(old_lines), len(new_lines))
    while prefix < limit and old_lines[prefix] == new_lines[prefix]:
        prefix += 1
    suffix = 0
    while suffix < limit - prefix and old_lines[-1 - suffix] == new_lines[-1 - suffix]:
        suffix += 1
    if prefix == len(old_lines) == len(new_lines):
        return None
    try:
        tree = ast.parse(old_text)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None
    function = tree.body[0] if len(tree.body) == 1 else None
    if not isinstance(function, (ast.FunctionDef, ast.AsyncFunctionDef)):
        return None
    # Changed lines (1-based, inclusive) in the old text; an insertion is an empty range before `first`.
    first, last = prefix + 1, len(old_lines) - suffix
    path, node = [], function
    while True:  # descend while one statement's body holds the whole change
        block = node.body
        run = [k for k, stmt in enumerate(block) if _area(block, k, node)[0] <= max(last, first) and
               _area(block, k, node)[1] >= first]
        if not run:
            return None
        i, j = run[0], run[-1] + 1
        inner = block[i]
        if j == i + 1 and isinstance(inner, _COMPOUND) and not isinstance(inner, (
                ast.FunctionDef, ast.AsyncFunctionDef)) and inner.body and \
                _header_end(old_lines, _top(inner.body[0])) < first and last <= inner.body[-1].end_lineno and \
                not _outside_body(inner, first, last):
            path.append(i)
            node = inner
            continue
        break
    # Old lines of the run, the comment and blank lines above its first statement included.
    start = block[i - 1].end_lineno + 1 if i else _header_end(old_lines, _top(block[0])) + 1
    end = block[j - 1].end_lineno
    if not (start <= first and last <= end):
        return None
    # Blank and deeper comment lines after a compound statement belong to its block (its footer): the run
    # must not start or end next to such lines.
    at_end = j >= len(block)
    if isinstance(block[j - 1], _COMPOUND) and (at_end or _area(block, j, node)[0] != _top(block[j])):
        return None
    shift = len(new_lines) - len(old_lines)
    region = new_lines[start - 1:end + shift]
    if not region or any(bad in line for line in region for bad in _UNSAFE):
        return None
    indent = _indent(old_lines[block[i].lineno - 1])
    if indent is None or (not at_end and _indent(old_lines[block[j].lineno - 1]) != indent):
        return None
    if i and isinstance(block[i - 1], _COMPOUND) and not (region[0].startswith(indent) and
                                                    region[0][len(indent):][:1] not in (" ", "\n")):
        return None
    dedented = []
    for line in region:
        if line == "\n":
            dedented.append(line)
        elif line.startswith(indent) and line[len(indent)] not in " \n":
            dedented.append(line[len(indent):])
        elif line.startswith(indent) and line[len(indent):].lstrip(" ")[:1] not in ("", "\n"):
            dedented.append(line[len(indent):])  # a comment or continuation deeper than the block
        else:
            return None
    try:
        part = cst.parse_module("".join(dedented))
    except (cst.ParserSyntaxError, RecursionError):
        return None
    if not part.body or part.footer or part.default_indent != old.default_indent or \
            part.default_newline != old.default_newline or (
            at_end and not isinstance(part.body[-1], cst.SimpleStatementLine)):
        return None
    statements = list(part.body)
    statements[0] = statements[0].with_changes(leading_lines=[*part.header, *statements[0].leading_lines])
    statements = [s.visit(_Reindented(indent)) for s in statements]
    return _replace(old, path, _cst_range(old, path, block, i, j), statements)


def _area(block: list, k: int, owner: ast.AST) -> tuple[int, int]:
    """The lines of statement `k` of `block`, with the comment and blank lines above it."""
    above = block[k - 1].end_lineno + 1 if k else _top(block[k])
    return above, block[k].end_lineno


def _top(stmt: ast.AST) -> int:
    return min([stmt.lineno, *(d.lineno for d in getattr(stmt, "decorator_list", ()))])


def _header_end(lines: list[str], body_top: int) -> int:
    """The last line of a compound statement's header (`for x in y:`): the last line before its body's first
    statement (`body_top`) that is not blank or a comment (those are the statement's, in LibCST's tree)."""
    line = body_top - 1
    while line > 1 and lines[line - 1].strip()[:1] in ("", "#"):
        line -= 1
    return line


def _outside_body(stmt: ast.AST, first: int, last: int) -> bool:
    """The change touches lines of `stmt` past its body (`else:`, `except`, `finally`)."""
    return any(getattr(stmt, f, None) for f in ("orelse", "handlers", "finalbody")) and \
        last > stmt.body[-1].end_lineno


def _indent(line: str) -> Optional[str]:
    stripped = line.lstrip(" ")
    return line[:len(line) - len(stripped)] if stripped else None


def _cst_range(old: cst.Module, path: list[int], block: list, i: int, j: int) -> Optional[tuple]:
    """The LibCST statements that stand for CPython's statements `i`..`j` of the block at `path`."""
    body = _cst_block(old, path)
    if body is None:
        return None
    starts, at = [], 0
    for statement in body:
        starts.append(at)
        at += len(statement.body) if type(statement) is cst.SimpleStatementLine else 1
    if at != len(block) or i not in starts or (j not in starts and j != at):
        return None
    return starts.index(i), starts.index(j) if j != at else len(body)


def _cst_block(old: cst.Module, path: list[int]) -> Optional[list]:
    node: cst.CSTNode = old.body[0]
    for index in [None, *path]:
        if index is not None:
            body = _cst_ast_children(node)
            if body is None or index not in body:
                return None
            node = body[index]
        block = getattr(node, "body", None)
        if type(block) is not cst.IndentedBlock:
            return None
        node = block
    return list(node.body)


def _cst_ast_children(block: cst.IndentedBlock) -> Optional[dict]:
    """CPython statement index -> the LibCST statement, for compound ones."""
    found, at = {}, 0
    for statement in block.body:
        if type(statement) is cst.SimpleStatementLine:
            at += len(statement.body)
        else:
            found[at] = statement
            at += 1
    return found


def _replace(old: cst.Module, path: list[int], span: Optional[tuple], statements: list) -> Optional[cst.Module]:
    if span is None:
        return None
    chain: list = [old.body[0]]  # the nodes from the function down to the block's owner
    for index in path:
        children = _cst_ast_children(chain[-1].body)
        if children is None or index not in children:
            return None
        chain.append(children[index])
    owner = chain.pop()
    a, b = span
    body = list(owner.body.body)
    replaced = owner.with_changes(body=owner.body.with_changes(body=[*body[:a], *statements, *body[b:]]))
    while chain:
        parent = chain.pop()
        body = list(parent.body.body)
        body = [replaced if s is owner else s for s in body]
        replaced, owner = parent.with_changes(body=parent.body.with_changes(body=body)), parent
    return old.with_changes(body=[replaced])


class _Reindented(cst.CSTTransformer):
    """The statements parsed from the dedented text, as the whole text's parse has them in a block indented by
    `indent`: a blank line there is not indented (at column 0 of the dedented text it was), and a line less
    indented than its own block (a comment or continuation line inside brackets) keeps its whole leading
    whitespace (the block's `indent` included, which the dedent took away)."""

    def __init__(self, indent: str) -> None:
        super().__init__()
        self.indent = indent

    def leave_EmptyLine(self, original: cst.EmptyLine, updated: cst.EmptyLine) -> cst.EmptyLine:
        if updated.comment is None and not updated.whitespace.value:
            return updated.with_changes(indent=False) if updated.indent else updated
        if not updated.indent:
            return updated.with_changes(whitespace=cst.SimpleWhitespace(self.indent + updated.whitespace.value))
        return updated

    def leave_ParenthesizedWhitespace(self, original: cst.ParenthesizedWhitespace,
                                      updated: cst.ParenthesizedWhitespace) -> cst.ParenthesizedWhitespace:
        if not updated.indent:
            return updated.with_changes(last_line=cst.SimpleWhitespace(self.indent + updated.last_line.value))
        return updated
