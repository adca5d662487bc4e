"""Process settings for linting many files in one run (the CLI's batch path, not the language server).

CPython's cyclic garbage collector runs a young collection every 700 container allocations and an old one
every 100 young ones; parsing builds millions of short-lived nodes (LibCST's and `ast`'s), which are freed by
reference counting, yet each old collection walks every object alive, the parsed trees and the imported
modules included. On timm's 136k lines that was a quarter of the CPU time of a cold run. For a batch run the
collector runs less often (the young threshold 100x higher), and the objects alive after the imports are moved
out of its sight (`gc.freeze()`, before the workers are forked, which also keeps their pages shared). Garbage
in cycles is still collected, later: memory stays bounded (benchmarks: peak RSS unchanged on timm).

A finished lint leaves almost no garbage in cycles: its analysis is released (`ModuleAnalysis.release`: the
facts that close over the analysis are dropped, so the module's tree is freed by reference counting), as are
the prefilter's facts (`FileFacts.release`). What a young collection would then find is mostly alive (the
project model's `ast` trees, the parse being analysed): with a young collection every 100,000 new objects a
worker ran 7-11 of them on timm, 0.4-0.6 CPU seconds for nothing (issue 11, branch speed5), so the young
threshold is 2,000,000: timm's workers never collect, at the same peak memory (about 200-230 MB a worker).
"""

from __future__ import annotations

import contextlib
import gc
from typing import Iterator

# (young, middle, old) thresholds during a batch run; CPython's defaults are (700, 10, 10).
BATCH_THRESHOLDS = (2_000_000, 50, 100)


# -- A process that ends with its command --------------------------------------------------------------------------
# The program run from a shell (`gpulint check ...`, through `cli.entry`), not a test calling the CLI in-process and
# not the language server, ends as soon as its one command is done. Two costs of an orderly end buy it nothing:
# restoring CPython's collector settings after a batch run (the next collection then scans every object the run
# left alive: 0.13 CPU s after one process linted pytorch/examples) and the interpreter's own teardown, which
# frees every tree, cached parse and project model one object at a time (0.6-0.8 CPU s after `--jobs 1` on
# pytorch/examples, 0.05-0.1 in the main process of `--jobs 2`), memory the operating system takes back at once.
_ending_process = False
_batch_ran = False


def ending_process() -> None:
    """Called by the program's entry point: this process ends with the command it runs (see above)."""
    global _ending_process
    _ending_process = True


def quick_exit_allowed() -> bool:
    """Whether the process may end without its teardown: it is the program's, and a batch run happened in it."""
    return _ending_process and _batch_ran


@contextlib.contextmanager
def batch_gc() -> Iterator[None]:
    """Fewer garbage collections while linting many files; the previous settings are restored after (unless the
    process ends with this run: see `ending_process`)."""
    before = gc.get_threshold()
    gc.freeze()  # what is alive now (imported modules, settings) is never scanned again
    gc.set_threshold(*BATCH_THRESHOLDS)
    try:
        yield
    finally:
        if not _ending_process:
            gc.set_threshold(*before)
            gc.unfreeze()


# -- LibCST's node checks -----------------------------------------------------------------------------------------
# Every LibCST node checks itself when it is built (`CSTNode.__post_init__` -> `_validate`): that parentheses
# pair, that keywords have the whitespace they need, ... For a tree its own parser builds from text that
# CPython's parser accepted too, those checks hold (LibCST's own comment there: "It might make more sense to
# move validation work into the visitor, which would allow us to avoid validating the tree when parsing a
# file"), and they cost 15-20% of the parse. In a batch run (one thread per process) the first parse of a file
# CPython accepted skips them; text CPython rejects, fixed text and every node gpulint builds are still checked.
_batch = False
_batches = 0  # batch runs entered so far in this process: what is remembered for one run is keyed by it


def batch_mode() -> bool:
    return _batch


def batch_number() -> int:
    """Which batch run this is (answers remembered for the length of one run are dropped when it changes)."""
    return _batches


@contextlib.contextmanager
def batch() -> Iterator[None]:
    """A batch run: fewer garbage collections, and trusted parses (see `trusted_parse`)."""
    global _batch, _batches, _batch_ran
    before = _batch
    _batch = True
    _batches += 1
    _batch_ran = True
    try:
        with batch_gc():
            yield
    finally:
        _batch = before


@contextlib.contextmanager
def trusted_parse(python_accepted: bool) -> Iterator[None]:
    """Within a batch run, and for text CPython's parser accepted: LibCST's nodes are built without their checks."""
    if not (_batch and python_accepted):
        yield
        return
    from libcst._nodes.base import CSTNode

    checked = CSTNode.__dict__["__post_init__"]
    CSTNode.__post_init__ = _unchecked  # type: ignore[method-assign]
    try:
        yield
    finally:
        CSTNode.__post_init__ = checked  # type: ignore[method-assign]


def _unchecked(self) -> None:
    return None
