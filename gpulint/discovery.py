"""Which files to lint: walk the given paths, honouring exclude globs and .gitignore files (via pathspec)."""

from __future__ import annotations

import errno
import os
import stat
from pathlib import Path
from typing import Iterator, Optional

import click
import pathspec

from gpulint.config import Settings

SOURCE_SUFFIXES = (".py", ".pyi")
NOTEBOOK_SUFFIX = ".ipynb"


class PathError(Exception):
    """A path given on the command line that cannot be linted: one line, exit code 2."""


def _spec(patterns) -> Optional[pathspec.PathSpec]:
    patterns = list(patterns)
    return pathspec.GitIgnoreSpec.from_lines(patterns) if patterns else None


def _gitignore(directory: Path) -> Optional[pathspec.PathSpec]:
    path = directory / ".gitignore"
    try:
        lines = path.read_text(encoding="utf-8", errors="replace").splitlines()
    except OSError:
        return None
    return pathspec.GitIgnoreSpec.from_lines(lines) if lines else None


def _wanted(name: str, settings: Settings) -> bool:
    return name.endswith(SOURCE_SUFFIXES) or (settings.include_notebooks and name.endswith(NOTEBOOK_SUFFIX))


def warn(message: str) -> None:
    from gpulint.output.common import printable

    click.echo(f"gpulint: warning: {printable(message)}", err=True)


def _readable(path: Path, settings: Settings, named: bool) -> bool:
    """Whether to hand `path` to the reader. Never opens it (opening a FIFO can block forever).

    Skipped with a warning: FIFOs, sockets and devices found in a walk, and files above `max-file-size`.
    Handed on, for the reader's one-line error: broken links and link loops (a mistake to fix), and any
    non-regular file named on the command line (exit 2).
    """
    try:
        st = os.stat(path)
    except OSError:
        return True  # broken link, link loop, permission: the reader says which, as an error
    if not stat.S_ISREG(st.st_mode):
        if named:
            return True
        from gpulint.files import file_kind

        warn(f"{path}: {file_kind(st.st_mode)}, not a regular file; skipped")
        return False
    if settings.max_file_size and st.st_size > settings.max_file_size:
        warn(f"{path}: {format_size(st.st_size)}, larger than max-file-size ({format_size(settings.max_file_size)}); "
             f"skipped")
        return False
    return True


def _loops(path: Path) -> bool:
    try:
        os.stat(path)
    except OSError as exc:
        return exc.errno == errno.ELOOP
    return False


def format_size(size: int) -> str:
    for unit, factor in (("GB", 10**9), ("MB", 10**6), ("kB", 10**3)):
        if size >= factor:
            return f"{size / factor:.1f} {unit}"
    return f"{size} bytes"


def iter_files(paths: list[Path], settings: Settings, force_exclude: bool = False) -> Iterator[Path]:
    """Files to lint, in a stable order.

    Paths named explicitly are linted even if excluded, like Ruff, unless `force_exclude` (pre-commit passes
    every staged file by name, and `exclude` must still hold there). Only regular files are read; see
    `_readable` for the rest.
    """
    exclude = _spec([*settings.exclude, *settings.extend_exclude])
    seen: set[Path] = set()
    root = settings.root.resolve()
    for given in paths:
        if not given.exists() and not given.is_symlink():
            raise PathError(f"{given}: no such file or directory")
        if given.is_symlink() and not given.exists():
            raise PathError(f"{given}: {'symbolic link loop' if _loops(given) else 'broken symbolic link'}")
        if force_exclude and _excluded_anywhere(given, root, exclude):
            continue
        if not given.is_dir():  # a file, or a FIFO, socket or device named explicitly: the reader refuses those
            if given.resolve() not in seen and _readable(given, settings, named=True):
                seen.add(given.resolve())
                yield given
            continue
        for path, real in _walk(given, settings, exclude):
            if real not in seen:
                seen.add(real)
                yield path


def _excluded_anywhere(path: Path, root: Path, exclude) -> bool:
    """`path` or one of its parent folders (below the project root) matches an exclude pattern."""
    if exclude is None:
        return False
    real = path.absolute()
    try:
        parts = real.relative_to(root).parts
    except ValueError:
        parts = path.parts
    return any(exclude.match_file("/".join(parts[:i + 1]) + ("/" if i + 1 < len(parts) else ""))
               or exclude.match_file(parts[i] + ("/" if i + 1 < len(parts) else ""))
               for i in range(len(parts)))


def _walk(top: Path, settings: Settings, exclude: Optional[pathspec.PathSpec]) -> Iterator[tuple[Path, Path]]:
    """(path, real path) of each file to lint under `top`. A real path is the real path of its folder (resolved
    once per folder) joined with its name, unless the file is a link: `Path.resolve` of every file stat-ed each
    component of its path again (pytorch/examples: 561 `lstat` calls of a warm run's 2,690 system calls)."""
    root = settings.root.resolve()
    # .gitignore files apply to the directory they sit in and below; collect those above `top` within root too.
    # `top`'s own .gitignore is read by _walk_dir: compiling it here too was discarded work (fairseq: 141 patterns).
    ignores: list[tuple[Path, pathspec.PathSpec]] = []
    top_real = top.resolve()
    if settings.respect_gitignore:
        for parent in reversed(top_real.parents):
            if root in (parent, *parent.parents):
                spec = _gitignore(parent)
                if spec is not None:
                    ignores.append((parent, spec))
    yield from _walk_dir(top, top_real, root, settings, exclude, ignores)


def _excluded(path: Path, is_dir: bool, root: Path, exclude, ignores, is_link: bool) -> bool:
    real = path.resolve() if is_link else path.absolute()
    suffix = "/" if is_dir else ""
    if exclude is not None:
        try:
            rel = real.relative_to(root).as_posix()
        except ValueError:
            rel = path.as_posix()
        if exclude.match_file(rel + suffix) or exclude.match_file(path.name + suffix):
            return True
    for base, spec in ignores:
        try:
            rel = real.relative_to(base).as_posix()
        except ValueError:
            continue
        if spec.match_file(rel + suffix):
            return True
    return False


def _walk_dir(directory: Path, real_directory: Path, root: Path, settings: Settings, exclude,
              ignores) -> Iterator[tuple[Path, Path]]:
    if settings.respect_gitignore:
        spec = _gitignore(directory)
        if spec is not None:
            ignores = [*ignores, (directory.absolute(), spec)]
    try:
        entries = sorted(os.scandir(directory), key=lambda e: e.name)
    except OSError:
        return
    for entry in entries:
        path = Path(entry.path)
        try:
            is_dir = entry.is_dir()
        except OSError as exc:  # a symbolic link loop (ELOOP), or a file that vanished meanwhile
            if _wanted(entry.name, settings) and entry.is_symlink():
                warn(f"{path}: {'symbolic link loop' if exc.errno == errno.ELOOP else exc.strerror}; skipped")
            continue
        if not is_dir and not _wanted(entry.name, settings):
            continue  # never linted: no need to match it against the exclude and .gitignore patterns
        try:
            is_link = entry.is_symlink()  # from the folder listing: no system call on most file systems
        except OSError:
            is_link = False  # as Path.is_symlink answers when lstat fails
        if _excluded(path, is_dir, root, exclude, ignores, is_link):
            continue
        if is_dir:
            if is_link:
                continue  # do not follow directory links: they loop, and lead out of the project
            yield from _walk_dir(path, real_directory / entry.name, root, settings, exclude, ignores)
        elif _readable(path, settings, named=False):
            yield path, (path.resolve() if is_link else real_directory / entry.name)
