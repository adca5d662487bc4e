"""Lint speed on a real corpus: gpulint cold (empty cache) and warm, against TorchFix on the same files.

    python benchmarks/lint_speed.py /work/corpus/examples --torchfix /path/to/venv/bin/torchfix

Both tools run as a user runs them (a fresh process, the default number of jobs); each gpulint figure is the
best of --repeat runs. The cache lives in a temporary folder, so the corpus is left untouched.
"""

from __future__ import annotations

import argparse
import os
import platform
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path


def timed(command: list[str], cwd: Path) -> float:
    start = time.perf_counter()
    proc = subprocess.run(command, cwd=cwd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    elapsed = time.perf_counter() - start
    if proc.returncode not in (0, 1):
        sys.exit(f"{command[0]} failed ({proc.returncode}): {proc.stderr.strip()[-500:]}")
    return elapsed


def corpus_files(corpus: Path) -> list[Path]:
    from gpulint.config import Settings
    from gpulint.discovery import iter_files

    return [p for p in iter_files([corpus], Settings(root=corpus)) if p.suffix == ".py"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("corpus", type=Path)
    parser.add_argument("--torchfix", help="the torchfix executable (installed apart from gpulint's deps)")
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    corpus = args.corpus.resolve()
    files = corpus_files(corpus)
    lines = sum(len(p.read_bytes().splitlines()) for p in files)
    gpulint = [sys.executable, "-m", "gpulint", "check", "--exit-zero", "-q", "--output-format", "concise",
               "--jobs", str(args.jobs), str(corpus)]

    rows = []
    with tempfile.TemporaryDirectory() as work:
        cwd = Path(work)
        cache = cwd / ".gpulint_cache"
        cold, warm, single = [], [], []
        for _ in range(args.repeat):
            shutil.rmtree(cache, ignore_errors=True)
            cold.append(timed(gpulint, cwd))
            warm.append(timed(gpulint, cwd))
            single.append(timed([*gpulint[:-1], "--no-cache", "--jobs", "1", str(corpus)], cwd))
        rows.append((f"gpulint check, cold ({args.jobs} jobs)", min(cold)))
        rows.append(("gpulint check, cold (1 job)", min(single)))
        rows.append((f"gpulint check, warm cache ({args.jobs} jobs)", min(warm)))
        if args.torchfix:
            rows.append((f"torchfix ({args.jobs} jobs)", timed([args.torchfix, "-j", str(args.jobs), str(corpus)],
                                                              cwd)))

    torchfix = rows[-1][1] if args.torchfix else None
    from importlib.metadata import version

    tf_version = subprocess.run([args.torchfix, "--version"], capture_output=True, text=True).stdout.strip() \
        if args.torchfix else "-"
    print(f"corpus: {corpus} ({len(files)} files, {lines:,} lines)")
    print(f"machine: {platform.processor() or platform.machine()}, {os.cpu_count()} CPUs, "
          f"Python {platform.python_version()}, gpulint {version('gpulint')}, libcst {version('libcst')}, "
          f"torchfix {tf_version}")
    print()
    print("| run | files | lines | seconds | lines/s | vs torchfix |")
    print("| --- | ---: | ---: | ---: | ---: | ---: |")
    for name, seconds in rows:
        ratio = f"{torchfix / seconds:.1f}x" if torchfix else "-"
        print(f"| {name} | {len(files)} | {lines:,} | {seconds:.2f} | {lines / seconds:,.0f} | {ratio} |")


if __name__ == "__main__":
    main()
