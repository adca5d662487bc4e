"""Jupyter notebooks: lint the code cells as one module (cell 5's loop uses cell 2's model) and write fixes back.

IPython syntax (`%magic`, `!shell`, `%%cell magics`, `obj?`) is swapped for placeholders that keep every line
where it was, so positions map straight back to cells, and swapped back after fixing.
"""

from __future__ import annotations

import json
import re
from bisect import bisect_right
from itertools import accumulate
from dataclasses import dataclass
from pathlib import Path
from typing import Optional

from gpulint.config import Settings
from gpulint.diagnostics import Diagnostic, Edit, Position
from gpulint.engine import FileOutcome
from gpulint.files import FileError, SourceFile
from gpulint.runner import FixMode, lint_source

_BOUNDARY = "# gpulint-cell-boundary-{}"
_BOUNDARY_RE = re.compile(r"^# gpulint-cell-boundary-(\d+)$")
_MAGIC_RE = re.compile(r"^(\s*)(?:pass  )?# gpulint-magic-(\d+)$")
# Cell magics whose body is still Python.
_PYTHON_CELL_MAGICS = {"time", "timeit", "capture", "prun", "debug", "memit"}


@dataclass
class _Cell:
    index: int  # position among all cells of the notebook
    source: str


# `files = !ls`, `a, b = %sx ...`, `t = %timeit -o f()`: IPython's assign-from-system/magic forms.
_ASSIGNED_RE = re.compile(r"^\s*[\w.]+(\s*,\s*[\w.]+)*\s*=\s*[!%]")
_HELP_RE = re.compile(r"^[\w.]+\?\??$")


def _is_ipython_line(line: str) -> bool:
    stripped = line.lstrip()
    return (stripped.startswith(("%", "!", "?")) or _HELP_RE.match(stripped) is not None
            or _ASSIGNED_RE.match(line) is not None)


class _Masker:
    """Replaces IPython-only lines with numbered placeholders and restores them later."""

    def __init__(self) -> None:
        self.lines: list[str] = []

    def mask(self, source: str) -> str:
        lines = source.split("\n")
        if lines and lines[0].startswith("%%"):
            magic = lines[0][2:].split()[0] if lines[0][2:].split() else ""
            body_is_python = magic in _PYTHON_CELL_MAGICS
            out = [self._placeholder(lines[0])]
            out += [line if body_is_python else self._placeholder(line) for line in lines[1:]]
            return "\n".join(out)
        out = []
        indent = None  # set while a masked line goes on in the next (`!pip install \`)
        for line in lines:
            if indent is not None or _is_ipython_line(line):
                indent = line[: len(line) - len(line.lstrip())] if indent is None else indent
                out.append(self._placeholder(line, indent))
                indent = indent if line.endswith("\\") else None
            else:
                out.append(line)
        return "\n".join(out)

    def _placeholder(self, line: str, indent: Optional[str] = None) -> str:
        self.lines.append(line)
        if indent is None:
            indent = line[: len(line) - len(line.lstrip())]
        # Inside a block a statement must stay a statement; at the top a comment is enough.
        prefix = "pass  " if indent else ""
        return f"{indent}{prefix}# gpulint-magic-{len(self.lines) - 1}"

    def unmask(self, source: str) -> str:
        def restore(line: str) -> str:
            m = _MAGIC_RE.match(line)
            return self.lines[int(m.group(2))] if m else line

        return "\n".join(restore(line) for line in source.split("\n"))


def _code_cells(nb) -> list[_Cell]:
    return [_Cell(i, cell.source) for i, cell in enumerate(nb.cells) if cell.cell_type == "code"]


def _join(cells: list[_Cell], masker: _Masker) -> tuple[str, list[tuple[int, int]]]:
    """One module text, and for each line of it (1-based) the (cell index, line in cell), or (-1, 0)."""
    parts: list[str] = []
    where: list[tuple[int, int]] = [(-1, 0)]  # index 0 unused: rows are 1-based
    for cell in cells:
        parts.append(_BOUNDARY.format(cell.index))
        where.append((-1, 0))
        body = masker.mask(cell.source)
        for n, line in enumerate(body.split("\n"), start=1):
            parts.append(line)
            where.append((cell.index, n))
    return "\n".join(parts) + "\n", where


