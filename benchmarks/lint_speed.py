"""Lint speed: gpulint cold (empty cache) and warm against TorchFix on the same files, and lines/s on a big corpus.

    python benchmarks/lint_speed.py CORPUS --torchfix /path/to/venv/bin/torchfix [--big BIG_CORPUS]
        [--before /path/to/other/venv/bin/python] [--rounds 3] [--torchfix-rounds 1] [--jobs 2]

One command gives the three figures of issue 11: cold gpulint vs TorchFix on CORPUS (both with --jobs, fresh
processes), warm (cached) gpulint vs TorchFix, and cold lines/s on BIG_CORPUS. Runs are interleaved round by round
(gpulint cold, warm, [--before's cold, warm], TorchFix in its rounds, then the big corpus the same way), so a
machine that slows down slows every tool alike; figures are medians over the rounds, with wall seconds and CPU
seconds (user + system of the tool's processes, workers included). The cache lives in a temporary folder and the
corpora's own configuration is ignored (an empty config), so nothing is written into them.

Each gpulint install is byte-compiled first (`python -m compileall` of its `gpulint` and `gpulint.rules`), as
`pip install` leaves an installed package and as TorchFix's own install is: an editable checkout run with
PYTHONDONTWRITEBYTECODE=1 (as in the development sessions) would otherwise compile about 100 modules again on
every run, 0.3 s of a cold run's serial start. `--no-compile` measures the installs as they are.
"""

from __future__ import annotations

import argparse
import os
import platform
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path


