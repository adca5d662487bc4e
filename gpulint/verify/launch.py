"""Run one program under the probe in its own process group (or under torchrun, one probe per rank), with a
timeout; kill the whole tree when it runs over; collect what each rank reported."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Optional

GRACE_SECONDS = 3.0  # between SIGTERM and SIGKILL
POLL_SECONDS = 0.2  # how often the memory of a running program is measured
OUTPUT_TAIL = 64 * 1024  # bytes of each stream kept: a program printing without end fills no disk and no memory
MARKER = "GPULINT_VERIFY_RUN"  # in the environment of every process a program starts, even in a new session


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
    max_memory: int = 0  # bytes of resident memory for the program and every process it starts; 0: no limit
    rounds: int = 5  # original and fixed run this many times each, interleaved
    noise_runs: int = 0  # extra runs of the original with seeds seed+1..seed+K: the noise band
    seed_offset: int = 0  # added to every seed the program sets itself (noise run k: k; see probe._SeedOffset)
    speed_verdict: str = "auto"  # auto: a slower step fails only on a GPU run; always; never
    progress: bool = False  # the probe writes its step count for the parent's progress line
    # deterministic kernels (round 1, noise runs: outputs compared); the later rounds, which time the steps, run
    # the program with its own settings (cuDNN autotuning, non-deterministic kernels), as it runs for the user
    deterministic: bool = True


@dataclass
class Run:
    program: Program
    ranks: list[dict] = field(default_factory=list)
    returncode: Optional[int] = None
    timed_out: bool = False
    stdout: str = ""
    stderr: str = ""
    seconds: float = 0.0
    memory_exceeded: int = 0  # the resident bytes measured when the limit was passed (then killed)
    left_behind: int = 0  # processes still running after the program exited (killed)
    output_bytes: dict = field(default_factory=dict)  # "stdout"/"stderr" -> bytes printed in all

    def failure(self, expected_ranks: int) -> Optional[str]:
        """Why this run cannot be compared, in one line; None when every rank ran (or stopped at the limit)."""
        if self.memory_exceeded:
            return (f"used {_megabytes(self.memory_exceeded)} of memory, over --max-memory "
                    f"(killed with every process it started)")
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

    def warnings(self) -> list[str]:
        """What the program did that the comparison survives but the user should know."""
        out = []
        if self.left_behind:
            out.append(f"the {self.program.label} program left {self.left_behind} process"
                       f"{'es' if self.left_behind != 1 else ''} running after it exited; killed")
        for stream, size in sorted(self.output_bytes.items()):
            if size > OUTPUT_TAIL:
                out.append(f"the {self.program.label} program printed {_megabytes(size)} to {stream}; "
                           f"only the last {OUTPUT_TAIL // 1024} kB were kept")
        return out

    def error_details(self) -> str:
        """The traceback the script raised, or the end of its stderr."""
        for rank in self.ranks:
            if rank.get("traceback"):
                return rank["traceback"].rstrip()
        return "\n".join(self.stderr.rstrip().splitlines()[-20:])


def _megabytes(size: int) -> str:
    return f"{size / 2**20:.1f} MB"


def _last_line(text: str) -> str:
    lines = [line.strip() for line in text.strip().splitlines() if line.strip()]
    return lines[-1] if lines else ""


def environment(options: Options, marker: str = "") -> dict:
    env = dict(os.environ)
    env[MARKER] = marker
    if options.deterministic:  # deterministic cuBLAS (read at CUDA initialisation); timing runs keep the user's
        env.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")
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


def launch(program: Program, options: Options, watch: Optional[Callable[[int], None]] = None) -> Run:
    """Run `program` once; `watch(steps)` is called while it runs (with the steps rank 0 has done so far) when
    options.progress is on."""
    run = Run(program)
    with tempfile.TemporaryDirectory(prefix="gpulint-verify-") as tmp:
        results = Path(tmp, "results")
        results.mkdir()
        config = Path(tmp, "config.json")
        config.write_text(json.dumps({
            "script": str(program.script), "args": list(program.args), "fix": program.fix,
            "root": str(program.root), "results": str(results), "seed": options.seed,
            "seed_offset": options.seed_offset, "device": options.device,
            "max_steps": options.max_steps, "warmup": options.warmup, "profile_steps": options.profile_steps,
            "progress": bool(options.progress and watch), "deterministic": options.deterministic,
        }))
        marker = uuid.uuid4().hex
        started = time.perf_counter()
        proc = subprocess.Popen(command(options, config), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                stdin=subprocess.DEVNULL, env=environment(options, marker), start_new_session=True)
        readers = {name: _Tail(stream) for name, stream in (("stdout", proc.stdout), ("stderr", proc.stderr))}
        try:
            run.returncode, run.timed_out, run.memory_exceeded = _supervise(proc, options, marker, results, watch)
        except BaseException:  # Ctrl-C: leave nothing running behind
            _kill_tree(proc, results, marker)
            raise
        finally:
            left = _kill_marked(marker)  # whatever it started, in its group or in a session of its own
            _kill_group(proc.pid, signal.SIGKILL)
            if run.returncode is not None and not (run.timed_out or run.memory_exceeded):
                run.left_behind = left
        run.seconds = time.perf_counter() - started
        for name, reader in readers.items():
            reader.join()
            run.output_bytes[name] = reader.total
        run.stdout = readers["stdout"].text()
        run.stderr = readers["stderr"].text()
        for path in sorted(results.glob("rank*.json")):
            try:
                run.ranks.append(json.loads(path.read_text()))
            except (OSError, ValueError):
                pass
    run.ranks.sort(key=lambda r: r.get("rank", 0))
    return run


def _supervise(proc: subprocess.Popen, options: Options, marker: str, results: Path, watch=None) -> tuple:
    """Wait for the program: (return code, timed out, resident bytes when over the memory limit)."""
    deadline = time.monotonic() + options.timeout
    while True:
        if watch is not None:
            watch(_steps_done(results))
        try:
            return proc.wait(timeout=min(POLL_SECONDS, max(deadline - time.monotonic(), 0.01))), False, 0
        except subprocess.TimeoutExpired:
            pass
        if options.max_memory:
            used = _resident(marker)
            if used > options.max_memory:
                _kill_tree(proc, results, marker)
                return proc.returncode, False, used
        if time.monotonic() >= deadline:
            _kill_tree(proc, results, marker)
            return proc.returncode, True, 0


def _steps_done(results: Path) -> int:
    try:
        return int(Path(results, "progress0").read_text().strip() or 0)
    except (OSError, ValueError):
        return 0


class _Tail:
    """Reads a stream to its end in a thread, keeping its last OUTPUT_TAIL bytes and counting the rest."""

    def __init__(self, stream) -> None:
        self.stream = stream
        self.kept = bytearray()
        self.total = 0
        self.thread = threading.Thread(target=self._read, daemon=True)
        self.thread.start()

    def _read(self) -> None:
        while True:
            chunk = self.stream.read1(1 << 16) if hasattr(self.stream, "read1") else self.stream.read(1 << 16)
            if not chunk:
                break
            self.total += len(chunk)
            self.kept += chunk
            if len(self.kept) > 2 * OUTPUT_TAIL:
                del self.kept[:-OUTPUT_TAIL]

    def join(self) -> None:
        self.thread.join(timeout=GRACE_SECONDS)
        self.stream.close()

    def text(self) -> str:
        return bytes(self.kept[-OUTPUT_TAIL:]).decode(errors="replace")


def _marked(marker: str) -> list[int]:
    """Processes (of this user) started by the program: they inherit its environment, sessions or not."""
    needle = f"{MARKER}={marker}".encode()
    found = []
    for entry in os.listdir("/proc") if os.path.isdir("/proc") else ():
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/environ", "rb") as handle:
                if needle in handle.read().split(b"\0"):
                    found.append(int(entry))
        except OSError:
            continue
    return found


def _resident(marker: str) -> int:
    page = os.sysconf("SC_PAGE_SIZE")
    total = 0
    for pid in _marked(marker):
        try:
            with open(f"/proc/{pid}/statm") as handle:
                total += int(handle.read().split()[1]) * page
        except (OSError, ValueError, IndexError):
            continue
    return total


def _kill_marked(marker: str) -> int:
    """SIGKILL every live process the program started, wherever it went; how many there were."""
    pids = [pid for pid in _marked(marker) if not _zombie(pid)]
    for pid in pids:
        try:
            os.kill(pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
    deadline = time.monotonic() + GRACE_SECONDS
    while any(not _zombie(pid) for pid in pids) and time.monotonic() < deadline:
        time.sleep(0.02)
    return len(pids)


def _zombie(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as handle:
            return handle.read().rsplit(")", 1)[1].split()[0] in ("Z", "X")
    except (OSError, IndexError):
        return True  # gone


def _kill_tree(proc: subprocess.Popen, results: Path, marker: str = "") -> None:
    """SIGTERM the program's group and each rank's (torchrun starts ranks in sessions of their own), then
    SIGKILL what is left after a grace period, wherever it went (see `_marked`)."""
    groups = [proc.pid] + _rank_pids(results)
    for group in groups:
        _kill_group(group, signal.SIGTERM)
    try:
        proc.wait(timeout=GRACE_SECONDS)
    except subprocess.TimeoutExpired:
        pass
    for group in groups:
        _kill_group(group, signal.SIGKILL)
    if marker:
        _kill_marked(marker)
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
