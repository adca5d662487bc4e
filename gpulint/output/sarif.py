"""SARIF 2.1.0, the format GitHub code scanning (and most CI dashboards) ingest."""

from __future__ import annotations

import json
import os
from pathlib import Path

from gpulint import __version__
from gpulint.output.common import url
from gpulint.diagnostics import DOCS_URL

SCHEMA = "https://json.schemastore.org/sarif-2.1.0.json"
INFORMATION_URI = "https://gpulint.dev"


def _artifact_uri(filename: str) -> str:
    """Relative to the working directory when inside it (what code scanning expects), with forward slashes."""
    path = Path(filename)
    if path.is_absolute():
        try:
            path = path.relative_to(Path.cwd())
        except ValueError:
            return path.as_uri()
    return path.as_posix() if os.sep == "/" else str(path).replace(os.sep, "/")


def _rules() -> list[dict]:
    rules = []
    from gpulint.rule import all_rules  # imports LibCST: only when SARIF is asked for

    for code, cls in all_rules().items():
        doc = cls.documentation()
        rules.append({
            "id": code,
            "name": cls.name,
            "shortDescription": {"text": cls.summary()},
            "fullDescription": {"text": cls.summary()},
            "help": {"text": doc, "markdown": doc},
            "helpUri": DOCS_URL.format(name=cls.name),
            "defaultConfiguration": {"level": "error" if code == "GPU001" else "warning"},
        })
    return rules


def render(diagnostics, sources, summary) -> str:
    rules = _rules()
    index = {r["id"]: i for i, r in enumerate(rules)}
    results = []
    for d in diagnostics:
        region = {"startLine": d.location.row, "startColumn": d.location.column,
                  "endLine": d.end_location.row, "endColumn": max(d.end_location.column, 1)}
        result = {
            "ruleId": d.code,
            "level": "error" if d.code == "GPU001" else "warning",
            "message": {"text": d.message},
            "locations": [{"physicalLocation": {"artifactLocation": {"uri": _artifact_uri(d.filename)},
                                                "region": region}}],
        }
        if d.code in index:
            result["ruleIndex"] = index[d.code]
        if d.cell is not None:
            result["properties"] = {"cell": d.cell + 1}
        if d.fix is not None:
            result.setdefault("properties", {})["fix"] = {"applicability": d.fix.applicability.value,
                                                          "message": d.fix.message}
        results.append(result)
    log = {
        "$schema": SCHEMA,
        "version": "2.1.0",
        "runs": [{
            "tool": {"driver": {"name": "gpulint", "version": __version__, "semanticVersion": __version__,
                                "informationUri": INFORMATION_URI, "rules": rules}},
            "results": results,
            "columnKind": "unicodeCodePoints",
        }],
    }
    return json.dumps(log, indent=2) + "\n"
