"""The results cache and the worker pool: same answers as a plain run, faster the second time."""

from __future__ import annotations

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
        torch.cuda.empty_cache()
""")


def run(*args):
    return CliRunner().invoke(main, ["check", *args], catch_exceptions=False)


@pytest.fixture
def project(tmp_path: Path, monkeypatch) -> Path:
    monkeypatch.chdir(tmp_path)
    for n in range(12):
        (tmp_path / f"train_{n}.py").write_text(TRAIN if n % 3 else TRAIN.replace("print(loss.item())", "pass"))
    (tmp_path / "clean.py").write_text("import torch\nx = torch.zeros(2).cuda()\n")
    return tmp_path


def no_parsing(monkeypatch):
    import libcst

    def refuse(*args, **kwargs):
        raise AssertionError("parsed a file the cache should have answered for")

    monkeypatch.setattr(libcst, "parse_module", refuse)
    monkeypatch.setattr("gpulint.runner.cst.parse_module", refuse)


def test_warm_run_parses_nothing_and_prints_the_same(project, monkeypatch):
    cold = run("--jobs", "1", ".")
    assert cold.exit_code == 1 and "GPU101" in cold.output and "^^^" in cold.output
    assert (project / ".gpulint_cache" / "CACHEDIR.TAG").exists()
    no_parsing(monkeypatch)
    warm = run("--jobs", "1", ".")
    assert warm.output == cold.output  # source lines and carets included
    assert warm.exit_code == 1


def test_a_warm_run_never_loads_libcst_or_the_rules(project):
    """A run that the cache answers for every file costs a fresh process no LibCST import (most of a warm run's
    CPU before: about 0.25 of 0.37 s on pytorch/examples) and no rule module."""
    import subprocess
    import sys

    script = ("import sys\n"
              "from gpulint.cli import main\n"
              "try:\n"
              "    main(['check', '--jobs', '2', '.'])\n"
              "except SystemExit:\n"
              "    pass\n"
              "loaded = sorted(m for m in sys.modules if m == 'libcst' or m.startswith('gpulint.rules'))\n"
              "print('LOADED', loaded, file=sys.stderr)\n")

    def fresh():
        proc = subprocess.run([sys.executable, "-c", script], cwd=project, capture_output=True, text=True)
        return proc.stdout, proc.stderr.strip().splitlines()[-1]

    cold_out, cold_loaded = fresh()
    assert "GPU101" in cold_out and "'libcst'" in cold_loaded  # the first run lints, so it loads them
    warm_out, warm_loaded = fresh()
    assert warm_out == cold_out
    assert warm_loaded == "LOADED []"


def test_a_warm_run_never_imports_what_only_writing_or_a_typo_needs(project):
    """A run the cache answers for every file writes nothing and prints no diff or suggestion: its fresh process
    imports neither `tempfile` (with `shutil` and `random`: a fix's or a cache entry's atomic write), `glob` (stale
    temporary files), nor `difflib` (`--diff`, "did you mean"). They were a few milliseconds of its start-up."""
    import subprocess
    import sys

    script = ("import sys\n"
              "from gpulint.cli import main\n"
              "try:\n"
              "    main(['check', '--jobs', '1', '.'])\n"
              "except SystemExit:\n"
              "    pass\n"
              "print('LOADED', sorted(m for m in ('difflib', 'tempfile', 'shutil', 'glob') if m in sys.modules), "
              "file=sys.stderr)\n")

    def fresh():
        proc = subprocess.run([sys.executable, "-c", script], cwd=project, capture_output=True, text=True)
        return proc.stdout, proc.stderr.strip().splitlines()[-1]

    cold_out, cold_loaded = fresh()
    assert "GPU101" in cold_out and "'tempfile'" in cold_loaded  # the first run writes the cache's entries
    warm_out, warm_loaded = fresh()
    assert warm_out == cold_out
    assert warm_loaded == "LOADED []"
    # what they are for still works where it is needed: a suggestion for a mistyped code
    from gpulint.codes import closest

    assert closest("GPU1O1") == "GPU101"


def test_json_output_with_fix_edits_is_cached_too(project, monkeypatch):
    cold = run("--jobs", "1", "--output-format", "json", ".")
    assert '"edits"' in cold.output and '"content"' in cold.output
    no_parsing(monkeypatch)
    assert run("--jobs", "1", "--output-format", "json", ".").output == cold.output


def test_cache_follows_content_and_settings(project, monkeypatch):
    run(".")
    (project / "train_1.py").write_text(TRAIN.replace("torch.cuda.empty_cache()", "pass"))
    edited = run("--output-format", "concise", ".")
    assert "train_1.py:10" not in edited.output  # the edit is seen
    assert "train_2.py:10:5: GPU110" in edited.output
    selected = run("--output-format", "concise", "--select", "GPU110", ".")
    assert "GPU101" not in selected.output and "GPU110" in selected.output


def test_corrupt_entries_are_ignored(project):
    first = run(".")
    entries = list((project / ".gpulint_cache").rglob("*.json"))
    assert entries
    for i, entry in enumerate(entries):
        entry.write_bytes(b"" if i % 2 else b'{"diagnostics": [["GPU1')
    assert run(".").output == first.output


def test_no_cache_writes_nothing_and_fix_is_never_answered_from_cache(project, monkeypatch):
    run("--no-cache", ".")
    assert not (project / ".gpulint_cache").exists()
    run(".")
    result = run("--fix", "--unsafe-fixes", ".")
    assert "Fixed" in result.output
    assert "empty_cache" not in (project / "train_1.py").read_text()


def test_clean_removes_the_cache(project):
    run(".")
    result = CliRunner().invoke(main, ["clean"])
    assert result.exit_code == 0 and "Removed" in result.output
    assert not (project / ".gpulint_cache").exists()
    assert "No cache" in CliRunner().invoke(main, ["clean"]).output
    (project / ".gpulint_cache").mkdir()
    (project / ".gpulint_cache" / "mine.txt").write_text("not ours")
    refused = CliRunner().invoke(main, ["clean"])
    assert refused.exit_code == 2 and (project / ".gpulint_cache" / "mine.txt").exists()


def test_parallel_output_is_identical_and_ordered(project):
    one = run("--no-cache", "--jobs", "1", ".")
    two = run("--no-cache", "--jobs", "2", ".")
    assert one.exit_code == two.exit_code == 1
    assert two.output == one.output
    names = [line.split(":")[0] for line in run("--no-cache", "--jobs", "2", "--output-format", "concise",
                                                ".").output.splitlines() if ": GPU" in line]
    assert names and names == sorted(names)  # by path, whichever worker finished first


def test_parallel_fix_matches_in_process_fix(project, tmp_path_factory):
    twin = tmp_path_factory.mktemp("twin")
    for path in project.glob("*.py"):
        (twin / path.name).write_text(path.read_text())
    run("--no-cache", "--jobs", "2", "--fix", "--unsafe-fixes", str(project))
    run("--no-cache", "--jobs", "1", "--fix", "--unsafe-fixes", str(twin))
    for path in project.glob("*.py"):
        assert path.read_text() == (twin / path.name).read_text()


def test_concurrent_runs_share_the_cache_safely(project):
    import subprocess
    import sys

    command = [sys.executable, "-m", "gpulint", "check", "--jobs", "1", "--output-format", "concise", "."]
    procs = [subprocess.Popen(command, cwd=project, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
             for _ in range(3)]
    outputs = [p.communicate(timeout=120) for p in procs]
    assert [p.returncode for p in procs] == [1, 1, 1]
    assert len({out for out, _err in outputs}) == 1 and not any(err for _out, err in outputs)
    assert run("--output-format", "concise", ".").output == outputs[0][0]


def test_a_copied_project_with_its_cache_checks_its_own_helper_files(tmp_path: Path, monkeypatch):
    """`cp -r` of a checkout (or a CI cache restored at another path) carries `.gpulint_cache/`: an entry whose
    findings depend on a helper module must compare the copy's helper, not the original's, which is unchanged."""
    import shutil
    import subprocess
    import sys

    helper = "import torch\n\n\ndef log_loss(loss):\n    return loss.item()\n"
    train = textwrap.dedent("""\
        import torch
        from helpers import log_loss


        def train(model, loader, optimizer):
            for x in loader:
                loss = model(x.cuda(non_blocking=True)).sum()
                optimizer.zero_grad()
                loss.backward()
                optimizer.step()
                log_loss(loss)
    """)
    first = tmp_path / "first"
    first.mkdir()
    (first / "pyproject.toml").write_text("[project]\nname = 'x'\n")
    (first / "helpers.py").write_text(helper)
    (first / "train.py").write_text(train)

    def lint(root: Path) -> str:
        return subprocess.run([sys.executable, "-m", "gpulint", "check", "--output-format", "concise", "."],
                              cwd=root, capture_output=True, text=True).stdout

    assert "train.py:11:9: GPU112" in lint(first)
    second = tmp_path / "second"
    shutil.copytree(first, second)
    assert (second / ".gpulint_cache").is_dir()
    (second / "helpers.py").write_text(helper.replace("return loss.item()", "return loss.detach()"))
    assert "GPU112" not in lint(second)
    assert "train.py:11:9: GPU112" in lint(first)  # the original's entry still answers for the original
