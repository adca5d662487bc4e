"""The results cache (`.gpulint_cache/`, like Ruff's): an unchanged file is not parsed again.

An entry holds the findings of one file's check (never of a fix) and is found by a key made of the file's
content hash, gpulint's version and code, the settings that change results, and the rules enabled for that
file. Entries are written atomically (temporary file + rename), so concurrent runs never see half an entry; an
entry that cannot be read or decoded is treated as missing.
"""

from __future__ import annotations

import fnmatch
import hashlib
import importlib.util
import json
import os
from pathlib import Path
from typing import Optional

import gpulint
from gpulint.config import Settings
from gpulint.diagnostics import Applicability, Diagnostic, Edit, Fix, Position, Related
from gpulint.files import atomic_write, file_digest

FORMAT = 1  # bump when the entry layout changes
_TAG = ("Signature: 8a477f597d28d172789f06886806bc55\n"
        "# This file is a cache directory tag created by gpulint.\n"
        "# For information about cache directory tags see https://bford.info/cachedir/\n")


def code_fingerprint() -> str:
    """gpulint's version and the state of its own source files: an edited rule invalidates the cache.

    Every run pays this, a warm one too: the ~200 source files are listed with `os.scandir` (whose entries carry
    their stat) and sorted by their path's parts, as `Path.rglob` and `sorted` of paths gave, without a `Path`
    object per file (a third of the function's time)."""
    package = Path(gpulint.__file__).resolve().parent
    rules = Path(importlib.util.find_spec("gpulint.rules").origin).resolve().parent
    parts = [gpulint.__version__, str(FORMAT)]
    for folder in sorted({package, rules}):
        try:
            for _key, name, st in sorted(_sources(str(folder), ())):  # rules live in family subpackages
                parts.append(f"{name}:{st.st_size}:{st.st_mtime_ns}")
        except OSError:
            parts.append(f"{folder}:unreadable")
    return hashlib.sha256("\n".join(parts).encode()).hexdigest()


def _sources(folder: str, above: tuple) -> list:
    """(path parts below the package, name, stat) of every `*.py` under `folder`; folder links not followed."""
    found = []
    with os.scandir(folder) as entries:
        for entry in entries:
            key = (*above, entry.name)
            if entry.name.endswith(".py"):
                found.append((key, entry.name, entry.stat()))
            if entry.is_dir(follow_symlinks=False):
                found.extend(_sources(entry.path, key))
    return found


class Cache:
    def __init__(self, directory: Path, settings: Settings) -> None:
        self.directory = directory
        self.entries = directory / f"v{FORMAT}"
        self.settings = settings
        self._base = f"{code_fingerprint()}\n{settings.fingerprint()}"
        self.enabled = True
        # (path, recorded digest) -> whether that dependency still gives what was recorded. A project's helper
        # modules are dependencies of most of its files' entries: a warm run asks each once, not once per entry
        # (pytorch/examples: 2,035 questions about ~150 distinct dependencies). A Cache lives for one command.
        self._verdicts: dict[tuple[str, str], bool] = {}

    @classmethod
    def for_settings(cls, settings: Settings) -> "Cache":
        return cls(cache_directory(settings), settings)

    def key(self, path: Path, digest: str, want_edits: bool) -> str:
        # per-file-ignores make the enabled rules depend on the path: key on which of their globs match it.
        matched = ()
        if self.settings.per_file_ignores:
            rel = self.settings.relative(path)
            matched = tuple(i for i, (glob, _codes) in enumerate(self.settings.per_file_ignores)
                            if fnmatch.fnmatch(rel, glob) or fnmatch.fnmatch(path.name, glob))
        text = f"{self._base}\n{matched}\n{want_edits}\n{digest}"
        return hashlib.sha256(text.encode()).hexdigest()

    def _entry(self, key: str) -> Path:
        return self.entries / key[:2] / f"{key}.json"

    def get(self, key: str, filename: str) -> Optional[list[Diagnostic]]:
        """The findings stored under `key`, unless a project file they depend on has changed since."""
        if not self.enabled:
            return None
        try:
            data = json.loads(self._entry(key).read_bytes())
            verdicts = self._verdicts
            for path, digest in data.get("dependencies", []):
                path = self._absolute(path)
                verdict = verdicts.get((path, digest))
                if verdict is None:
                    verdict = verdicts[(path, digest)] = _unchanged(path, digest)
                if not verdict:
                    return None  # a helper module changed what the result was computed from: lint again
            return [_diagnostic(item, filename) for item in data["diagnostics"]]
        except (OSError, ValueError, KeyError, TypeError, IndexError):
            return None  # missing, half-written by an older tool, or corrupt: lint the file again

    def put(self, key: str, diagnostics: list[Diagnostic], dependencies=()) -> None:
        if not self.enabled:
            return
        data = json.dumps({"diagnostics": [_record(d) for d in diagnostics],
                           "dependencies": [[self._relative(p), digest] for p, digest in dependencies]},
                          separators=(",", ":"))
        entry = self._entry(key)
        try:
            if not self.directory.exists():
                _create(self.directory)
            entry.parent.mkdir(parents=True, exist_ok=True)
            atomic_write(entry, data.encode(), durable=False)
        except OSError:
            self.enabled = False  # a read-only checkout: run without a cache rather than fail


    # A dependency inside the project is recorded relative to the settings' root (`@/` + its POSIX path): a copy
    # of the project that carries its cache (a CI cache restored elsewhere, `cp -r` of a checkout) checks its own
    # files, never the original's, which may be unchanged while the copy's are edited.
    def _root(self) -> str:
        root = getattr(self, "_root_text", None)
        if root is None:
            root = self._root_text = os.path.realpath(self.settings.root)
        return root

    def _relative(self, path) -> str:
        text = os.fspath(path)
        root = self._root()
        if text.startswith(root + os.sep):
            return "@/" + Path(text[len(root) + 1:]).as_posix()
        return text

    def _absolute(self, recorded: str) -> str:
        if recorded.startswith("@/"):
            return os.path.join(self._root(), *recorded[2:].split("/"))
        return recorded


