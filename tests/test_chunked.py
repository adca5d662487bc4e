"""A big module is linted in chunks of its top-level statements, one LibCST tree alive at a time (issue 13,
gpulint/chunked.py): the same findings as the whole module's lint, at a fraction of its peak memory.

The threshold is lowered here so that the fixtures and small generated modules are cut into many chunks.
"""

from __future__ import annotations

import tracemalloc
from pathlib import Path

import pytest

from gpulint import chunked
from gpulint.diagnostics import FixMode
from gpulint.rule import all_rules
from gpulint.runner import lint_source
from test_faults import _generated  # the benchmark's module, N functions of it

REPO = Path(__file__).resolve().parent.parent
CODES = frozenset(code for code, rule in all_rules().items() if not rule.preview)
ALL_CODES = frozenset(all_rules())


def _found(result) -> list:
    return [(d.code, d.location.row, d.location.column, d.end_location.row, d.end_location.column, d.message,
             tuple((r.location.row, r.location.column) for r in (d.related or ()) if hasattr(r, "location")))
            for d in result.diagnostics]


def _lint(text: str, *, chunk: int | None, codes=CODES, path=None, **kw):
    old = chunked.THRESHOLD, chunked.CHUNK
    chunked.THRESHOLD, chunked.CHUNK = (0, chunk) if chunk is not None else (10 ** 12, old[1])
    try:
        return lint_source(text, str(path or "big.py"), codes, path=path, **kw)
    finally:
        chunked.THRESHOLD, chunked.CHUNK = old


def test_a_big_module_is_linted_in_chunks_with_the_same_findings_at_a_fraction_of_the_memory():
    text = _generated(150)
    assert chunked.plan(text, chunk=10_000) is not None and len(chunked.plan(text, chunk=10_000).chunks) > 5
    peaks = []
    results = []
    for chunk in (None, 10_000):
        tracemalloc.start()
        try:
            results.append(_lint(text, chunk=chunk))
            peaks.append(tracemalloc.get_traced_memory()[1])
        finally:
            tracemalloc.stop()
    whole, pieces = results
    assert len(whole.diagnostics) > 500
    assert _found(pieces) == _found(whole) and pieces.errors == whole.errors
    assert peaks[1] < 0.7 * peaks[0], peaks  # 21 and 13.5 MB traced: the fixed costs weigh at this size


def _fixture_files() -> list[Path]:
    return sorted(p for p in REPO.glob("fixtures/**/*.py"))


@pytest.mark.parametrize("start", [0, 1])
def test_every_fixture_gives_the_same_findings_in_chunks_of_a_few_statements(start):
    """Every fixture (rules' positive and negative programs, example projects with their project model), cut
    into as many chunks as their groups of statements allow: the findings, their positions and related locations, and the errors
    are those of the whole module's lint."""
    cut = 0
    for path in _fixture_files()[start::2]:
        text = path.read_text(encoding="utf-8")
        whole = _lint(text, chunk=None, codes=ALL_CODES, path=path)
        pieces = _lint(text, chunk=1, codes=ALL_CODES, path=path)
        assert _found(pieces) == _found(whole), path
        assert pieces.errors == whole.errors, path
        cut += chunked.plan(text, chunk=1) is not None
    assert cut >= 8  # most fixtures are one group of statements that read each other (a script and its main)


FAR_APART = '''import torch

device = torch.device("cuda")


def step(model, x, opt):
    loss = model(x.to(device)).sum()
    loss.backward()
    opt.step()
    print(loss.item())
    return loss
''' + "".join(f'''

def unrelated_{i}(a):
    return a + {i}
''' for i in range(60)) + '''

def train(model, loader, opt):
    for x in loader:
        step(model, x, opt)


if __name__ == "__main__":
    train(None, [], None)
'''


def test_a_helper_and_the_loop_calling_it_are_linted_in_one_chunk():
    """`train`'s loop calls `step`, defined far above it: they share a chunk, so `step`'s `.item()` is still
    known to run every step."""
    plan = chunked.plan(FAR_APART, chunk=200)
    assert plan is not None and len(plan.chunks) > 3
    names = [FAR_APART.split("\n")[plan.statements[i].first - 1] for i in plan.chunks[0]]
    assert any(n.startswith("def step") for n in names) and any(n.startswith("def train") for n in names)
    whole, pieces = _lint(FAR_APART, chunk=None), _lint(FAR_APART, chunk=200)
    assert any(d.code == "GPU101" or "item" in d.message for d in whole.diagnostics)
    assert _found(pieces) == _found(whole)


