"""Walks of the same CPython tree, kept (issue 11, branch speed15): counted, not timed. The project model's
per-module indexes each walk a module on its own and its per-step questions walk the same functions again and
again; `ast_walk.walk` now makes the breadth-first list of a module, class or function at once the first time it
is asked for, keeps it on the node, and later walks iterate that list. These tests fail on the code before the
change (no `ast_walk.walks_made` or `_breadth_first`; every walk visited its nodes afresh)."""

from __future__ import annotations

import ast
from collections import Counter
from pathlib import Path

from gpulint import ast_walk

ROOT = Path(__file__).resolve().parent.parent

SOURCE = '''
import torch

class Net(torch.nn.Module):
    def forward(self, x):
        return [y * 2 for y in x]

def train(model, loader):
    for batch in loader:
        loss = model(batch).sum()
        print(loss.item())
'''


def _ids(nodes) -> list:
    return [id(n) for n in nodes]


def test_a_second_walk_of_a_module_class_or_function_visits_nothing_afresh() -> None:
    tree = ast.parse(SOURCE)
    cls, fn = tree.body[1], tree.body[2]
    for root in (tree, cls, fn):
        before = ast_walk.walks_made
        first = _ids(ast_walk.walk(root))
        assert ast_walk.walks_made == before + 1
        second = _ids(ast_walk.walk(root))
        assert ast_walk.walks_made == before + 1  # the kept list, no new walk
        assert first == second == _ids(ast.walk(root))


def test_a_walk_left_early_is_kept_whole_and_other_nodes_are_never_kept() -> None:
    tree = ast.parse(SOURCE)
    before = ast_walk.walks_made
    for node in ast_walk.walk(tree):
        if isinstance(node, ast.Call):
            break
    assert _ids(ast_walk.walk(tree)) == _ids(ast.walk(tree))
    assert ast_walk.walks_made == before + 1  # the walk left early made the whole list; the next one reads it
    call = next(n for n in ast.walk(tree) if isinstance(n, ast.Call))
    list(ast_walk.walk(call))
    list(ast_walk.walk(call))
    assert ast_walk.walks_made == before + 3  # an expression's walk is not kept (cheap, and asked of many nodes)


def test_a_project_lint_walks_each_module_afresh_at_most_once(monkeypatch, capsys, tmp_path) -> None:
    import shutil

    from gpulint.cli import main

    project = tmp_path / "project"
    shutil.copytree(ROOT / "fixtures" / "projects", project)
    (tmp_path / "empty.toml").write_text("")

    fresh: Counter = Counter()
    asked: Counter = Counter()
    walk, inner = ast_walk.walk, ast_walk._breadth_first

    def counted_walk(node):
        if isinstance(node, ast.Module):
            asked[id(node)] += 1
        return walk(node)

    def counted_inner(node):
        if isinstance(node, ast.Module):
            fresh[id(node)] += 1
        return inner(node)

    monkeypatch.setattr(ast_walk, "walk", counted_walk)
    monkeypatch.setattr(ast_walk, "_breadth_first", counted_inner)
    main(["check", "--config", str(tmp_path / "empty.toml"), "--no-cache", "--jobs", "1", "--exit-zero", "--output-format", "json", str(project)],
         standalone_mode=False)
    capsys.readouterr()
    assert sum(asked.values()) > 2 * len(asked) > 0  # modules are asked about many times ...
    assert max(fresh.values()) == 1  # ... and each is walked afresh once


def test_a_walked_tree_is_freed_as_soon_as_it_is_dropped() -> None:
    """The walk kept on a module or function leaves its root out: a tree walked once is freed by reference
    counting when the lint drops it, not later by the cyclic collector (a big module's chunks would otherwise
    all stay alive until a collection, raising the lint's peak memory)."""
    import gc
    import weakref

    tree = ast.parse("def f(x):\n    return x + 1\n\n\nclass A:\n    def g(self):\n        return 2\n")
    assert [type(n) for n in ast_walk.walk(tree)] == [type(n) for n in ast.walk(tree)]
    for fn in (tree.body[0], tree.body[1].body[0]):
        assert list(ast_walk.walk(fn)) == list(ast.walk(fn))
    alive = weakref.ref(tree)
    gc.disable()
    try:
        del tree, fn
        assert alive() is None
    finally:
        gc.enable()


LOOPS = '''
import torch


def evaluate(model, loaders):
    for name, it in loaders.items():
        x = next(it)
        print(name, model(x.cuda()).mean().item())


def train(model, loader, optimizer, epochs):
    for epoch in range(epochs):
        for step, (x, y) in enumerate(loader):
            x, y = x.cuda(non_blocking=True), y.cuda(non_blocking=True)
            loss = torch.nn.functional.cross_entropy(model(x), y)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            print(loss.item())
        evaluate(model, {"val": iter(loader)})
'''


def test_a_loop_body_is_walked_once_for_all_the_questions_about_it(tmp_path: Path, monkeypatch) -> None:
    """speed17: a loop's role, whether it trains, draws a batch or steps an environment each walked its body
    again (`loops._walk_body`: on a cold fairseq lint 1.4M node steps, about ten walks per loop). The loop
    analysis keeps each body's nodes (`LoopAnalysis._body`) per loop and variant (into nested loops or not)."""
    from gpulint import runtime
    from gpulint.analysis import loops
    from gpulint.rule import all_rules
    from gpulint.runner import lint_source

    path = tmp_path / "train.py"
    path.write_text(LOOPS)
    walks: Counter = Counter()
    held: list = []
    walk = loops._walk_body

    def counted(node, into_loops):
        if type(node).__name__ in ("For", "While"):
            held.append(node)
            walks[(id(node), into_loops)] += 1
        return walk(node, into_loops)

    monkeypatch.setattr(loops, "_walk_body", counted)
    codes = frozenset(c for c, rule in all_rules().items() if not rule.preview)
    with runtime.batch():
        result = lint_source(LOOPS, "train.py", codes, path=path.resolve())
    assert sorted((d.location.row, d.code) for d in result.diagnostics) == [(15, "GPU403"), (19, "GPU101")]
    assert max(walks.values()) == 1 and sum(walks.values()) == 3, walks  # was 6: the inner loop's body 3 + 2
