"""Tables the analysis builds once per module in place of a walk per question (issue 14, branch lsp4): each must
answer what the walk it replaces answers, on every example, every rule fixture and the trial scripts."""

from __future__ import annotations

import textwrap
from pathlib import Path

import libcst as cst
import pytest

from gpulint.analysis import ModuleAnalysis
from gpulint.analysis.data_facts import _walk, data_facts
from gpulint.analysis.node_types import of_types

ROOT = Path(__file__).resolve().parent.parent
FILES = sorted((ROOT / "fixtures" / "examples").glob("*.py")) + sorted((ROOT / "fixtures" / "rules").glob("*/*.py"))

NEXT_LOOPS = textwrap.dedent("""\
    it = iter(loader)
    while True:
        batch = next(it)                       # this loop's
        for x in other:
            y = next(it)                       # the inner loop's
        def helper():
            return next(it)                    # no loop's
        f = lambda: next(it)                   # no loop's
    else:
        z = next(it)                           # not in the body
    while (b := next(it)) is not None:         # in the test, not the body
        pass
    for batch in (next(it) for _ in range(3)):
        w = [next(it) for _ in range(2)]       # a comprehension's call: the loop's
""")


def _parse(path: Path):
    try:
        return cst.parse_module(path.read_text())
    except (cst.ParserSyntaxError, UnicodeDecodeError):
        return None


def _by_walk(facts, loop):
    """`loop_loaders`' `next(it)` part as it was: a walk of the loop's body per loop."""
    return [c for node in _walk(loop.body) if type(node) is cst.Call and facts._innermost_loop(node) is loop
            for c in facts._next_of(node)]


def _next_calls_by_walk(facts, loop):
    return [node for node in _walk(loop.body) if type(node) is cst.Call and facts._innermost_loop(node) is loop
            and facts._next_of(node) is not None and getattr(node.func, "value", None) == "next"]


@pytest.mark.parametrize("path", FILES, ids=lambda p: p.relative_to(ROOT).as_posix())
def test_next_calls_by_loop_are_those_a_walk_of_each_body_finds(path: Path):
    module = _parse(path)
    if module is None:
        return
    facts = data_facts(ModuleAnalysis(module, path.read_text()))
    for loop in of_types(facts.index, cst.For, cst.While):
        assert facts._next_calls().get(id(loop), []) == _next_calls_by_walk(facts, loop)
        assert [id(c) for c in facts.loop_loaders(loop)] == [id(c) for c in
                                                             (facts.loaders(loop.iter) if type(loop) is cst.For and
                                                              facts.loaders(loop.iter) else _by_walk(facts, loop))]


def test_next_calls_belong_to_the_innermost_loop_body_only():
    module = cst.parse_module(NEXT_LOOPS)
    facts = data_facts(ModuleAnalysis(module, NEXT_LOOPS))
    loops = of_types(facts.index, cst.For, cst.While)
    found = {module.code_for_node(loop).splitlines()[0].split("#")[0].strip(): [module.code_for_node(c) for c in
                                                        facts._next_calls().get(id(loop), [])] for loop in loops}
    assert found == {"while True:": ["next(it)"], "for x in other:": ["next(it)"],
                     "while (b := next(it)) is not None:": [],
                     "for batch in (next(it) for _ in range(3)):": ["next(it)"]}
    for loop in loops:
        assert facts._next_calls().get(id(loop), []) == _next_calls_by_walk(facts, loop)


@pytest.mark.parametrize("path", FILES[:40], ids=lambda p: p.relative_to(ROOT).as_posix())
def test_visible_bindings_remembered_are_those_looked_up(path: Path):
    module = _parse(path)
    if module is None:
        return
    index = ModuleAnalysis(module, path.read_text()).index
    for name in of_types(index, cst.Name):
        first = index.visible_bindings(name)
        assert index.visible_bindings(name) is first and first == index._visible_bindings(name)


def test_the_project_is_found_once_per_lint_not_per_function(tmp_path, monkeypatch):
    """forward.per_step_caller asks for the module's project through a fact: in the language server
    `project_for` walks up the folders for the root each time it is called."""
    from gpulint.analysis import forward
    from gpulint.rule import all_rules
    from gpulint.runner import lint_source

    script = tmp_path / "train.py"
    script.write_text((ROOT / "fixtures" / "examples" / "naive_train.py").read_text() + "".join(
        f"\n\ndef helper_{i}(x):\n    return x.item() * {i}\n" for i in range(10)))
    asked = []
    real = forward.project_for
    monkeypatch.setattr(forward, "project_for", lambda path: asked.append(path) or real(path))
    lint_source(script.read_text(), str(script), frozenset(all_rules()), path=script)
    assert len(asked) <= 1


@pytest.mark.parametrize("path", FILES[:60], ids=lambda p: p.relative_to(ROOT).as_posix())
def test_the_reads_of_a_name_in_a_scope_by_bisection_are_those_a_filter_finds(path: Path):
    from bisect import bisect_left, bisect_right

    module = _parse(path)
    if module is None:
        return
    index = ModuleAnalysis(module, path.read_text()).index
    scopes = [module, *of_types(index, cst.FunctionDef, cst.ClassDef, cst.Lambda)]
    for value in {n.value for n in of_types(index, cst.Name)}:
        places = index.name_places(value)
        assert places == sorted(places) and places == [index.order(n) for n in index.names(value)]
        for scope in scopes:
            first, last = index.subtree(scope)
            assert index.names(value)[bisect_left(places, first):bisect_right(places, last)] == [
                n for n in index.names(value) if index.is_ancestor_or_self(scope, n)]


PREPARED = textwrap.dedent("""\
    from accelerate import Accelerator
    from torch.utils.data import DataLoader
    accelerator = Accelerator()
    loader = DataLoader(dataset, batch_size=8)
    model.train()
    optimizer.zero_grad()
    loader = accelerator.prepare(loader)
    for x in loader:
        x.to("cuda")
""")


def test_prepared_looks_up_only_the_calls_of_a_method_that_moves_batches(monkeypatch):
    """DataFacts.prepared asks what built the receiver only of `.prepare(...)`-like calls (the methods the
    library table says hand back batches on the device), not of every method call of the module."""
    from gpulint.analysis import calls as calls_module

    asked = []
    real = calls_module.ModuleCalls.constructor
    monkeypatch.setattr(calls_module.ModuleCalls, "constructor",
                        lambda self, expr: asked.append(expr) or real(self, expr))
    module = cst.parse_module(PREPARED)
    facts = data_facts(ModuleAnalysis(module, PREPARED))
    loader = next(c for c in of_types(facts.index, cst.Call) if getattr(c.func, "value", None) == "DataLoader")
    assert facts.prepared(loader)
    assert [module.code_for_node(e) for e in asked] == ["accelerator"]
