"""What the fixed program's numbers mean in the user's files, and what safe fixes left for unsafe ones.

The fixed program is the user's code after gpulint's fixes, built in memory: its line numbers exist in no file
the user has. Each fixed module is fixed again here (fixes are deterministic) and its lines mapped back to the
original's: unchanged lines to themselves, a rewritten line to the line it replaced, an inserted line to the
original line just before it (the statement it was added after, e.g. the periodic `if step % N == 0:`).
"""

from __future__ import annotations

import difflib
from pathlib import Path
from typing import Optional


def _fixed_text(path: str, unsafe: bool) -> Optional[tuple[str, str]]:
    from gpulint.runner import fix_source

    try:
        original = Path(path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return None
    return original, fix_source(original, unsafe=unsafe, filename=path)


def line_map(original: str, fixed: str) -> dict[int, int]:
    """Fixed line number -> original line number (1-based)."""
    a, b = original.splitlines(), fixed.splitlines()
    mapping: dict[int, int] = {}
    for tag, i1, i2, j1, j2 in difflib.SequenceMatcher(None, a, b, autojunk=False).get_opcodes():
        for j in range(j1, j2):
            if tag == "equal":
                mapping[j + 1] = i1 + (j - j1) + 1
            elif tag == "replace":
                mapping[j + 1] = min(i1 + (j - j1), i2 - 1) + 1
            else:  # inserted: belongs to the line before it
                mapping[j + 1] = max(i1, 1)
    return mapping


def original_sites(sites: dict, fixed_modules: dict, unsafe: bool) -> dict:
    """`sites` ((file, line, method) -> reads per step) of the fixed program, with lines of the original files."""
    maps = {}
    for path in fixed_modules:
        texts = _fixed_text(path, unsafe)
        if texts is not None:
            maps[path] = line_map(*texts)
    out: dict = {}
    for (path, line, name), n in sites.items():
        key = (path, maps[path].get(line, line) if path in maps else line, name)
        out[key] = out.get(key, 0) + n
    return out


def unsafe_only_findings(paths) -> list[str]:
    """`path:row: CODE` for each finding that the safe fixes leave and only an unsafe fix would remove."""
    from gpulint.diagnostics import FixMode
    from gpulint.rule import all_rules
    from gpulint.runner import lint_source

    found = []
    for path in paths:
        texts = _fixed_text(str(path), unsafe=False)
        if texts is None:
            continue
        original, _ = texts
        result = lint_source(original, str(path), frozenset(all_rules()), fix=FixMode.SAFE)
        found.extend(f"{path}:{d.location.row}: {d.code}" for d in result.diagnostics
                     if d.fix is not None and d.fix.applicability.value == "unsafe")
    return found
