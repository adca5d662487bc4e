"""Fault injection (issue 13): hostile files, huge files, hostile names, misbehaving programs under `verify`, and
`check --fix` killed with SIGKILL at random moments. docs/robustness.md lists each case and its result.

The GPU301 "returned accumulator" case lives in fixtures/rules/GPU301/positive_returned.py (tests/test_rule_snapshots.py).
"""

from __future__ import annotations

import ast
import contextlib
import json
import os
import random
import shutil
import signal
import socket
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path
from urllib.parse import unquote
from xml.etree import ElementTree as ET

import libcst as cst
import pytest
from click.testing import CliRunner

from gpulint import bigfile
from gpulint.cli import main
from gpulint.files import FileError, SourceFile, read_regular

REPO = Path(__file__).resolve().parents[1]
FINDING = textwrap.dedent("""\
    import torch
    from torch.utils.data import DataLoader

    model = torch.nn.Linear(4, 2).cuda()
    loader = DataLoader([1, 2], pin_memory=True)
    for x in loader:
        loss = model(x).sum()
        loss.backward()
        print(loss.item())
""")


def gpulint(*args: str, cwd: Path, timeout: float = 120) -> subprocess.CompletedProcess:
    """The real entry point in a process of its own: a hang fails the test (timeout) instead of stalling it."""
    return subprocess.run([sys.executable, "-m", "gpulint", *args], cwd=cwd, capture_output=True, text=True,
                          timeout=timeout)


def run(*args: str):
    return CliRunner().invoke(main, ["check", "--no-cache", *args], catch_exceptions=False)


def stderr_lines(result) -> list[str]:
    return [line for line in result.stderr.splitlines() if line]


@pytest.fixture
def project(tmp_path: Path, monkeypatch) -> Path:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "train.py").write_text(FINDING)
    return tmp_path


def _without_blocking(function, *args):
    """Call `function`; fail (rather than hang the suite) if it has not returned within 20 s."""
    outcome: dict = {}

    def target():
        try:
            outcome["value"] = function(*args)
        except BaseException as exc:  # noqa: BLE001 (handed back to the test)
            outcome["error"] = exc

    thread = threading.Thread(target=target, daemon=True)
    thread.start()
    thread.join(20)
    assert not thread.is_alive(), f"{function.__name__} blocked"
    if "error" in outcome:
        raise outcome["error"]
    return outcome["value"]


# -- 1. only regular files are read -----------------------------------------------------------------------------
def test_fifo_in_a_linted_directory_is_skipped_not_read(project):
    os.mkfifo(project / "x.py")  # opening it for reading would wait for a writer forever
    proc = gpulint("check", "--no-cache", "--output-format", "concise", ".", cwd=project, timeout=60)
    assert proc.returncode == 1
    assert "train.py:9:11: GPU101" in proc.stdout
    assert proc.stderr.splitlines() == ["gpulint: warning: x.py: a named pipe (FIFO), not a regular file; skipped"]


def test_a_fifo_beside_a_model_file_never_blocks_the_project_model(project):
    """Only the named file is linted, but the project model reads its neighbours (which file runs `Net` every
    step?): a FIFO among them must be passed over, not opened to wait for a writer."""
    os.mkfifo(project / "x.py")
    (project / "train.py").write_text(textwrap.dedent("""\
        import torch
        import torch.nn as nn


        class Net(nn.Module):
            def forward(self, x):
                print(x.sum().item())
                return x
        """) + FINDING.replace("torch.nn.Linear(4, 2)", "Net()"))
    proc = gpulint("check", "--no-cache", "--output-format", "concise", "train.py", cwd=project, timeout=60)
    assert "train.py:7:15: GPU101" in proc.stdout, proc.stdout + proc.stderr


def test_socket_and_symlink_loop_in_a_directory_are_skipped_with_one_line_each(project):
    server = socket.socket(socket.AF_UNIX)
    server.bind(str(project / "s.py"))
    (project / "loop.py").symlink_to(project / "loop.py")
    try:
        proc = gpulint("check", "--no-cache", ".", cwd=project, timeout=60)
    finally:
        server.close()
    assert proc.returncode == 1
    assert sorted(proc.stderr.splitlines()) == ["gpulint: warning: loop.py: symbolic link loop; skipped",
                                                "gpulint: warning: s.py: a socket, not a regular file; skipped"]


