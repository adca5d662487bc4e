"""Costs a cold batch lint pays once instead of many times (issue 11's cold speed, branch speed12).

- A training script parsed with LibCST to answer "which of its calls run every step" (forward._hot_calls) is
  parsed without LibCST's node checks in a batch run when the project model holds an `ast` tree of the same
  bytes, as the script's own lint parses it (runtime.trusted_parse): the checks were a fifth of those parses.
- The parent's shared answers (parallel._answer_before_forking) stat each project file once, not at each of the
  project model's look-ups.
- GPU408's "retrained from scratch" exemption generates the code of the enclosing function only when the text
  calls `reset_parameters()` at all.
- `self.<attr>` assignments of a class (module_attrs) are read in one walk per method, remembered, not one
  walk of every method per attribute and asking module.
- The per-step questions resolve the asked module's path through the project's memo: one `Path.resolve` per
  path, not one per question.
"""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

import libcst as cst
import pytest

from gpulint import incremental, runtime
from gpulint.analysis import forward
from gpulint.analysis.project import project_for
from gpulint.rule import all_rules
from gpulint.runner import lint_source

FIXTURE = Path(__file__).resolve().parent.parent / "fixtures" / "projects" / "models"


def _project(tmp_path: Path) -> Path:
    root = tmp_path / "models"
    shutil.copytree(FIXTURE, root)
    return root


def _checked_nodes_of_callers_parse(root: Path, monkeypatch, batch: bool, edit_after_model: bool = False) -> int:
    """How many LibCST nodes were built with their checks while `train.py` was parsed as a caller."""
    from libcst._nodes.base import CSTNode

    checked = []
    original = CSTNode.__dict__["__post_init__"]

    def counting(self) -> None:
        checked.append(1)
        original(self)

    monkeypatch.setattr(CSTNode, "__post_init__", counting)
    train = (root / "train.py").resolve()
    project = project_for(train)
    project.module(train)  # the project model's `ast` tree of the file
    if edit_after_model:  # the file changed after the model read it: no tree of these bytes
        train.write_text(train.read_text() + "\nx = 1\n")
    incremental._recent_modules.clear()  # a parse, not a text parsed a moment ago
    project.caller_analyses.pop(train, None)
    with runtime.batch() if batch else _nothing():
        checked.clear()
        calls = forward._hot_calls(project, train)
    monkeypatch.setattr(CSTNode, "__post_init__", original)
    assert calls  # the loop's calls were found either way
    return len(checked)


class _nothing:
    def __enter__(self):
        return None

    def __exit__(self, *exc):
        return False


def test_a_callers_parse_skips_libcst_node_checks_in_a_batch_run(tmp_path: Path, monkeypatch) -> None:
    assert _checked_nodes_of_callers_parse(_project(tmp_path / "a"), monkeypatch, batch=True) == 0
    # outside a batch run (the language server, tests) every node is checked, as before
    assert _checked_nodes_of_callers_parse(_project(tmp_path / "b"), monkeypatch, batch=False) > 100
    # text the project model never parsed with CPython's parser: checked
    assert _checked_nodes_of_callers_parse(_project(tmp_path / "c"), monkeypatch, batch=True,
                                           edit_after_model=True) > 100


def test_the_parents_answers_stat_each_file_once(tmp_path: Path, monkeypatch) -> None:
    from gpulint import parallel
    from gpulint.pipeline import Input

    root = _project(tmp_path)
    files = sorted(p for p in root.rglob("*.py"))
    todo = [(i, Input.read(p)) for i, p in enumerate(files)]
    stats: dict = {}
    original = Path.stat

    def counting(self, *args, **kwargs):
        if sys._getframe(1).f_code.co_filename.endswith("file_stats.py"):  # the project model's freshness check
            stats[self.name] = stats.get(self.name, 0) + 1
        return original(self, *args, **kwargs)

    monkeypatch.setattr(Path, "stat", counting)
    with runtime.batch():
        parallel._answer_before_forking(todo)
    monkeypatch.setattr(Path, "stat", original)
    # the training script is read for every question about the models it runs (dozens of look-ups before)
    assert stats.get("train.py", 0) == 1, stats


