"""The rule gate (gpulint/rule_gate.py): after the parse, rules that report only around a hot loop are not run on a
module without one. Never a finding less: every INVALID example of a gated rule has a hot loop, and on every
fixture and rule example the findings with and without the gate are the same; a gate that closes wrongly fails
that comparison (checked below with a gate that always closes)."""

from __future__ import annotations

from pathlib import Path

import libcst as cst
import pytest

from gpulint import rule_gate
from gpulint.analysis import ModuleAnalysis
from gpulint.rule import all_rules
from gpulint.runner import lint_source

ROOT = Path(__file__).resolve().parent.parent
DEFAULT = frozenset(code for code, cls in all_rules().items() if not cls.preview)
ALL = frozenset(code for code, cls in all_rules().items()
                if cls.needs_text is not None or cls.reports_in is not None)

# A model file: a `range` loop doing arithmetic in a helper (the `ast` prefilter cannot rule it out, the loop
# analysis finds no tensor math in it), and a synchronising read in a method.
MODEL_HELPER = '''import torch
import torch.nn as nn


def make_stages(depth, widths):
    stages = []
    for i in range(depth):
        stages.append(widths[i] * 2)
    return stages


class Net(nn.Module):
    def __init__(self, depth):
        super().__init__()
        self.device = torch.device("cuda")
        self.stages = make_stages(depth, [8] * depth)

    def forward(self, x):
        if x.sum().item() > 0:
            return x
        return -x
'''


def _sources():
    for path in sorted((ROOT / "fixtures").rglob("*.py")):
        yield str(path.relative_to(ROOT)), path.read_text(encoding="utf-8"), path
    for code, cls in all_rules().items():
        for i, example in enumerate([*cls.VALID, *cls.INVALID]):
            yield f"{code}-example-{i}", example if isinstance(example, str) else example.code, None
    yield "model helper", MODEL_HELPER, None


SOURCES = list(_sources())


def _found(source: str, name: str, path, codes=ALL):
    return [(d.code, d.location, d.message) for d in lint_source(source, name, codes, path=path).diagnostics]


def test_the_hot_loop_rules_are_gated_and_the_others_not():
    gated = rule_gate.gated_codes(DEFAULT)
    # GPU407 reports only in a module with a training loop (a hot loop: the gate and the prefilter skip the rest)
    assert {"GPU101", "GPU112", "GPU202", "GPU302", "GPU403", "GPU407"} <= gated
    # GPU201 may report where only "cuda" is named, GPU401 anywhere: never gated.
    assert not gated & {"GPU201", "GPU401"}


@pytest.mark.parametrize("code", sorted(rule_gate.gated_codes(frozenset(all_rules()))))
def test_every_invalid_example_of_a_gated_rule_has_a_hot_loop(code: str):
    for example in all_rules()[code].INVALID:
        analysis = ModuleAnalysis(cst.parse_module(example.code), example.code)
        assert rule_gate.has_hot_loop(analysis), f"{code} reports in a module without a hot loop:\n{example.code}"


def test_a_model_helper_without_a_hot_loop_runs_only_the_ungated_rules():
    analysis = ModuleAnalysis(cst.parse_module(MODEL_HELPER), MODEL_HELPER)
    assert not rule_gate.has_hot_loop(analysis)
    assert rule_gate.Gate(None, None).codes(analysis, DEFAULT) == DEFAULT - rule_gate.gated_codes(DEFAULT)


@pytest.mark.parametrize("name, source, path", SOURCES, ids=[s[0] for s in SOURCES])
def test_the_gate_changes_no_finding(name: str, source: str, path, monkeypatch):
    gated = _found(source, name, path)
    monkeypatch.setattr(rule_gate.Gate, "codes", lambda self, analysis, codes: codes)
    assert gated == _found(source, name, path)


def test_a_gate_that_closes_wrongly_loses_findings(monkeypatch):
    """The comparison above has teeth: with a gate that believes no module has a hot loop, findings go."""
    path = ROOT / "fixtures" / "examples" / "naive_train.py"
    source = path.read_text(encoding="utf-8")
    before = _found(source, str(path), path, DEFAULT)
    monkeypatch.setattr(rule_gate, "has_hot_loop", lambda analysis: False)
    after = _found(source, str(path), path, DEFAULT)
    assert before and len(after) < len(before)


def test_model_code_run_every_step_keeps_its_rules(tmp_path: Path):
    """A model file with no loop of its own: its `forward` runs every step from a project script, so the gate
    keeps the per-step rules (the `.item()` in `forward` is reported, with the script's call site)."""
    (tmp_path / "pyproject.toml").write_text("")
    (tmp_path / "net.py").write_text(MODEL_HELPER)
    (tmp_path / "train.py").write_text(
        "import torch\nfrom torch.utils.data import DataLoader\nfrom net import Net\n\n"
        "model = Net(4).cuda()\nopt = torch.optim.SGD(model.parameters(), lr=0.1)\n"
        "loader = DataLoader(list(range(8)), batch_size=2)\n"
        "for x in loader:\n    loss = model(x.cuda()).sum()\n    loss.backward()\n    opt.step()\n")
    path = tmp_path / "net.py"
    found = lint_source(MODEL_HELPER, str(path), DEFAULT, path=path).diagnostics
    assert [(d.code, d.location.row) for d in found] == [("GPU101", 19)]
    assert found[0].related[0].filename.endswith("train.py")
