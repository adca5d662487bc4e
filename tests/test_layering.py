"""Layering: only the rule loader imports the rules; every gpulint module imports alone, without them."""

from __future__ import annotations

import json
import pkgutil
import subprocess
import sys
from pathlib import Path

import gpulint

ROOT = Path(__file__).resolve().parent.parent
MODULES = sorted(m.name for m in pkgutil.walk_packages(gpulint.__path__, "gpulint.")
                 if not m.name.startswith("gpulint.rules"))
OPTIONAL = {"gpulint.server": "pygls", "gpulint.notebook": "nbformat"}


def test_no_gpulint_module_imports_the_rules():
    """Each module, imported alone in a fresh interpreter, neither fails nor pulls in `gpulint.rules`."""
    script = (
        "import importlib, json, sys\n"
        "out = {}\n"
        "for name in json.loads(sys.argv[1]):\n"
        "    for m in [m for m in sys.modules if m == 'gpulint' or m.startswith('gpulint.')]:\n"
        "        del sys.modules[m]\n"
        "    importlib.import_module(name)\n"
        "    out[name] = sorted(m for m in sys.modules if m.startswith('gpulint.rules'))\n"
        "print(json.dumps(out))\n"
    )
    proc = subprocess.run([sys.executable, "-c", script, json.dumps(MODULES)], capture_output=True, text=True,
                          cwd=ROOT)
    assert proc.returncode == 0, proc.stderr[-2000:]
    loaded = json.loads(proc.stdout)
    assert set(loaded) == set(MODULES) and "gpulint.analysis.data_facts" in loaded
    assert {name: rules for name, rules in loaded.items() if rules} == {}


def test_all_rules_finds_every_rule_file():
    """No list to edit: each module under rules/ defines rules that all_rules() returns."""
    from gpulint.rule import all_rules

    files = {p.relative_to(ROOT / "rules").with_suffix("").as_posix().replace("/", ".")
             for p in (ROOT / "rules").rglob("*.py") if not p.name.startswith("_")}
    owners = {cls.__module__.removeprefix("gpulint.rules.") for cls in all_rules().values()}
    assert owners == files - {"accumulation.synced_base"}  # one rule per file; a base class aside
