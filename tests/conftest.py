"""Shared test settings.

Tests that compare `--jobs 2` with `--jobs 1` lint small projects, which gpulint would lint in one process
(`gpulint.parallel.LINES_PER_WORKER`): every test (and every `gpulint` subprocess a test starts) runs with
`GPULINT_LINES_PER_WORKER=1`, so `--jobs 2` still forks its workers there. tests/test_worker_count.py checks the
default.
"""

import os

os.environ["GPULINT_LINES_PER_WORKER"] = "1"
