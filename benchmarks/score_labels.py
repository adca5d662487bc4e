"""Score gpulint against the hand-labelled lines of benchmarks/labels/labels.tsv.

    python benchmarks/score_labels.py --checkouts DIR [--labels FILE] [--repo OWNER/NAME ...]
                                      [--gpulint "CMD ..."] [--json OUT] [--show-unlabelled]

DIR/<owner>+<name> must be a git clone of each labelled repository. When its HEAD is not the commit recorded in the
labels, the recorded commit is checked out in a temporary `git worktree` (the clone is not touched); a clone that
lacks the commit is an error. Nothing is downloaded.

gpulint runs once per repository, with default settings (`--config` points at an empty gpulint.toml, so the
repository's own configuration is ignored): `gpulint check --output-format json --no-cache --exit-zero`.

A finding is *on* a labelled line when it starts on that line, or when it spans at most MAX_SPAN lines and covers
it (a multi-line call such as `DataLoader(\\n ...)` or a `%` format whose tensor sits on its second line). Any code
counts: the labels say whether the line costs the GPU something, not which rule should say so.

Reported per repository and overall:
- recall: TRUE lines with a finding / TRUE lines (also per category: sync, sync-via-helper, transfer,
  accumulation, throughput);
- false alarms: ACCEPTABLE lines with a finding;
- precision over labelled lines: flagged TRUE / (flagged TRUE + flagged ACCEPTABLE);
- unlabelled: findings on lines with no label (counted, not scored), in labelled files and elsewhere;
- via: TRUE lines missed on the line itself but named as the related location of a finding elsewhere (the cost
  reported at the hot call site in the loop, `via <file>:<line>`, as issue 11 asks); a secondary figure, shown beside
  the strict recall, never added to it.
Then every miss and every false alarm, with the label's reason.
"""

from __future__ import annotations

import argparse
import csv
import json
import shlex
import subprocess
import sys
import tempfile
from collections import Counter, defaultdict
from contextlib import ExitStack
from dataclasses import dataclass, field
from pathlib import Path

LABELS = Path(__file__).resolve().parent / "labels" / "labels.tsv"
COLUMNS = ("repo", "commit", "path", "line", "label", "category", "reason")
MAX_SPAN = 5


@dataclass(frozen=True)
class Label:
    repo: str
    commit: str
    path: str
    line: int
    label: str
    category: str
    reason: str


@dataclass
class RepoScore:
    repo: str
    commit: str
    found: list[tuple[Label, list[str]]] = field(default_factory=list)
    via: list[Label] = field(default_factory=list)  # missed on the line, named as a finding's related location
    missed: list[Label] = field(default_factory=list)
    false_alarms: list[tuple[Label, list[str]]] = field(default_factory=list)
    quiet_ok: list[Label] = field(default_factory=list)
    unlabelled_in_files: list[dict] = field(default_factory=list)
    unlabelled_elsewhere: int = 0


def read_labels(path: Path) -> list[Label]:
    with path.open(newline="", encoding="utf-8") as fh:
        reader = csv.DictReader(fh, delimiter="\t")
        if tuple(reader.fieldnames or ()) != COLUMNS:
            raise SystemExit(f"{path}: header must be {' '.join(COLUMNS)}")
        labels = []
        for n, row in enumerate(reader, start=2):
            if row["label"] not in ("TRUE", "ACCEPTABLE"):
                raise SystemExit(f"{path}:{n}: label must be TRUE or ACCEPTABLE, not {row['label']!r}")
            labels.append(Label(row["repo"], row["commit"], row["path"], int(row["line"]), row["label"],
                                row["category"], row["reason"]))
    keys = Counter((lb.repo, lb.path, lb.line) for lb in labels)
    dup = [k for k, c in keys.items() if c > 1]
    if dup:
        raise SystemExit(f"{path}: labelled twice: {dup}")
    return labels


def git(repo: Path, *args: str) -> str:
    out = subprocess.run(["git", "-C", str(repo), *args], capture_output=True, text=True)
    if out.returncode != 0:
        raise SystemExit(f"git {' '.join(args)} failed in {repo}: {out.stderr.strip()}")
    return out.stdout.strip()