def test_non_regular_files_named_explicitly_are_errors_and_the_rest_is_linted(project):
    os.mkfifo(project / "pipe.py")
    proc = gpulint("check", "--no-cache", "--output-format", "concise", "pipe.py", "/dev/null", "train.py",
                   cwd=project, timeout=60)
    assert "train.py:9:11: GPU101" in proc.stdout
    assert sorted(proc.stderr.splitlines()) == [
        "gpulint: error: /dev/null: a character device, not a regular file; not read",
        "gpulint: error: pipe.py: a named pipe (FIFO), not a regular file; not read"]
    assert proc.returncode == 1  # findings win; with none it is 2:
    clean = gpulint("check", "--no-cache", "pipe.py", cwd=project, timeout=60)
    assert clean.returncode == 2 and "No findings, but 1 file could not be checked." in clean.stdout


def test_the_reader_refuses_a_fifo_without_blocking(project):
    """Even a file swapped for a pipe after discovery (a race) cannot block the reader."""
    os.mkfifo(project / "late.py")
    with pytest.raises(FileError, match=r"late\.py: a named pipe \(FIFO\), not a regular file"):
        _without_blocking(SourceFile.read, project / "late.py")
    data, st = read_regular(project / "train.py")
    assert data == FINDING.encode() and st.st_size == len(data)


def test_symlink_loop_named_explicitly_says_so(project):
    (project / "loop.py").symlink_to(project / "loop.py")
    result = CliRunner().invoke(main, ["check", "loop.py"])
    assert result.exit_code == 2 and result.output.strip() == "gpulint: error: loop.py: symbolic link loop"


# -- 2. bounded cost per file ------------------------------------------------------------------------------------
def test_files_above_max_file_size_are_skipped_with_one_line(project):
    (project / "generated.py").write_text(FINDING + "DATA = [\n" + "    1,\n" * 2000 + "]\n")
    result = run("--max-file-size", "10kB", "--output-format", "concise", ".")
    assert stderr_lines(result) == ["gpulint: warning: generated.py: 14.2 kB, larger than max-file-size (10.0 kB); "
                                    "skipped"]
    assert "generated.py" not in result.stdout and "train.py:9:11: GPU101" in result.stdout
    assert "generated.py:9:11: GPU101" in run("--max-file-size", "0", "--output-format", "concise", ".").stdout


def test_max_file_size_from_the_config_and_its_errors(project):
    (project / "pyproject.toml").write_text('[tool.gpulint]\nmax-file-size = "100B"\n')
    result = run(".")
    assert stderr_lines(result) == ["gpulint: warning: train.py: 222 bytes, larger than max-file-size (100 bytes); "
                                    "skipped"]
    assert result.exit_code == 0
    (project / "pyproject.toml").write_text('[tool.gpulint]\nmax-file-size = "lots"\n')
    bad = CliRunner().invoke(main, ["check", "."])
    assert bad.exit_code == 2 and bad.output.count("\n") == 1 and "max-file-size: expected a size" in bad.output


def test_the_default_limit_skips_a_6_mb_file(project):
    (project / "big.py").write_text("# " + "x" * 6_000_000 + "\n")
    result = run(".")
    assert stderr_lines(result) == ["gpulint: warning: big.py: 6.0 MB, larger than max-file-size (5.0 MB); skipped"]


def _generated(functions: int) -> str:
    sys.path.insert(0, str(REPO / "benchmarks"))
    try:
        import big_module
    finally:
        sys.path.pop(0)
    return big_module.HEADER + "".join(big_module.TEMPLATE.format(i=i, e=1, w=2, t=3) for i in range(functions))


def test_a_big_module_is_parsed_in_pieces_into_the_same_tree():
    text = _generated(600) + "\n# a trailing comment\n\n@decorated\nclass Last:\n    pass\n# end"
    parts = bigfile.pieces(text, 20_000)
    assert len(parts) > 5 and "".join(parts) == text
    joined = bigfile._parse_joined(parts)
    assert joined is not None
    assert joined.deep_equals(cst.parse_module(text)) and joined.code == text


