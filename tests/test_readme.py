"""The README's promises: its rule table is generated from the rules, and its commands are the ones CI runs."""

from __future__ import annotations

import re
from pathlib import Path

from gpulint.cli import rule_table_markdown

ROOT = Path(__file__).resolve().parent.parent
README = (ROOT / "README.md").read_text(encoding="utf-8")


def test_rule_table_is_current():
    match = re.search(r"<!-- rules:start[^\n]*\n(.*?)<!-- rules:end -->", README, re.S)
    assert match, "README lost its rule table markers"
    assert match.group(1) == rule_table_markdown(), "run `gpulint rule --markdown` and paste it into README.md"


def test_ci_runs_the_readme_test_command():
    commands = re.findall(r"```bash\n(.*?)\n```", README, re.S)
    test_command = next(c for c in commands if "pytest" in c)
    assert test_command in (ROOT / ".ci" / "run").read_text(encoding="utf-8")


def test_readme_example_exists():
    assert "fixtures/examples/naive_train.py" in README
    assert (ROOT / "fixtures" / "examples" / "naive_train.py").exists()
