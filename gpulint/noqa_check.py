"""What `check` does around `# noqa` comments, beside linting itself.

- unknown codes in noqa comments (`# noqa: GPU1O1`, `# noqa: foo-bar`): a warning naming the code and the
  closest valid one (such a word suppresses nothing; see suppression.py);
- `--unused-noqa` (Ruff's RUF100): a finding for each noqa comment that suppresses nothing;
- `--add-noqa`: `# noqa: CODE` on every line with a finding, merged into the comments already there.
"""

from __future__ import annotations

import io
import json
import re
import tokenize
from pathlib import Path
from typing import Iterable, Iterator

from gpulint import suppression
from gpulint.codes import did_you_mean
from gpulint.diagnostics import Diagnostic, Position

UNUSED_NOQA = ("GPU000", "unused-noqa")
_WORD = re.compile(r"noqa", re.IGNORECASE)


def _texts(path: Path) -> Iterator[tuple[str, str]]:
    """(where, text) of a Python file, or of each code cell of a notebook (read as the JSON it is)."""
    from gpulint.files import FileError, read_regular

    try:
        raw = read_regular(path)[0].decode("utf-8", errors="replace")  # never blocks on a FIFO or device
    except FileError:
        return
    if "noqa" not in raw.lower():
        return
    if path.suffix != ".ipynb":
        yield str(path), raw
        return
    try:
        cells = [c for c in json.loads(raw).get("cells", []) if c.get("cell_type") == "code"]
    except (ValueError, AttributeError):
        return
    for number, cell in enumerate(cells, 1):
        source = cell.get("source", "")
        yield f"{path}:cell {number}", "".join(source) if isinstance(source, list) else str(source)


def unknown_code_warnings(where: str, text: str) -> list[str]:
    return [f"{where}:{row}: unknown rule code {word!r} in a noqa comment (it suppresses nothing)"
            f"{did_you_mean(word)}" for row, word in suppression.parse(text).unknown]


def warnings_for(paths: Iterable[Path]) -> list[str]:
    return [w for path in paths for where, text in _texts(path) for w in unknown_code_warnings(where, text)]


def _neutralized(source: str) -> str:
    """`source` with every noqa comment disabled (same length, so every position stays where it was)."""
    lines = source.splitlines(keepends=True)
    try:
        tokens = list(tokenize.generate_tokens(io.StringIO(source).readline))
    except (tokenize.TokenError, SyntaxError, IndentationError):
        return source
    for tok in tokens:
        if tok.type == tokenize.COMMENT and "noqa" in tok.string.lower():
            row, col = tok.start
            line = lines[row - 1]
            lines[row - 1] = line[:col] + _WORD.sub("n0qa", tok.string) + line[col + len(tok.string):]
    return "".join(lines)


def unused_noqa(source: str, filename: str, codes: frozenset[str], report_periodic: bool) -> list[Diagnostic]:
    """A finding per noqa comment that suppresses no finding of an enabled rule (RUF100's semantics)."""
    if "noqa" not in source.lower():
        return []
    from gpulint.runner import lint_source

    sup = suppression.parse(source)
    if not sup.lines:
        return []
    raw = lint_source(_neutralized(source), filename, codes, report_periodic=report_periodic).diagnostics
    found = []
    for row, named in sorted(sup.lines.items()):
        hits = {d.code for d in raw if row in (d.location.row, d.end_location.row)}
        if named is None:
            if hits:
                continue
            what = "Unused blanket `noqa` directive"
        else:
            unused = sorted(named - hits)  # other tools' codes (E501) are not in `named`: not ours to judge
            if not unused:
                continue
            what = f"Unused `noqa` directive (unused: {', '.join(unused)})"
        line = source.splitlines()[row - 1]
        column = line.lower().find("noqa")
        start = line.rfind("#", 0, column) if column >= 0 else 0
        found.append(Diagnostic(*UNUSED_NOQA, what, filename=filename, location=Position(row, start + 1),
                                end_location=Position(row, len(line) + 1)))
    return found


def add_noqa(path: Path, diagnostics: list[Diagnostic]) -> int:
    """Add `# noqa: CODE` for each finding in the file at `path`; returns how many directives were added."""
    from gpulint.editing import with_noqa
    from gpulint.files import SourceFile

    source = SourceFile.read(path)
    text, added = source.text, 0
    for d in sorted(diagnostics, key=lambda d: (d.location.row, d.code)):
        new = with_noqa(text, d.code, (d.location.row, d.end_location.row))
        if new is not None:
            text, added = new, added + 1
    if added:
        source.write(text)
    return added
