"""Record or compare gpulint's findings on fixtures/ and real repositories, to prove a refactoring changed nothing.

    python benchmarks/behaviour_snapshot.py record OUT.json  [--repo PATH ...]
    python benchmarks/behaviour_snapshot.py compare OLD.json NEW.json

`record` runs `gpulint check --output-format json --no-cache --exit-zero` with default settings on `fixtures/` and on every `--repo`
(checkouts of the repositories of docs/field-trials.md, at the commits named there), and stores each run's
findings with paths made relative to the linted root. `compare` prints every finding present on one side only
and exits 1 if there is any.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import tempfile
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
KEYS = ("code", "message", "location", "end_location", "fix", "cell")


def run(target: Path, config: Path) -> list[dict]:
    out = subprocess.run(
        [sys.executable, "-m", "gpulint", "check", "--output-format", "json", "--no-cache", "--exit-zero",
         "--jobs", "2", "--config", str(config), str(target)],
        capture_output=True, text=True, cwd=str(target if target.is_dir() else target.parent),
    )
    if out.returncode != 0:
        raise SystemExit(f"gpulint failed on {target} (exit {out.returncode}): {out.stderr.strip()[:500]}")
    findings = []
    for item in json.loads(out.stdout or "[]"):
        record = {k: item.get(k) for k in KEYS}
        record["filename"] = str(Path(item["filename"]).resolve().relative_to(target.resolve()))
        findings.append(record)
    return sorted(findings, key=lambda r: json.dumps(r, sort_keys=True))


def main() -> int:
    parser = argparse.ArgumentParser()
    sub = parser.add_subparsers(dest="cmd", required=True)
    rec = sub.add_parser("record")
    rec.add_argument("out")
    rec.add_argument("--repo", action="append", default=[])
    cmp_ = sub.add_parser("compare")
    cmp_.add_argument("old")
    cmp_.add_argument("new")
    args = parser.parse_args()
    if args.cmd == "record":
        targets = [ROOT / "fixtures"] + [Path(r) for r in args.repo]
        with tempfile.TemporaryDirectory() as tmp:
            config = Path(tmp) / "gpulint.toml"  # defaults: the repository's own `exclude` must not apply
            config.write_text("")
            data = {t.name: run(t, config) for t in targets}
        Path(args.out).write_text(json.dumps(data, indent=1, sort_keys=True) + "\n")
        for name, findings in data.items():
            print(f"{name}: {len(findings)} findings")
        return 0
    old, new = json.loads(Path(args.old).read_text()), json.loads(Path(args.new).read_text())
    differences = 0
    for name in sorted(set(old) | set(new)):
        a = {json.dumps(r, sort_keys=True) for r in old.get(name, [])}
        b = {json.dumps(r, sort_keys=True) for r in new.get(name, [])}
        for line in sorted(a - b):
            print(f"{name}: only before: {line}")
        for line in sorted(b - a):
            print(f"{name}: only after:  {line}")
        differences += len(a ^ b)
        print(f"{name}: {len(a)} before, {len(b)} after, {len(a ^ b)} differ")
    return 1 if differences else 0


if __name__ == "__main__":
    raise SystemExit(main())