def _split(text: str, cells: list[_Cell]) -> Optional[dict[int, str]]:
    """Cell sources back from the (fixed) module text; None if the boundaries did not survive."""
    chunks: dict[int, list[str]] = {}
    current: Optional[int] = None
    lines = text.split("\n")
    if text.endswith("\n"):
        lines.pop()  # the newline _join put after the last cell
    for line in lines:
        m = _BOUNDARY_RE.match(line)
        if m:
            current = int(m.group(1))
            chunks[current] = []
        elif current is not None:
            chunks[current].append(line)
        elif line.strip():
            return None  # text before the first cell: a fix moved code across a boundary
    if sorted(chunks) != sorted(c.index for c in cells):
        return None
    return {cell.index: "\n".join(chunks[cell.index]) for cell in cells}


def _file_rows(raw_text: str) -> Optional[dict[int, list[int]]]:
    """For each cell, the line of the .ipynb file on which each of its source lines is written.

    The standard library's pure-Python JSON scanner reports where every string value starts; string values come
    in document order, which is the order a walk of the parsed data meets them.
    """
    from json import scanner
    from json.decoder import scanstring

    starts: list[int] = []

    def parse_string(text: str, end: int, strict: bool = True):
        starts.append(end - 1)  # `end` is just past the opening quote
        return scanstring(text, end, strict)

    decoder = json.JSONDecoder()
    decoder.parse_string = parse_string
    decoder.scan_once = scanner.py_make_scanner(decoder)
    try:
        data = decoder.decode(raw_text)
    except (ValueError, RecursionError):
        return None
    offsets = iter(starts)

    def walk(value):
        if isinstance(value, str):
            return next(offsets)
        if isinstance(value, list):
            return [walk(v) for v in value]
        if isinstance(value, dict):
            return {k: walk(v) for k, v in value.items()}
        return None

    try:
        positions = walk(data)
        if next(offsets, None) is not None:
            return None  # a duplicate key dropped a value: the walk and the scan disagree
        rows: dict[int, list[int]] = {}
        for index, (cell, where) in enumerate(zip(data["cells"], positions["cells"])):
            source, at = cell.get("source", ""), where.get("source")
            pieces = list(zip(source, at)) if isinstance(source, list) else [(source, at)]
            piece_rows = [raw_text.count("\n", 0, offset) + 1 for _, offset in pieces]
            piece_starts = list(accumulate((len(piece) for piece, _ in pieces[:-1]), initial=0))
            joined = "".join(piece for piece, _ in pieces)
            line_starts = [0, *(m.end() for m in re.finditer("\n", joined))]  # cells split at \n (see _join)
            line_rows = [piece_rows[bisect_right(piece_starts, start) - 1] for start in line_starts] \
                if pieces else []
            rows[index] = line_rows
        return rows
    except (StopIteration, KeyError, TypeError, AttributeError):
        return None


def _cell_edits(d: Diagnostic, where: list[tuple[int, int]], masker: _Masker, cell_source: str) -> tuple:
    """The fix's edits in the lines of the finding's own cell; none where an edit reaches beyond that cell."""
    edits = []
    for e in d.edits:
        start, end = e.location.row, e.end_location.row
        if d.cell is None or not 0 < start < len(where) or where[start][0] != d.cell:
            return ()
        content = masker.unmask(e.content)
        if end < len(where) and where[end][0] == d.cell:
            end_position = Position(where[end][1], 1)
        elif where[end - 1][0] == d.cell and end - 1 >= start:
            # Up to the end of the cell, whose last line has no line break of its own in the notebook.
            last = where[end - 1][1]
            last_line = cell_source.split("\n")[last - 1] if last <= len(cell_source.split("\n")) else ""
            end_position = Position(last, len(last_line) + 1)
            content = content[:-1] if content.endswith("\n") else content
        else:
            return ()
        edits.append(Edit(content, Position(where[start][1], 1), end_position))
    return tuple(edits)


def _locate_in_file(diagnostics: list[Diagnostic], raw_text: str) -> None:
    """Set each finding's `file_rows`: where its lines are written in the notebook file itself."""
    rows = _file_rows(raw_text) if diagnostics else None
    if rows is None:
        return
    for d in diagnostics:
        if d.cell is None:
            continue
        cell_rows = rows.get(d.cell, [])
        if 0 < d.location.row <= len(cell_rows):
            end = d.end_location.row
            d.file_rows = (cell_rows[d.location.row - 1],
                           cell_rows[end - 1] if d.location.row <= end <= len(cell_rows) else
                           cell_rows[d.location.row - 1])


