"""Reading and writing the user's files: encodings kept, writes atomic, nothing overwritten that changed meanwhile."""

from __future__ import annotations

import errno
import hashlib
import io
import os
import re
import stat
import tokenize
from dataclasses import dataclass, field
from pathlib import Path
from typing import Optional


class FileError(Exception):
    """A file that cannot be linted (unreadable, binary, undecodable): one line for the user."""


@dataclass(frozen=True)
class SourceFile:
    path: Path
    text: str
    encoding: str
    raw: bytes
    mtime_ns: int = 0

    @classmethod
    def read(cls, path: Path) -> "SourceFile":
        raw, st = read_regular(path)
        return cls(path, decode(raw, path), _encoding(raw), raw, st.st_mtime_ns)

    def encode(self, text: str) -> bytes:
        return text.encode(self.encoding)

    def write(self, text: str) -> None:
        """Replace the file atomically with `text`, unless it changed on disk since it was read."""
        data = self.encode(text)
        try:
            if self.path.read_bytes() != self.raw:
                raise FileError(f"{self.path}: changed on disk while gpulint was fixing it; not overwritten")
            mode = stat.S_IMODE(self.path.stat().st_mode)
            if not os.access(self.path, os.W_OK):  # a read-only file stays as it is, even though the
                raise PermissionError(errno.EACCES, os.strerror(errno.EACCES))  # directory allows a rename
            remove_stale_temps(self.path)
            atomic_write(self.path, data, mode)
        except OSError as exc:  # disk full, file too large, read-only file system, permission denied
            raise FileError(f"cannot write {self.path}: {exc.strerror or exc}") from None


def file_kind(mode: int) -> str:
    """What a file that is not a regular file is, in words."""
    for test, what in ((stat.S_ISDIR, "a directory"), (stat.S_ISFIFO, "a named pipe (FIFO)"),
                       (stat.S_ISSOCK, "a socket"), (stat.S_ISCHR, "a character device"),
                       (stat.S_ISBLK, "a block device")):
        if test(mode):
            return what
    return "not a regular file"


def read_regular(path: Path) -> tuple[bytes, os.stat_result]:
    """The bytes of `path` and its stat, refusing anything but a regular file without ever blocking.

    Opened with O_NONBLOCK (opening a FIFO nobody writes to would wait forever) and checked with fstat on the
    open descriptor, so a file swapped for a pipe or a device between discovery and here is refused too.
    """
    flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOCTTY", 0) | getattr(os, "O_CLOEXEC", 0)
    try:
        fd = os.open(path, flags)
    except FileNotFoundError:
        what = "broken symbolic link" if path.is_symlink() else "no such file"
        raise FileError(f"{path}: {what}") from None
    except PermissionError:
        raise FileError(f"{path}: permission denied") from None
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise FileError(f"{path}: symbolic link loop") from None
        if exc.errno == errno.EISDIR:
            raise FileError(f"{path}: is a directory") from None
        raise FileError(f"{path}: cannot read ({exc.strerror or exc})") from None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            kind = file_kind(st.st_mode)
            raise FileError(f"{path}: is a directory" if stat.S_ISDIR(st.st_mode) else
                            f"{path}: {kind}, not a regular file; not read")
        chunks = []
        while True:
            chunk = os.read(fd, 1 << 20)
            if not chunk:
                break
            chunks.append(chunk)
        return b"".join(chunks), st
    except OSError as exc:
        raise FileError(f"{path}: cannot read ({exc.strerror or exc})") from None
    finally:
        os.close(fd)


TEMP_SUFFIX = ".gpulint-tmp"


def atomic_write(path: Path, data: bytes, mode: Optional[int] = None, *, durable: bool = True) -> None:
    """Write to a temporary file beside `path`, then rename over it: readers see the old or the new file.

    The temporary name carries our process id: a run killed between writing and renaming leaves
    `.<name>.<pid>.<random>.gpulint-tmp` behind, which discovery never lints and `remove_stale_temps` deletes
    the next time this file is written.
    """
    import tempfile  # only a run that writes (a fix, a cache entry) needs it: a warm run's start-up does not

    directory = path.parent
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.{os.getpid()}.", suffix=TEMP_SUFFIX, dir=directory)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            if durable:
                handle.flush()
                os.fsync(handle.fileno())
        if mode is not None:
            os.chmod(tmp, mode)
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise


def remove_stale_temps(path: Path) -> None:
    """Delete temporary files a killed gpulint left beside `path` (those of processes that are gone)."""
    import glob

    try:
        candidates = list(path.parent.glob(f".{glob.escape(path.name)}.*{TEMP_SUFFIX}"))
    except OSError:
        return
    for candidate in candidates:
        pid = candidate.name[len(path.name) + 2:].split(".", 1)[0]
        if pid.isdigit() and not _alive(int(pid)):
            try:
                candidate.unlink()
            except OSError:
                pass


def _alive(pid: int) -> bool:
    if pid == os.getpid():
        return False  # ours, from an earlier write of this run that failed midway: nobody uses it
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:
        pass  # exists, owned by someone else
    try:  # a killed process nobody has reaped yet is a zombie: it writes nothing any more
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
        return state not in ("Z", "X")
    except (OSError, IndexError):
        return True


def _encoding(raw: bytes) -> str:
    try:
        encoding, _ = tokenize.detect_encoding(io.BytesIO(raw).readline)
    except SyntaxError:
        return "utf-8"
    return encoding


def decode(raw: bytes, path: Path) -> str:
    """Decode as Python would (PEP 263 cookie, BOM), keeping newlines exactly as they are."""
    if b"\x00" in raw[:8192]:
        raise FileError(f"{path}: binary file, not Python source")
    try:
        encoding, _ = tokenize.detect_encoding(io.BytesIO(raw).readline)
    except SyntaxError as exc:  # an unknown codec in the coding cookie, or a cookie contradicting a BOM
        raise FileError(f"{path}: cannot decode as Python source ({exc})") from None
    try:
        return raw.decode(encoding)
    except (UnicodeDecodeError, LookupError) as exc:
        where = f" at byte {exc.start}" if isinstance(exc, UnicodeDecodeError) else ""
        raise FileError(f"{path}: not valid {encoding}{where}; declare the file's encoding "
                        f"(`# -*- coding: ... -*-`, PEP 263) or save it as UTF-8") from None


_LINE_END = re.compile(r"(?<=\n)|(?<=\r)(?!\n)")


def source_lines(text: str) -> list[str]:
    """Lines as Python, LibCST and LSP count them: ended by \\n, \\r\\n or \\r only. (str.splitlines also
    splits at form feeds and other breaks, which would shift every row after one.)"""
    return [line for line in _LINE_END.split(text) if line]


def file_digest(path: str) -> str:
    """The content digest of a file ('-' when it cannot be read): what a cached result's dependency records.

    In a batch run (runtime.batch) a file's digest is remembered while its stat (modification time, size,
    inode) stays the same: the helper modules of a project are dependencies of most of its files."""
    from gpulint import runtime

    stamp = None
    if runtime.batch_mode():
        try:
            st = os.stat(path)
        except OSError:
            return "-"
        stamp = (path, st.st_mtime_ns, st.st_size, st.st_ino)
        known = _DIGESTS.get(stamp)
        if known is not None:
            return known
    try:
        digest = hashlib.sha256(read_regular(Path(path))[0]).hexdigest()
    except FileError:
        return "-"
    if stamp is not None:
        _DIGESTS[stamp] = digest
    return digest


_DIGESTS: dict[tuple, str] = {}