@pytest.mark.parametrize("piece", [500, 2_000])
def test_pieces_of_every_fixture_join_into_the_whole_parse(piece):
    checked = 0
    for path in sorted((REPO / "fixtures").rglob("*.py")) + sorted((REPO / "gpulint").rglob("*.py")):
        text = path.read_text(encoding="utf-8")
        try:
            whole = cst.parse_module(text)
        except cst.ParserSyntaxError:
            continue
        parts = bigfile.pieces(text, piece)
        joined = bigfile._parse_joined(parts) if len(parts) > 1 else None
        if joined is not None:
            assert joined.deep_equals(whole) and joined.code == text, path
            checked += 1
    assert checked > 10


def test_a_cut_inside_a_string_falls_back_to_the_whole_parse():
    text = "X = '''\n" + "def not_code():\n    pass\n" * 2000 + "'''\n" + "def real():\n    return X\n" * 10
    parts = bigfile.pieces(text, 1_000)
    assert len(parts) > 1 and bigfile._parse_joined(parts) is None
    assert bigfile.parse_module(text).code == text
    bigfile.python_parse(text, "x.py")  # valid: no error although a piece alone is not
    with pytest.raises(SyntaxError) as caught:
        bigfile.python_parse(text + "def broken(:\n", "x.py")
    assert caught.value.lineno == text.count("\n") + 1  # the real line, in the whole file


def test_findings_in_a_big_module_are_those_of_the_whole_parse(tmp_path, monkeypatch):
    """Pieces and the one-pass position table change nothing a user sees: the same findings at the same places."""
    text = _generated(150) + "\n\nfor x, y in DataLoader([]):\n    print(criterion(x, y).item())\n"
    (tmp_path / "big.py").write_text(text)

    def findings() -> list:
        # concise: code, position and message of every finding (JSON would also compute each finding's edits,
        # one whole-module regeneration per fixable finding, which is what makes this slow, not the parse)
        result = CliRunner().invoke(main, ["check", "--no-cache", "--output-format", "concise", "--unsafe-fixes",
                                           str(tmp_path / "big.py")], catch_exceptions=False)
        return [line for line in result.stdout.splitlines() if line.startswith(str(tmp_path))]

    monkeypatch.setattr(bigfile, "PIECE", 10**9)
    whole = findings()
    monkeypatch.setattr(bigfile, "PIECE", 5_000)
    assert len(bigfile.pieces(text)) > 10
    assert findings() == whole and len(whole) > 300


# -- 3. names that cannot break a format -------------------------------------------------------------------------
HOSTILE = "evil\nname\t\x1b[31m\u2028.py"


def test_control_characters_in_file_names_are_escaped_in_text_formats(project):
    (project / HOSTILE).write_text(FINDING)
    escaped = "evil\\nname\\t\\x1b[31m\\u2028.py"
    concise = run("--output-format", "concise", ".").stdout
    assert f"{escaped}:9:11: GPU101" in concise
    assert all(line.count(".py:") == 1 for line in concise.splitlines() if "GPU" in line)
    full = run("--output-format", "full", ".").stdout
    assert f"{escaped}:9:11: GPU101" in full and "\x1b" not in full and "\u2028" not in full
    github = run("--output-format", "github", ".").stdout
    assert len(github.splitlines()) == github.count("::error ") == 2  # one line per finding, whatever the name
    assert all(line.startswith("::error ") for line in github.splitlines())
    assert "\x1b" not in github
    junit = run("--output-format", "junit", ".").stdout
    ET.fromstring(junit.split("\n", 1)[1])  # well-formed XML (a raw ESC is not)
    assert escaped in junit