def timed(command: list[str], cwd: Path) -> tuple[float, float]:
    """(wall seconds, CPU seconds of the process and its children)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    proc = subprocess.run(command, cwd=cwd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    elapsed = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if proc.returncode not in (0, 1):
        sys.exit(f"{command[0]} failed ({proc.returncode}): {proc.stderr.strip()[-500:]}")
    return elapsed, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def corpus_files(corpus: Path) -> list[Path]:
    from gpulint.config import Settings
    from gpulint.discovery import iter_files

    return [p for p in iter_files([corpus], Settings(root=corpus)) if p.suffix == ".py"]


def count_lines(corpus: Path) -> tuple[int, int]:
    files = corpus_files(corpus)
    return len(files), sum(len(p.read_bytes().splitlines()) for p in files)


class Runs:
    def __init__(self) -> None:
        self.times: dict[str, list[tuple[float, float]]] = {}

    def add(self, name: str, measured: tuple[float, float]) -> None:
        self.times.setdefault(name, []).append(measured)

    def wall(self, name: str) -> float:
        return statistics.median(w for w, _ in self.times[name])

    def cpu(self, name: str) -> float:
        return statistics.median(c for _, c in self.times[name])


def compile_install(python: str) -> None:
    """Byte-compile the `gpulint` and `gpulint.rules` packages that `python` imports, as pip does on install."""
    where = subprocess.run(
        [python, "-c", "import gpulint, gpulint.rules as r; print(gpulint.__path__[0]); print(r.__path__[0])"],
        capture_output=True, text=True, check=True, cwd=tempfile.gettempdir()).stdout.split()
    subprocess.run([python, "-m", "compileall", "-q", *where], check=True, stdout=subprocess.DEVNULL)


def gpulint_command(python: str, config: Path, jobs: int, corpus: Path, cache: bool = True) -> list[str]:
    return [python, "-m", "gpulint", "check", "--exit-zero", "-q", "--output-format", "concise", "--config",
            str(config), "--jobs", str(jobs), *([] if cache else ["--no-cache"]), str(corpus)]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("corpus", type=Path, help="the corpus gpulint and TorchFix both lint")
    parser.add_argument("--torchfix", help="the torchfix executable (installed apart from gpulint's deps)")
    parser.add_argument("--big", type=Path, help="a >= 100k-line corpus for gpulint's cold lines/s")
    parser.add_argument("--before", help="python of another gpulint install, run interleaved (e.g. main's)")
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--torchfix-rounds", type=int, default=1, help="TorchFix is slow: fewer rounds")
    parser.add_argument("--no-compile", action="store_true",
                        help="do not byte-compile the gpulint installs first (see above)")
    args = parser.parse_args()
    corpus = args.corpus.resolve()
    installs = [("gpulint", sys.executable)] + ([("before", args.before)] if args.before else [])
    if not args.no_compile:
        for _, python in installs:
            compile_install(python)
    runs = Runs()
    with tempfile.TemporaryDirectory() as work:
        for round_ in range(args.rounds):
            for label, python in installs:
                cwd = Path(work) / label
                cwd.mkdir(exist_ok=True)
                config = cwd / "gpulint.toml"  # the cache lives beside it: one folder per install
                config.write_text("")
                shutil.rmtree(cwd / ".gpulint_cache", ignore_errors=True)
                command = gpulint_command(python, config, args.jobs, corpus)
                runs.add(f"{label} cold", timed(command, cwd))
                runs.add(f"{label} warm", timed(command, cwd))
                if args.big:
                    runs.add(f"{label} big cold", timed(
                        gpulint_command(python, config, args.jobs, args.big.resolve(), cache=False), cwd))
            if args.torchfix and round_ < args.torchfix_rounds:
                runs.add("torchfix", timed([args.torchfix, "-j", str(args.jobs), str(corpus)], Path(work)))

    from importlib.metadata import version

    files, lines = count_lines(corpus)
    tf_version = subprocess.run([args.torchfix, "--version"], capture_output=True, text=True).stdout.strip() \
        if args.torchfix else "-"
    print(f"corpus: {corpus} ({files} files, {lines:,} lines)")
    print(f"machine: {platform.processor() or platform.machine()}, {os.cpu_count()} CPUs, load average "
          f"{os.getloadavg()[0]:.1f} at the end; Python {platform.python_version()}, gpulint {version('gpulint')}, "
          f"libcst {version('libcst')}, torchfix {tf_version}; --jobs {args.jobs}; medians of {args.rounds} "
          f"interleaved rounds (TorchFix: {min(args.torchfix_rounds, args.rounds) if args.torchfix else 0}); "
          f"gpulint installs {'as they are' if args.no_compile else 'byte-compiled first'}")
    print()
    torchfix = runs.wall("torchfix") if args.torchfix else None
    print("| run | files | lines | wall s | CPU s | lines/s (wall) | vs torchfix (wall) |")
    print("| --- | ---: | ---: | ---: | ---: | ---: | ---: |")
    big_files, big_lines = count_lines(args.big.resolve()) if args.big else (0, 0)
    rows = []
    for label, _ in installs:
        rows += [(f"{label} check, cold", f"{label} cold", files, lines),
                 (f"{label} check, warm cache", f"{label} warm", files, lines)]
        if args.big:
            rows.append((f"{label} check, cold, {args.big.name}", f"{label} big cold", big_files, big_lines))
    if args.torchfix:
        rows.append(("torchfix", "torchfix", files, lines))
    for title, name, n_files, n_lines in rows:
        wall = runs.wall(name)
        ratio = f"{torchfix / wall:.1f}x" if torchfix and n_lines == lines and "big" not in name else "-"
        print(f"| {title} | {n_files} | {n_lines:,} | {wall:.2f} | {runs.cpu(name):.2f} | {n_lines / wall:,.0f} "
              f"| {ratio} |")
    print()
    if torchfix:
        print(f"target cold >= 10x TorchFix: {torchfix / runs.wall('gpulint cold'):.1f}x wall, "
              f"{runs.cpu('torchfix') / runs.cpu('gpulint cold'):.1f}x CPU")
        if args.before:
            print(f"before: {torchfix / runs.wall('before cold'):.1f}x wall, "
                  f"{runs.cpu('torchfix') / runs.cpu('before cold'):.1f}x CPU")
        print(f"target warm >= 50x TorchFix: {torchfix / runs.wall('gpulint warm'):.1f}x")
    if args.big:
        print(f"target cold >= 20,000 lines/s on {args.big.name} ({big_lines:,} lines): "
              f"{big_lines / runs.wall('gpulint big cold'):,.0f} lines/s wall "
              f"({big_lines / runs.cpu('gpulint big cold'):,.0f} per CPU second)")


if __name__ == "__main__":
    main()
