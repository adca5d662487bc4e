"""The number of worker processes follows the amount of text to lint: a second worker builds its own project
model and parses the same callers again, which costs more CPU than it saves on a small repository
(`gpulint.parallel.LINES_PER_WORKER`); `--jobs` is the most it uses."""

from __future__ import annotations

from pathlib import Path

import pytest

from gpulint import parallel
from gpulint.config import Settings
from gpulint.diagnostics import FixMode

SCRIPT = """\
import torch

def train(model, loader, opt):
    for batch in loader:
        loss = model(batch.cuda()).mean()
        loss.backward()
        opt.step()
        print(loss.item())
"""


def _project(root: Path, files: int, padding: int = 0) -> list[Path]:
    (root / "pyproject.toml").write_text("")
    paths = []
    for k in range(files):
        path = root / f"m{k}.py"
        path.write_text(SCRIPT + "".join(f"x_{i} = {i}\n" for i in range(padding)))
        paths.append(path)
    return paths


def _forks(monkeypatch) -> list[int]:
    """Records the pools started (their sizes), and lints in-process instead."""
    started: list[int] = []

    class Pool:
        def __init__(self, workers):
            started.append(workers)

        def __enter__(self):
            return self

        def __exit__(self, *exc):
            return False

        def imap_unordered(self, work, tasks, chunksize=1):
            return map(work, tasks)

    class Context:
        Pool = staticmethod(lambda workers: Pool(workers))

    import multiprocessing

    monkeypatch.setattr(multiprocessing, "get_context", lambda method: Context())
    return started


def _lint(paths: list[Path], root: Path, jobs: int):
    return parallel.lint_files(paths, Settings(root=root), FixMode.NONE, write=False, want_edits=False, jobs=jobs)


def test_a_small_repository_is_linted_in_one_process(tmp_path: Path, monkeypatch):
    monkeypatch.delenv("GPULINT_LINES_PER_WORKER", raising=False)
    started = _forks(monkeypatch)
    paths = _project(tmp_path, 12)
    outcomes = _lint(paths, tmp_path, jobs=2)
    assert started == []  # no pool: 12 small files are far below a worker's share
    assert [o.path for o in outcomes] == paths
    assert all(any(d.code == "GPU101" for d in o.diagnostics) for o in outcomes)


def test_enough_text_starts_the_workers_jobs_allows(tmp_path: Path, monkeypatch):
    monkeypatch.delenv("GPULINT_LINES_PER_WORKER", raising=False)
    monkeypatch.setattr(parallel, "LINES_PER_WORKER", 100)
    started = _forks(monkeypatch)
    paths = _project(tmp_path, 12, padding=20)  # 12 files of 28 lines: 300 lines, 3 workers' worth
    outcomes = _lint(paths, tmp_path, jobs=2)
    assert started == [2]  # as many as the text pays for, at most --jobs
    assert [o.path for o in outcomes] == paths


@pytest.mark.parametrize("value, expected", [("1", [2]), ("not a number", [])])
def test_the_environment_overrides_the_share(tmp_path: Path, monkeypatch, value, expected):
    monkeypatch.setenv("GPULINT_LINES_PER_WORKER", value)
    started = _forks(monkeypatch)
    _lint(_project(tmp_path, 12), tmp_path, jobs=2)
    assert started == expected
