"""Pylint's parseable shape, as Ruff writes it: `path:row: [CODE] message` (what many editors and CI parsers read)."""

from __future__ import annotations

from gpulint.output.common import file_region, located_message
from gpulint.output.report import Report


def render(report: Report) -> str:
    diagnostics = report.diagnostics
    return "".join(f"{d.filename}:{file_region(d)[0]}: [{d.code}] {located_message(d)}\n" for d in diagnostics)
