"""The one file pipeline: read and hash once, immutable results, loud rule crashes, the short command form,
stdin as editors call it, notebooks without extras and with a broken cell, and failed writes reported as the
I/O errors they are."""

from __future__ import annotations

import dataclasses
import json
import os
import pathlib
import resource
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from gpulint.cli import main
from gpulint.diagnostics import Diagnostic
from gpulint.rule import all_rules

TRAIN = """\
import torch
from torch.utils.data import DataLoader

model = torch.nn.Linear(4, 2).cuda()
loader = DataLoader([1, 2])
for x in loader:
    loss = model(x.cuda()).sum()
    loss.backward()
    print(loss.item())
"""
FIXED = TRAIN.replace("DataLoader([1, 2])", "DataLoader([1, 2], pin_memory=True)").replace(
    "x.cuda()", "x.cuda(non_blocking=True)")


@pytest.fixture
def project(tmp_path, monkeypatch) -> Path:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "train.py").write_text(TRAIN)
    return tmp_path


def run(*args, input=None):
    return CliRunner().invoke(main, list(args), input=input)


def errors(result) -> list[str]:
    return [line for line in result.stderr.splitlines() if line]


# -- a crash inside a rule is loud ---------------------------------------------------------------------------
@pytest.mark.parametrize("extra", [["--no-cache", "-j", "1"], ["--jobs", "2"], []])
def test_a_rule_that_crashes_is_reported_and_fails_the_run(project, monkeypatch, extra):
    for n in range(5):  # enough files for worker processes with --jobs 2
        shutil.copy(project / "train.py", project / f"copy{n}.py")

    def broken(self, node):  # GPU101 raises on the `.item()` call of line 9
        if getattr(getattr(node.func, "attr", None), "value", None) == "item":
            raise RuntimeError("boom")

    monkeypatch.setattr(all_rules()["GPU101"], "visit_Call", broken)
    result = run("check", "--output-format", "concise", *extra, ".")
    assert result.exit_code == 2
    assert "gpulint: error: internal error in GPU101 on train.py:9: RuntimeError: boom" in errors(result)
    assert len(errors(result)) == 6  # one per file, each with its own name and line
    assert "train.py:5:10: GPU201" in result.stdout  # the other rules' findings still print
    assert "GPU101" not in result.stdout
    # Not cached as a clean result: the next run reports the crash again.
    again = run("check", "--output-format", "concise", *extra, ".")
    assert again.exit_code == 2 and errors(again) == errors(result)


def test_a_rule_that_crashes_in_a_notebook_names_the_cell(project, monkeypatch):
    def broken(self, node):
        if getattr(getattr(node.func, "attr", None), "value", None) == "item":
            raise RuntimeError("boom")

    monkeypatch.setattr(all_rules()["GPU101"], "visit_Call", broken)
    (project / "nb.ipynb").write_text(notebook(SETUP, LOOP))
    result = run("check", "--no-cache", "--output-format", "concise", "nb.ipynb")
    assert result.exit_code == 2
    assert errors(result) == ["gpulint: error: internal error in GPU101 on nb.ipynb:cell 2:4: RuntimeError: boom"]
    assert "nb.ipynb:cell 1:5:10: GPU201" in result.stdout


# -- immutable results -----------------------------------------------------------------------------------------
def test_results_are_values(project):
    from gpulint.pipeline import lint_file
    from gpulint.config import Settings

    outcome = lint_file(Path("train.py"), Settings(root=project))
    d = outcome.diagnostics[0]
    with pytest.raises(dataclasses.FrozenInstanceError):
        d.location = d.end_location
    with pytest.raises(dataclasses.FrozenInstanceError):
        outcome.diagnostics = ()
    portable = d.portable()
    assert portable.node is None and d.node is not None  # a new value; the finding itself is unchanged
    assert portable == d  # same finding
    # Rules still build findings as before.
    assert Diagnostic("GPU101", "item-in-loop", "m").location.row == 1


