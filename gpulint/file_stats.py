"""`os.stat` of project files, remembered while one file is linted in a batch run (`gpulint check`).

The project model checks a module's size and modification time every time it is asked for the module
(`Project.module`, to re-read a file edited since): a cold lint of pytorch/examples asked about 15,000 times for
about a hundred files, a system call each, about a twelfth of the run's CPU. Within the lint of one file nothing
on disk changes (a fix is written after its file's lint, `pipeline.lint_input`), so inside `unchanged_files()`
each path is stat'ed once. Outside it (the language server, tests, any other caller) every call stats the file.
"""

from __future__ import annotations

import os
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator, Optional, Union

_memo: Optional[dict] = None


@contextmanager
def unchanged_files() -> Iterator[None]:
    """While it is open, `stat(path)` answers each path once (single-threaded batch runs only)."""
    global _memo
    previous, _memo = _memo, {}
    try:
        yield
    finally:
        _memo = previous


def stat(path: Path) -> os.stat_result:
    """`path.stat()`, remembered inside `unchanged_files()` (an error too: raised again)."""
    memo = _memo
    if memo is None:
        return path.stat()
    found: Union[os.stat_result, OSError, None] = memo.get(path)
    if found is None:
        try:
            found = path.stat()
        except OSError as exc:
            found = exc
        memo[path] = found
    if isinstance(found, OSError):
        raise found
    return found
