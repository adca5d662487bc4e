"""The project-wide questions answered once, in the parent, before the workers fork (gpulint/parallel.py,
`_answer_before_forking`; issue 11's cold speed).

Each worker used to answer for itself whether a loop elsewhere runs a class or function of its files every step,
and both workers parsed and analysed the same training scripts to find out (the answers must not depend on the
worker: tests/test_determinism.py). The parent now builds each file's project model and answers the prefilter's
question for every file before forking; the workers inherit the answers. Same findings, the callers analysed
once in all (on pytorch/examples 26% less CPU with two workers), and a warm run still re-lints a model file whose
caller changed.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

from projects import check, found

FIXTURE = Path(__file__).resolve().parent.parent / "fixtures" / "projects" / "models"


def _project(tmp_path: Path) -> Path:
    root = tmp_path / "models"
    shutil.copytree(FIXTURE, root)
    for i in range(6):  # enough files for two workers (parallel.MIN_FILES_PER_WORKER)
        (root / f"extra_{i}.py").write_text(f"def helper_{i}(x):\n    return x + {i}\n")
    return root


def _caller_analyses(root: Path, monkeypatch, tmp_path: Path, jobs: int, shared: str) -> tuple[list, set]:
    """(the callers whose LibCST analysis some process made, in all processes; the findings)."""
    from gpulint import parallel
    from gpulint.analysis import forward
    from gpulint.config import Settings
    from gpulint.diagnostics import FixMode
    from gpulint.discovery import iter_files

    log = tmp_path / f"analysed_{jobs}_{shared}.txt"
    original = forward._hot_calls

    def logged(project, path):
        if path not in project.caller_analyses:
            with open(log, "a") as out:
                out.write(f"{os.getpid()} {path.name}\n")
        return original(project, path)

    monkeypatch.setattr(forward, "_hot_calls", logged)
    monkeypatch.setenv("GPULINT_SHARED_ANSWERS", shared)
    files = sorted(iter_files([root], Settings(root=root)))
    outcomes = parallel.lint_files(files, Settings(root=root), FixMode.NONE, write=False, want_edits=False,
                                   jobs=jobs)
    lines = log.read_text().split("\n") if log.exists() else []
    findings = {(Path(d.filename).name, d.location.row, d.code) for o in outcomes for d in o.diagnostics}
    return [(int(line.split()[0]) == os.getpid(), line.split()[1]) for line in lines if line], findings


def test_the_workers_inherit_the_callers_the_parent_analysed(tmp_path: Path, monkeypatch) -> None:
    """Each entry: (analysed in this, the parent, process; the caller analysed)."""
    one, alone = _caller_analyses(_project(tmp_path / "a"), monkeypatch, tmp_path, 1, "1")
    two, forked = _caller_analyses(_project(tmp_path / "b"), monkeypatch, tmp_path, 2, "1")
    twice, before = _caller_analyses(_project(tmp_path / "c"), monkeypatch, tmp_path, 2, "0")
    assert alone == forked == before
    assert ("queue.py", 20, "GPU105") in forked  # model code a loop of train.py runs every step
    # the callers: train.py, and queue.py, whose per-step calls hand submodules.py's methods the network's output
    # (helper_sites.methods_handed_device_tensors)
    callers = [(True, "train.py"), (True, "queue.py")]
    assert one == callers  # one process: each analysed once
    # two workers: each analysed once; train.py in the parent, before forking (the prefilter's question); queue.py
    # where submodules.py's lint asks (a rule's question, not answered before forking)
    assert sorted(name for _, name in two) == ["queue.py", "train.py"] and (True, "train.py") in two
    # without: in the workers, once by each worker that lints a file asking (one or two, as the pool hands out
    # the files), never in the parent
    assert twice and all(not in_parent and name in ("train.py", "queue.py") for in_parent, name in twice)


def test_a_warm_run_with_workers_relints_a_model_whose_caller_changed(tmp_path: Path) -> None:
    root = _project(tmp_path)
    assert ("models/queue.py", 20, "GPU105") in found(check(root, "--jobs", "2", "."))
    train = root / "train.py"
    train.write_text(train.read_text().replace("        out = model(x)\n", "        out = x\n"))
    assert not {f for f, _, _ in found(check(root, "--jobs", "2", ".")) if f.startswith("models/queue.py")}
