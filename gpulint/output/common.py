from __future__ import annotations

from gpulint.diagnostics import Diagnostic
from gpulint.diagnostics import rule_url


def fix_marker(d: Diagnostic) -> str:
    if d.fix is None:
        return ""
    return "[*] " if d.fix.applicability.value == "safe" else "[-] "


def url(d: Diagnostic) -> str:
    return rule_url(d.code)


def via(d: Diagnostic) -> str:
    """` (via utils.py:88)` for a finding whose cost is paid in another place, else ''."""
    return "".join(f" (via {r.where()})" for r in d.related)


def display_location(d: Diagnostic) -> str:
    """`path:row:col`, or `notebook.ipynb:cell 3:5:9` for a cell of a notebook."""
    if d.cell is not None:
        return f"{d.filename}:cell {d.cell + 1}:{d.location.row}:{d.location.column}"
    return f"{d.filename}:{d.location.row}:{d.location.column}"