# -- read and hash once ------------------------------------------------------------------------------------------
def test_a_cache_miss_reads_the_file_once(project, monkeypatch):
    reads: list[str] = []
    real = pathlib.Path.read_bytes

    def counting(self):
        if self.name == "train.py":
            reads.append(str(self))
        return real(self)

    monkeypatch.setattr(pathlib.Path, "read_bytes", counting)
    result = run("check", "--output-format", "concise", "-j", "1", "train.py")  # cache on, empty: a miss
    assert result.exit_code == 1 and "GPU101" in result.stdout
    assert len(reads) == 1
    reads.clear()
    hit = run("check", "--output-format", "concise", "-j", "1", "train.py")
    assert hit.stdout == result.stdout and len(reads) == 1


# -- the short form ------------------------------------------------------------------------------------------------
def test_fix_without_the_check_subcommand(project):
    result = run("--fix", "train.py")
    assert result.exit_code == 1, result.output  # GPU101 has no fix
    assert (project / "train.py").read_text() == FIXED


def test_paths_without_the_check_subcommand_and_no_arguments_at_all(project):
    short = run("--no-cache", "--output-format", "concise", "train.py")
    long = run("check", "--no-cache", "--output-format", "concise", "train.py")
    assert short.exit_code == long.exit_code == 1 and short.stdout == long.stdout
    bare = run()
    assert bare.exit_code == 1 and "train.py:9:11: GPU101" in bare.stdout


def test_a_subcommand_wins_over_a_path_of_the_same_name(project):
    (project / "rule").mkdir()
    (project / "rule" / "t.py").write_text(TRAIN)
    listing = run("rule")
    assert listing.exit_code == 0 and "GPU101" in listing.stdout and "t.py" not in listing.stdout
    for spelling in (["check", "--no-cache", "rule"], ["--no-cache", "./rule"]):
        result = run("--output-format", "concise", *spelling) if spelling[0] != "check" else \
            run(*spelling, "--output-format", "concise")
        assert result.exit_code == 1 and "t.py:9:11: GPU101" in result.stdout
    assert "gpulint check rule" in run("--help").stdout


# -- stdin -------------------------------------------------------------------------------------------------------------
def test_stdin_filename_alone_reads_stdin(project):
    (project / "other.py").write_text("print('no findings here')\n")
    result = run("check", "--stdin-filename", "train.py", "--output-format", "concise", input=TRAIN)
    assert result.exit_code == 1
    assert "train.py:9:11: GPU101" in result.stdout
    fixed = run("--fix", "--stdin-filename", "train.py", input=TRAIN)
    assert fixed.stdout == FIXED
    assert (project / "train.py").read_text() == TRAIN  # stdin is linted, the file on disk is not touched


def notebook(*cells: str) -> str:
    return json.dumps({"cells": [{"cell_type": "code", "execution_count": None, "metadata": {}, "outputs": [],
                                  "source": cell.splitlines(keepends=True)} for cell in cells],
                       "metadata": {}, "nbformat": 4, "nbformat_minor": 5}, indent=1) + "\n"


SETUP, LOOP = TRAIN.split("for x in loader:\n")
LOOP = "for x in loader:\n" + LOOP


def test_a_notebook_on_stdin(project):
    text = notebook(SETUP, LOOP)
    result = run("--stdin-filename", "nb.ipynb", "--output-format", "concise", input=text)
    assert result.exit_code == 1
    assert "nb.ipynb:cell 2:4:11: GPU101" in result.stdout
    fixed = run("--fix", "--stdin-filename", "nb.ipynb", input=text)
    cells = ["".join(c["source"]) for c in json.loads(fixed.stdout)["cells"]]
    assert cells == [SETUP.replace("DataLoader([1, 2])", "DataLoader([1, 2], pin_memory=True)"),
                     LOOP.replace("x.cuda()", "x.cuda(non_blocking=True)")]


