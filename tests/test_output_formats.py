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
    gpu101 = next(r for r in driver["rules"] if r["id"] == "GPU101")
    assert gpu101["fullDescription"]["text"].startswith("Flags `tensor.item()` where it runs on every iteration")
    assert gpu101["helpUri"] == "docs/rules/GPU101.md" and "## Why it is slow" in gpu101["help"]["markdown"]
    for r in results:
        assert driver["rules"][r["ruleIndex"]]["id"] == r["ruleId"]
        assert r["locations"][0]["physicalLocation"]["artifactLocation"]["uri"] == "pkg/train.py"
        assert r["level"] == "warning"


def test_the_schema_has_teeth():
    """A schema that accepted anything would make the validations above worthless."""
    for broken in ({"version": "2.1.0"}, {"version": "2.0.0", "runs": []},
                   {"version": "2.1.0", "runs": [{"tool": {"driver": {}}}]},
                   {"version": "2.1.0", "runs": [{"tool": {"driver": {"name": "x"}}, "results": [
                       {"message": {"text": "m"}, "locations": [{"physicalLocation": {
                           "artifactLocation": {"uri": "a.py"}, "region": {"startLine": 0}}}]}]}]}):
        with pytest.raises(jsonschema.ValidationError):
            jsonschema.validate(broken, SCHEMA)


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
    assert first.startswith("::error file=pkg/train.py,line=11,col=10,endLine=11,endColumn=")
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


def test_sarif_uris_are_relative_posix_and_percent_encoded(project):
    (project / "pkg" / "my train.py").write_text((project / "pkg" / "train.py").read_text())
    result = CliRunner().invoke(main, ["check", "--output-format", "sarif", str(project / "pkg" / "my train.py")])
    log = json.loads(result.output)
    jsonschema.validate(log, SCHEMA)
    uris = {r["locations"][0]["physicalLocation"]["artifactLocation"]["uri"] for r in log["runs"][0]["results"]}
    assert uris == {"pkg/my%20train.py"}


@pytest.fixture
def notebook(project):
    pytest.importorskip("nbformat")
    shutil.copy(ROOT / "fixtures" / "notebooks" / "naive_training.ipynb", project / "nb.ipynb")
    return project / "nb.ipynb"


def file_line(notebook: Path, row: int) -> str:
    return notebook.read_text().splitlines()[row - 1]


def test_notebook_findings_point_at_the_lines_of_the_ipynb_file(notebook):
    """On GitHub a notebook's diff is its JSON: annotations and code-scanning regions use the file's lines."""
    result = CliRunner().invoke(main, ["check", "--output-format", "sarif", "--select", "GPU108", "nb.ipynb"])
    log = json.loads(result.output)
    jsonschema.validate(log, SCHEMA)
    [found] = log["runs"][0]["results"]
    region = found["locations"][0]["physicalLocation"]["region"]
    assert file_line(notebook, region["startLine"]).strip() == '"    if torch.isnan(loss).any():\\n",'
    assert found["properties"]["cell"] == 4 and found["properties"]["cellRegion"]["startLine"] == 6
    assert found["message"]["text"].startswith("cell 4, line 6: ")

    [annotation] = CliRunner().invoke(main, ["check", "--output-format", "github", "--select", "GPU108",
                                             "nb.ipynb"]).output.splitlines()
    row = region["startLine"]
    assert annotation.startswith(f"::error file=nb.ipynb,line={row},endLine={row},title=GPU108 (")
    assert "::cell 4, line 6: GPU108 " in annotation


def test_notebook_findings_are_in_cell_order(project):
    nbformat = pytest.importorskip("nbformat")
    nb = nbformat.v4.new_notebook()
    loop = ("for step in range(10):\n    loss = model(x).sum()\n    loss.backward()\n    opt.step()\n")
    nb.cells = [nbformat.v4.new_code_cell("import torch\nmodel = torch.nn.Linear(2, 2).cuda()\n"
                                          "opt = torch.optim.SGD(model.parameters())\nx = torch.ones(2, device=\"cuda\")\n"
                                          + loop + "    print(loss.item())"),
                nbformat.v4.new_code_cell(loop.replace("    opt.step()", "    opt.step(); print(loss.item())"))]
    nbformat.write(nb, project / "order.ipynb")
    out = CliRunner().invoke(main, ["check", "--output-format", "concise", "-q", "order.ipynb"]).output
    assert [line.split(": ")[0] for line in out.splitlines()] == ["order.ipynb:cell 1:9:11", "order.ipynb:cell 2:4:23"]