def _place(d: Diagnostic, where: list[tuple[int, int]]) -> Diagnostic:
    row = d.location.row
    cell, line = where[row] if 0 < row < len(where) else (-1, 0)
    end_row = d.end_location.row
    end_cell, end_line = where[end_row] if 0 < end_row < len(where) else (cell, line)
    d.cell = cell if cell >= 0 else None
    d.location = Position(line, d.location.column)
    d.end_location = Position(end_line, d.end_location.column) if end_cell == cell else Position(line, 1_000)
    return d


def _dump(raw_text: str, nb, new_sources: dict[int, str]) -> str:
    """The notebook with new cell sources, formatted as the file was."""
    import nbformat

    canonical = nbformat.writes(nb) + "\n"
    if canonical == raw_text or canonical.rstrip("\n") == raw_text.rstrip("\n"):
        for index, source in new_sources.items():
            nb.cells[index].source = source
        text = nbformat.writes(nb)
        return text + ("\n" if raw_text.endswith("\n") else "")
    # Not in nbformat's canonical layout: edit the JSON itself so key order and indentation stay.
    data = json.loads(raw_text)
    for index, source in new_sources.items():
        old = data["cells"][index]["source"]
        data["cells"][index]["source"] = source.splitlines(keepends=True) if isinstance(old, list) else source
    indent = _indent_of(raw_text)
    # A file that is all ASCII wrote its other characters as \\u escapes: keep doing so.
    text = json.dumps(data, indent=indent, ensure_ascii=raw_text.isascii(),
                      separators=(",", ": ") if indent is not None else None)
    return text + ("\n" if raw_text.endswith("\n") else "")


def _indent_of(raw_text: str) -> Optional[int]:
    m = re.search(r"\n( +)\"", raw_text)
    return len(m.group(1)) if m else None


def lint_notebook(path: Path, settings: Settings, fix: FixMode = FixMode.NONE, *, write: bool = True,
                  want_edits: bool = False, display_name: Optional[str] = None) -> FileOutcome:
    name = display_name or str(path)
    outcome = FileOutcome(path)
    try:
        import nbformat
    except ImportError:
        outcome.errors.append(f"{name}: notebooks need nbformat (pip install 'gpulint[notebook]'); skipped")
        return outcome
    try:
        source = SourceFile.read(path)
    except FileError as exc:
        outcome.errors.append(str(exc))
        return outcome
    try:
        nb = nbformat.reads(source.text, as_version=nbformat.NO_CONVERT)
        cells = _code_cells(nb)
    except Exception as exc:  # nbformat raises several kinds for malformed JSON
        outcome.errors.append(f"{name}: not a readable notebook ({type(exc).__name__}: "
                              f"{str(exc).splitlines()[0][:200] if str(exc) else 'invalid'})")
        return outcome
    masker = _Masker()
    text, where = _join(cells, masker)
    codes = settings.enabled_codes(path)
    result = lint_source(text, name, codes, report_periodic=settings.report_periodic, fix=fix,
                         want_edits=want_edits)
    outcome.errors.extend(f"{name}: {e}" for e in result.errors)
    fixed_sources: dict[int, str] = {}
    if result.changed(text):
        split = _split(masker.unmask(result.source), cells)
        if split is None:
            outcome.errors.append(f"{name}: a fix moved code across cells; notebook left unchanged")
            result = lint_source(text, name, codes, report_periodic=settings.report_periodic,
                                 want_edits=want_edits)
        else:
            fixed_sources = {i: s for i, s in split.items() if s != nb.cells[i].source}
            _, where = _join([_Cell(c.index, split[c.index]) for c in cells], _Masker())
    for cell in cells:
        outcome.sources[(name, cell.index)] = fixed_sources.get(cell.index, cell.source)
    outcome.diagnostics = [_place(d, where) for d in result.diagnostics]
    for d in outcome.diagnostics:
        if d.edits:
            d.edits = _cell_edits(d, where, masker, outcome.sources.get((name, d.cell), ""))
    new_text = _dump(source.text, nb, fixed_sources) if fixed_sources else source.text
    _locate_in_file(outcome.diagnostics, new_text)
    if fixed_sources:
        outcome.fixed_count = result.fixed_count
        outcome.original, outcome.fixed = source.text, new_text
        if write:
            try:
                source.write(new_text)
            except FileError as exc:
                outcome.errors.append(str(exc))
                outcome.fixed = None
                outcome.fixed_count = 0
    return outcome
