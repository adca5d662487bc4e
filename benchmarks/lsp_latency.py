"""What the language server pays per edit, and per quick-fix request, on a buffer with many fixable findings.

    python benchmarks/lsp_latency.py [--copies 20]

The buffer is the shipped naive training script followed by COPIES functions holding its body. "per edit" is
the lint the server runs after each burst of typing (findings only); "edits for all" is what computing every
fix's text edits at each lint would add (the server instead computes them for the findings under the cursor
when the editor asks for code actions: "per code action").
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

from gpulint.fixes import edits_for
from gpulint.rule import all_rules
from gpulint.runner import lint_source

EXAMPLE = Path(__file__).resolve().parent.parent / "fixtures" / "examples" / "naive_train.py"


def best(fn, repeat: int) -> float:
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return min(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--copies", type=int, default=20)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    body = EXAMPLE.read_text()
    text = body + "".join(f"\n\ndef copy_{i}():\n" + "".join(f"    {line}\n" for line in body.splitlines())
                          for i in range(args.copies))
    codes = frozenset(all_rules())
    result = lint_source(text, "buffer.py", codes)
    fixable = [d for d in result.diagnostics if d.fix is not None]
    print(f"buffer: {len(text.splitlines())} lines, {len(result.diagnostics)} findings, {len(fixable)} fixable")
    per_edit = best(lambda: lint_source(text, "buffer.py", codes), args.repeat)
    eager = best(lambda: lint_source(text, "buffer.py", codes, want_edits=True), 1)
    one = best(lambda: edits_for(fixable[0], result.module, text), args.repeat)
    print(f"per edit (findings only):        {per_edit * 1000:8.0f} ms")
    print(f"per edit with edits for all:     {eager * 1000:8.0f} ms")
    print(f"per code action (one finding):   {one * 1000:8.0f} ms")


if __name__ == "__main__":
    main()
