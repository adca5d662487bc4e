"""One JSON object per line (the objects of the `json` format): easy to stream and to grep."""

from __future__ import annotations

import json

from gpulint.output.json_format import to_dict
from gpulint.output.report import Report


def render(report: Report) -> str:
    diagnostics = report.diagnostics
    return "".join(json.dumps(to_dict(d)) + "\n" for d in diagnostics)
