"""Azure Pipelines logging commands, as Ruff writes them: `##vso[task.logissue type=error;...]message`."""

from __future__ import annotations

from gpulint.output.common import file_region, located_message
from gpulint.output.report import Report


def render(report: Report) -> str:
    diagnostics = report.diagnostics
    lines = []
    for d in diagnostics:
        row, column, _, _ = file_region(d)
        lines.append(f"##vso[task.logissue type=error;sourcepath={d.filename};linenumber={row};"
                     f"columnnumber={column};code={d.code};]{located_message(d)}\n")
    return "".join(lines)
