"""GitLab Code Quality (Code Climate) JSON, as Ruff writes it: what a merge request's Code Quality widget reads.

Paths are relative to `$CI_PROJECT_DIR` when set (else to the working directory); each finding has a stable
fingerprint (file, code, message: not the line, so a finding keeps its identity when code above it moves).
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path

from gpulint.output.common import file_region, located_message
from gpulint.output.report import Report


def _project_path(filename: str) -> str:
    base = Path(os.environ.get("CI_PROJECT_DIR") or Path.cwd()).resolve()
    path = Path(filename)
    try:
        return path.resolve().relative_to(base).as_posix()
    except (OSError, ValueError):
        return path.as_posix()


def render(report: Report) -> str:
    diagnostics = report.diagnostics
    issues, seen = [], set()
    for d in diagnostics:
        path = _project_path(d.filename)
        row, column, end_row, end_column = file_region(d)
        message = located_message(d)
        digest = hashlib.md5(f"{path}\0{d.code}\0{message}".encode(), usedforsecurity=False)
        while digest.hexdigest() in seen:  # the same finding twice in a file: fingerprints must stay unique
            digest.update(b"\0")
        seen.add(digest.hexdigest())
        issues.append({
            "check_name": d.code,
            "description": f"{d.code}: {message}",
            "severity": "major",
            "fingerprint": digest.hexdigest(),
            "location": {"path": path, "positions": {"begin": {"line": row, "column": column},
                                                     "end": {"line": end_row, "column": end_column}}},
        })
    return json.dumps(issues, indent=2) + "\n"
