"""What linting in several worker processes duplicates: CPU seconds of linting a corpus in one process against
the sum over the parts `--jobs N` would hand to N workers, each part in a fresh project state (the project model,
the recent parses and the dependency digests of a worker start empty).

    python benchmarks/worker_split.py CORPUS [--jobs 2] [--rounds 3] [--profile OUT_PREFIX]

The parts are the files dealt round-robin by size, biggest first (the pool hands out the biggest files first).
Everything is linted in this process, one part after the other, after one warm-up pass (imports): the difference
between the sum of the parts and the whole is the work each worker repeats for itself (its own project model:
imports, summaries, the loops of the scripts that run its model files). With `--profile`, cProfile stats of the
whole and of each part are written to OUT_PREFIX.whole.out, OUT_PREFIX.part0.out, ...
"""

from __future__ import annotations

import argparse
import cProfile
import statistics
import time
from pathlib import Path

from gpulint import files as gpulint_files
from gpulint import incremental, parallel
from gpulint.analysis import project
from gpulint.config import Settings
from gpulint.diagnostics import FixMode
from gpulint.discovery import iter_files


def fresh() -> None:
    """A new worker's state: no project model, no recent parse, no remembered digest or root."""
    project._PROJECTS.clear()
    project._ROOTS.clear()
    incremental._recent_modules.clear()
    incremental._recent_trees.clear()
    gpulint_files._DIGESTS.clear()


def lint(files: list[Path], settings: Settings, profile_to: str | None = None) -> float:
    fresh()
    profiler = cProfile.Profile() if profile_to else None
    start = time.process_time()
    if profiler:
        profiler.enable()
    parallel.lint_files(files, settings, FixMode.NONE, write=False, want_edits=False, jobs=1)
    if profiler:
        profiler.disable()
        profiler.dump_stats(profile_to)
    return time.process_time() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("corpus", type=Path)
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--profile", help="write cProfile stats of the whole and of each part with this prefix")
    args = parser.parse_args()
    corpus = args.corpus.resolve()
    settings = Settings(root=corpus)
    files = list(iter_files([corpus], settings))
    by_size = sorted(files, key=lambda p: -p.stat().st_size)
    parts = [by_size[i::args.jobs] for i in range(args.jobs)]
    lint(files, settings)  # warm-up: the modules a lint imports lazily
    wholes, sums, largest = [], [], []
    for _ in range(args.rounds):
        whole = lint(files, settings)
        each = [lint(part, settings) for part in parts]
        wholes.append(whole)
        sums.append(sum(each))
        largest.append(max(each))
        print(f"one process {whole:.2f} CPU s; parts {' + '.join(f'{e:.2f}' for e in each)} = {sum(each):.2f}")
    whole, total = statistics.median(wholes), statistics.median(sums)
    print(f"medians of {args.rounds}: one process {whole:.2f} CPU s, {args.jobs} parts {total:.2f} "
          f"(repeated work {total - whole:.2f}, {(total - whole) / total:.0%} of the parts), "
          f"largest part {statistics.median(largest):.2f}")
    if args.profile:
        lint(files, settings, f"{args.profile}.whole.out")
        for i, part in enumerate(parts):
            lint(part, settings, f"{args.profile}.part{i}.out")


if __name__ == "__main__":
    main()
