"""`gpulint verify` on the CPU: the programs in tests/data/verify/ run for real, under the probe, in subprocesses.

Each case is what a user would see: a fix that cuts host reads and keeps the outputs passes; a "fix" that moves a
`break` or breaks `json.dumps` fails and says where; a crash, a hang, bad input end with exit 2 and one clear line.
"""

from __future__ import annotations

import json
import os
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from click.testing import CliRunner

pytest.importorskip("torch")

from gpulint.cli import main  # noqa: E402
from gpulint.verify.compare import Measure  # noqa: E402
from gpulint.verify.launch import Options, Program, launch  # noqa: E402

DATA = Path(__file__).parent / "data" / "verify"


def verify(*args: str):
    # --device cpu: the same numbers on a developer's GPU machine as in CI.
    return CliRunner().invoke(main, ["verify", "--device", "cpu", *args], catch_exceptions=False)


def verify_json(*args: str) -> tuple[int, dict]:
    result = verify("--output-format", "json", *args)
    return result.exit_code, json.loads(result.stdout)


def test_nan_check_fix_cuts_host_reads_and_keeps_outputs():
    # GPU108 (unsafe) moves the per-step NaN check into the periodic block; the script's own arguments pass through.
    code, doc = verify_json(str(DATA / "naive_train.py"), "--unsafe-fixes", "--max-steps", "30", "--rounds", "2",
                            "--", "--steps", "16", "--lr", "0.1")
    assert code == 0, doc["summary"]
    # 13 measured steps (16 minus 3 warm-up): the NaN check's bool() in each, the step-10 log line's .item() once;
    # fixed, the flag's bool() and the .item() both run in the periodic block only.
    assert doc["summary"].startswith("PASS: host reads per step 1.08 -> 0.15; outputs match")
    rank = doc["ranks"][0]
    assert rank["original"]["steps"] == rank["fixed"]["steps"] == 16  # --steps 16 reached the script
    assert rank["outputs_match"] and rank["max_relative_difference"] == {"parameters": 0.0, "losses": 0.0}
    assert rank["compared"] == ["parameters after 16 optimizer steps", "16 losses", "6 printed numbers"]
    lines = {(Path(s["file"]).name, s["line"], s["method"]) for s in rank["original"]["host_reads_by_line"]}
    assert ("naive_train.py", 30, "__bool__") in lines  # the `if torch.isnan(loss).any():` line
    fixed = doc["programs"]["fixed"]["fixed_modules"]
    assert [Path(p).name for p in fixed] == ["naive_train.py"]


def test_safe_fixes_only_by_default_and_nothing_to_verify_says_so():
    result = verify(str(DATA / "project" / "trainlib" / "data.py"), "--parallel")
    assert result.exit_code == 1
    assert "FAIL: gpulint's fixes change nothing in this program (try --unsafe-fixes)" in result.output


def test_moved_break_fails_and_names_the_first_difference():
    code, doc = verify_json(str(DATA / "early_stop.py"), "--fixed", str(DATA / "early_stop_fixed_late.py"),
                            "--parallel", "--max-steps", "0")
    assert code == 1
    assert doc["summary"] == (
        "FAIL: outputs differ, first at printed line 3 (after step 13): 'converged at step 12' in the original, "
        "'converged at step 20' in the fixed run")
    rank = doc["ranks"][0]
    assert (rank["original"]["steps"], rank["fixed"]["steps"]) == (13, 21)  # the moved check lets the loop run on
    assert [d["what"] for d in rank["divergences"] if d["where"] == "steps"] == [
        "the original ran 13 optimizer steps, the fixed program 21 optimizer steps"]
    assert rank["syncs_dropped"]  # fewer syncs is not enough


def test_fix_that_breaks_json_serialisation_fails_with_the_error():
    result = verify(str(DATA / "json_history.py"), "--fixed", str(DATA / "json_history_fixed.py"), "--parallel")
    assert result.exit_code == 1
    assert result.output.strip().splitlines()[-1] == (
        "FAIL: the fix broke the program: the fixed program failed where the original ran: "
        "TypeError: Object of type Tensor is not JSON serializable")
    assert 'json_history_fixed.py", line 19' in result.output  # the script's own frame, not the probe's
    assert "probe.py" not in result.output


def test_crashing_script_exits_2_with_its_error():
    result = verify(str(DATA / "crash.py"))
    assert result.exit_code == 2
    assert "ERROR: the original program failed: ZeroDivisionError: division by zero" in result.output
    assert 'crash.py", line 12' in result.output


def test_script_that_never_stops_is_killed_with_its_children(tmp_path: Path):
    pid_file = tmp_path / "child.pid"
    started = time.perf_counter()
    # 15 s: the verifier's harness starts the script after its own imports, which a loaded machine can stretch
    result = verify(str(DATA / "forever.py"), "--timeout", "15", "--", str(pid_file))
    assert time.perf_counter() - started < 45
    assert result.exit_code == 2
    assert "ERROR: the original program failed: timed out after 15 s" in result.output
    child = int(pid_file.read_text())
    deadline = time.monotonic() + 5
    while _alive(child) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not _alive(child), "the script's own child process survived the timeout"


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    with open(f"/proc/{pid}/stat") as handle:  # a zombie waiting for its reaper is dead
        return handle.read().split(") ")[1][0] != "Z"


