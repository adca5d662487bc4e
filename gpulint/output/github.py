"""GitHub Actions workflow commands: each finding becomes an annotation on the pull request's diff."""

from __future__ import annotations
from gpulint.output.report import Report

from gpulint.output.common import printable


def _escape_data(text: str) -> str:
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def _escape_property(text: str) -> str:
    return _escape_data(text).replace(":", "%3A").replace(",", "%2C")


def _position(d) -> str:
    if d.cell is None:
        return (f",line={d.location.row},col={d.location.column},"
                f"endLine={d.end_location.row},endColumn={d.end_location.column}")
    # A notebook's diff shows the JSON file: annotate the lines where the cell's code is written there
    # (columns inside a JSON string would mislead), or the whole file where those are unknown.
    if d.file_rows is not None:
        return f",line={d.file_rows[0]},endLine={d.file_rows[1]}"
    return ""


def render(report: Report) -> str:
    diagnostics = report.diagnostics
    lines = []
    for d in diagnostics:
        where = f"cell {d.cell + 1}, line {d.location.row}: " if d.cell is not None else ""
        props = f"file={_escape_property(printable(d.filename))}{_position(d)},title={_escape_property(f'{d.code} ({d.name})')}"
        lines.append(f"::error {props}::{_escape_data(f'{where}{d.code} {d.message}')}")
    return "\n".join(lines) + ("\n" if lines else "")
