"""Process settings for linting many files in one run (the CLI's batch path, not the language server).

CPython's cyclic garbage collector runs a young collection every 700 container allocations and an old one
every 100 young ones; parsing builds millions of short-lived nodes (LibCST's and `ast`'s), which are freed by
reference counting, yet each old collection walks every object alive, the parsed trees and the imported
modules included. On timm's 136k lines that was a quarter of the CPU time of a cold run. For a batch run the
collector runs less often (the young threshold 100x higher), and the objects alive after the imports are moved
out of its sight (`gc.freeze()`, before the workers are forked, which also keeps their pages shared). Garbage
in cycles is still collected, later: memory stays bounded (benchmarks: peak RSS unchanged on timm).
"""

from __future__ import annotations

import contextlib
import gc
from typing import Iterator

# (young, middle, old) thresholds during a batch run; CPython's defaults are (700, 10, 10).
BATCH_THRESHOLDS = (100_000, 50, 100)


@contextlib.contextmanager
def batch_gc() -> Iterator[None]:
    """Fewer garbage collections while linting many files; the previous settings are restored after."""
    before = gc.get_threshold()
    gc.freeze()  # what is alive now (imported modules, settings) is never scanned again
    gc.set_threshold(*BATCH_THRESHOLDS)
    try:
        yield
    finally:
        gc.set_threshold(*before)
        gc.unfreeze()
