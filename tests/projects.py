"""Small projects written into a temporary folder and linted through the CLI, as a user runs gpulint.

`write_project(root, {"utils.py": ..., "train.py": ...})` writes a `pyproject.toml` (so the folder is the project root)
and the modules; `check(root, *args)` runs `gpulint check --output-format json *args` in it; `found(items)` keys each
finding as `(path, row, code)`.
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

PYPROJECT = "[project]\nname = 'p'\n"


def write_project(root: Path, modules: dict[str, str], pyproject: str = PYPROJECT, dedent: bool = False) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    (root / "pyproject.toml").write_text(pyproject)
    for name, text in modules.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text) if dedent else text)
    return root


def check(root: Path, *args: str) -> list[dict]:
    out = subprocess.run([sys.executable, "-m", "gpulint", "check", "--output-format", "json", *args],
                         cwd=root, capture_output=True, text=True, timeout=120)
    assert out.returncode in (0, 1), out.stderr
    return json.loads(out.stdout)


def found(items) -> set:
    return {(Path(d["filename"]).as_posix(), d["location"]["row"], d["code"]) for d in items}


def lint_script(root: Path, text: str) -> set:
    """The findings of a one-script project (`train.py` holding `text`), keyed `(row, code)`."""
    items = check(write_project(root, {"train.py": text}), "--no-cache", "--exit-zero", "train.py")
    return {(row, code) for _, row, code in found(items)}


def lint_files(root: Path, files: dict[str, str], *only: str) -> set:
    """The findings of a project of `files` (dedented), keyed `(file name, row, code)`; `only` selects rules."""
    write_project(root, files, dedent=True)
    items = check(root, "--no-cache", "--exit-zero", *(("--select", ",".join(only)) if only else ()), ".")
    return {(Path(p).name, row, code) for p, row, code in found(items)}
