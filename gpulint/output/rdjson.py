"""reviewdog's Diagnostic Format (rdjson), as Ruff writes it: findings, with each fix's edits as suggestions."""

from __future__ import annotations

import json

from gpulint.output.common import file_region, located_message, url
from gpulint.output.report import Report


def _range(row: int, column: int, end_row: int, end_column: int) -> dict:
    return {"start": {"line": row, "column": column}, "end": {"line": end_row, "column": end_column}}


def to_dict(d) -> dict:
    item = {
        "message": located_message(d),
        "location": {"path": d.filename, "range": _range(*file_region(d))},
        "code": {"value": d.code, "url": url(d)},
    }
    if d.fix is not None and d.edits and d.cell is None:
        item["suggestions"] = [{"range": _range(e.location.row, e.location.column, e.end_location.row,
                                                e.end_location.column), "text": e.content} for e in d.edits]
    return item


def render(report: Report) -> str:
    diagnostics = report.diagnostics
    log = {"source": {"name": "gpulint"},
           "severity": "WARNING",
           "diagnostics": [to_dict(d) for d in diagnostics]}
    return json.dumps(log, indent=2) + "\n"
