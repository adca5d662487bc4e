"""CI output formats, parsed back the way their consumers parse them."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from xml.etree import ElementTree as ET

import jsonschema
import pytest
from click.testing import CliRunner

from gpulint.cli import main

ROOT = Path(__file__).resolve().parent.parent
EXAMPLE = ROOT / "fixtures" / "examples" / "naive_train.py"
SCHEMA = json.loads((ROOT / "tests" / "data" / "sarif-schema-2.1.0.json").read_text())


@pytest.fixture
def project(tmp_path, monkeypatch):
    (tmp_path / "pkg").mkdir()
    shutil.copy(EXAMPLE, tmp_path / "pkg" / "train.py")
    monkeypatch.chdir(tmp_path)
    return tmp_path


def check(fmt: str, *extra: str):
    result = CliRunner().invoke(main, ["check", "--output-format", fmt, *extra, "pkg/train.py"])
    assert result.exit_code == 1, result.output
    return result.output


def expected_codes():
    data = json.loads(check("json"))
    return [(d["code"], d["location"]["row"], d["location"]["column"]) for d in data]


def test_sarif_validates_against_the_official_schema(project):
    log = json.loads(check("sarif"))
    jsonschema.validate(log, SCHEMA)
    run = log["runs"][0]
    driver = run["tool"]["driver"]
    assert driver["name"] == "gpulint"
    rule_ids = [r["id"] for r in driver["rules"]]
    assert "GPU101" in rule_ids and all(r["help"]["text"] for r in driver["rules"])
    results = run["results"]
    assert [(r["ruleId"], r["locations"][0]["physicalLocation"]["region"]["startLine"],
             r["locations"][0]["physicalLocation"]["region"]["startColumn"]) for r in results] == expected_codes()
    for r in results:
        assert driver["rules"][r["ruleIndex"]]["id"] == r["ruleId"]
        assert r["locations"][0]["physicalLocation"]["artifactLocation"]["uri"] == "pkg/train.py"
        assert r["level"] == "warning"


def test_sarif_with_no_findings_is_valid(project):
    (project / "pkg" / "ok.py").write_text("x = 1\n")
    result = CliRunner().invoke(main, ["check", "--output-format", "sarif", "pkg/ok.py"])
    log = json.loads(result.output)
    jsonschema.validate(log, SCHEMA)
    assert log["runs"][0]["results"] == []


def test_github_annotations(project):
    lines = check("github").splitlines()
    assert len(lines) == len(expected_codes())
    first = lines[0]
    assert first.startswith("::warning file=pkg/train.py,line=11,col=10,endLine=11,endColumn=")
    assert ",title=GPU201 (dataloader-without-pin-memory)::GPU201 " in first


def test_json_lines(project):
    objects = [json.loads(line) for line in check("json-lines").splitlines()]
    assert [(o["code"], o["location"]["row"], o["location"]["column"]) for o in objects] == expected_codes()


def test_junit(project):
    root = ET.fromstring(check("junit"))
    suite = root.find("testsuite")
    cases = suite.findall("testcase")
    assert len(cases) == len(expected_codes()) == int(suite.get("failures"))
    failure = cases[0].find("failure")
    assert failure.get("type") == "GPU201" and "pkg/train.py:11:10" in failure.text
