"""Lint files on disk: read, lint, fix and write back. The CLI, the cache and the worker pool call this."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Optional

from gpulint.config import Settings
from gpulint.diagnostics import Diagnostic, Fix, FixMode
from gpulint.files import FileError, SourceFile


@dataclass
class FileOutcome:
    path: Path
    diagnostics: list[Diagnostic] = field(default_factory=list)
    # (filename, cell) -> text, for printing source lines under findings
    sources: dict = field(default_factory=dict)
    fixed_count: int = 0
    original: Optional[str] = None  # set when a fix changed the text
    fixed: Optional[str] = None
    errors: list[str] = field(default_factory=list)  # one-line problems (unreadable file, internal error)
    content_hash: Optional[str] = None  # of the bytes that were linted: the cache's key

    def portable(self) -> "FileOutcome":
        """Without syntax-tree nodes, so it can cross a process boundary (and be cached)."""
        if not self.diagnostics:
            self.sources = {}  # only printed under findings: no need to ship the text back
        for d in self.diagnostics:
            d.node = None
            if d.fix is not None:
                d.fix = Fix(d.fix.message, d.fix.applicability, {})
        return self


def content_hash(raw: bytes) -> str:
    return hashlib.sha256(raw).hexdigest()


def lint_file(path: Path, settings: Settings, fix: FixMode = FixMode.NONE, *, write: bool = True,
              want_edits: bool = False, display_name: Optional[str] = None) -> FileOutcome:
    name = display_name or str(path)
    outcome = FileOutcome(path)
    if path.suffix == ".ipynb":
        try:
            from gpulint.notebook import lint_notebook
        except ImportError:
            outcome.errors.append(f"{name}: notebooks need nbformat (pip install 'gpulint[notebook]'); skipped")
            return outcome
        return lint_notebook(path, settings, fix, write=write, want_edits=want_edits, display_name=name)
    try:
        source = SourceFile.read(path)
    except FileError as exc:
        outcome.errors.append(str(exc))
        return outcome
    from gpulint.runner import lint_source  # imports LibCST: only when something is parsed

    outcome.content_hash = content_hash(source.raw)
    codes = settings.enabled_codes(path)
    result = lint_source(source.text, name, codes, report_periodic=settings.report_periodic, fix=fix,
                         want_edits=want_edits)
    outcome.diagnostics = result.diagnostics
    outcome.sources[(name, None)] = result.source
    outcome.fixed_count = result.fixed_count
    outcome.errors.extend(f"{name}: {e}" for e in result.errors)
    if result.changed(source.text):
        outcome.original, outcome.fixed = source.text, result.source
        if write:
            try:
                source.write(result.source)
            except FileError as exc:
                outcome.errors.append(str(exc))
                outcome.fixed_count = 0
                outcome.fixed = None
                # Nothing was written: report the findings of the text as it was read.
                again = lint_source(source.text, name, codes, report_periodic=settings.report_periodic)
                outcome.diagnostics = again.diagnostics
                outcome.sources[(name, None)] = source.text
    return outcome


def lint_file_safely(path: Path, settings: Settings, fix: FixMode = FixMode.NONE, *, write: bool = True,
                     want_edits: bool = False) -> FileOutcome:
    """`lint_file`, with any unexpected exception turned into a one-line error for this file only."""
    try:
        return lint_file(path, settings, fix, write=write, want_edits=want_edits)
    except Exception as exc:  # a bug of ours must cost one file, not the run
        return FileOutcome(path, errors=[f"{path}: internal error ({type(exc).__name__}: {exc}); "
                                         f"please report it with this file"])
