"""Lint many files: cached results first, then the rest in worker processes, in a deterministic order.

Workers are forked after LibCST is imported, so each starts warm. Results come back in any order and are put
back in the order of the file list; the biggest files are handed out first so no worker is left with a long
tail.
"""

from __future__ import annotations

import multiprocessing
import os
from pathlib import Path
from typing import Optional

from gpulint.cache import Cache
from gpulint.config import Settings
from gpulint.diagnostics import FixMode
from gpulint.engine import FileOutcome, content_hash, lint_file_safely
from gpulint.files import FileError, SourceFile, decode

# Below this many files to parse, starting workers costs more than it saves.
MIN_FILES_PER_WORKER = 4


def default_jobs() -> int:
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # pragma: no cover (macOS, Windows)
        return os.cpu_count() or 1


def lint_files(files: list[Path], settings: Settings, mode: FixMode, *, write: bool, want_edits: bool,
               jobs: Optional[int] = None, cache: Optional[Cache] = None) -> list[FileOutcome]:
    outcomes: list[Optional[FileOutcome]] = [None] * len(files)
    cacheable = cache is not None and mode is FixMode.NONE
    todo: list[int] = []
    for i, path in enumerate(files):
        hit = _from_cache(cache, path, want_edits) if cacheable and _cacheable(path) else None
        if hit is not None:
            outcomes[i] = hit
        else:
            todo.append(i)

    jobs = default_jobs() if jobs is None else max(1, jobs)
    workers = min(jobs, len(todo) // MIN_FILES_PER_WORKER)
    if workers <= 1 or "fork" not in multiprocessing.get_all_start_methods():
        for i in todo:
            outcomes[i] = lint_file_safely(files[i], settings, mode, write=write, want_edits=want_edits)
    else:
        import gpulint.runner  # noqa: F401  (imported before forking: workers start with LibCST loaded)
        from gpulint.rule import all_rules

        all_rules()
        todo.sort(key=lambda i: -_size(files[i]))
        context = multiprocessing.get_context("fork")
        tasks = [(i, files[i], settings, mode, write, want_edits) for i in todo]
        with context.Pool(workers) as pool:
            for i, outcome in pool.imap_unordered(_work, tasks, chunksize=1):
                outcomes[i] = outcome

    if cacheable:
        for i in todo:
            outcome = outcomes[i]
            if outcome is not None and not outcome.errors and outcome.content_hash is not None \
                    and _cacheable(files[i]):
                key = cache.key(files[i], outcome.content_hash, want_edits)
                cache.put(key, outcome.diagnostics)
    return outcomes  # type: ignore[return-value]


def _work(task) -> tuple[int, FileOutcome]:
    i, path, settings, mode, write, want_edits = task
    return i, lint_file_safely(path, settings, mode, write=write, want_edits=want_edits).portable()


def _cacheable(path: Path) -> bool:
    return path.suffix != ".ipynb"  # notebooks: findings live in cells; linted each time


def _from_cache(cache: Cache, path: Path, want_edits: bool) -> Optional[FileOutcome]:
    """The outcome stored for this exact content, or None (then the file is linted)."""
    try:
        source = SourceFile.read(path)
    except FileError:
        return None  # the worker reports it
    name = str(path)
    digest = content_hash(source.raw)
    diagnostics = cache.get(cache.key(path, digest, want_edits), name)
    if diagnostics is None:
        return None
    outcome = FileOutcome(path, diagnostics, content_hash=digest)
    if diagnostics:
        outcome.sources[(name, None)] = source.text  # the output prints the lines under findings
    return outcome


def _size(path: Path) -> int:
    try:
        return path.stat().st_size
    except OSError:
        return 0
