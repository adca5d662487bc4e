"""docs/rules/<CODE>.md are generated from the rule classes; stale pages fail here."""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner

from gpulint.cli import main
from gpulint.rule import all_rules
from gpulint.rule_docs import rule_docs

DOCS = Path(__file__).resolve().parent.parent / "docs" / "rules"


def test_rule_docs_are_current():
    expected = rule_docs()
    stale = [name for name, text in expected.items()
             if not (DOCS / name).exists() or (DOCS / name).read_text(encoding="utf-8") != text]
    assert not stale, f"regenerate with `gpulint rule --all --write-docs docs/rules`: {stale}"
    assert sorted(p.name for p in DOCS.glob("GPU*.md")) == sorted(expected)


def test_rule_doc_shows_metadata_and_examples():
    text = (DOCS / "GPU302.md").read_text(encoding="utf-8")
    assert text.startswith("# GPU302 `synced-accumulation`")
    assert "| Fix | sometimes (unsafe: " in text and "## Why it is slow" in text


def test_rule_all_json_prints_metadata():
    out = CliRunner().invoke(main, ["rule", "--all", "--output-format", "json"]).output
    rules = {r["code"]: r for r in json.loads(out)}
    assert set(rules) == set(all_rules())
    assert rules["GPU101"]["defers_to"] == ["GPU302", "GPU303"] and rules["GPU101"]["needs_gpu"] is True
    assert rules["GPU201"]["fix_safety"]["level"] == "safe" and rules["GPU201"]["fix_availability"] == "always"
    assert rules["GPU001"]["severity"] == "error" and rules["GPU101"]["fix_safety"] is None
    assert rules["GPU101"]["url"] == "docs/rules/GPU101.md"
    # text stays the default
    assert CliRunner().invoke(main, ["rule", "--all"]).output.startswith("GPU001  syntax-error")


def test_write_docs_writes_every_page(tmp_path: Path):
    result = CliRunner().invoke(main, ["rule", "--all", "--write-docs", str(tmp_path)])
    assert result.exit_code == 0
    assert (tmp_path / "GPU202.md").read_text(encoding="utf-8") == rule_docs()["GPU202.md"]
