"""Costs of the class-hierarchy call-site searches (issue 11's cold speed, branch speed14).

On a monorepo (fairseq: 1,020 files) the prefilter's "does a loop elsewhere run this every step" asks the
class-hierarchy searches (`dispatched_calls.dispatched_site`, `inherited_calls.inherited_site`,
`overrides.override_site`) thousands of times: once per owner class and member. Each question walked the same
per-step methods of the same modules again for the one name it asked about, and resolved its module's path
with a system call per folder. Now:
- a function's calls `self.name(...)` / `self.<attr>.name(...)` are read in one walk for every name
  (`inherited_calls.first_calls`, kept with the per-step sites), and the answers stay the same;
- the searches resolve paths through the project's memo (`forward._resolved`), as the other per-step
  questions do.
"""

from __future__ import annotations

import ast
import textwrap
from pathlib import Path

import pytest

from gpulint import ast_walk
from gpulint.analysis.dispatched_calls import dispatched_site
from gpulint.analysis.inherited_calls import inherited_site
from gpulint.analysis.overrides import override_site
from gpulint.analysis.project import project_for
from projects import write_project

BASE = textwrap.dedent("""\
    from abc import abstractmethod
    from torch import nn


    class BaseNet(nn.Module):
        @abstractmethod
        def loss_function(self, out, x):
            pass

        def regularizer(self, out):
            return out.sum()

        def penalty(self, out):
            return self.regularizer(out) * 2
""")

NET = textwrap.dedent("""\
    import torch
    from torch import nn
    from nets.base import BaseNet


    class {name}(BaseNet):
        def forward(self, x):
            return x

        def loss_function(self, out, x):
            return (out - x).pow(2).mean()

        def regularizer(self, out):
            return out.abs().sum()

        def penalty(self, out):
            return out.norm()
""")

EXPERIMENT = textwrap.dedent("""\
    import pytorch_lightning as pl
    import torch
    from nets.base import BaseNet


    class Experiment(pl.LightningModule):
        def __init__(self, model: BaseNet):
            super().__init__()
            self.model = model

        def training_step(self, batch, batch_idx):
            out = self.model(batch)
            extra = self.model.regularizer(out) + self.model.penalty(out)
            return self.model.loss_function(out, batch) + extra

        def validation_step(self, batch, batch_idx):
            out = self.model(batch)
            return self.model.loss_function(out, batch)
""")

LEAN = textwrap.dedent("""\
    from nets.base import BaseNet


    class LeanNet(BaseNet):
        def forward(self, x):
            return x

        def total(self, out, x):
            return self.loss_function(out, x) + self.regularizer(out) + self.penalty(out)
""")

NETS = ("WideNet", "DeepNet", "TallNet")
MEMBERS = ("loss_function", "regularizer", "penalty")


def _project(tmp_path: Path) -> Path:
    modules = {"nets/__init__.py": "", "nets/base.py": BASE, "nets/lean.py": LEAN, "experiment.py": EXPERIMENT}
    modules.update({f"nets/{name.lower()}.py": NET.format(name=name) for name in NETS})
    return write_project(tmp_path / "p", modules)


def _walks_of(monkeypatch, fn: ast.FunctionDef) -> list[int]:
    """Records each walk (`ast.walk` or `gpulint.ast_walk.walk`, the same nodes in the same order) of an
    expression of `fn`'s body (by id), while the test asks its questions."""
    inside = {id(n) for stmt in fn.body for n in ast.walk(stmt)}
    walked: list[int] = []

    def counting(original):
        def walk(node):
            if id(node) in inside:
                walked.append(id(node))
            return original(node)
        return walk

    monkeypatch.setattr(ast, "walk", counting(ast.walk))
    monkeypatch.setattr(ast_walk, "walk", counting(ast_walk.walk))
    return walked


def test_a_framework_step_is_walked_once_for_every_dispatched_question(tmp_path: Path, monkeypatch) -> None:
    root = _project(tmp_path)
    experiment = (root / "experiment.py").resolve()
    project = project_for(experiment)
    step = project.module(experiment).classes["Experiment"].methods["training_step"]
    walked = _walks_of(monkeypatch, step)
    answers = {(name, member): dispatched_site(project, root / "nets" / f"{name.lower()}.py", name, member)
               for name in NETS for member in MEMBERS}
    # every override is a possible callee of the per-step call through the attribute declared as the base
    assert {key: (site.path.name, site.line, site.code) for key, site in answers.items() if site is not None} == {
        (name, member): ("experiment.py", line, f"self.model.{member}(...)")
        for name in NETS for member, line in (("loss_function", 14), ("regularizer", 13), ("penalty", 13))}
    # one walk of each expression of `training_step` for the nine questions (was one per question that reached it)
    assert walked and len(walked) == len(set(walked)), len(walked)


def test_a_subclass_method_is_walked_once_for_every_inherited_question(tmp_path: Path, monkeypatch) -> None:
    root = _project(tmp_path)
    base = (root / "nets" / "base.py").resolve()
    project = project_for(base)
    # `LeanNet` inherits the members: each question reads its methods for `self.<member>(...)` calls
    lean = (root / "nets" / "lean.py").resolve()
    total = project.module(lean).classes["LeanNet"].methods["total"]
    walked = _walks_of(monkeypatch, total)
    answers = [inherited_site(project, base, "BaseNet", member) for member in MEMBERS]
    assert answers == [None, None, None]  # `total` runs on no step here
    # one walk of each expression of `total` for the three questions (was one per question)
    assert walked and len(walked) == len(set(walked)), len(walked)


@pytest.mark.parametrize("question", [dispatched_site, inherited_site, override_site])
def test_the_hierarchy_searches_resolve_a_path_once(tmp_path: Path, monkeypatch, question) -> None:
    root = _project(tmp_path)
    wide = (root / "nets" / "widenet.py").resolve()
    project = project_for(wide)
    resolved = []
    original = Path.resolve

    def counting(self, *args, **kwargs):
        if self.name == "widenet.py":
            resolved.append(1)
        return original(self, *args, **kwargs)

    monkeypatch.setattr(Path, "resolve", counting)
    for _ in range(10):
        for member in MEMBERS:
            question(project, wide, "WideNet", member)
    monkeypatch.setattr(Path, "resolve", original)
    assert len(resolved) < 5, len(resolved)  # was one per question (30) and more
