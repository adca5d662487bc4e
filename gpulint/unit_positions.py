"""Positions of findings from the smallest statement that holds them, not from the whole top-level statement.

A finding's line and column come from LibCST's PositionProvider, which needs the code of what it resolves
printed. The runner used to print the whole top-level statement holding a finding: for a finding inside a
300-line `main()`, all 300 lines, and the positions of every node in them. Here only the *unit* is printed: the
simple statement line that holds the node (`loss_sum += loss.item()`), or the header of the `for`/`while`/`if`/
`with` whose header holds it (`for x in loader:`), inside a synthetic block indented exactly as the unit is in the
file, so every column (continuation lines included) is the file's own. The unit's line comes from CPython's
parse of its top-level statement alone (C speed), paired statement by statement with LibCST's tree.

Each unit is checked: the line the unit's first token is printed on must be the file's line there, character for
character. Anything not handled (a statement as the finding itself, `elif` tests, one-line suites
`if x: y()`, decorated definitions, a file whose statements do not pair up) returns None, and the runner falls
back to printing the top-level statement (runner._positions).
"""

from __future__ import annotations

import ast
import re
from typing import Optional

import libcst as cst
from libcst.metadata import CodePosition, CodeRange, PositionProvider

_HEADERS = (cst.For, cst.While, cst.If, cst.With)
# Below this many lines a top-level statement is printed whole, once for all its findings (runner._positions):
# as cheap as its units one by one.
SMALL_STATEMENT = 40
_NEWLINE = re.compile(r"\r\n|\r|\n")


class UnitPositions:
    """For one module: positions of nodes through their units (`position`), memoised per unit."""

    def __init__(self, analysis, source: str, firsts: Optional[list[int]]) -> None:
        self.analysis = analysis
        self.module: cst.Module = analysis.module
        self.source = source
        self.firsts = firsts  # first line of each top-level statement in CPython's tree (runner.first_lines)
        self._lines: Optional[list[str]] = None
        self._top_index: Optional[dict[int, int]] = None
        self._unit_lines: dict[int, Optional[dict[int, int]]] = {}  # id(top-level) -> id(statement) -> line
        self._rendered: dict[int, Optional[tuple[dict, int]]] = {}  # id(unit) -> (positions, line shift)

    def position(self, node: cst.CSTNode) -> Optional[CodeRange]:
        found = self._unit(node)
        if found is None:
            return None
        unit, top = found
        if unit is top or self._lines_of(top) < SMALL_STATEMENT:
            return None  # printing the whole statement once is as cheap (runner._positions)
        rendered = self._rendered.get(id(unit), False)
        if rendered is False:
            rendered = self._rendered[id(unit)] = self._render(unit, top)
        if rendered is None:
            return None
        positions, shift = rendered
        where = positions.get(node)
        if where is None:
            return None
        return CodeRange(CodePosition(where.start.line + shift, where.start.column),
                         CodePosition(where.end.line + shift, where.end.column))

    # -- the unit of a node ------------------------------------------------------------------------------------
    def _unit(self, node: cst.CSTNode) -> Optional[tuple[cst.CSTNode, cst.CSTNode]]:
        """(the unit holding `node`, its top-level statement), or None when `node` is not in a handled unit."""
        parent = self.analysis.parent
        current, child = node, None
        unit = None
        while True:
            if unit is None:
                if type(current) is cst.SimpleStatementLine:
                    unit = current
                elif isinstance(current, cst.BaseCompoundStatement) or isinstance(current, cst.BaseSuite):
                    if current is node or not isinstance(current, _HEADERS) or child is getattr(current, "body", None):
                        return None  # a statement itself, a body, a one-line suite, a definition's header
                    if type(current) is cst.If and isinstance(parent(current), cst.If) \
                            and parent(current).orelse is current:
                        return None  # `elif`: printed alone it would read `if`
                    unit = current
            up = parent(current)
            if up is None:
                return None
            if type(up) is cst.Module:
                return (unit, current) if unit is not None else None
            current, child = up, current

    # -- the unit's line -------------------------------------------------------------------------------------
    def _lines_of(self, top: cst.CSTNode) -> int:
        """How many lines the top-level statement `top` spans (0 when unknown)."""
        if self.firsts is None or not self._index_tops():
            return 0
        at = self._top_index.get(id(top))  # type: ignore[union-attr]
        if at is None:
            return 0
        end = self.firsts[at + 1] if at + 1 < len(self.firsts) else len(self._source_lines()) + 1
        return end - self.firsts[at]

    def _index_tops(self) -> bool:
        if self._top_index is None:
            self._top_index, at = {}, 0
            for body in self.module.body:  # `a = 1; b = 2` is one LibCST line and two CPython statements
                self._top_index[id(body)] = at
                at += len(body.body) if type(body) is cst.SimpleStatementLine else 1
            if at != len(self.firsts):  # type: ignore[arg-type]
                self.firsts = None
        return self.firsts is not None

    def _line_of(self, unit: cst.CSTNode, top: cst.CSTNode) -> Optional[int]:
        if self.firsts is None:
            return None
        lines = self._unit_lines.get(id(top), False)
        if lines is False:
            lines = self._unit_lines[id(top)] = self._pair_top(top)
        return None if lines is None else lines.get(id(unit))

    def _pair_top(self, top: cst.CSTNode) -> Optional[dict[int, int]]:
        if not self._index_tops():
            return None
        at = self._top_index.get(id(top))  # type: ignore[union-attr]
        if at is None or self.firsts is None:
            return None
        first = self.firsts[at]
        end = self.firsts[at + 1] - 1 if at + 1 < len(self.firsts) else len(self._source_lines())
        piece = "".join(self._source_lines()[first - 1:end])
        try:
            tree = ast.parse(piece)
        except (SyntaxError, ValueError, RecursionError, MemoryError):
            return None
        if len(tree.body) != 1:
            return None
        found: dict[int, int] = {}
        if not _pair([top], tree.body, first - 1, found):
            return None
        return found

    def _source_lines(self) -> list[str]:
        if self._lines is None:
            self._lines = self.source.splitlines(keepends=True)
        return self._lines

    # -- printing the unit where it stands -------------------------------------------------------------------
    def _render(self, unit: cst.CSTNode, top: cst.CSTNode) -> Optional[tuple[dict, int]]:
        line = self._line_of(unit, top)
        if line is None:
            return None
        indent = self._indentation(unit)
        if indent is None:
            return None
        alone = unit
        if type(unit) is not cst.SimpleStatementLine:
            changes: dict = {"body": cst.IndentedBlock(body=[cst.SimpleStatementLine([cst.Pass()])])}
            if type(unit) in (cst.For, cst.While, cst.If):
                changes["orelse"] = None
            alone = unit.with_changes(**changes)
        holder = cst.If(test=cst.Name("True"), body=cst.IndentedBlock(body=[alone], indent=indent)) if indent \
            else alone
        module = cst.Module(body=[holder], header=(), footer=(), default_newline=self.module.default_newline,
                            default_indent=self.module.default_indent, has_trailing_newline=True)
        provider = PositionProvider()
        provider._gen_impl(module)
        positions = provider._computed
        printed = module.code
        # 0-based line of the unit's first token (`if True:`, when there, is line 0)
        first = (1 if indent else 0) + len(unit.leading_lines)
        printed_lines = printed.splitlines()
        source_lines = self._source_lines()
        if first >= len(printed_lines) or not 1 <= line <= len(source_lines):
            return None
        if _NEWLINE.sub("", source_lines[line - 1]) != printed_lines[first]:
            return None
        return positions, line - (first + 1)

    def _indentation(self, unit: cst.CSTNode) -> Optional[str]:
        """The unit's indentation in the file: the blocks around it, each its own indent or the module's."""
        parts: list[str] = []
        current = self.analysis.parent(unit)
        while current is not None and type(current) is not cst.Module:
            if type(current) is cst.IndentedBlock:
                parts.append(current.indent if current.indent is not None else self.module.default_indent)
            elif isinstance(current, cst.BaseSuite):
                return None
            current = self.analysis.parent(current)
        return "".join(reversed(parts))


