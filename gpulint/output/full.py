"""Ruff-style: location, code and message, then the source line with a caret under the finding."""

from __future__ import annotations

from gpulint.files import source_lines
from gpulint.output.common import display_location, fix_marker, via
from gpulint.output.report import Report


def render(report: Report) -> str:
    diagnostics = report.diagnostics
    out: list[str] = []
    split: dict = {}  # each source's lines, split once for all its findings
    for d in diagnostics:
        out.append(f"{display_location(d)}: {d.code} {fix_marker(d)}{d.message}{via(d)}")
        key = (d.filename, d.cell)
        lines = split.get(key)
        if lines is None:
            lines = split[key] = [line.rstrip("\r\n") for line in source_lines(report.sources.get(key, ""))]
        row = d.location.row
        if 1 <= row <= len(lines):
            text = lines[row - 1].expandtabs(1)
            width = len(str(row))
            start = d.location.column - 1
            end = d.end_location.column - 1 if d.end_location.row == row else len(text)
            carets = "^" * max(1, end - start)
            out.append(f"{' ' * width} |")
            out.append(f"{row} | {text}")
            out.append(f"{' ' * width} | {' ' * start}{carets} {d.code}")
        if d.fix is not None:
            if d.fix.applicability.value == "safe":
                out.append(f"  = fix available (safe, --fix): {d.fix.message}")
            else:
                out.append(f"  = fix available (unsafe, --unsafe-fixes): {d.fix.message}")
                if d.fix.fallback is not None:
                    out.append(f"  = with --fix alone (safe): {d.fix.fallback.message}")
        out.append("")
    if report.summary:
        out.append(report.summary)
    return "\n".join(out) + ("\n" if out else "")
