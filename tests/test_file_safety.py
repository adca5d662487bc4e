"""--fix never leaves a file half-written: atomic replace, mode kept, concurrent edits not overwritten.

Temporary files: a run killed between writing a temporary file and renaming it leaves
`.<name>.<pid>.<random>.gpulint-tmp` beside the file. Discovery never lints those, and the next `--fix` that
writes the file deletes the ones whose process is gone. The kill test below checks both halves.
"""

from __future__ import annotations

import os
import signal
import stat
import subprocess
import sys
import textwrap
import time
from pathlib import Path

from click.testing import CliRunner

from gpulint.cli import main
from gpulint.config import Settings
from gpulint.diagnostics import FixMode
from gpulint.pipeline import lint_file
from gpulint.files import TEMP_SUFFIX
from gpulint.runner import fix_source

TEMPLATE = textwrap.dedent("""\
    # file {n}
    import torch
    from torch.utils.data import DataLoader

    model = torch.nn.Linear(4, 2).cuda()
    loader = DataLoader([1, 2], pin_memory=True)
    for x in loader:
        model(x).sum().backward()
        torch.cuda.empty_cache()
""")


def test_kill_9_during_fix_leaves_every_file_original_or_fully_fixed(tmp_path: Path):
    fixed_template = fix_source(TEMPLATE, unsafe=True)
    assert fixed_template != TEMPLATE
    count = 1000
    originals, expected = {}, {}
    for n in range(count):
        path = tmp_path / f"d{n % 10}" / f"train_{n}.py"
        path.parent.mkdir(exist_ok=True)
        originals[path] = TEMPLATE.format(n=n).encode()
        expected[path] = fixed_template.format(n=n).encode()
        path.write_bytes(originals[path])

    proc = subprocess.Popen([sys.executable, "-m", "gpulint", "check", "--fix", "--unsafe-fixes", "--no-cache",
                             "--jobs", "2", "-q", str(tmp_path)], stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL, start_new_session=True)
    probe = sorted(originals)[:50]  # the biggest-first order is stable for equal sizes: these go early
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and proc.poll() is None:
        if any(p.read_bytes() != originals[p] for p in probe):
            break
        time.sleep(0.005)
    os.killpg(proc.pid, signal.SIGKILL)  # the CLI and its workers
    proc.wait()

    states = {"original": 0, "fixed": 0}
    for path, before in originals.items():
        now = path.read_bytes()
        assert now in (before, expected[path]), f"{path.name} is damaged"
        states["original" if now == before else "fixed"] += 1
    assert states["fixed"] > 0 and states["original"] > 0, states  # killed midway, as intended

    # The next run finishes the job and leaves no temporary file behind.
    result = CliRunner().invoke(main, ["check", "--fix", "--unsafe-fixes", "--no-cache", "-q", str(tmp_path)])
    assert result.exit_code == 0, result.output
    assert all(path.read_bytes() == expected[path] for path in originals)
    assert not list(tmp_path.rglob(f"*{TEMP_SUFFIX}"))


def test_stale_temp_files_are_ignored_then_removed(tmp_path: Path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    target = tmp_path / "train.py"
    target.write_text(TEMPLATE.format(n=0))
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    stale = tmp_path / f".train.py.{dead.pid}.abc123{TEMP_SUFFIX}"
    stale.write_text("half a file (")
    live = tmp_path / f".train.py.{os.getppid()}.xyz{TEMP_SUFFIX}"  # a running process's: left alone
    live.write_text("in progress")
    result = CliRunner().invoke(main, ["check", "--no-cache", "--output-format", "concise", "."])
    assert "gpulint-tmp" not in result.output  # never linted
    assert stale.exists()  # a check run deletes nothing
    CliRunner().invoke(main, ["check", "--fix", "--unsafe-fixes", "--no-cache", "."])
    assert not stale.exists()
    assert live.exists()


def test_fix_keeps_the_file_mode(tmp_path: Path):
    target = tmp_path / "train.py"
    target.write_text(TEMPLATE.format(n=0))
    target.chmod(0o750)
    outcome = lint_file(target, Settings(root=tmp_path), FixMode.UNSAFE)
    assert outcome.fixed_count == 1
    assert stat.S_IMODE(target.stat().st_mode) == 0o750
    assert "empty_cache" not in target.read_text()


def test_a_file_changed_while_fixing_is_not_overwritten(tmp_path: Path, monkeypatch):
    target = tmp_path / "train.py"
    target.write_text(TEMPLATE.format(n=0))
    import gpulint.runner

    real = gpulint.runner.lint_source

    def meanwhile_the_user_saves(*args, **kwargs):
        result = real(*args, **kwargs)
        target.write_text(TEMPLATE.format(n=0) + "print('edited by the user')\n")
        return result

    monkeypatch.setattr(gpulint.runner, "lint_source", meanwhile_the_user_saves)
    outcome = lint_file(target, Settings(root=tmp_path), FixMode.UNSAFE)
    assert list(outcome.errors) == [f"{target}: changed on disk while gpulint was fixing it; not overwritten"]
    assert outcome.fixed_count == 0
    assert target.read_text().endswith("print('edited by the user')\n")
    assert [d.code for d in outcome.diagnostics] == ["GPU110"]  # still reported, not claimed as fixed
