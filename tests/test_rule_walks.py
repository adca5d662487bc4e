"""Rules' hot walks read children from the nodes' fields (`tree.child_nodes`) instead of LibCST's `children`,
which rebuilds every node it passes (issue 13: the cost per parsed line). The calls they meet, and their order,
are those of the walk over `children`."""

from __future__ import annotations

from pathlib import Path

import libcst as cst

from gpulint.bigfile import parse_module

import gpulint.rules.throughput.fp32_training_without_autocast as gpu_autocast

REPO = Path(__file__).resolve().parent.parent


def _children_in_order(node):
    stack = [node]
    while stack:
        current = stack.pop()
        yield current
        stack.extend(reversed(current.children))


def _calls(nodes) -> list:
    return [n for n in nodes if type(n) is cst.Call]


def test_the_autocast_rule_meets_the_calls_of_a_statement_in_written_order():
    checked = 0
    texts = [p.read_text(encoding="utf-8") for p in sorted(REPO.glob("fixtures/**/*.py"))]
    texts.append("y = model(a) if f(b) else g(c)\nz = [h(i) for i in k(j) if m(i)]\n"
                 "w = (lambda q: n(q))(o(p)) + {r(1): s(2)}[t(3)]\n")
    for text in texts:
        try:
            module = parse_module(text)
        except cst.ParserSyntaxError:
            continue  # GPU001's fixtures
        for line in [n for n in _children_in_order(module) if type(n) is cst.SimpleStatementLine]:
            fast = _calls(gpu_autocast._in_order(line))
            assert [id(c) for c in fast] == [id(c) for c in _calls(_children_in_order(line))]
            assert {id(c) for c in _calls(gpu_autocast._nodes(line))} == {id(c) for c in fast}
            checked += len(fast)
    assert checked > 1000


def test_the_autocast_rule_walks_without_rebuilding_nodes(monkeypatch):
    line = parse_module("loss = criterion(model(x) if a else net(y), t(z))\n").body[0]

    def rebuilt(self):
        raise AssertionError("LibCST's children rebuilds the node")

    monkeypatch.setattr(cst.CSTNode, "children", property(rebuilt))
    assert len(_calls(gpu_autocast._in_order(line))) == 4 == len(_calls(gpu_autocast._nodes(line)))


def test_the_project_calls_of_a_module_are_worked_out_once_per_lint(tmp_path, monkeypatch):
    """GPU411's and GPU203's per-call checks take the module's project calls from the analysis' facts: building
    them hashes the module's whole text, and once per call that was quadratic in a big module (2 MB of training
    loops took three times the CPU of 1 MB)."""
    import sys

    from gpulint.analysis import calls as calls_module
    from gpulint.rule import all_rules
    from gpulint.runner import lint_source

    sys.path.insert(0, str(REPO / "benchmarks"))
    try:
        import big_module
    finally:
        sys.path.pop(0)
    path = tmp_path / "train.py"
    path.write_text(big_module.module_text(0.01), encoding="utf-8")
    made = []
    real = calls_module.ProjectCalls.__init__

    def counted(self, *args, **kwargs):
        made.append(1)
        real(self, *args, **kwargs)

    monkeypatch.setattr(calls_module.ProjectCalls, "__init__", counted)
    result = lint_source(path.read_text(encoding="utf-8"), str(path), frozenset(all_rules()), path=path)
    assert len(result.diagnostics) > 50
    assert len(made) == 1
