"""The one file pipeline: read -> hash -> parse -> analyse -> rules -> noqa -> fixes (until nothing changes) -> write.

Every way gpulint lints goes through here: files on disk (the CLI, the cache, the worker pool), stdin, and an
editor's buffer (the language server); a Python file and a notebook differ only in their view
(`gpulint.sources`), which maps the text to one module and the results back. Results are values: each stage
makes new ones, and what crosses a process boundary or reaches an output writer is finished.
"""

from __future__ import annotations

from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Mapping, Optional

from gpulint.config import Settings
from gpulint.diagnostics import Diagnostic, FixMode
from gpulint.files import FileError, file_digest
from gpulint.sources import Input, content_hash, view_of

__all__ = ["FileOutcome", "Input", "content_hash", "lint_file", "lint_file_safely", "lint_input"]


@dataclass(frozen=True)
class FileOutcome:
    """What linting one file gave: findings placed in the user's file, the text before/after fixes, errors."""

    path: Path
    diagnostics: tuple[Diagnostic, ...] = ()
    # (filename, cell) -> text, for printing source lines under findings
    sources: Mapping = field(default_factory=dict)
    fixed_count: int = 0
    original: Optional[str] = None  # set when a fix changed the text
    fixed: Optional[str] = None
    errors: tuple[str, ...] = ()  # one-line problems (unreadable file, a rule that crashed, a failed write)
    content_hash: Optional[str] = None  # of the bytes that were linted: the cache's key
    fatal: bool = False  # a rule crashed or a fix could not be written: the run exits 2 whatever it found
    text: Optional[str] = field(default=None, repr=False)  # the whole text after fixes (stdin prints it)
    # The syntax tree the findings' fixes refer to (the language server computes a fix's edits from it).
    module: Optional[object] = field(default=None, repr=False, compare=False)
    # Other files of the project whose contents the findings depend on (helpers followed across modules), with
    # their content digests: a cached result is valid only while each still has that digest.
    dependencies: tuple[tuple[str, str], ...] = ()
    warnings: tuple[str, ...] = ()  # one-line notices that fail nothing (an unknown code in a noqa comment)

    def portable(self) -> "FileOutcome":
        """Without syntax-tree nodes, so it can cross a process boundary (and be cached)."""
        return replace(self, diagnostics=tuple(d.portable() for d in self.diagnostics), module=None, text=None,
                       sources=self.sources if self.diagnostics else {})  # sources: only printed under findings


def lint_input(source: Input, settings: Settings, fix: FixMode = FixMode.NONE, *, write: bool = True,
               want_edits: bool = False, digests: bool = True) -> FileOutcome:
    """Lint one input through its view; with `fix`, apply fixes and (`write`, a file on disk) write them.

    `digests=False` (the language server: it needs which modules the findings depend on, not their digests,
    which only the cache uses) leaves the dependencies' digests empty."""
    from gpulint import runner  # imports LibCST: only when something is parsed

    path = source.path or Path(source.name)
    codes = settings.enabled_codes(source.path)
    view = view_of(source)
    if view.unreadable is not None:
        found = (view.unreadable,) if view.unreadable.code in codes else ()
        return FileOutcome(path, found, {}, content_hash=source.digest, text=source.text)
    from gpulint.analysis.project import recording  # the project model: only when something is linted

    with _own_text_dropped(source.path):
        with recording() as consulted:
            result = runner.lint_source(view.text, source.name, codes, path=source.path,
                                        report_periodic=settings.report_periodic, fix=fix, want_edits=want_edits)
        own = source.path.resolve() if source.path is not None else None
        dependencies = tuple(sorted((str(p), _dependency_digest(p, consulted) if digests else "")
                                    for p in consulted if p != own))
        errors = view.place_errors(result.errors)
        finished = view.finish(result, codes)
        if finished is None:  # linted again without fixes: its text is taken back after this lint too
            errors.append(f"{source.name}: a fix moved code across cells; notebook left unchanged")
            result = runner.lint_source(view.text, source.name, codes, path=source.path,
                                        report_periodic=settings.report_periodic, want_edits=want_edits)
            errors.extend(view.place_errors(result.errors))
            finished = view.finish(result, codes)
    outcome = FileOutcome(path, finished.diagnostics, finished.sources, content_hash=source.digest,
                          dependencies=dependencies,
                          errors=tuple(errors), fatal=result.crashed, text=finished.text, module=result.module)
    if finished.text == source.text:
        return outcome
    outcome = replace(outcome, fixed_count=result.fixed_count, original=source.text, fixed=finished.text)
    if not write or source.file is None:
        return outcome
    try:
        source.file.write(finished.text)
    except FileError as exc:
        # Nothing was written: report the findings of the text as it was read, and fail the run at its end.
        unfixed = lint_input(source, settings, FixMode.NONE, write=False, want_edits=want_edits, digests=digests)
        return replace(unfixed, errors=(*outcome.errors, str(exc)), fatal=True)
    return outcome


@contextmanager
def _own_text_dropped(path: Optional[Path]):
    """In a batch run, the linted text of a file that differs from the disk (a notebook's joined cells, a text
    being fixed) is handed to the project model while the file is linted (`calls.project_calls`), and taken back
    after: the files linted later in the same process must see the project a process that never linted this
    file sees, whatever the order and the number of workers (a notebook calling `train(model, loader)` made a
    module's GPU202 depend on whether the notebook was linted first). The language server keeps its buffers."""
    try:
        yield
    finally:
        from gpulint import runtime

        if path is not None and runtime.batch_mode():
            from gpulint.analysis.project import drop_text

            drop_text(path)


def _dependency_digest(path: Path, consulted) -> str:
    """What a cached result's dependency records (cache.py): the file's content digest, and for a module of
    which only summaries were used, also the digest of those summaries and the functions they are of
    (`<content>|s:<summary digest>|<f,Cls.m>`), so that an edit keeping them keeps the cached result."""
    digest = file_digest(str(path))
    if path in consulted.text or digest == "-":
        return digest
    from gpulint.analysis.project import project_for

    names = sorted(consulted.summaries.get(path, ()))
    return f"{digest}|s:{project_for(path).summary_digest(path, names)}|{','.join(names)}"


def lint_file(path: Path, settings: Settings, fix: FixMode = FixMode.NONE, *, write: bool = True,
              want_edits: bool = False, display_name: Optional[str] = None,
              source: Optional[Input] = None) -> FileOutcome:
    """Lint a file on disk (`source`: already read, as the cache lookup does; else read here)."""
    if source is None:
        try:
            source = Input.read(path, display_name)
        except FileError as exc:
            return FileOutcome(path, errors=(str(exc),))
    return lint_input(source, settings, fix, write=write, want_edits=want_edits)


def lint_file_safely(path: Path, settings: Settings, fix: FixMode = FixMode.NONE, *, write: bool = True,
                     want_edits: bool = False, source: Optional[Input] = None) -> FileOutcome:
    """`lint_file`, with any unexpected exception turned into a one-line error for this file only."""
    try:
        return lint_file(path, settings, fix, write=write, want_edits=want_edits, source=source)
    except Exception as exc:  # a bug of ours must cost one file, not the run
        return FileOutcome(path, errors=(f"{path}: internal error ({type(exc).__name__}: {exc}); "
                                         f"please report it with this file",))
