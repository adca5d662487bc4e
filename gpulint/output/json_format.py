"""Ruff's JSON shape, so tools that read `ruff check --output-format json` read ours."""

from __future__ import annotations

import json

from gpulint.output.common import url
from gpulint.output.report import Report


def to_dict(d) -> dict:
    fix = None
    if d.fix is not None:
        fix = {
            "applicability": d.fix.applicability.value,
            "message": d.fix.message,
            "edits": [
                {"content": e.content,
                 "location": {"row": e.location.row, "column": e.location.column},
                 "end_location": {"row": e.end_location.row, "column": e.end_location.column}}
                for e in d.edits
            ],
        }
    item = {
        "code": d.code,
        "name": d.name,
        "message": d.message,
        "filename": d.filename,
        "location": {"row": d.location.row, "column": d.location.column},
        "end_location": {"row": d.end_location.row, "column": d.end_location.column},
        "fix": fix,
        "url": url(d),
        "noqa_row": d.location.row,
        "related": [{"filename": r.filename, "location": {"row": r.row, "column": 1}, "message": r.message}
                    for r in d.related],
    }
    if d.cell is not None:
        item["cell"] = d.cell + 1
    return item


def render(report: Report) -> str:
    diagnostics = report.diagnostics
    return json.dumps([to_dict(d) for d in diagnostics], indent=2) + "\n"
