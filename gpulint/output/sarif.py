"""SARIF 2.1.0, the format GitHub code scanning (and most CI dashboards) ingest."""

from __future__ import annotations

import json
import os
import re
from pathlib import Path
from urllib.parse import quote

from gpulint import __version__
from gpulint.output.common import url
from gpulint.diagnostics import rule_url
from gpulint.output.report import Report

SCHEMA = "https://json.schemastore.org/sarif-2.1.0.json"
INFORMATION_URI = "https://gpulint.dev"


def _artifact_uri(filename: str) -> str:
    """Relative to the working directory when inside it (what code scanning expects), with forward slashes,
    percent-encoded as a URI must be (`my file.py` -> `my%20file.py`)."""
    path = Path(filename)
    if path.is_absolute():
        try:
            path = path.relative_to(Path.cwd())
        except ValueError:
            return path.as_uri()
    posix = path.as_posix() if os.sep == "/" else str(path).replace(os.sep, "/")
    return quote(posix, safe="/")


def _what_it_does(doc: str, fallback: str) -> str:
    """The `## What it does` section of a rule's documentation, as one paragraph."""
    match = re.search(r"^## What it does\n(.*?)(?=^## |\Z)", doc, re.MULTILINE | re.DOTALL)
    return " ".join(match.group(1).split()) if match else fallback


def _rules() -> list[dict]:
    rules = []
    from gpulint.rule import all_rules  # imports LibCST: only when SARIF is asked for

    for code, cls in all_rules().items():
        doc = cls.documentation()
        rules.append({
            "id": code,
            "name": cls.name,
            "shortDescription": {"text": cls.summary()},
            "fullDescription": {"text": _what_it_does(doc, cls.summary())},
            "help": {"text": doc, "markdown": doc},
            "helpUri": rule_url(code),
            "defaultConfiguration": {"level": cls.severity.value},
            "properties": cls.metadata(),
        })
    return rules


def render(report: Report) -> str:
    diagnostics = report.diagnostics
    rules = _rules()
    index = {r["id"]: i for i, r in enumerate(rules)}
    results = []
    for d in diagnostics:
        region = {"startLine": d.location.row, "startColumn": d.location.column,
                  "endLine": d.end_location.row, "endColumn": max(d.end_location.column, 1)}
        message = d.message
        if d.cell is not None:
            # Regions refer to the .ipynb file itself: the lines where the cell's code is written in its JSON.
            message = f"cell {d.cell + 1}, line {d.location.row}: {d.message}"
            region = {"startLine": d.file_rows[0], "endLine": d.file_rows[1]} if d.file_rows else None
        location = {"artifactLocation": {"uri": _artifact_uri(d.filename)}}
        if region is not None:
            location["region"] = region
        result = {
            "ruleId": d.code,
            "level": rules[index[d.code]]["defaultConfiguration"]["level"] if d.code in index else "warning",
            "message": {"text": message},
            "locations": [{"physicalLocation": location}],
        }
        if d.related:
            result["relatedLocations"] = [
                {"id": i, "message": {"text": r.message or "where the cost is paid"},
                 "physicalLocation": {"artifactLocation": {"uri": _artifact_uri(r.filename)},
                                      "region": {"startLine": r.row}}}
                for i, r in enumerate(d.related)]
        if d.code in index:
            result["ruleIndex"] = index[d.code]
        if d.cell is not None:
            result["properties"] = {"cell": d.cell + 1, "cellRegion": {
                "startLine": d.location.row, "startColumn": d.location.column,
                "endLine": d.end_location.row, "endColumn": max(d.end_location.column, 1)}}
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
