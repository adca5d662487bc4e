"""Whether a module is test code: a loop in a test is not a training step, and a toy model built in a test is not
a model trained on a GPU. Used to keep test modules from making project code per-step (analysis/forward.py) and
by the throughput rules that judge a whole program (they do not report in tests)."""

from __future__ import annotations

from pathlib import Path
from typing import Optional

_TEST_DIRS = frozenset(("tests", "test", "testing"))


def is_test_path(path: Optional[Path], root: Optional[Path] = None) -> bool:
    """`test_*.py`, `*_test.py`, `conftest.py`, or a module inside a `tests`/`test`/`testing` folder (below
    `root` when given, so that a project checked out under a folder named `tests` is not all test code)."""
    if path is None:
        return False
    path = Path(path)
    if root is not None:
        try:
            path = path.resolve().relative_to(Path(root).resolve())
        except (ValueError, OSError):
            pass
    return path.name.startswith("test_") or path.name.endswith("_test.py") or path.name == "conftest.py" or \
        any(part in _TEST_DIRS for part in path.parts[:-1])


def is_unit_test_module(path: Optional[Path], root: Optional[Path]) -> bool:
    """A test module of the project's test suite: named like one (`test_*.py`, `*_test.py`, `conftest.py`) and
    inside a `tests`/`test`/`testing` folder below the project root (`tests/losses/test_memory.py`). Its loops run
    a test's few iterations over toy inputs, not a training run: the per-step rules do not report there. A
    `test_*.py` at the top or in a source folder is often the project's evaluation script (`test_simple.py`) and
    stays checked; so does a helper or example program kept under `tests/` without a test's name."""
    if path is None or root is None:
        return False
    name = Path(path).name
    if not (name.startswith("test_") or name.endswith("_test.py") or name == "conftest.py"):
        return False
    try:
        parts = Path(path).resolve().relative_to(Path(root).resolve()).parts
    except (ValueError, OSError):
        return False
    return any(part in _TEST_DIRS for part in parts[:-1])


def runs_as_a_script(module) -> bool:
    """The module (a LibCST module) is a program, not a test suite, though named like a test module: it holds no
    test (no top-level `def test...`, no `Test...`/`TestCase` class, no `pytest`/`unittest` import) and reads its
    command line at import time (`parser.parse_args()`, `sys.argv`) or runs under `if __name__ == "__main__":`.
    Such a module cannot run under a test runner (the runner's own arguments would be parsed): it is an evaluation
    script that only happens to be named `test_*.py` under `test/`, and its loops run a model over a dataset."""
    import libcst as cst

    code = cst.Module([]).code_for_node
    script = False
    for statement in module.body:
        if type(statement) is cst.FunctionDef and statement.name.value.startswith("test"):
            return False
        if _test_class_or_import(statement, code):
            return False
        if type(statement) is cst.SimpleStatementLine:
            text = code(statement)
            if "parse_args(" in text or "sys.argv" in text:
                script = True
        elif type(statement) is cst.If and "__name__" in code(statement.test) and "__main__" in code(statement.test):
            script = True
    return script


def program_named_like_a_test(module, path: Optional[Path]) -> bool:
    """A program whose file is named like a test module, outside any test folder: no `pytest`/`unittest` import,
    no `Test...`/`TestCase` class, and it parses its command line on import (`args = parser.parse_args()` at
    the top level), so no test runner could import it, whatever functions it names `test` (TCN's
    `pmnist_test.py`, `word_cnn_test.py`: a training script with its evaluation `def test():`)."""
    import libcst as cst

    if path is None or any(part in _TEST_DIRS for part in Path(path).parts[:-1]):
        return False
    code = cst.Module([]).code_for_node
    parses = False
    for statement in module.body:
        if _test_class_or_import(statement, code):
            return False
        if type(statement) is cst.SimpleStatementLine and "parse_args(" in code(statement):
            parses = True
    return parses


def _test_class_or_import(statement, code) -> bool:
    """A top-level statement only a test module has: a `Test...`/`TestCase` class, or an import of `pytest` or
    `unittest`."""
    import libcst as cst

    if type(statement) is cst.ClassDef:
        return statement.name.value.startswith("Test") or any("TestCase" in code(b.value) for b in statement.bases)
    if type(statement) is not cst.SimpleStatementLine:
        return False
    for small in statement.body:
        if type(small) is cst.Import and any(code(a.name).split(".")[0] in ("pytest", "unittest")
                                             for a in small.names):
            return True
        if type(small) is cst.ImportFrom and small.module is not None and \
                code(small.module).split(".")[0] in ("pytest", "unittest"):
            return True
    return False
