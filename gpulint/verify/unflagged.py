"""What static analysis missed: host reads the run observed every step at lines where no gpulint rule (preview
rules included) reports anything, neither at the read nor at one of the user frames that called it."""

from __future__ import annotations

from pathlib import Path

EVERY_STEP = 0.5  # a read counts as per-step when it happened in at least this share of the measured steps


def _flagged(path: str, line: int, cache: dict) -> bool:
    """Whether a rule reports something at `path:line`, or a `# noqa` there silences one (the user knows). A
    file that cannot be read counts as flagged: nothing can be said about it."""
    if path not in cache:
        cache[path] = _lint(path)
    if cache[path] is None:
        return True
    rows, sup, codes = cache[path]
    return line in rows or any(sup.suppresses(code, (line,)) for code in codes)


def _lint(path: str):
    from gpulint import suppression
    from gpulint.rule import all_rules
    from gpulint.runner import lint_source

    try:
        source = Path(path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return None
    codes = frozenset(all_rules())  # preview rules too
    rows: set[int] = set()
    try:
        found = lint_source(source, path, codes, path=Path(path)).diagnostics
    except Exception:  # a file the linter cannot take says nothing about what it flags: leave it out
        return None
    for d in found:
        rows.update(range(d.location.row, d.end_location.row + 1))
    return rows, suppression.parse(source), codes


def unflagged(rank: dict) -> list[dict]:
    """Per-step host reads of one rank of the original program that no rule flags, most frequent first."""
    windows = rank.get("measured_windows") or 0
    if not windows:
        return []
    per_step = {(f, line, name): n / windows for f, line, name, n in rank.get("host_read_sites") or []}
    cache: dict = {}
    out = []
    for f, line, name, seen, chain in rank.get("host_read_callers") or []:
        if seen < EVERY_STEP * windows:
            continue
        if _flagged(f, line, cache) or any(_flagged(cf, cl, cache) for cf, cl, _ in chain):
            continue
        out.append({"file": f, "line": line, "method": name, "per_step": per_step.get((f, line, name), 0.0),
                    "callers": [{"file": cf, "line": cl, "function": fn} for cf, cl, fn in chain]})
    out.sort(key=lambda s: (-s["per_step"], s["file"], s["line"]))
    return out