def test_json_and_sarif_keep_the_name_exact(project):
    (project / HOSTILE).write_text(FINDING)
    found = json.loads(run("--output-format", "json", HOSTILE).stdout)
    assert {f["filename"] for f in found} == {HOSTILE}
    lines = run("--output-format", "json-lines", HOSTILE).stdout.splitlines()
    assert {json.loads(line)["filename"] for line in lines} == {HOSTILE}
    sarif = json.loads(run("--output-format", "sarif", HOSTILE).stdout)
    uris = {r["locations"][0]["physicalLocation"]["artifactLocation"]["uri"] for r in sarif["runs"][0]["results"]}
    assert {unquote(u) for u in uris} == {HOSTILE} and all("\n" not in u for u in uris)


def test_error_lines_escape_the_name_too(project):
    (project / "bad\nname.py").write_bytes(b"\x00\x01")
    result = run(".")
    assert "gpulint: error: bad\\nname.py: binary file, not Python source" in stderr_lines(result)


# -- 4. verifier isolation -------------------------------------------------------------------------------------
def _launch(tmp_path: Path, body: str, *args: str, **options):
    pytest.importorskip("torch")
    from gpulint.verify.launch import Options, Program, launch

    script = tmp_path / "program.py"
    script.write_text(textwrap.dedent(body))
    return launch(Program("original", script, list(args), None, tmp_path),
                  Options(device="cpu", **{"timeout": 60, **options}))


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as handle:
            return handle.read().rsplit(")", 1)[1].split()[0] not in ("Z", "X")
    except OSError:
        return False


ESCAPE = """
    import subprocess, sys
    # a child in a session of its own: out of reach of a kill of the program's process group
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(300)"], start_new_session=True)
    open(sys.argv[1], "w").write(str(child.pid))
"""


def test_a_child_that_outlives_the_program_is_killed_and_reported(tmp_path):
    run_ = _launch(tmp_path, ESCAPE, str(tmp_path / "pid"))
    child = int((tmp_path / "pid").read_text())
    assert not _alive(child), "the program's child outlived the verifier"
    assert run_.failure(1) is None
    assert run_.warnings() == ["the original program left 1 process running after it exited; killed"]


def test_a_hanging_program_with_an_escaped_child_is_killed_at_the_timeout(tmp_path):
    run_ = _launch(tmp_path, ESCAPE + "    import time\n    time.sleep(300)\n", str(tmp_path / "pid"), timeout=20)
    assert run_.timed_out and run_.failure(1).startswith("timed out after")
    assert not _alive(int((tmp_path / "pid").read_text()))


def test_a_program_over_max_memory_is_killed_with_a_clear_reason(tmp_path):
    hog = """
        import time
        hoard = []
        for _ in range(40):  # up to 4 GB, 100 MB at a time, then waits for the timeout
            hoard.append(bytearray(100 * 2**20))
            time.sleep(0.05)
        time.sleep(300)
    """
    run_ = _launch(tmp_path, hog, max_memory=1500 * 2**20, timeout=120)
    assert run_.memory_exceeded > 1500 * 2**20 and not run_.timed_out
    assert "over --max-memory (killed with every process it started)" in run_.failure(1)


def test_a_flood_of_output_is_kept_as_a_bounded_tail(tmp_path):
    from gpulint.verify.launch import OUTPUT_TAIL

    flood = """
        import sys
        for i in range(300):
            sys.stdout.write(("line %d " % i) + "x" * 2**18 + "\\n")
        sys.stdout.write("the end\\n")
        sys.exit(3)
    """
    run_ = _launch(tmp_path, flood)
    assert run_.output_bytes["stdout"] > 75 * 2**20
    assert len(run_.stdout) <= OUTPUT_TAIL and run_.stdout.endswith("the end\n")
    assert "exited with status 3" in run_.failure(1)
    assert any("printed 75." in w and "to stdout; only the last 64 kB were kept" in w for w in run_.warnings())


def test_verify_max_memory_option_reports_through_the_cli(tmp_path):
    pytest.importorskip("torch")
    script = tmp_path / "hog.py"
    script.write_text("import time\nhoard = [bytearray(100 * 2**20) for _ in range(30)]\ntime.sleep(300)\n")
    result = CliRunner().invoke(main, ["verify", "--device", "cpu", "--max-memory", "1GB", "--timeout", "120",
                                       str(script)], catch_exceptions=False)
    assert result.exit_code == 2
    assert "ERROR: the original program failed: used" in result.output and "over --max-memory" in result.output
    bad = CliRunner().invoke(main, ["verify", "--max-memory", "much", str(script)])
    assert bad.exit_code == 2 and "--max-memory: expected a size" in bad.output


