"""Which files of a corpus a cold `gpulint check` parses with LibCST, and why (one process, one core).

    python benchmarks/parse_census.py /work/trials/pytorch+examples

Every file is sorted by what the lint does with it and what the LibCST analysis then finds:
- `skipped`: the prefilter (gpulint/prefilter.py, on CPython's `ast`) showed no enabled rule can report in it, and
  no loop elsewhere in the project runs a class or function of it every step: no LibCST parse;
- `parsed`, split three ways by what the LibCST analysis of the file answers: `hot loop` (some loop of the
  module is `LoopRole.HOT`), `run every step` (no hot loop, but a loop elsewhere runs a model or function of it
  every step: analysis/forward.py), or `neither` (the prefilter's `ast` conditions over-approximated: a proof on
  `ast` that no loop of the module is hot, and that nothing of it runs every step, could skip exactly these);
  and each of those by whether the file has findings.

CPU seconds are each file's `lint_source` in corpus order (the project-wide answers are paid by the first file
that asks), so they show where the cold run's CPU goes, not what a skip would save on its own.
"""

from __future__ import annotations

import argparse
import ast
import collections
import time
from pathlib import Path
from typing import Optional

import libcst as cst

from gpulint import rule_gate, runner
from gpulint.analysis import ModuleAnalysis
from gpulint.config import Settings
from gpulint.discovery import iter_files


def census(corpus: Path, paths: Optional[dict] = None) -> tuple[collections.Counter, collections.Counter]:
    """(number of files, CPU seconds of their lints) by (`skipped`|`found`|`silent`, why parsed); with `paths`,
    each class's files are listed there too."""
    corpus = corpus.resolve()
    settings = Settings(root=corpus)
    codes = frozenset(settings.enabled_codes())
    counts: collections.Counter = collections.Counter()
    seconds: collections.Counter = collections.Counter()
    for path in (p for p in iter_files([corpus], settings) if p.suffix == ".py"):
        source = path.read_text(errors="replace")
        try:
            tree = ast.parse(source)
        except (SyntaxError, ValueError, RecursionError, MemoryError):
            continue
        start = time.process_time()
        result = runner.lint_source(source, str(path), codes, path=path)
        spent = time.process_time() - start
        if not runner.could_have_findings(source, codes, tree) and not runner._model_run_every_step(path, tree):
            key = ("skipped", "-")
        else:
            analysis = ModuleAnalysis(cst.parse_module(source), source)
            why = "hot loop" if rule_gate.has_hot_loop(analysis) else \
                "run every step" if runner._model_run_every_step(path, tree) else "neither"
            key = ("found" if result.diagnostics else "silent", why)
        counts[key] += 1
        seconds[key] += spent
        if paths is not None:
            paths.setdefault(key, []).append(path.relative_to(corpus))
    return counts, seconds


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("corpus", type=Path)
    parser.add_argument("--list", action="store_true", help="name the silent files parsed for neither reason")
    args = parser.parse_args()
    paths: dict = {}
    counts, seconds = census(args.corpus, paths)
    print("| files | why parsed | count | CPU s of their lints |")
    print("| --- | --- | ---: | ---: |")
    for key in sorted(counts):
        print(f"| {key[0]} | {key[1]} | {counts[key]} | {seconds[key]:.2f} |")
    if args.list:
        for path in paths.get(("silent", "neither"), ()):
            print(f"silent, neither: {path}")


if __name__ == "__main__":
    main()