def _pair(statements, nodes: list, offset: int, found: dict[int, int]) -> bool:
    """Pair LibCST statements with CPython's, recording each statement's first line (+`offset`). False when
    the two trees do not line up."""
    at = 0
    for statement in statements:
        if type(statement) is cst.SimpleStatementLine:
            if at + len(statement.body) > len(nodes):
                return False
            found[id(statement)] = nodes[at].lineno + offset
            at += len(statement.body)
            continue
        if at >= len(nodes):
            return False
        node = nodes[at]
        at += 1
        if not _pair_compound(statement, node, offset, found):
            return False
    return at == len(nodes)


def _block(suite) -> Optional[list]:
    return list(suite.body) if type(suite) is cst.IndentedBlock else None


def _pair_compound(statement, node, offset: int, found: dict[int, int]) -> bool:
    pairs: list[tuple] = []
    if type(statement) is cst.For and isinstance(node, (ast.For, ast.AsyncFor)) or \
            type(statement) is cst.While and isinstance(node, ast.While):
        found[id(statement)] = node.lineno + offset
        pairs.append((statement.body, node.body))
        if statement.orelse is not None:
            pairs.append((statement.orelse.body, node.orelse))
    elif type(statement) is cst.If and isinstance(node, ast.If):
        found[id(statement)] = node.lineno + offset
        pairs.append((statement.body, node.body))
        if type(statement.orelse) is cst.If:
            if len(node.orelse) != 1 or not _pair_compound(statement.orelse, node.orelse[0], offset, found):
                return False
        elif statement.orelse is not None:
            pairs.append((statement.orelse.body, node.orelse))
    elif type(statement) is cst.With and isinstance(node, (ast.With, ast.AsyncWith)):
        found[id(statement)] = node.lineno + offset
        pairs.append((statement.body, node.body))
    elif type(statement) in (cst.FunctionDef, cst.ClassDef) and \
            isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        pairs.append((statement.body, node.body))
    elif type(statement) is cst.Try and isinstance(node, ast.Try) and \
            len(statement.handlers) == len(node.handlers):
        pairs.append((statement.body, node.body))
        pairs.extend((h.body, n.body) for h, n in zip(statement.handlers, node.handlers))
        if statement.orelse is not None:
            pairs.append((statement.orelse.body, node.orelse))
        if statement.finalbody is not None:
            pairs.append((statement.finalbody.body, node.finalbody))
    else:
        return True  # not followed (match, try*, ...): its statements stay unpaired, so unhandled
    for suite, nodes in pairs:
        block = _block(suite)
        if block is None:
            continue  # a one-line suite: its statements are never units
        if not _pair(block, nodes, offset, found):
            return False
    return True