def checkout_at(clone: Path, commit: str, stack: ExitStack) -> Path:
    if not (clone / ".git").exists():
        raise SystemExit(f"{clone}: not a git clone (expected DIR/<owner>+<name>)")
    if git(clone, "rev-parse", "HEAD") == commit:
        return clone
    tmp = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="labels-"))) / clone.name
    git(clone, "worktree", "add", "--detach", str(tmp), commit)
    stack.callback(lambda: subprocess.run(["git", "-C", str(clone), "worktree", "remove", "--force", str(tmp)],
                                          capture_output=True))
    return tmp


def run_gpulint(cmd: list[str], root: Path, config: Path, extra: tuple[str, ...] = ()) -> list[dict]:
    out = subprocess.run([*cmd, "check", *extra, "--output-format", "json", "--no-cache", "--exit-zero", "--jobs",
                          "2", "--config", str(config), str(root)], capture_output=True, text=True, cwd=str(root))
    if out.returncode != 0:
        raise SystemExit(f"gpulint failed on {root} (exit {out.returncode}): {out.stderr.strip()[:500]}")
    findings = json.loads(out.stdout or "[]")
    for f in findings:
        f["_path"] = Path(f["filename"]).resolve().relative_to(root.resolve()).as_posix()
        f["_related"] = []
        for r in f.get("related") or ():
            try:
                rel = Path(r["filename"]) if Path(r["filename"]).is_absolute() else root / r["filename"]
                f["_related"].append((rel.resolve().relative_to(root.resolve()).as_posix(), r["location"]["row"]))
            except (KeyError, ValueError, TypeError):
                continue
    return findings


def covers(finding: dict, line: int) -> bool:
    start = finding["location"]["row"]
    end = (finding.get("end_location") or finding["location"])["row"]
    return start == line or (end - start < MAX_SPAN and start <= line <= end)


def score_repo(labels: list[Label], findings: list[dict]) -> RepoScore:
    score = RepoScore(labels[0].repo, labels[0].commit)
    by_file: dict[str, list[dict]] = defaultdict(list)
    for f in findings:
        by_file[f["_path"]].append(f)
    used: set[int] = set()
    for lb in labels:
        hits = [f for f in by_file.get(lb.path, []) if covers(f, lb.line)]
        used.update(id(f) for f in hits)
        codes = sorted({f["code"] for f in hits})
        if lb.label == "TRUE":
            (score.found.append((lb, codes)) if hits else score.missed.append(lb))
        else:
            (score.false_alarms.append((lb, codes)) if hits else score.quiet_ok.append(lb))
    related = {place for f in findings for place in f.get("_related", ())}
    score.via = [lb for lb in score.missed if (lb.path, lb.line) in related]
    labelled_files = {lb.path for lb in labels}
    for f in findings:
        if id(f) in used:
            continue
        if f["_path"] in labelled_files:
            score.unlabelled_in_files.append(f)
        else:
            score.unlabelled_elsewhere += 1
    return score


def pct(num: int, den: int) -> str:
    return f"{100 * num / den:5.1f}%" if den else "    -"


def summary(s: RepoScore) -> dict:
    n_true = len(s.found) + len(s.missed)
    n_ok = len(s.false_alarms) + len(s.quiet_ok)
    flagged = len(s.found) + len(s.false_alarms)
    return {"repo": s.repo, "commit": s.commit, "true": n_true, "found": len(s.found),
            "recall": len(s.found) / n_true if n_true else None, "acceptable": n_ok,
            "acceptable_flagged": len(s.false_alarms),
            "precision": len(s.found) / flagged if flagged else None,
            "unlabelled_in_labelled_files": len(s.unlabelled_in_files),
            "unlabelled_elsewhere": s.unlabelled_elsewhere, "via": len(s.via)}


