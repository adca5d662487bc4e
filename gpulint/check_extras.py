"""Ruff's habits around `check` that act on a run's outcomes: `--show-fixes`, `--fix-only`,
`--exit-non-zero-on-fix`, `--unused-noqa`, `--add-noqa`, and the warnings about unknown codes in noqa comments."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Iterable, Optional

import click

from gpulint import noqa_check
from gpulint.files import FileError, read_regular


@dataclass(frozen=True)
class Extras:
    fix_only: bool = False
    show_fixes: bool = False
    exit_non_zero_on_fix: bool = False
    unused_noqa: bool = False

    def prepare(self, outcomes, settings) -> tuple[list, dict]:
        """The outcomes with `--unused-noqa` findings added, and what `--show-fixes` needs: per changed file,
        the findings (code, name) -> count of the text as it was before the fixes."""
        if self.unused_noqa and not self.fix_only:
            outcomes = [_with_unused_noqa(outcome, settings) for outcome in outcomes]
        if not (self.show_fixes or self.fix_only):
            return outcomes, {}
        from gpulint.runner import lint_source

        before = {}
        for o in outcomes:
            if o.fixed_count and o.original is not None and o.path.suffix != ".ipynb":
                found = lint_source(o.original, str(o.path), settings.enabled_codes(o.path),
                                    report_periodic=settings.report_periodic).diagnostics
                before[o.path] = Counter((d.code, d.name) for d in found)
        return outcomes, before

    def fixed_summary(self, outcomes, before: dict, quiet: bool, listing_only: bool = False) -> str:
        """Ruff's `Fixed N errors:` and, with --show-fixes, the fixes per file and rule."""
        fixed = [o for o in outcomes if o.fixed_count]
        total = sum(o.fixed_count for o in fixed)
        if quiet or (listing_only and not total):
            return ""
        if not total:
            return "No fixes applied.\n"
        head = f"Fixed {total} finding{'s' if total != 1 else ''}"
        if not (self.show_fixes and fixed):
            return head + ".\n"
        lines = [("Fixed findings" if listing_only else head) + ":"]
        for o in sorted(fixed, key=lambda o: str(o.path)):
            lines.append(f"- {o.path}:")
            after = Counter((d.code, d.name) for d in o.diagnostics)
            per_rule = (before.get(o.path, Counter()) - after) if o.path in before else Counter()
            for (code, name), n in sorted(per_rule.items()):
                lines.append(f"    {n} \u00d7 {code} ({name})")
            if not per_rule:
                lines.append(f"    {o.fixed_count} \u00d7 fix")
        return "\n".join(lines) + "\n"


def _with_unused_noqa(outcome, settings):
    if outcome.errors or outcome.path.suffix == ".ipynb":
        return outcome
    name = str(outcome.path)
    text = outcome.sources.get((name, None))
    if text is None:
        try:
            text = read_regular(outcome.path)[0].decode("utf-8")
        except (FileError, UnicodeDecodeError):
            return outcome
    found = noqa_check.unused_noqa(text, name, settings.enabled_codes(outcome.path), settings.report_periodic)
    if not found:
        return outcome
    return replace(outcome, diagnostics=(*outcome.diagnostics, *found), sources={**outcome.sources, (name, None): text})


def noqa_warnings(files: Iterable[Path]) -> list[str]:
    return noqa_check.warnings_for(files)


def run_add_noqa(outcomes, quiet: bool) -> int:
    """Ruff's `--add-noqa`: the exit status (0, or 2 when a file could not be rewritten)."""
    from gpulint.files import FileError

    added, failed = 0, False
    for o in outcomes:
        for error in o.errors:
            click.echo(f"gpulint: error: {error}", err=True)
            failed = True
        if not o.diagnostics:
            continue
        if o.path.suffix == ".ipynb":
            click.echo(f"gpulint: warning: {o.path}: --add-noqa does not edit notebooks; skipped", err=True)
            continue
        try:
            added += noqa_check.add_noqa(o.path, o.diagnostics)
        except FileError as exc:
            click.echo(f"gpulint: error: {exc}", err=True)
            failed = True
    if not quiet:
        click.echo(f"Added {added} noqa directive{'s' if added != 1 else ''}.")
    return 2 if failed else 0
