"""Text arithmetic for editors: LSP lines and columns, minimal edits, and adding a `# noqa` comment to a line.

Kept free of pygls so that it can be tested on its own. LSP breaks lines at `\\n`, `\\r\\n` and `\\r` only
(`str.splitlines` also breaks at form feeds, `\\x1c`, `\\u2028`... and would shift every later line), and counts
columns in code units of the negotiated encoding (UTF-16 unless the client asks otherwise).
"""

from __future__ import annotations

import io
import re
import tokenize
from typing import Callable, NamedTuple, Optional

from gpulint import suppression

_LINE = re.compile(r"[^\r\n]*(?:\r\n|\r|\n)|[^\r\n]+\Z")
_NOQA = suppression._NOQA  # the very pattern the engine reads back, so what we write is what it honours
_CODE = suppression._CODE
_NOT_CODE = {tokenize.COMMENT, tokenize.NL, tokenize.NEWLINE, tokenize.INDENT, tokenize.DEDENT,
             tokenize.ENDMARKER}

Units = Callable[[str], int]


def utf16_units(text: str) -> int:
    return len(text.encode("utf-16-le")) // 2


class Spot(NamedTuple):
    line: int  # 0-based
    character: int  # 0-based, in the client's code units


class TextChange(NamedTuple):
    start: Spot
    end: Spot
    new_text: str


def lsp_lines(text: str) -> list[str]:
    """The lines of `text` as LSP counts them, each with its line ending."""
    return _LINE.findall(text)


def spot(lines: list[str], row: int, column: int, units: Units = utf16_units) -> Spot:
    """1-based row and code-point column (the engine's) -> LSP position."""
    if row - 1 >= len(lines):
        return end_spot(lines, units)
    line = lines[max(row - 1, 0)].rstrip("\r\n")
    return Spot(max(row - 1, 0), units(line[: max(column - 1, 0)]))


def end_spot(lines: list[str], units: Units = utf16_units) -> Spot:
    if not lines:
        return Spot(0, 0)
    last = lines[-1]
    if last.endswith(("\n", "\r")):
        return Spot(len(lines), 0)
    return Spot(len(lines) - 1, units(last))


def offset_spot(lines: list[str], offset: int, units: Units = utf16_units) -> Spot:
    """A code-point offset into the text -> LSP position."""
    for number, line in enumerate(lines):
        if offset < len(line):
            return Spot(number, units(line[:offset]))
        offset -= len(line)
    return end_spot(lines, units)


def minimal_change(old: str, new: str, units: Units = utf16_units) -> Optional[TextChange]:
    """One edit that turns `old` into `new`, replacing only the span between their common prefix and suffix.

    A small edit keeps the editor's cursor, folds and undo history where they were; a whole-document
    replacement would not.
    """
    if old == new:
        return None
    limit = min(len(old), len(new))
    start = 0
    while start < limit and old[start] == new[start]:
        start += 1
    suffix = 0
    while suffix < limit - start and old[-1 - suffix] == new[-1 - suffix]:
        suffix += 1
    # Never cut a \r\n pair: a position between them does not exist for the editor.
    if 0 < start < len(old) and old[start - 1] == "\r" and old[start] == "\n":
        start -= 1
    end = len(old) - suffix
    if 0 < end < len(old) and old[end - 1] == "\r" and old[end] == "\n":
        end += 1
        suffix -= 1
    lines = lsp_lines(old)
    return TextChange(offset_spot(lines, start, units), offset_spot(lines, end, units),
                      new[start: len(new) - suffix])


def with_noqa(source: str, code: str, rows: tuple[int, ...]) -> Optional[str]:
    """`source` with `# noqa: <code>` on the first of `rows` that can take a comment, merged into a noqa
    comment already there. None when no row can (the line ends inside a string or with a backslash) or
    the code is already silenced.
    """
    try:
        tokens = list(tokenize.generate_tokens(io.StringIO(source).readline))
    except (tokenize.TokenError, SyntaxError, IndentationError):
        return None
    # The same line split as the tokenizer (and suppression.parse) uses, so row numbers agree.
    lines = io.StringIO(source).readlines()
    for row in dict.fromkeys(rows):
        if not 0 < row <= len(lines):
            continue
        if any(t.start[0] <= row < t.end[0] for t in tokens if t.type not in _NOT_CODE):
            continue  # the line ends inside a multi-line string: a `#` there would be part of the string
        line = lines[row - 1]
        body = line.rstrip("\r\n")
        ending = line[len(body):]
        comment = next((t for t in tokens if t.type == tokenize.COMMENT and t.start[0] == row), None)
        if comment is None and body.rstrip().endswith("\\"):
            continue  # a backslash continuation must stay last on its line
        match = _NOQA.search(comment.string) if comment is not None else None
        if match is not None:
            if match.group("codes") is None:
                return None  # a bare noqa already silences everything
            codes = [c.upper() for c in suppression._CODE.findall(match.group("codes"))]
            if code in codes:
                return None
            at = comment.start[1] + match.end("codes")
            new_line = f"{body[:at]}, {code}{body[at:]}"
        else:
            new_line = f"{body.rstrip()}  # noqa: {code}"
        new = "".join(lines[: row - 1]) + new_line + ending + "".join(lines[row:])
        if suppression.parse(new).suppresses(code, rows):
            return new
    return None


def noqa_code_at(line: str, character: int, units: Units = utf16_units) -> Optional[tuple[str, int, int]]:
    """The code under the cursor in a `# noqa: CODE, ...` comment on `line`, and its start and end columns
    (in `units`), so that hovering a suppression explains the rule it silences; None elsewhere."""
    for comment in _NOQA.finditer(line):
        if comment.group("codes") is None:
            continue
        base = comment.start("codes")
        for code in _CODE.finditer(comment.group("codes")):
            start, end = units(line[: base + code.start()]), units(line[: base + code.end()])
            if start <= character <= end:
                return code.group().upper(), start, end
    return None
