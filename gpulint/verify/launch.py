"""Run one program under the probe in its own process group (or under torchrun, one probe per rank), with a
timeout; kill the whole tree when it runs over; collect what each rank reported."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Optional

GRACE_SECONDS = 3.0  # between SIGTERM and SIGKILL


@dataclass
class Program:
    label: str  # "original" or "fixed"
    script: Path
    args: list[str]
    fix: Optional[str]  # None (run as written), "safe" or "unsafe" (fixed in memory)
    root: Path  # modules under it are fixed too


@dataclass
class Options:
    max_steps: int = 30
    warmup: int = 3
    profile_steps: int = 8
    device: str = "auto"
    timeout: float = 600.0
    seed: int = 0
    nproc: int = 0  # 0: a plain process; N: torchrun --nproc-per-node N
    parallel: bool = False  # both programs at once (their step times are then not comparable)


@dataclass
class Run:
    program: Program
    ranks: list[dict] = field(default_factory=list)
    returncode: Optional[int] = None
    timed_out: bool = False
    stdout: str = ""
    stderr: str = ""
    seconds: float = 0.0

    def failure(self, expected_ranks: int) -> Optional[str]:
        """Why this run cannot be compared, in one line; None when every rank ran (or stopped at the limit)."""
        if self.timed_out:
            return f"timed out after {self.seconds:.0f} s (killed with its whole process group)"
        for rank in self.ranks:
            if rank.get("status") == "error":
                return f"rank {rank['rank']}: {rank['error']}" if expected_ranks > 1 else rank["error"]
        if len(self.ranks) < expected_ranks:
            missing = sorted(set(range(expected_ranks)) - {r["rank"] for r in self.ranks})
            last = _last_line(self.stderr)
            return f"exited with status {self.returncode} without reporting (rank {missing[0]})" + \
                (f": {last}" if last else "")
        if self.returncode not in (0, None):
            last = _last_line(self.stderr)
            return f"exited with status {self.returncode}" + (f": {last}" if last else "")
        return None

    def error_details(self) -> str:
        """The traceback the script raised, or the end of its stderr."""
        for rank in self.ranks:
            if rank.get("traceback"):
                return rank["traceback"].rstrip()
        return "\n".join(self.stderr.rstrip().splitlines()[-20:])


def _last_line(text: str) -> str:
    lines = [line.strip() for line in text.strip().splitlines() if line.strip()]
    return lines[-1] if lines else ""


def environment(options: Options) -> dict:
    env = dict(os.environ)
    env.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")  # deterministic cuBLAS; read at CUDA initialisation
    env["PYTHONHASHSEED"] = str(options.seed)
    if options.device == "cpu":
        env["CUDA_VISIBLE_DEVICES"] = ""
    # The probe imports gpulint: make this very copy importable, after whatever the user already has.
    here = str(Path(__file__).resolve().parents[2])
    env["PYTHONPATH"] = os.pathsep.join(p for p in (env.get("PYTHONPATH"), here) if p)
    return env


def command(options: Options, config: Path) -> list[str]:
    probe = ["-m", "gpulint.verify.probe", str(config)]
    if options.nproc:
        return [sys.executable, "-m", "torch.distributed.run", "--standalone",
                f"--nproc-per-node={options.nproc}", *probe]
    return [sys.executable, *probe]


def launch(program: Program, options: Options) -> Run:
    run = Run(program)
    with tempfile.TemporaryDirectory(prefix="gpulint-verify-") as tmp:
        results = Path(tmp, "results")
        results.mkdir()
        config = Path(tmp, "config.json")
        config.write_text(json.dumps({
            "script": str(program.script), "args": list(program.args), "fix": program.fix,
            "root": str(program.root), "results": str(results), "seed": options.seed, "device": options.device,
            "max_steps": options.max_steps, "warmup": options.warmup, "profile_steps": options.profile_steps,
        }))
        out_path, err_path = Path(tmp, "stdout"), Path(tmp, "stderr")
        started = time.perf_counter()
        with open(out_path, "wb") as out, open(err_path, "wb") as err:
            proc = subprocess.Popen(command(options, config), stdout=out, stderr=err, stdin=subprocess.DEVNULL,
                                    env=environment(options), start_new_session=True)
            try:
                run.returncode = proc.wait(timeout=options.timeout)
            except subprocess.TimeoutExpired:
                run.timed_out = True
                _kill_tree(proc, results)
            except BaseException:  # Ctrl-C: leave nothing running behind
                _kill_tree(proc, results)
                raise
            finally:
                _kill_group(proc.pid, signal.SIGKILL)  # stray children of a program that has exited
        run.seconds = time.perf_counter() - started
        run.stdout = out_path.read_text(errors="replace")
        run.stderr = err_path.read_text(errors="replace")
        for path in sorted(results.glob("rank*.json")):
            try:
                run.ranks.append(json.loads(path.read_text()))
            except (OSError, ValueError):
                pass
    run.ranks.sort(key=lambda r: r.get("rank", 0))
    return run


def _kill_tree(proc: subprocess.Popen, results: Path) -> None:
    """SIGTERM the program's group and each rank's (torchrun starts ranks in sessions of their own), then
    SIGKILL what is left after a grace period."""
    groups = [proc.pid] + _rank_pids(results)
    for group in groups:
        _kill_group(group, signal.SIGTERM)
    try:
        proc.wait(timeout=GRACE_SECONDS)
    except subprocess.TimeoutExpired:
        pass
    for group in groups:
        _kill_group(group, signal.SIGKILL)
    proc.wait()


def _rank_pids(results: Path) -> list[int]:
    pids = []
    for path in results.glob("pid*"):
        try:
            pids.append(int(path.read_text()))
        except (OSError, ValueError):
            pass
    return pids


def _kill_group(pgid: int, sig: int) -> None:
    try:
        os.killpg(pgid, sig)
    except (ProcessLookupError, PermissionError):
        pass
