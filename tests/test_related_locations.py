"""A finding whose cost is paid in another module carries that place: JSON `related`, SARIF `relatedLocations`,
"via file:line" in text, and it survives the cache."""

from __future__ import annotations

import json

from gpulint.cache import _diagnostic, _record
from gpulint.diagnostics import Diagnostic, Position, Related
from gpulint.output import concise, full, json_format, sarif
from gpulint.output.report import Report

FINDING = Diagnostic("GPU112", "sync-in-helper", "`logger.update(loss=...)` syncs every step",
                     location=Position(7, 9), end_location=Position(7, 30), filename="train.py",
                     related=(Related("utils.py", 88, "`MetricLogger.update` calls `.item()`"),))


def test_text_formats_say_via_where():
    report = Report((FINDING,), {("train.py", None): "\n" * 6 + "        logger.update(loss=loss)\n"})
    assert concise.render(report).startswith("train.py:7:9: GPU112 `logger.update(loss=...)` syncs every step "
                                              "(via utils.py:88)")
    assert "(via utils.py:88)" in full.render(report)


def test_json_and_sarif_carry_the_related_location():
    item = json.loads(json_format.render(Report((FINDING,))))[0]
    assert item["related"] == [{"filename": "utils.py", "location": {"row": 88, "column": 1},
                                "message": "`MetricLogger.update` calls `.item()`"}]
    result = json.loads(sarif.render(Report((FINDING,))))["runs"][0]["results"][0]
    related = result["relatedLocations"][0]["physicalLocation"]
    assert related["artifactLocation"]["uri"] == "utils.py" and related["region"]["startLine"] == 88


def test_cache_round_trip_keeps_related():
    assert _diagnostic(_record(FINDING), "train.py").related == FINDING.related
