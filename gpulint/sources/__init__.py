"""Source adapters: what the one file pipeline (gpulint.pipeline) lints, read once and hashed once.

An `Input` is the text of one file, whichever way it came: a file on disk (written back by --fix), stdin, or
an editor's buffer (never written: the caller prints or sends the result). A view turns the input into the
module the rules see and maps the results back: a Python file is its own module (`PythonView`); a notebook's
code cells are joined into one virtual module (`gpulint.sources.notebook.NotebookView`).
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from pathlib import Path
from typing import Optional

from gpulint.diagnostics import Diagnostic
from gpulint.files import SourceFile, decode


def content_hash(raw: bytes) -> str:
    return hashlib.sha256(raw).hexdigest()


@dataclass(frozen=True)
class Input:
    """One file's text as it was read: decoded once, hashed once (the hash is the cache's key)."""

    name: str  # as printed
    path: Optional[Path]  # what settings (per-file-ignores) are resolved for; None: an unnamed stdin
    text: str
    digest: str
    file: Optional[SourceFile] = None  # where fixes are written; None: stdin or an editor's buffer

    @classmethod
    def read(cls, path: Path, name: Optional[str] = None) -> "Input":
        """Raises FileError (one line for the user) when the file cannot be read or decoded."""
        source = SourceFile.read(path)
        return cls(name or str(path), path, source.text, content_hash(source.raw), source)

    @classmethod
    def from_bytes(cls, data: bytes, name: str, path: Optional[Path]) -> "Input":
        """Stdin: bytes decoded as a file of that name would be. Raises FileError."""
        return cls(name, path, decode(data, Path(name)), content_hash(data))

    @classmethod
    def from_text(cls, text: str, name: str, path: Optional[Path]) -> "Input":
        """An editor's buffer: already text."""
        return cls(name, path, text, content_hash(text.encode("utf-8", "surrogatepass")))

    @property
    def is_notebook(self) -> bool:
        return self.name.endswith(".ipynb") or (self.path is not None and self.path.suffix == ".ipynb")


@dataclass(frozen=True)
class Finished:
    """A lint result mapped back onto the input: findings where the user sees them, the text to write."""

    diagnostics: tuple[Diagnostic, ...]
    sources: dict  # (filename, cell) -> text, for printing source lines under findings
    text: str  # the whole file after fixes (the input's text when nothing changed)


class PythonView:
    """A Python file is its own module: positions need no mapping."""

    unreadable: Optional[Diagnostic] = None

    def __init__(self, source: Input) -> None:
        self.input = source
        self.text = source.text
        self.isolated: tuple[Diagnostic, ...] = ()

    def finish(self, result, codes: frozenset[str]) -> Optional[Finished]:
        return Finished(tuple(result.diagnostics), {(self.input.name, None): result.source}, result.source)

    def place_errors(self, errors: list[str]) -> list[str]:
        return errors


def view_of(source: Input):
    """The adapter for this input: a notebook's cells, or the Python text itself."""
    if source.is_notebook:
        from gpulint.sources.notebook import NotebookView

        return NotebookView(source)
    return PythonView(source)


