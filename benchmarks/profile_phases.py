"""Where a cold `gpulint check` spends its time, phase by phase, on one core.

    python benchmarks/profile_phases.py /work/corpus/examples

Phases: CPython's ast.parse (syntax errors, and the guard against input that crashes LibCST), the prefilter
(gpulint/prefilter.py, on that `ast` tree), LibCST's parse, the syntax index (one walk), the rule gate
(gpulint/rule_gate.py: no hot loop, no hot-loop rules), the rules (with the loop analysis they trigger), and
positions of findings. Files are linted without a path, so the project model is not consulted. The corpus is
run twice in one process and the second run is reported (no import or warm-up).
"""

from __future__ import annotations

import ast
import sys
import time
from pathlib import Path

import libcst as cst

from gpulint.analysis import ModuleAnalysis
from gpulint.config import Settings
from gpulint.discovery import iter_files
from gpulint.rule import all_rules
from gpulint.rule_gate import Gate
from gpulint.runner import _placed, _positions, _run_rules, could_have_findings


def measure(texts: list[str], codes: frozenset[str]) -> dict[str, float]:
    spent = dict.fromkeys(["ast.parse", "prefilter", "libcst parse", "syntax index", "rule gate", "rules",
                           "positions"], 0.0)
    clock = time.perf_counter
    for text in texts:
        t = clock()
        tree = ast.parse(text)
        spent["ast.parse"] += clock() - t
        t = clock()
        keep = could_have_findings(text, codes, tree)
        spent["prefilter"] += clock() - t
        if not keep:
            continue
        t = clock()
        module = cst.parse_module(text)
        spent["libcst parse"] += clock() - t
        t = clock()
        analysis = ModuleAnalysis(module, text)
        spent["syntax index"] += clock() - t
        t = clock()
        enabled = Gate(None, tree).codes(analysis, codes)  # no hot loop: only the rules that need none
        spent["rule gate"] += clock() - t
        t = clock()
        found, _failures = _run_rules(analysis, enabled, False)
        spent["rules"] += clock() - t
        t = clock()
        positions = _positions(analysis, text, [d.node for d in found]) if found else {}
        [_placed(d, positions, "x.py") for d in found]
        spent["positions"] += clock() - t
    return spent


def main() -> None:
    corpus = Path(sys.argv[1]).resolve()
    files = [p for p in iter_files([corpus], Settings(root=corpus)) if p.suffix == ".py"]
    texts = [p.read_text(encoding="utf-8") for p in files]
    lines = sum(len(t.splitlines()) for t in texts)
    codes = frozenset(code for code, rule in all_rules().items() if not rule.preview)  # the default rules
    parsed = [t for t in texts if could_have_findings(t, codes, ast.parse(t))]
    measure(texts, codes)
    spent = measure(texts, codes)
    total = sum(spent.values())
    print(f"{len(texts)} files, {lines:,} lines; {len(parsed)} files ({sum(len(t.splitlines()) for t in parsed):,} "
          f"lines) pass the prefilter")
    print("| phase | seconds | share |")
    print("| --- | ---: | ---: |")
    for phase, seconds in spent.items():
        print(f"| {phase} | {seconds:.2f} | {seconds / total:.0%} |")
    print(f"| total (one core) | {total:.2f} | {lines / total:,.0f} lines/s |")


if __name__ == "__main__":
    main()