# -- notebooks: a broken cell is isolated ---------------------------------------------------------------------------
def test_a_cell_with_a_syntax_error_hides_nothing_else(project):
    broken = "for x in :\n    pass\n"
    (project / "nb.ipynb").write_text(notebook(SETUP, broken, LOOP))
    result = run("check", "--no-cache", "--output-format", "concise", "nb.ipynb")
    lines = [line for line in result.stdout.splitlines() if line.startswith("nb.ipynb")]
    assert [line for line in lines if "GPU001" in line] == ["nb.ipynb:cell 2:1:10: GPU001 SyntaxError: invalid syntax"]
    assert "nb.ipynb:cell 3:4:11: GPU101" in result.stdout and "nb.ipynb:cell 1:5:10: GPU201" in result.stdout
    fixed = run("check", "--fix", "--no-cache", "nb.ipynb")
    assert fixed.exit_code == 1
    cells = ["".join(c["source"]) for c in json.loads((project / "nb.ipynb").read_text())["cells"]]
    assert cells[0].endswith("DataLoader([1, 2], pin_memory=True)\n")
    assert cells[1] == broken  # left as it was
    assert "x.cuda(non_blocking=True)" in cells[2]


# -- failed writes -----------------------------------------------------------------------------------------------------
def _as_nobody():
    """Root writes through any permission bit: where we are root, gpulint runs without the capabilities that
    let it (CAP_DAC_OVERRIDE, CAP_DAC_READ_SEARCH, CAP_FOWNER dropped from the bounding set before exec)."""
    if os.getuid() == 0:
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        for capability in (1, 2, 3):
            if libc.prctl(24, capability, 0, 0, 0) != 0:  # PR_CAPBSET_DROP
                raise OSError(ctypes.get_errno(), "prctl(PR_CAPBSET_DROP)")


def gpulint(*args: str, cwd: Path, preexec=None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "gpulint", *args], cwd=cwd, capture_output=True, text=True,
                          timeout=120, preexec_fn=preexec)


def _two_files(tmp_path: Path) -> tuple[Path, Path]:
    """`locked/train.py`, which the test makes unwritable, and `free/other.py`, which stays writable."""
    locked, free = tmp_path / "locked", tmp_path / "free"
    for folder in (locked, free):
        folder.mkdir()
    (locked / "train.py").write_text(TRAIN)
    (free / "other.py").write_text(TRAIN)
    return locked / "train.py", free / "other.py"


def _assert_reported_and_untouched(result, target: Path, other: Path, reason: str) -> None:
    assert result.returncode == 2, result.stderr
    assert f"gpulint: error: cannot write locked/train.py: {reason}" in result.stderr.splitlines()
    assert "Traceback" not in result.stderr and "internal error" not in result.stderr
    assert target.read_bytes() == TRAIN.encode()  # byte-identical
    assert other.read_text() == FIXED  # the other file was still processed
    assert "locked/train.py:9:11: GPU101" in result.stdout  # the findings of the text as it is


def test_fix_in_a_read_only_directory(tmp_path):
    target, other = _two_files(tmp_path)
    target.parent.chmod(0o555)
    result = gpulint("check", "--fix", "--no-cache", "locked", "free", cwd=tmp_path, preexec=_as_nobody)
    _assert_reported_and_untouched(result, target, other, "Permission denied")


def test_fix_of_a_read_only_file(tmp_path):
    target, other = _two_files(tmp_path)
    target.chmod(0o444)
    result = gpulint("check", "--fix", "--no-cache", "locked", "free", cwd=tmp_path, preexec=_as_nobody)
    _assert_reported_and_untouched(result, target, other, "Permission denied")
    assert target.stat().st_mode & 0o777 == 0o444


def _full_disk():
    """A file may not grow past 1,000 bytes (a full disk, as writes see it); SIGXFSZ ignored, so a write fails
    with EFBIG instead of killing the process."""
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
    resource.setrlimit(resource.RLIMIT_FSIZE, (1000, 1000))


def test_fix_on_a_full_disk(tmp_path):
    target, other = _two_files(tmp_path)
    target.write_text(TRAIN + "#" * (1000 - len(TRAIN)) + "\n")  # fixed, it grows past the limit
    original = target.read_bytes()
    result = gpulint("check", "--fix", "--no-cache", "-j", "1", "locked", "free", cwd=tmp_path, preexec=_full_disk)
    assert result.returncode == 2, result.stderr
    assert "gpulint: error: cannot write locked/train.py: File too large" in result.stderr.splitlines()
    assert "Traceback" not in result.stderr and "internal error" not in result.stderr
    assert target.read_bytes() == original
    assert other.read_text() == FIXED
    assert not [p for p in target.parent.iterdir() if p.name.endswith(".gpulint-tmp")]