def _unchanged(path: str, recorded: str) -> bool:
    """A dependency still gives what the cached result was computed from: the same content, or, for a module
    only summaries were used of (`<content>|s:<summaries>|<functions>`, pipeline._dependency_digest), the same
    summaries of the same functions, recomputed from its new text with `ast` only."""
    content, _, summaries = recorded.partition("|s:")
    if file_digest(path) == content:
        return True
    if not summaries:
        return False
    digest, _, names = summaries.partition("|")
    from gpulint.analysis.project import project_for  # only when a dependency's text changed

    target = Path(path)
    return project_for(target).summary_digest(target, [n for n in names.split(",") if n]) == digest


def cache_directory(settings: Settings) -> Path:
    path = Path(settings.cache_dir)
    return path if path.is_absolute() else settings.root / path


def _create(directory: Path) -> None:
    directory.mkdir(parents=True, exist_ok=True)
    (directory / ".gitignore").write_text("# Automatically created by gpulint.\n*\n")
    (directory / "CACHEDIR.TAG").write_text(_TAG)


def clear(directory: Path) -> bool:
    """Remove the cache directory; False if there was none."""
    if not directory.exists():
        return False
    if not (directory / "CACHEDIR.TAG").exists():
        raise OSError(f"{directory} does not look like a gpulint cache (no CACHEDIR.TAG); not removed")
    import shutil  # `gpulint clean` only: not on every run's start-up

    shutil.rmtree(directory)
    return True


def _record(d: Diagnostic) -> list:
    fix = None if d.fix is None else [d.fix.message, d.fix.applicability.value]
    if d.fix is not None and d.fix.fallback is not None:
        fix += [d.fix.fallback.message, d.fix.fallback.applicability.value]
    edits = [[e.content, e.location.row, e.location.column, e.end_location.row, e.end_location.column]
             for e in d.edits]
    related = [[r.filename, r.row, r.message] for r in d.related]
    return [d.code, d.name, d.message, d.location.row, d.location.column, d.end_location.row,
            d.end_location.column, fix, edits, related]


def _diagnostic(item: list, filename: str) -> Diagnostic:
    code, name, message, row, column, end_row, end_column, fix, edits, related = item
    return Diagnostic(
        code, name, message, filename=filename,
        location=Position(row, column), end_location=Position(end_row, end_column),
        fix=None if fix is None else Fix(fix[0], Applicability(fix[1]), {},
                                         Fix(fix[2], Applicability(fix[3]), {}) if len(fix) > 2 else None),
        edits=tuple(Edit(e[0], Position(e[1], e[2]), Position(e[3], e[4])) for e in edits),
        related=tuple(Related(*r) for r in related))