def test_fixes_reach_the_modules_the_script_imports():
    code, doc = verify_json(str(DATA / "project" / "train.py"), "--unsafe-fixes", "--parallel", "--max-steps", "0")
    assert code == 0, doc["summary"]
    fixed = {Path(p).relative_to(DATA).as_posix() for p in doc["programs"]["fixed"]["fixed_modules"]}
    assert fixed == {"project/trainlib/loop.py"}  # train.py itself has nothing to fix
    rank = doc["ranks"][0]
    assert rank["original"]["steps"] == 30  # three epochs of ten batches, run to the end
    assert rank["original"]["host_reads_per_step"] > 1 > rank["fixed"]["host_reads_per_step"]
    assert not list(DATA.rglob("*.pyc")), "the fixed modules must not be cached as bytecode"


def test_probe_adds_no_host_read():
    """A loop that reads nothing back counts 0 per step; one `.item()` per step counts exactly 1."""
    script = DATA / "zero_sync.py"
    options = Options(max_steps=20, warmup=3, device="cpu", timeout=120)
    with ThreadPoolExecutor(max_workers=2) as pool:
        runs = list(pool.map(lambda args: launch(Program("check", script, args, None, DATA), options),
                             ([], ["--item"])))
    for run in runs:
        assert run.failure(1) is None, run.error_details()
    assert [Measure.of(run.ranks[0]).host_reads for run in runs] == [0.0, 1.0]


def test_torchrun_ranks_are_verified_one_by_one():
    code, doc = verify_json(str(DATA / "ddp_train.py"), "--unsafe-fixes", "--nproc-per-node", "2",
                            "--max-steps", "8", "--parallel")
    assert code == 0, doc["summary"]
    assert [r["rank"] for r in doc["ranks"]] == [0, 1]
    for rank in doc["ranks"]:
        assert rank["outputs_match"] and rank["syncs_dropped"]
        assert rank["original"]["host_reads_per_step"] >= 1.0
    # DDP keeps the replicas equal: both ranks saw the same parameters after every step.
    assert doc["ranks"][0]["compared"][0] == doc["ranks"][1]["compared"][0] == "parameters after 8 optimizer steps"


@pytest.mark.parametrize("args, message", [
    (["nope.py"], "gpulint: error: nope.py: no such file (the script to verify)"),
    ([str(DATA)], f"gpulint: error: {DATA}: not a file (the script to verify)"),
    ([str(DATA / "crash.py"), "--fixed", "missing.py"], "gpulint: error: missing.py: no such file (--fixed)"),
    ([str(DATA / "crash.py"), "--fixed", str(DATA / "crash.py"), "--unsafe-fixes"],
     "gpulint: error: --fixed and --unsafe-fixes exclude each other: --fixed runs your own fixed version"),
])
def test_bad_input_is_one_line(args, message):
    result = CliRunner().invoke(main, ["verify", *args])
    assert result.exit_code == 2
    assert result.output.strip() == message


def test_safe_fixes_that_leave_the_syncs_say_unsafe_fixes_would_remove_them():
    # The user's step (issue 14): verify without --unsafe-fixes; the NaN check's sync needs GPU108's unsafe fix.
    code, doc = verify_json(str(DATA / "naive_train.py"), "--parallel", "--", "--steps", "8")
    assert code == 1
    assert doc["summary"].startswith("FAIL: host reads per step did not drop")
    assert "the syncs left need unsafe fixes (" in doc["summary"] and "naive_train.py:30: GPU108" in doc["summary"]
    assert doc["summary"].endswith("rerun with --unsafe-fixes")


def test_per_line_table_shows_lines_of_the_users_file_not_of_the_fixed_program():
    # GPU108's fix adds lines above the `.item()` log line (36): the fixed program's reads there must still be
    # reported at line 36, and every line shown must be a line of the original file holding that read.
    result = verify(str(DATA / "naive_train.py"), "--unsafe-fixes", "--parallel", "--", "--steps", "16")
    assert result.exit_code == 0, result.output
    assert "naive_train.py:36 item         0.08 -> 0.08" in result.output
    code, doc = verify_json(str(DATA / "naive_train.py"), "--unsafe-fixes", "--parallel", "--", "--steps", "16")
    source = (DATA / "naive_train.py").read_text().splitlines()
    for site in doc["ranks"][0]["fixed"]["host_reads_by_line"]:
        assert Path(site["file"]).name == "naive_train.py"
        assert 1 <= site["line"] <= len(source)
    fixed_lines = {s["line"] for s in doc["ranks"][0]["fixed"]["host_reads_by_line"]}
    assert fixed_lines == {35, 36}  # the periodic check (anchored at `if step % 10 == 0:`) and the log line
