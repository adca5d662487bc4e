"""How often each preview rule fires on labelled lines of the hand-labelled sets, and where else it fires.

    python benchmarks/preview_precision.py --checkouts DIR [--labels FILE ...] [--list-unlabelled] [--json OUT]

Runs gpulint once per labelled repository (at the recorded commit, as benchmarks/score_labels.py does) with every
preview rule selected on top of the defaults, and counts, per preview rule: findings on TRUE lines, on ACCEPTABLE
lines, on unlabelled lines of labelled files and in other files. Labels say whether a line costs the GPU something,
not which rule should say so, so a finding on a TRUE line of another category still counts as on a TRUE line.
The unlabelled findings are listed (`--list-unlabelled`) with the code on their line, for judging by reading.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from collections import defaultdict
from contextlib import ExitStack
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from score_labels import LABELS, checkout_at, covers, read_labels, run_gpulint  # noqa: E402

from gpulint.rule import all_rules  # noqa: E402

PREVIEW = sorted(code for code, cls in all_rules().items() if cls.preview)


def tally(checkouts: Path, label_files: list[Path], listing: bool) -> dict:
    counts: dict[str, dict[str, int]] = {c: defaultdict(int) for c in PREVIEW}
    unlabelled: list[dict] = []
    cmd = [sys.executable, "-m", "gpulint"]
    with ExitStack() as stack:
        config = Path(stack.enter_context(tempfile.TemporaryDirectory())) / "gpulint.toml"
        config.write_text("")
        for label_file in label_files:
            by_repo: dict[str, list] = defaultdict(list)
            for lb in read_labels(label_file):
                by_repo[lb.repo].append(lb)
            for repo, labels in by_repo.items():
                root = checkout_at(checkouts / repo.replace("/", "+"), labels[0].commit, stack)
                extra = tuple(a for code in PREVIEW for a in ("--extend-select", code))
                findings = run_gpulint(cmd, root, config, extra)
                files = {lb.path for lb in labels}
                for f in findings:
                    if f["code"] not in counts:
                        continue
                    hits = [lb for lb in labels if lb.path == f["_path"] and covers(f, lb.line)]
                    if any(lb.label == "TRUE" for lb in hits):
                        where = "true"
                    elif hits:
                        where = "acceptable"
                    else:
                        where = "unlabelled_in_files" if f["_path"] in files else "elsewhere"
                    counts[f["code"]][where] += 1
                    if where in ("acceptable", "unlabelled_in_files", "elsewhere"):
                        line = (root / f["_path"]).read_text(encoding="utf-8", errors="replace").splitlines()
                        row = f["location"]["row"]
                        unlabelled.append({"code": f["code"], "repo": repo, "path": f["_path"], "line": row,
                                           "where": where, "text": line[row - 1].strip() if row <= len(line)
                                           else ""})
    print(f"{'rule':8} {'TRUE':>5} {'ACC':>5} {'unlab(files)':>12} {'unlab(other)':>12}")
    for code in PREVIEW:
        c = counts[code]
        print(f"{code:8} {c['true']:5} {c['acceptable']:5} {c['unlabelled_in_files']:12} {c['elsewhere']:12}")
    if listing:
        print("\nfindings not on TRUE lines:")
        for u in unlabelled:
            print(f"  {u['code']} {u['where']:20} {u['repo']} {u['path']}:{u['line']}  {u['text'][:100]}")
    return {"counts": {c: dict(v) for c, v in counts.items()}, "not_on_true": unlabelled}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--checkouts", type=Path, required=True)
    ap.add_argument("--labels", type=Path, action="append")
    ap.add_argument("--list-unlabelled", action="store_true")
    ap.add_argument("--json", type=Path)
    args = ap.parse_args()
    result = tally(args.checkouts, args.labels or [LABELS], args.list_unlabelled)
    if args.json:
        args.json.write_text(json.dumps(result, indent=1))


if __name__ == "__main__":
    main()
