"""GitHub Actions workflow commands: each finding becomes an annotation on the pull request's diff."""

from __future__ import annotations


def _escape_data(text: str) -> str:
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def _escape_property(text: str) -> str:
    return _escape_data(text).replace(":", "%3A").replace(",", "%2C")


def render(diagnostics, sources, summary) -> str:
    lines = []
    for d in diagnostics:
        level = "error" if d.code == "GPU001" else "warning"
        where = f"cell {d.cell + 1}, " if d.cell is not None else ""
        props = (f"file={_escape_property(d.filename)},line={d.location.row},col={d.location.column},"
                 f"endLine={d.end_location.row},endColumn={d.end_location.column},"
                 f"title={_escape_property(f'{d.code} ({d.name})')}")
        lines.append(f"::{level} {props}::{_escape_data(f'{where}{d.code} {d.message}')}")
    return "\n".join(lines) + ("\n" if lines else "")
