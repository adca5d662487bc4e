from __future__ import annotations

import re

from gpulint.diagnostics import Diagnostic, FixMode
from gpulint.diagnostics import rule_url


def fix_marker(d: Diagnostic) -> str:
    if d.fix is None:
        return ""
    return "[*] " if d.fix.allowed(FixMode.SAFE) is not None else "[-] "


def url(d: Diagnostic) -> str:
    return rule_url(d.code)


def via(d: Diagnostic) -> str:
    """` (via utils.py:88)` for a finding whose cost is paid in another place, else ''."""
    return "".join(f" (via {r.where()})" for r in d.related)


# C0 and C1 controls, DEL, and the Unicode line and paragraph separators: anything that can end a line, move
# the cursor or start a terminal escape sequence. A file may be named with any of them.
_CONTROL = re.compile("[\x00-\x1f\x7f-\x9f\u2028\u2029]")
_NAMED = {"\n": "\\n", "\r": "\\r", "\t": "\\t"}


def printable(text: str) -> str:
    """`text` with control characters escaped as Python writes them (`\\n`, `\\x1b`, `\\u2028`), so a file
    name cannot break a line-based output or drive the terminal. JSON and SARIF keep names exact instead."""
    return _CONTROL.sub(lambda m: _NAMED.get(m.group()) or repr(m.group())[1:-1], text)


def display_location(d: Diagnostic) -> str:
    """`path:row:col`, or `notebook.ipynb:cell 3:5:9` for a cell of a notebook."""
    if d.cell is not None:
        return f"{printable(d.filename)}:cell {d.cell + 1}:{d.location.row}:{d.location.column}"
    return f"{printable(d.filename)}:{d.location.row}:{d.location.column}"


def file_region(d: Diagnostic) -> tuple[int, int, int, int]:
    """(row, column, end row, end column) in the file on disk. For a notebook's cell: the lines of the .ipynb
    where the cell's code is written (column 1), or line 1 where those are unknown."""
    if d.cell is None:
        return d.location.row, d.location.column, d.end_location.row, d.end_location.column
    first, last = d.file_rows or (1, 1)
    return first, 1, last, 1


def located_message(d: Diagnostic) -> str:
    """The message, led by `cell 4, line 6: ` for a notebook's cell (the file's own lines say less)."""
    return f"cell {d.cell + 1}, line {d.location.row}: {d.message}" if d.cell is not None else d.message
