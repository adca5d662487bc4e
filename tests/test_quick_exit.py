"""The program ends without the interpreter's teardown after a batch lint (gpulint/runtime.py, `cli.entry`), and
loses nothing by it: every finding printed, the same exit code, the cache written."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from click.testing import CliRunner

from gpulint.cli import main

TRAIN = textwrap.dedent("""\
    import torch
    from torch.utils.data import DataLoader

    model = torch.nn.Linear(4, 2).cuda()
    loader = DataLoader([1, 2])
    for x in loader:
        loss = model(x).sum()
        loss.backward()
        print(loss.item())
""")

# The program as the `gpulint` script runs it, with a marker that the interpreter's orderly end prints (an
# atexit handler runs only in that end).
PROGRAM = textwrap.dedent("""\
    import atexit, sys
    atexit.register(lambda: print("TEARDOWN", file=sys.stderr))
    from gpulint.cli import entry
    sys.argv = ["gpulint", *sys.argv[1:]]
    entry()
""")


@pytest.fixture
def project(tmp_path: Path) -> Path:
    for n in range(10):
        (tmp_path / f"train_{n}.py").write_text(TRAIN)
    (tmp_path / "gpulint.toml").write_text("")
    return tmp_path


def program(project: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", PROGRAM, *args], cwd=project, capture_output=True, text=True,
                          timeout=120)


@pytest.mark.parametrize("jobs", ["1", "2"])
def test_a_lint_ends_without_teardown_and_prints_everything(project, jobs, monkeypatch):
    ran = program(project, "check", "--jobs", jobs, "--output-format", "json", ".")
    assert "TEARDOWN" not in ran.stderr  # the quick end
    assert ran.returncode == 1  # findings: the exit code survives it
    monkeypatch.chdir(project)
    in_process = CliRunner().invoke(main, ["check", "--jobs", "1", "--no-cache", "--output-format", "json", "."])
    assert ran.stdout == in_process.output  # all of the output, flushed
    assert (project / ".gpulint_cache" / "CACHEDIR.TAG").exists()
    warm = program(project, "check", "--jobs", jobs, "--output-format", "json", ".")
    assert warm.stdout == ran.stdout and warm.returncode == 1


def test_exit_codes_of_a_quick_end(project):
    assert program(project, "check", "--exit-zero", ".").returncode == 0
    (project / "clean.py").write_text("x = 1\n")
    clean = program(project, "check", "--no-cache", "clean.py")
    assert clean.returncode == 0 and "All checks passed!" in clean.stdout and "TEARDOWN" not in clean.stderr


def test_commands_without_a_batch_lint_end_as_before(project):
    ran = program(project, "rule", "GPU101")
    assert ran.returncode == 0 and "TEARDOWN" in ran.stderr
    usage = program(project, "check", "--select")
    assert usage.returncode == 2 and "TEARDOWN" in usage.stderr


def test_the_collector_keeps_its_batch_settings_only_in_an_ending_process():
    import gc

    from gpulint import runtime

    before = gc.get_threshold()
    with runtime.batch():
        assert gc.get_threshold() == runtime.BATCH_THRESHOLDS
    assert gc.get_threshold() == before  # a test's (or the language server's) process: restored
