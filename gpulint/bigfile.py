"""Parse a big module piece by piece, so memory stays proportional to the syntax tree, not to the parsers.

LibCST's native parser peaks at about 600 MB per MB of source (its token stream and intermediate tree), and
CPython's `ast.parse` at about 150 MB per MB: a 5 MB generated module needed 3 GB. Cut at top-level
`def`/`class`/decorator lines into pieces of about `PIECE` characters, each piece is parsed alone and the
statements are joined into one `cst.Module` equal to the one `cst.parse_module` would give: the blank and
comment lines a piece's module keeps as its footer are, in a whole parse, the leading lines of the next
statement, and are moved there. A cut that is not really between two statements (a `def` at column 0 inside a
string) makes its piece fail to parse: then the whole text is parsed as before. tests/test_faults.py compares
both on real repositories and on generated code.
"""

from __future__ import annotations

import ast
import re
from typing import Optional

import libcst as cst

PIECE = 256 * 1024
_TOP_LEVEL_START = re.compile(r"^(?:@|def |class |async def )", re.MULTILINE)


def pieces(source: str, size: Optional[int] = None) -> list[str]:
    """`source` cut before top-level definitions into pieces of at least `size` characters (one if small)."""
    size = size or PIECE
    if len(source) <= 2 * size:
        return [source]
    cuts = [0]
    position = size
    while position < len(source) - size:
        match = _TOP_LEVEL_START.search(source, position)
        if match is None:
            break
        start = match.start()
        # keep a decorated definition whole: go back over the decorator lines just above
        while start > cuts[-1] and source.startswith("@", start):
            previous = source.rfind("\n", cuts[-1], start - 1)
            if previous < cuts[-1] or not source.startswith("@", previous + 1):
                break
            start = previous + 1
        if start > cuts[-1] and source[start - 1] in "\r\n":
            cuts.append(start)
        position = max(match.end(), start + size)
    cuts.append(len(source))
    return [source[a:b] for a, b in zip(cuts, cuts[1:])]


def python_parse(source: str, filename: str, firsts: Optional[list[int]] = None) -> Optional[ast.Module]:
    """`ast.parse(source)`, raising the same SyntaxError, without holding the whole file's `ast` tree: the
    tree of a small source, None for a big one (parsed piece by piece, each tree dropped). For a big one,
    `firsts` (a list) receives the first line of each top-level statement, decorators included, as the whole
    tree numbers them (left empty where the pieces' lines might not add up: `\r` line ends)."""
    parts = pieces(source)
    if len(parts) == 1:
        return ast.parse(source, filename)
    lines_above, found = 0, []
    for part in parts:
        try:
            tree = ast.parse(part, filename)
        except (SyntaxError, ValueError, RecursionError, MemoryError):
            ast.parse(source, filename)  # the real error, at its real place (or a wrong cut: then it passes)
            return None
        found.extend(lines_above + line for line in first_lines(tree))
        lines_above += part.count("\n")
    if firsts is not None and "\r" not in source:
        firsts.extend(found)
    return None


def first_lines(tree: ast.Module) -> list[int]:
    """The first line of each top-level statement of CPython's tree, decorators included."""
    return [min([stmt.lineno, *(d.lineno for d in getattr(stmt, "decorator_list", ()))]) for stmt in tree.body]


def parse_module(source: str) -> cst.Module:
    """`cst.parse_module(source)`, piece by piece for big sources (see the module's docstring)."""
    parts = pieces(source)
    if len(parts) == 1:
        return cst.parse_module(source)
    joined = _parse_joined(parts)
    return joined if joined is not None else cst.parse_module(source)


def _parse_joined(parts: list[str]) -> Optional[cst.Module]:
    modules: list[cst.Module] = []
    for part in parts:
        try:
            modules.append(cst.parse_module(part))
        except (cst.ParserSyntaxError, RecursionError):
            return None
    first, last = modules[0], modules[-1]
    if not first.body or any(m.default_indent != first.default_indent or m.default_newline != first.default_newline
           or m.encoding != first.encoding for m in modules):
        return None  # the pieces would print differently than the whole: parse it whole
    body: list[cst.BaseStatement] = list(first.body)
    carried: list[cst.EmptyLine] = list(first.footer)
    for module in modules[1:]:
        if not module.body:
            return None
        lead = [*carried, *module.header]
        statements = list(module.body)
        if lead:
            statements[0] = statements[0].with_changes(leading_lines=[*lead, *statements[0].leading_lines])
        body.extend(statements)
        carried = list(module.footer)
    return first.with_changes(body=body, footer=carried, has_trailing_newline=last.has_trailing_newline)
