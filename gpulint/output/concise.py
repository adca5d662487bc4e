from __future__ import annotations

from gpulint.output.common import display_location, fix_marker, via
from gpulint.output.report import Report


def render(report: Report) -> str:
    diagnostics = report.diagnostics
    lines = [f"{display_location(d)}: {d.code} {fix_marker(d)}{d.message}{via(d)}" for d in diagnostics]
    if report.summary:
        lines.append(report.summary)
    return "\n".join(lines) + ("\n" if lines else "")
