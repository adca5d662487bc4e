"""Walks of CPython trees a cold lint repeated for nothing (issue 11, branch speed18): counted, not timed. Each
test fails on the code before the change; the answers asserted are the ones it gave.

- `helper_sites._parameter_calls` (once per module: which methods call `p.member(...)` on a parameter) walked
  every method twice, for its calls and then for its `except` handlers, also methods with no parameter but
  `self`, whose answer is empty; now once, and not at all for those (on fairseq over a million nodes a run).
- `helper_sites.function_fed_by_a_gpu_file` and `forward.trainer_built_by_a_gpu_file` (the prefilter's
  questions, per file) walked each statement of every loop of every function for a call that most functions do
  not have anywhere (a call of a parameter, `.backward()`); one walk of the function now tells first.
"""

from __future__ import annotations

import ast
from pathlib import Path

from gpulint import ast_walk, runtime

MODULE = '''import torch


class Agent:
    def __init__(self, net):
        self.net = net

    def reset(self):
        for i in range(3):
            x = i + 1
            y = x * 2

    def train_step(self, buffer, optimizer):
        batch = buffer.sample(32)
        try:
            loss = self.net(batch)
        except RuntimeError:
            return None
        for i in range(4):
            a = i + 1
            b = a * 2
        return loss


def fill(model, items):
    total = 0
    for item in items:
        total += len(item)
        total += 1
    return total
'''


def _counting_walks(monkeypatch) -> list:
    """The roots `ast_walk.walk` is asked to walk."""
    roots: list = []
    walk = ast_walk.walk

    def counted(node):
        roots.append(node)
        return walk(node)

    monkeypatch.setattr(ast_walk, "walk", counted)
    return roots


def _module(tmp_path: Path):
    from gpulint.analysis.project import project_for

    (tmp_path / "pyproject.toml").write_text("")
    path = tmp_path / "agent.py"
    path.write_text(MODULE)
    project = project_for(path)
    return project, path, project.module(path)


def test_parameter_calls_walk_each_method_with_parameters_once(tmp_path: Path, monkeypatch) -> None:
    from gpulint.analysis.helper_sites import _parameter_calls

    with runtime.batch():
        project, _, info = _module(tmp_path)
        methods = info.classes["Agent"].methods
        roots = _counting_walks(monkeypatch)
        found = _parameter_calls(project, info)
    assert [(cls.name, name, param) for cls, name, param, _ in found["sample"]] == [("Agent", "train_step", "buffer")]
    assert set(found) == {"sample"}
    walked = [r for r in roots if r in methods.values()]
    assert walked.count(methods["train_step"]) == 1  # calls and handlers in one walk (two before)
    assert methods["reset"] not in walked  # no parameter but `self`: nothing to look for (two walks before)


def test_a_function_without_a_call_of_its_parameters_is_walked_once(tmp_path: Path, monkeypatch) -> None:
    from gpulint.analysis.helper_sites import function_fed_by_a_gpu_file

    with runtime.batch():
        project, path, info = _module(tmp_path)
        fill = info.functions["fill"]
        loop_statements = [s for n in ast.walk(fill) if isinstance(n, (ast.For, ast.While)) for s in n.body]
        roots = _counting_walks(monkeypatch)
        assert function_fed_by_a_gpu_file(project, path, fill) is False
    assert not any(r in loop_statements for r in roots)  # one per loop statement before
    assert roots.count(fill) == 1


def test_methods_without_backward_are_not_walked_loop_by_loop(tmp_path: Path, monkeypatch) -> None:
    from gpulint.analysis.forward import trainer_built_by_a_gpu_file

    with runtime.batch():
        project, path, info = _module(tmp_path)
        loop_statements = [s for n in ast.walk(info.tree) if isinstance(n, (ast.For, ast.While)) for s in n.body]
        roots = _counting_walks(monkeypatch)
        assert trainer_built_by_a_gpu_file(project, path, info.tree) is False
    assert not any(r in loop_statements for r in roots)
