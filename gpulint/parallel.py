"""Lint many files: cached results first, then the rest in worker processes, in a deterministic order.

Workers are forked after LibCST is imported, so each starts warm. Results come back in any order and are put
back in the order of the file list; the biggest files are handed out first so no worker is left with a long
tail.
"""

from __future__ import annotations

import gc
import os
from dataclasses import replace
from pathlib import Path
from typing import Optional

from gpulint import file_stats, noqa_check
from gpulint.cache import Cache
from gpulint.config import Settings
from gpulint.diagnostics import FixMode
from gpulint.files import FileError
from gpulint.pipeline import FileOutcome, Input, lint_file_safely
from gpulint import runtime

# Below this many files to parse, starting workers costs more than it saves.
MIN_FILES_PER_WORKER = 4
# Nor below this many lines to lint per worker: each worker builds its own project model (the `ast` parses and
# summaries of the files its questions reach) and parses the same training scripts with LibCST to answer "which
# loop calls this every step" (the answers must not depend on the worker, tests/test_determinism.py). On
# pytorch/examples (93 files, 11,385 lines) a second worker cost about 1 CPU s more than one process, about a
# third of the run, yet on an idle 2-core machine the run ended 0.4 s sooner (1.8 s wall against 2.2 s): from about
# 5,000 lines a second worker pays in time, below that (pre-commit's few changed files) it only costs CPU.
# `GPULINT_LINES_PER_WORKER` overrides it (tests use 1 to always fork).
LINES_PER_WORKER = 5_000


def default_jobs() -> int:
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # pragma: no cover (macOS, Windows)
        return os.cpu_count() or 1


def lint_files(files: list[Path], settings: Settings, mode: FixMode, *, write: bool, want_edits: bool,
               jobs: Optional[int] = None, cache: Optional[Cache] = None) -> list[FileOutcome]:
    """Each file is read and hashed once, here: the hash finds its cache entry, and on a miss the text read
    goes to the worker that lints it."""
    with runtime.batch():
        return _lint_files(files, settings, mode, write=write, want_edits=want_edits, jobs=jobs, cache=cache)


def _lint_files(files: list[Path], settings: Settings, mode: FixMode, *, write: bool, want_edits: bool,
                jobs: Optional[int], cache: Optional[Cache]) -> list[FileOutcome]:
    outcomes: list[Optional[FileOutcome]] = [None] * len(files)
    cacheable = cache is not None and mode is FixMode.NONE
    todo: list[tuple[int, Input]] = []
    notices: dict[int, tuple[str, ...]] = {}
    for i, path in enumerate(files):
        try:
            source = Input.read(path)
        except FileError as exc:
            outcomes[i] = FileOutcome(path, errors=(str(exc),))
            continue
        notices[i] = noqa_check.warnings_for(source.name, source.text, source.is_notebook)
        hit = _from_cache(cache, source, want_edits) if cacheable and _cacheable(source) else None
        if hit is not None:
            outcomes[i] = hit
        else:
            todo.append((i, source))

    if todo:
        _lint_todo(files, todo, outcomes, settings, mode, write=write, want_edits=want_edits, jobs=jobs,
                   cache=cache if cacheable else None)
    for i, found in notices.items():  # from the text read above: no file is read a second time for them
        if found and outcomes[i] is not None:
            outcomes[i] = replace(outcomes[i], warnings=found)
    return outcomes  # type: ignore[return-value]