# -- 6. check --fix killed with SIGKILL at random moments ------------------------------------------------------
def _snapshot(root: Path) -> dict[str, bytes]:
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in sorted(root.rglob("*.py"))
            if ".gpulint_cache" not in p.parts}


def _kill_campaign(source: Path, work: Path, runs: int, seed: int) -> dict:
    """Copy `source` to `work`, then `runs` times: start `check --fix --jobs 2` (every other run a plain `check`,
    which writes the cache), SIGKILL it and its workers after a random delay, check every file, and compare a
    cached check with an uncached one. Returns counts."""
    shutil.copytree(source, work, ignore=shutil.ignore_patterns(".git", "*.ipynb", ".gpulint_cache"))
    before = _snapshot(work)
    rng = random.Random(seed)
    seen = {"original": 0, "fixed": 0, "runs": 0}
    # Kill moments are drawn over the time a whole run takes on this machine (measured on a copy). That run's
    # output is each file's fixed text: fixes that need the project (a loader built in another module) are in it,
    # which fixing each file on its own (`fix_source`) would miss.
    scratch = work.with_name(work.name + "-timing")
    shutil.copytree(work, scratch)
    started = time.monotonic()
    subprocess.run([sys.executable, "-m", "gpulint", "check", "--fix", "--jobs", "2", "--no-cache", "."],
                   cwd=scratch, capture_output=True, timeout=900)
    window = time.monotonic() - started
    fixed = _snapshot(scratch)
    assert fixed.keys() == before.keys()
    shutil.rmtree(scratch)
    for i in range(runs):
        fix = ["--fix"] if i % 2 == 0 else []
        proc = subprocess.Popen([sys.executable, "-m", "gpulint", "check", *fix, "--jobs", "2", "."], cwd=work,
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
        time.sleep(rng.uniform(0.05, window))
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
        for name, data in _snapshot(work).items():
            if data == before[name]:
                seen["original"] += 1
            else:
                assert data == fixed[name], f"run {i}: {name} is neither the original nor its fixed text"
                ast.parse(data)
                seen["fixed"] += 1
        if not fix:  # a killed plain check may have left cache entries half written
            with contextlib.chdir(work):
                cached = CliRunner().invoke(main, ["check", "--jobs", "1", "--output-format", "json", "."])
                fresh = CliRunner().invoke(main, ["check", "--jobs", "1", "--no-cache", "--output-format", "json",
                                                  "."])
            assert json.loads(cached.stdout) == json.loads(fresh.stdout), f"run {i}: the cache returned a stale result"
        seen["runs"] += 1
        if i % 4 == 3:  # start again from the originals, so later kills land on unfixed files too
            for name, data in before.items():
                (work / name).write_bytes(data)
    return seen


def test_check_fix_killed_at_random_moments_never_damages_a_file(tmp_path):
    project = tmp_path / "project"
    for path in sorted((REPO / "fixtures" / "rules").glob("GPU*/positive*.py")):
        target = project / path.parent.name / path.name
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(path.read_bytes())
    seen = _kill_campaign(project, tmp_path / "work", runs=20, seed=13)
    assert seen["runs"] == 20 and seen["original"] and seen["fixed"]


@pytest.mark.slow
@pytest.mark.skipif(not os.environ.get("GPULINT_SLOW_TESTS"), reason="GPULINT_SLOW_TESTS=1 runs it (.ci/run)")
def test_check_fix_killed_200_times_across_a_real_repository(tmp_path):
    repo = Path(os.environ.get("GPULINT_KILL_REPO", "/work/trials/pytorch+examples"))
    if not repo.is_dir():
        pytest.skip(f"{repo}: not here")
    runs = int(os.environ.get("GPULINT_KILL_RUNS", "200"))
    seen = _kill_campaign(repo, tmp_path / "work", runs=runs, seed=200)
    assert seen["runs"] == runs and seen["original"] and seen["fixed"]
