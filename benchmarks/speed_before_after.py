"""Lint speed of two gpulint installs on the same corpus, interleaved in one run (a refactoring must not regress).

    python benchmarks/speed_before_after.py CORPUS --before /path/to/old/venv/bin/python [--after PYTHON] [--rounds 3]

Each round runs, for each install in turn: a cold run (empty cache, default jobs), a warm run (the cache the cold run
left), and a single-process run without cache. Reports the median of the rounds and the after/before ratio.
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path


def timed(command: list[str], cwd: Path) -> float:
    start = time.perf_counter()
    proc = subprocess.run(command, cwd=cwd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    if proc.returncode not in (0, 1):
        sys.exit(f"{command[0]} failed ({proc.returncode}): {proc.stderr.strip()[-300:]}")
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("corpus", type=Path)
    parser.add_argument("--before", required=True, help="python of the install to compare against")
    parser.add_argument("--after", default=sys.executable, help="python of the install under test (default: this)")
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    corpus = args.corpus.resolve()
    runs: dict[tuple[str, str], list[float]] = {}
    with tempfile.TemporaryDirectory() as work:
        config = Path(work) / "gpulint.toml"
        config.write_text("")  # defaults for both: the corpus's own configuration must not differ between them
        for _ in range(args.rounds):
            for label, python in (("before", args.before), ("after", args.after)):
                cwd = Path(work) / label
                cwd.mkdir(exist_ok=True)
                shutil.rmtree(cwd / ".gpulint_cache", ignore_errors=True)
                base = [python, "-m", "gpulint", "check", "--exit-zero", "-q", "--output-format", "concise",
                        "--config", str(config)]
                # the cache lives beside the config; give each install its own folder of it
                (cwd / "gpulint.toml").write_text("")
                base[-1] = str(cwd / "gpulint.toml")
                runs.setdefault((label, "cold"), []).append(timed([*base, str(corpus)], cwd))
                runs.setdefault((label, "warm"), []).append(timed([*base, str(corpus)], cwd))
                runs.setdefault((label, "cold, 1 job"), []).append(
                    timed([*base, "--no-cache", "--jobs", "1", str(corpus)], cwd))
    print(f"corpus: {corpus}; {args.rounds} interleaved rounds; median seconds")
    print("| run | before | after | after / before |")
    print("| --- | ---: | ---: | ---: |")
    for kind in ("cold", "cold, 1 job", "warm"):
        b = statistics.median(runs[("before", kind)])
        a = statistics.median(runs[("after", kind)])
        print(f"| {kind} | {b:.2f} | {a:.2f} | {a / b:.2f} |")


if __name__ == "__main__":
    main()