def _lint_todo(files: list[Path], todo: list[tuple[int, Input]], outcomes: list[Optional[FileOutcome]],
               settings: Settings, mode: FixMode, *, write: bool, want_edits: bool, jobs: Optional[int],
               cache: Optional[Cache]) -> None:
    """Lint the files the cache did not answer, into `outcomes`, and store their results. Only here are LibCST,
    the rules and the workers loaded: a run that every file's cache entry answers never imports them (a warm
    run's CPU was mostly LibCST's import)."""
    cacheable = cache is not None
    jobs = default_jobs() if jobs is None else max(1, jobs)
    from gpulint import chunked

    chunked.helpers_for(jobs)  # `--jobs 1`: a big module's chunks in one process too
    workers = min(jobs, len(todo) // MIN_FILES_PER_WORKER, _worth_workers(todo))
    import multiprocessing  # only when files are linted: a cached run does without it

    if workers <= 1 or "fork" not in multiprocessing.get_all_start_methods():
        for i, source in todo:
            with file_stats.unchanged_files():  # nothing on disk changes while one file is linted
                outcomes[i] = lint_file_safely(files[i], settings, mode, write=write, want_edits=want_edits,
                                               source=source).portable()
    else:
        import gpulint.runner  # noqa: F401  (imported before forking: workers start with LibCST loaded)
        from gpulint.rule import all_rules

        all_rules()
        # `GPULINT_SHARED_ANSWERS=0`: each worker answers for itself, as before (benchmarks, tests)
        if os.environ.get("GPULINT_SHARED_ANSWERS", "1") != "0":
            _answer_before_forking(todo)
        gc.freeze()  # the modules just imported too: the workers never scan them (gpulint/runtime.py)
        todo.sort(key=lambda item: -len(item[1].text))
        context = multiprocessing.get_context("fork")
        global _worker_cache
        _worker_cache = cache if cacheable else None  # the workers store their own results (see `_work`)
        tasks = [(i, files[i], source, settings, mode, write, want_edits) for i, source in todo]
        try:
            with context.Pool(workers) as pool:
                for i, outcome in pool.imap_unordered(_work, tasks, chunksize=1):
                    outcomes[i] = outcome
        finally:
            _worker_cache = None
        todo = []  # stored already

    if cacheable:
        for i, source in todo:
            outcome = outcomes[i]
            if outcome is not None and not outcome.errors and _cacheable(source):
                cache.put(cache.key(files[i], source.digest, want_edits), list(outcome.diagnostics),
                          outcome.dependencies)


def _answer_before_forking(todo: list[tuple[int, Input]]) -> None:
    """The project-wide questions every worker would otherwise answer for itself, answered once in the parent
    and inherited by the forked workers: each file's project model (CPython's `ast`), and whether a loop
    elsewhere runs a class or function of it every step (the prefilter's question, `forward.may_run_every_step`,
    with the caller analyses, submodule searches and summaries it needs). The answers do not depend on the
    process that computes them (tests/test_determinism.py), so the findings are the same."""
    from gpulint.analysis.forward import may_run_every_step
    from gpulint.analysis.project import project_for

    projects = {}
    # nothing on disk changes before the workers start (a fix is written by the worker that lints its file):
    # each project file is stat'ed once for all the answers, not at each of the model's ~15,000 look-ups
    with file_stats.unchanged_files():
        for _, source in todo:
            if source.path is None or source.is_notebook:
                continue
            try:
                path = source.path.resolve()
                project = project_for(path)
                projects[id(project)] = project
                info = project.module(path)
                if info is not None and info.digest == source.digest:
                    may_run_every_step(path, info.tree)
            except Exception:  # noqa: BLE001  (the worker meets the same problem and reports it)
                continue
    # Answers kept without the modules they read (`forward.called_in_a_hot_loop`, from `ast` alone): a worker
    # finds them again, cheaply, inside the lint that asks, so that lint's cached result depends on those
    # modules as it did when the worker answered first.
    for project in projects.values():
        with project._lock:
            for key in [k for k in project.per_step_sites if k[:1] == ("called in a hot loop",)]:
                del project.per_step_sites[key]


def _worth_workers(todo: list[tuple[int, Input]]) -> int:
    """How many workers the amount of text to lint pays for (at least 1)."""
    try:
        per_worker = max(1, int(os.environ.get("GPULINT_LINES_PER_WORKER", LINES_PER_WORKER)))
    except ValueError:
        per_worker = LINES_PER_WORKER
    lines = sum(source.text.count("\n") + 1 for _, source in todo)
    return max(1, lines // per_worker)


# In a worker: the results cache, where each result is stored as soon as it is found (in parallel, rather than
# all of them one after the other in the main process once the pool is done).
_worker_cache: Optional[Cache] = None


def _work(task) -> tuple[int, FileOutcome]:
    i, path, source, settings, mode, write, want_edits = task
    with file_stats.unchanged_files():  # nothing on disk changes while one file is linted
        outcome = lint_file_safely(path, settings, mode, write=write, want_edits=want_edits,
                                   source=source).portable()
    cache = _worker_cache
    if cache is not None and not outcome.errors and _cacheable(source):
        cache.put(cache.key(path, source.digest, want_edits), list(outcome.diagnostics), outcome.dependencies)
    return i, outcome


def _cacheable(source: Input) -> bool:
    return not source.is_notebook  # notebooks: findings live in cells; linted each time


def _from_cache(cache: Cache, source: Input, want_edits: bool) -> Optional[FileOutcome]:
    """The outcome stored for this exact content, or None (then the file is linted)."""
    diagnostics = cache.get(cache.key(source.path, source.digest, want_edits), source.name)
    if diagnostics is None:
        return None
    # The output prints the lines under findings.
    sources = {(source.name, None): source.text} if diagnostics else {}
    return FileOutcome(source.path, tuple(diagnostics), sources, content_hash=source.digest)