def report(scores: list[RepoScore], show_unlabelled: bool) -> dict:
    rows = [summary(s) for s in scores]
    total = {k: sum(r[k] for r in rows) for k in ("true", "found", "acceptable", "acceptable_flagged",
                                                   "unlabelled_in_labelled_files", "unlabelled_elsewhere", "via")}
    flagged = total["found"] + total["acceptable_flagged"]
    total.update(repo="overall", recall=total["found"] / total["true"] if total["true"] else None,
                 precision=total["found"] / flagged if flagged else None)
    print(f"{'repository':28} {'TRUE':>5} {'found':>5} {'recall':>7} {'ACC':>5} {'flagged':>7} {'precision':>9}"
          f" {'unlab(files)':>12} {'unlab(other)':>12} {'+via':>5}")
    for r in rows + [total]:
        print(f"{r['repo']:28} {r['true']:5} {r['found']:5} {pct(r['found'], r['true']):>7} {r['acceptable']:5}"
              f" {r['acceptable_flagged']:7} {pct(r['found'], r['found'] + r['acceptable_flagged']):>9}"
              f" {r['unlabelled_in_labelled_files']:12} {r['unlabelled_elsewhere']:12} {r['via']:5}")
    print(f"\nTRUE found on the line, or named as the related location of a finding at a call site (+via): "
          f"{total['found'] + total['via']}/{total['true']} {pct(total['found'] + total['via'], total['true'])}")
    cats: dict[str, list[int]] = defaultdict(lambda: [0, 0])
    for s in scores:
        for lb, _ in s.found:
            cats[lb.category][0] += 1
        for lb in s.missed:
            cats[lb.category][1] += 1
    print("\nrecall of TRUE by category:")
    for cat, (found, missed) in sorted(cats.items()):
        print(f"  {cat:18} {found:3}/{found + missed:<3} {pct(found, found + missed)}")
    print("\nmisses (TRUE, no finding; [via] where a finding at a call site names the line as related):")
    for s in scores:
        via = {id(lb) for lb in s.via}
        for lb in s.missed:
            print(f"  {s.repo} {lb.path}:{lb.line} [{lb.category}]{' [via]' if id(lb) in via else ''} {lb.reason}")
    print("\nfalse alarms (ACCEPTABLE, flagged):")
    for s in scores:
        for lb, codes in s.false_alarms:
            print(f"  {s.repo} {lb.path}:{lb.line} {','.join(codes)} [{lb.category}] {lb.reason}")
    if show_unlabelled:
        print("\nunlabelled findings in labelled files (not scored):")
        for s in scores:
            for f in s.unlabelled_in_files:
                print(f"  {s.repo} {f['_path']}:{f['location']['row']} {f['code']} {f['message']}")
    return {"repos": rows, "overall": total,
            "categories": {c: {"found": f, "true": f + m} for c, (f, m) in cats.items()},
            "missed": [lb.__dict__ for s in scores for lb in s.missed],
            "via": [lb.__dict__ for s in scores for lb in s.via],
            "false_alarms": [dict(lb.__dict__, codes=codes) for s in scores for lb, codes in s.false_alarms],
            "unlabelled_in_labelled_files": [
                {"repo": s.repo, "path": f["_path"], "line": f["location"]["row"], "code": f["code"]}
                for s in scores for f in s.unlabelled_in_files]}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--checkouts", required=True, type=Path, help="directory holding <owner>+<name> clones")
    parser.add_argument("--labels", type=Path, default=LABELS)
    parser.add_argument("--repo", action="append", default=[], help="score only these repositories")
    parser.add_argument("--gpulint", default=f"{shlex.quote(sys.executable)} -m gpulint",
                        help="command that runs gpulint (default: this Python's `-m gpulint`)")
    parser.add_argument("--json", type=Path, help="also write the scores here")
    parser.add_argument("--show-unlabelled", action="store_true", help="list findings on unlabelled lines")
    args = parser.parse_args()
    labels = read_labels(args.labels)
    by_repo: dict[str, list[Label]] = defaultdict(list)
    for lb in labels:
        by_repo[lb.repo].append(lb)
    unknown = set(args.repo) - set(by_repo)
    if unknown:
        raise SystemExit(f"no labels for: {', '.join(sorted(unknown))}")
    scores = []
    with ExitStack() as stack:
        config = Path(stack.enter_context(tempfile.TemporaryDirectory())) / "gpulint.toml"
        config.write_text("")
        for repo, repo_labels in by_repo.items():
            if args.repo and repo not in args.repo:
                continue
            commits = {lb.commit for lb in repo_labels}
            if len(commits) != 1:
                raise SystemExit(f"{repo}: labels name several commits: {sorted(commits)}")
            root = checkout_at(args.checkouts / repo.replace("/", "+"), commits.pop(), stack)
            scores.append(score_repo(repo_labels, run_gpulint(shlex.split(args.gpulint), root, config)))
    result = report(scores, args.show_unlabelled)
    if args.json:
        args.json.write_text(json.dumps(result, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