GPU408_TEXT = "import torch\n" + "".join(
    f"def fit_{i}(model, loader):\n"
    f"    for x in loader:\n"
    f"        opt = torch.optim.SGD(model.parameters(), lr=0.1)\n"
    f"        model(x.cuda()).sum().backward()\n"
    f"        opt.step()\n" for i in range(5))


def test_gpu408_generates_no_code_without_reset_parameters(monkeypatch) -> None:
    from gpulint.analysis import ModuleAnalysis

    generated = []
    original = ModuleAnalysis.code

    def counting(self, node):
        if type(node) is cst.FunctionDef:
            generated.append(node.name.value)
        return original(self, node)

    monkeypatch.setattr(ModuleAnalysis, "code", counting)
    result = lint_source(GPU408_TEXT, "fit.py", frozenset({"GPU408"}))
    assert [d.location.row for d in result.diagnostics] == [4, 9, 14, 19, 24]
    assert generated == []  # was: each function's whole code, once per optimizer built in it
    # the exemption itself holds: a model reset in the function retrains from scratch
    reset = GPU408_TEXT.replace("    for x in loader:\n", "    model.reset_parameters()\n    for x in loader:\n", 1)
    assert [d.location.row for d in lint_source(reset, "fit.py", frozenset({"GPU408"})).diagnostics] == \
        [10, 15, 20, 25]


@pytest.mark.parametrize("question", ["call_site", "per_step_site"])
def test_per_step_questions_resolve_a_path_once(tmp_path: Path, monkeypatch, question: str) -> None:
    root = _project(tmp_path)
    queue = (root / "models" / "queue.py").resolve()
    project = project_for(queue)
    resolved = []
    original = Path.resolve

    def counting(self, *args, **kwargs):
        if self.name == "queue.py":
            resolved.append(1)
        return original(self, *args, **kwargs)

    monkeypatch.setattr(Path, "resolve", counting)
    for _ in range(20):
        if question == "call_site":
            forward.call_site(project, queue, "QueueModel")
        else:
            forward.per_step_site(project, queue, "QueueModel")
    monkeypatch.setattr(Path, "resolve", original)
    assert len(resolved) < 8, len(resolved)  # the first question's own look-ups (5 after the merge); was one more per question (20+)


AGENT = """\
import torch


class Agent:
    def __init__(self):
        self.policy = torch.nn.Linear(4, 2)
        self.value = torch.nn.Linear(4, 1)
        self.steps = 0
        self.policy = self.policy.to("cuda")

    def reset(self):
        self.steps = 0
        self.buffer = []
"""


def test_self_attributes_of_a_class_are_read_in_one_walk_per_method(tmp_path: Path, monkeypatch) -> None:
    from gpulint.analysis import module_attrs
    from projects import write_project

    root = write_project(tmp_path / "p", {"agent.py": AGENT})
    agent = (root / "agent.py").resolve()
    project = project_for(agent)
    walked = []
    original = module_attrs.ast_walk.walk  # `ast.walk`'s nodes in its order (gpulint/ast_walk.py)

    def counting(node):
        walked.append(getattr(node, "name", None))
        return original(node)

    monkeypatch.setattr(module_attrs.ast_walk, "walk", counting)
    answers = {attr: module_attrs.holds_module(project, agent, "Agent", attr, {})
               for attr in ("policy", "value", "steps", "buffer", "missing")}
    assert answers == {"policy": True, "value": True, "steps": False, "buffer": False, "missing": False}
    # asked again by another module (a new cache): no walk at all
    assert module_attrs.holds_module(project, agent, "Agent", "policy", {}) is True
    assert sorted(walked) == ["__init__", "reset"]  # was one walk of each method per attribute asked about