def test_noqa_comments_hold_in_chunks():
    text = FAR_APART.replace("print(loss.item())", "print(loss.item())  # noqa")
    assert _found(_lint(text, chunk=200)) == _found(_lint(text, chunk=None))
    silenced = "# gpulint: noqa\n" + FAR_APART
    assert _found(_lint(silenced, chunk=200)) == [] == _found(_lint(silenced, chunk=None))


def test_fixes_are_computed_on_the_whole_module():
    """`--fix` output is byte-identical whatever the threshold (a fix may touch the module's imports)."""
    text = _generated(40)
    for mode in (FixMode.SAFE, FixMode.UNSAFE):
        assert _lint(text, chunk=2_000, fix=mode).source == _lint(text, chunk=None, fix=mode).source


def test_modules_that_cannot_be_cut_are_linted_whole():
    assert chunked.plan("x = 1\r\ny = 2\r\n" * 1000, chunk=10) is None  # \r line ends
    assert chunked.plan("def f():\n" + "    x = 1\n" * 1000, chunk=10) is None  # one statement
    # everything reads everything: one group
    text = "".join(f"def f{i}():\n    return f{(i + 1) % 50}()\n\n" for i in range(50))
    assert chunked.plan(text, chunk=10) is None


GLOBALS = '''import torch
import torch.nn as nn


class Net(nn.Module):
    def forward(self, x):
        return x * 2


model = Net().cuda()
''' + "".join(f'''

def filler_{i}(a):
    return a - {i}
''' for i in range(40)) + '''

def train(loader, opt):
    for x in loader:
        loss = model(x.cuda()).sum()
        loss.backward()
        opt.step()
        if loss.item() > 3:
            print("big")
'''


def test_a_module_global_stays_with_its_class_and_the_function_that_reads_it():
    """`model = Net().cuda()` binds a module name that `train` reads, and reads `Net`: the three are one group,
    so `train` still knows `model` is a CUDA network (its loop is a training loop)."""
    plan = chunked.plan(GLOBALS, chunk=100)
    assert plan is not None and len(plan.chunks) > 3
    lines = GLOBALS.split("\n")
    group = next(c for c in plan.chunks if any(lines[plan.statements[i].first - 1].startswith("def train")
                                               for i in c))
    starts = {lines[plan.statements[i].first - 1].split("(")[0] for i in group}
    assert {"class Net", "model = Net", "def train"} <= starts
    whole, pieces = _lint(GLOBALS, chunk=None), _lint(GLOBALS, chunk=100)
    assert whole.diagnostics and _found(pieces) == _found(whole)


def test_a_helper_process_lints_every_other_chunk(monkeypatch):
    """Two cores: the odd chunks are linted in a forked helper while this process lints the even ones, and the
    results come back in the chunks' order; with one process (`--jobs 1`) all are linted here."""
    import os

    monkeypatch.setattr(chunked, "HELPERS", 1)
    monkeypatch.setattr(chunked, "_may_fork", lambda count: count >= 2)
    got = chunked.map_chunks(lambda i: (i, os.getpid()), 5)
    assert [i for i, _ in got] == [0, 1, 2, 3, 4]
    assert {pid for i, pid in got if i % 2 == 0} == {os.getpid()}
    assert os.getpid() not in {pid for i, pid in got if i % 2}
    chunked.helpers_for(1)
    assert chunked.HELPERS == 0


def test_a_failing_helper_leaves_its_chunks_to_this_process(monkeypatch):
    import os

    parent = os.getpid()
    monkeypatch.setattr(chunked, "_may_fork", lambda count: True)

    def lint_one(i):
        if os.getpid() != parent:
            raise RuntimeError("helper broke")
        return i * 10

    assert chunked.map_chunks(lint_one, 4) == [0, 10, 20, 30]


def test_chunks_linted_in_two_processes_give_the_findings_of_one(monkeypatch):
    text = _generated(120)
    results = []
    for helpers in (0, 1):
        monkeypatch.setattr(chunked, "HELPERS", helpers)
        monkeypatch.setattr(chunked, "_may_fork", lambda count, h=helpers: h > 0 and count >= 2)
        results.append(_lint(text, chunk=5_000, codes=ALL_CODES))
    assert len(results[0].diagnostics) > 300
    assert _found(results[1]) == _found(results[0]) == _found(_lint(text, chunk=None, codes=ALL_CODES))
    assert results[1].errors == results[0].errors
