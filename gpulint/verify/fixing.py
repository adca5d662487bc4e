"""The fixed program, built in memory inside the child: the script and every module it imports from the same
project go through `gpulint.runner.fix_source` before they are compiled. Nothing is written to disk, not even
bytecode caches (they would hold the fixed code under the original's name)."""

from __future__ import annotations

import importlib.abc
import importlib.machinery
import importlib.util
import os
import sys


class Fixer:
    def __init__(self, root: str, unsafe: bool) -> None:
        from gpulint.rule import all_rules
        from gpulint.runner import fix_source

        all_rules()  # load every rule now: gpulint's own modules must not pass through the hook below
        self._fix_source = fix_source
        self.root = os.path.abspath(root) + os.sep
        self.unsafe = unsafe
        self.changed: dict[str, int] = {}  # path -> lines that differ
        self.errors: list[str] = []
        self._excluded = tuple(os.path.dirname(os.path.abspath(p)) + os.sep for p in _package_files())

    def owns(self, path: str) -> bool:
        path = os.path.abspath(path)
        if not path.startswith(self.root) or path.startswith(self._excluded):
            return False
        parts = path.split(os.sep)
        return "site-packages" not in parts and "dist-packages" not in parts

    def fix(self, text: str, path: str) -> str:
        try:
            fixed = self._fix_source(text, unsafe=self.unsafe, filename=path)
        except Exception as exc:  # a file gpulint cannot parse runs as it is (Python will say why if it fails)
            self.errors.append(f"{path}: {type(exc).__name__}: {exc}")
            return text
        if fixed != text:
            self.changed[path] = _changed_lines(text, fixed)
        return fixed

    def install(self) -> None:
        sys.dont_write_bytecode = True
        sys.meta_path.insert(0, _FixingFinder(self))


def _package_files():
    """gpulint and its rules (shipped as `gpulint.rules`, a folder of its own in a source checkout)."""
    import importlib.util

    import gpulint

    yield gpulint.__file__
    yield importlib.util.find_spec("gpulint.rules").origin  # found, not imported: only all_rules() imports rules


def _changed_lines(before: str, after: str) -> int:
    import difflib

    return sum(1 for line in difflib.ndiff(before.splitlines(), after.splitlines()) if line[:1] in "+-")


class _FixingFinder(importlib.abc.MetaPathFinder):
    def __init__(self, fixer: Fixer) -> None:
        self.fixer = fixer

    def find_spec(self, fullname, path, target=None):
        spec = importlib.machinery.PathFinder.find_spec(fullname, path)
        if spec is None or type(spec.loader) is not importlib.machinery.SourceFileLoader:
            return None
        if not spec.origin or not self.fixer.owns(spec.origin):
            return None
        spec.loader = _FixingLoader(fullname, spec.origin, self.fixer)
        return spec


class _FixingLoader(importlib.machinery.SourceFileLoader):
    def __init__(self, fullname: str, path: str, fixer: Fixer) -> None:
        super().__init__(fullname, path)
        self.fixer = fixer

    def get_code(self, fullname):
        path = self.get_filename(fullname)
        text = importlib.util.decode_source(self.get_data(path))
        return compile(self.fixer.fix(text, path), path, "exec", dont_inherit=True)

    def get_source(self, fullname):
        path = self.get_filename(fullname)
        return self.fixer.fix(importlib.util.decode_source(self.get_data(path)), path)
