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
