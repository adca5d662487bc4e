"""What one cold lint does once per module rather than once per call (issue 11's cold speed).

GPU411's per-step call sites of project helpers (rules/throughput/per_parameter_loop.py) asked for the module's
project-call resolver with a direct call of the fact provider at every call of the module: a new resolver for
each call (the module's whole text hashed again, its path resolved again, the lookups it had learnt lost) and the
test-path check resolving both paths again; on pytorch/examples a sixth of a cold `--jobs 1` lint. The resolver is
now the module's fact (one per lint, shared with every other rule), and the test-path check the project's
remembered one. The findings are the same (tests/test_parameter_loop_helpers.py).
"""

from __future__ import annotations

import os
from pathlib import Path

from projects import write_project

from gpulint.analysis import calls
from gpulint.runner import lint_source
from gpulint.rule import all_rules

UTILS = "def soft_update(params, target_params, tau):\n    for p, tp in zip(params, target_params):\n" \
        "        tp.data.mul_(1 - tau).add_(p.data, alpha=tau)\n"

TRAIN_LOOP = """\
import torch
from utils import soft_update

critic = torch.nn.Linear(4, 1).cuda()
target = torch.nn.Linear(4, 1).cuda()
opt = torch.optim.SGD(critic.parameters(), lr=0.1)
for x in loader:
    x = x.cuda(non_blocking=True)
    y = torch.relu(critic(x)).mean(dim=0).sum()
    opt.zero_grad()
    y.backward()
    opt.step()
    soft_update(critic.parameters(), target.parameters(), 0.005)
"""
TRAIN = TRAIN_LOOP + "".join(f"    print(abs(min(max({i}, 1), 2)))\n" for i in range(40))


def test_one_project_call_resolver_per_linted_module(tmp_path: Path, monkeypatch) -> None:
    root = write_project(tmp_path / "p", {"utils.py": UTILS, "train.py": TRAIN})
    built = []
    original = calls.ProjectCalls.__init__

    def counting(self, *args, **kwargs):
        built.append(1)
        original(self, *args, **kwargs)

    monkeypatch.setattr(calls.ProjectCalls, "__init__", counting)
    codes = frozenset(code for code, rule in all_rules().items() if not rule.preview)
    result = lint_source(TRAIN, "train.py", codes, path=root / "train.py")
    gpu411 = [d for d in result.diagnostics if d.code == "GPU411"]
    assert [d.location.row for d in gpu411] == [13]  # the per-step call of the helper is still reported
    # about 200 calls in the module: one resolver for the module, not one per call
    assert len(built) <= 2, len(built)


def _stats_of_utils_in_a_batch_lint(root: Path, monkeypatch) -> int:
    from gpulint import parallel
    from gpulint.config import Settings
    from gpulint.diagnostics import FixMode

    asked: list = []
    original = Path.stat

    def counting(self, *args, **kwargs):
        if self.name == "utils.py":
            asked.append(1)
        return original(self, *args, **kwargs)

    monkeypatch.setattr(Path, "stat", counting)
    outcomes = parallel.lint_files([root / "train.py"], Settings(root=root), FixMode.NONE, write=False,
                                   want_edits=False, jobs=1)
    monkeypatch.setattr(Path, "stat", original)
    assert [d.location.row for d in outcomes[0].diagnostics if d.code == "GPU411"] == [13]
    return len(asked)


def test_a_batch_lint_stats_each_project_file_once_per_linted_file(tmp_path: Path, monkeypatch) -> None:
    """The project model re-checks a module's size and time each time it is asked for it; inside one file's lint
    of a batch run the answer is remembered (gpulint/file_stats.py), outside it every question stats the file."""
    import contextlib

    from gpulint import file_stats

    root = write_project(tmp_path / "p", {"utils.py": UTILS, "train.py": TRAIN})
    remembered = _stats_of_utils_in_a_batch_lint(root, monkeypatch)
    monkeypatch.setattr(file_stats, "unchanged_files", contextlib.nullcontext)
    other = write_project(tmp_path / "q", {"utils.py": UTILS, "train.py": TRAIN})  # a project not modelled yet
    every_time = _stats_of_utils_in_a_batch_lint(other, monkeypatch)
    # resolving the path, reading it once for the project model, one check of its time and size: the
    # project model's other questions about the module (one per lookup into it) stat nothing more
    assert remembered <= 6 < every_time, (remembered, every_time)
    monkeypatch.undo()
    calls: list = []
    monkeypatch.setattr(Path, "stat", lambda self, *a, **k: calls.append(1) or os.stat(self))
    with file_stats.unchanged_files():
        file_stats.stat(root / "utils.py")
        file_stats.stat(root / "utils.py")
    file_stats.stat(root / "utils.py")
    file_stats.stat(root / "utils.py")
    assert len(calls) == 3  # remembered only inside the scope


BLOCKS = """\
import torch


class Mlp(torch.nn.Module):
    def forward(self, x):
        return x * x.mean().item()


class Attn(torch.nn.Module):
    def forward(self, x):
        return x + x.max().item()


class Norm(torch.nn.Module):
    def forward(self, x):
        return x / x.norm().item()


class Net(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.norm = Norm()
        self.attn = Attn()
        self.mlps = torch.nn.ModuleList([Mlp() for _ in range(4)])

    def forward(self, x):
        x = self.attn(self.norm(x))
        for mlp in self.mlps:
            x = mlp(x)
        return self.head(x)

    def head(self, x):
        return x
"""

LOOP = """\
import torch
from blocks import Net

model = Net().cuda()
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for x in loader:
    model(x.cuda(non_blocking=True)).sum().backward()
    opt.step()
"""


def test_an_owner_forward_is_read_once_for_all_its_submodules(tmp_path: Path, monkeypatch) -> None:
    """`_submodule_site` asks, for each submodule class, where the owner's `forward` calls it: the owner's
    `forward` (and the methods it calls through `self`) are walked once per class, not once per question."""
    import ast

    from gpulint import ast_walk, parallel
    from gpulint.config import Settings
    from gpulint.diagnostics import FixMode

    root = write_project(tmp_path / "p", {"blocks.py": BLOCKS, "train.py": LOOP})
    walked: list = []
    for module in (ast, ast_walk):
        original = module.walk

        def counting(node, original=original):
            if isinstance(node, ast.FunctionDef) and node.name in ("forward", "head") and node.lineno > 25:
                walked.append(node.name)
            return original(node)

        monkeypatch.setattr(module, "walk", counting)
    outcomes = parallel.lint_files([root / "blocks.py"], Settings(root=root), FixMode.NONE, write=False,
                                   want_edits=False, jobs=1)
    rows = {(d.code, d.location.row) for d in outcomes[0].diagnostics}
    # every submodule's forward is per-step code, through its call in Net.forward
    assert {("GPU101", 6), ("GPU101", 11), ("GPU101", 16)} <= rows, rows
    # two walks here (the methods it calls, then its calls) for the three classes, two or three by other
    # analyses, one by the helper summary's per-element read question (analysis/element_reads.py, once per
    # function) and one by its NumPy-parameter question (`_Summarizer._numpy_params`, once per function); one walk
    # per question read it 11 times
    assert walked.count("forward") <= 7, walked
