"""Jupyter notebooks: the code cells are one module (cell 5's loop uses cell 2's model); fixes go back in cells.

The notebook is read with the standard library's json (the format is JSON: no extra needed). IPython syntax
(`%magic`, `!shell`, `%%cell magics`, `obj?`) is swapped for placeholders that keep every line where it was, so
positions map straight back to cells, and swapped back after fixing. A cell with a syntax error is masked whole
(one GPU001 in that cell) so the other cells are still linted and fixed.
"""

from __future__ import annotations

import json
import re
from bisect import bisect_right
from itertools import accumulate
from dataclasses import dataclass, replace
from typing import Optional

from gpulint.diagnostics import Diagnostic, Edit, InternalError, Position, internal_error
from gpulint.sources import Finished, Input

SYNTAX_ERROR = "GPU001"

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


# IPython's line magics and shell aliases, which a cell of one line may call without `%` (automagic: `pip install
# -r requirements.txt`, `ls -l data`, `cd ..`). IPython applies automagic to single-line cells only.
_AUTOMAGIC = frozenset({
    "alias", "alias_magic", "autoawait", "autocall", "automagic", "bookmark", "cat", "cd", "clear", "colors",
    "conda", "config", "cp", "debug", "dhist", "dirs", "doctest_mode", "ed", "edit", "env", "gui", "hist",
    "history", "killbgscripts", "ldir", "less", "lf", "lk", "ll", "load", "load_ext", "loadpy", "logoff", "logon",
    "logstart", "logstate", "logstop", "ls", "lsmagic", "lx", "macro", "magic", "mamba", "man", "matplotlib",
    "micromamba", "mkdir", "more", "mv", "notebook", "page", "pastebin", "pdb", "pdef", "pdoc", "pfile", "pinfo",
    "pinfo2", "pip", "popd", "pprint", "precision", "prun", "psearch", "psource", "pushd", "pwd", "pycat", "pylab",
    "quickref", "recall", "rehashx", "reload_ext", "rep", "rerun", "reset", "reset_selective", "rm", "rmdir", "run",
    "save", "sc", "set_env", "store", "sx", "system", "tb", "time", "timeit", "unalias", "unload_ext", "who",
    "who_ls", "whos", "xdel", "xmode", "tensorflow_version"})
_AUTOMAGIC_RE = re.compile(r"^([A-Za-z_][\w]*)(\s+(.*))?$")
# What IPython reads as Python after the name (`ls = 3`, `pip.main()`, `cd, x = f()`): not a magic call.
_NOT_AUTOMAGIC_REST = re.compile(r"^([,&^|*/+\-%<>=!]=?\s|=|\(|\[|\.|:|is\s|not\s|in\s|and\s|or\s|if\s)")


def _is_automagic_cell(source: str) -> bool:
    """A cell of one line that calls a magic without `%` (`pip install -r requirements.txt`) and is not Python."""
    line = source.rstrip("\n")
    if "\n" in line or line != line.lstrip():
        return False
    m = _AUTOMAGIC_RE.match(line.rstrip())
    if m is None or m.group(1) not in _AUTOMAGIC or (m.group(3) and _NOT_AUTOMAGIC_REST.match(m.group(3))):
        return False
    try:
        compile(line, "<cell>", "exec", flags=0x400, dont_inherit=True)  # ast.PyCF_ONLY_AST
    except (SyntaxError, ValueError):
        return True
    return False


def _ipython_dedent(source: str) -> str:
    """The cell as IPython runs it: leading blank lines dropped, and the first line's indentation removed from
    every line that starts with it (IPython's `leading_empty_lines` and `leading_indent` cleanups)."""
    lines = source.split("\n")
    while lines and not lines[0].strip():
        lines.pop(0)
    if not lines:
        return source
    first = lines[0]
    prefix = first[: len(first) - len(first.lstrip(" \t"))]
    if not prefix:
        return source
    return "\n".join(line[len(prefix):] if line.startswith(prefix) else line for line in lines)


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
            head = [self._placeholder(lines[0])]
            if not body_is_python:
                # `%%writefile`, `%%bash`: the body is not Python; each line a top-level placeholder (an
                # indented line of the body must not open a block in the joined module)
                return "\n".join(head + [self._placeholder(line, "") for line in lines[1:]])
            body = [self._mask_lines(lines[1:])] if len(lines) > 1 else []
            return "\n".join(head + body)  # `%%capture`: Python, and its `!wget` lines are masked too
        if len(lines) == 1 and _is_automagic_cell(source):
            return self._placeholder(source, "")  # `pip install -r requirements.txt`: automagic, one line
        return self._mask_lines(lines)

    def _mask_lines(self, lines: list[str]) -> str:
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

    def mask_all(self, source: str) -> str:
        """Every line a top-level placeholder: a cell that does not parse, kept out of the module as it is."""
        return "\n".join(self._placeholder(line, "") for line in source.split("\n"))

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


class NotReadable(ValueError):
    """Not a notebook this version of the format can hold: (message, row, column) for one GPU001."""


def _cell_text(source) -> str:
    if isinstance(source, list) and all(isinstance(piece, str) for piece in source):
        return "".join(source)
    if isinstance(source, str):
        return source
    raise NotReadable("a cell's source is neither a string nor a list of strings")


def _load(text: str) -> tuple[dict, list[_Cell]]:
    """The notebook's JSON and its code cells (nbformat 4), or NotReadable."""
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise NotReadable(exc.msg, exc.lineno, exc.colno) from None
    except (ValueError, RecursionError) as exc:
        raise NotReadable(str(exc) or type(exc).__name__) from None
    cells = data.get("cells") if isinstance(data, dict) else None
    if not isinstance(cells, list) or not all(isinstance(cell, dict) for cell in cells):
        raise NotReadable("no list of cells (nbformat 4 expected)")
    return data, [_Cell(i, _cell_text(cell.get("source", ""))) for i, cell in enumerate(cells)
                  if cell.get("cell_type") == "code"]


def _join(cells: list[_Cell], masker: _Masker, broken: frozenset = frozenset()) -> tuple[str, list]:
    """One module text, and for each line of it (1-based) the (cell index, line in cell), or (-1, 0).

    The cells in `broken` (indexes) are masked whole."""
    parts: list[str] = []
    where: list[tuple[int, int]] = [(-1, 0)]  # index 0 unused: rows are 1-based
    for cell in cells:
        parts.append(_BOUNDARY.format(cell.index))
        where.append((-1, 0))
        body = masker.mask_all(cell.source) if cell.index in broken else masker.mask(cell.source)
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


def _in_file(d: Diagnostic, rows: Optional[dict[int, list[int]]]) -> Diagnostic:
    """`d` with its `file_rows`: where its lines are written in the notebook file itself."""
    if rows is None or d.cell is None:
        return d
    cell_rows = rows.get(d.cell, [])
    if not 0 < d.location.row <= len(cell_rows):
        return d
    end = d.end_location.row
    return replace(d, file_rows=(cell_rows[d.location.row - 1],
                                 cell_rows[end - 1] if d.location.row <= end <= len(cell_rows) else
                                 cell_rows[d.location.row - 1]))


def _place(d: Diagnostic, where: list[tuple[int, int]]) -> Diagnostic:
    """`d` at its cell and its line in that cell (a finding of the virtual module comes in)."""
    row = d.location.row
    cell, line = where[row] if 0 < row < len(where) else (-1, 0)
    end_row = d.end_location.row
    end_cell, end_line = where[end_row] if 0 < end_row < len(where) else (cell, line)
    end = Position(end_line, d.end_location.column) if end_cell == cell else Position(line, 1_000)
    return replace(d, cell=cell if cell >= 0 else None, location=Position(line, d.location.column),
                   end_location=end)


def _dump(raw_text: str, new_sources: dict[int, str]) -> str:
    """The notebook with new cell sources, formatted as the file was: its key order, indentation, escapes
    (nbformat's own layout, one-space indent and sorted keys, is one case of this)."""
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


def _cell_syntax_errors(cells: list[_Cell]) -> dict[int, Optional[Diagnostic]]:
    """GPU001 for each cell that does not parse on its own (a notebook runs its cells one by one); None for a
    cell that parses only as IPython runs it, without its leading indentation (` with tf.Session() as s:`): it
    runs, so no finding, but it is kept out of the module whole."""
    from gpulint.runner import python_syntax_error

    found: dict[int, Optional[Diagnostic]] = {}
    for cell in cells:
        error, _ = python_syntax_error(_Masker().mask(cell.source), "")
        if error is not None:
            dedented = _ipython_dedent(cell.source)
            if dedented != cell.source and python_syntax_error(_Masker().mask(dedented), "")[0] is None:
                found[cell.index] = None
            else:
                found[cell.index] = replace(error, cell=cell.index)
    return found


class NotebookView:
    """A notebook as one virtual module, and the way back: findings to cells, the fixed module to the file."""

    def __init__(self, source: Input) -> None:
        self.input = source
        self.unreadable: Optional[Diagnostic] = None
        self.isolated: tuple[Diagnostic, ...] = ()
        self.masker = _Masker()
        self.cells: list[_Cell] = []
        self.text = ""
        try:
            _, self.cells = _load(source.text)
        except NotReadable as exc:
            message, row, column = (*exc.args, 1, 1)[:3]
            where = Position(row, column)
            self.unreadable = Diagnostic(SYNTAX_ERROR, "syntax-error", f"not a readable notebook: {message}",
                                         filename=source.name, location=where, end_location=where)
            return
        self.text, self.where = _join(self.cells, self.masker)
        from gpulint.runner import python_syntax_error

        if python_syntax_error(self.text, "")[0] is not None:
            # Isolate the cells that do not parse; if the others then do, lint them without those.
            broken = _cell_syntax_errors(self.cells)
            if broken:
                masker = _Masker()
                text, where = _join(self.cells, masker, frozenset(broken))
                if python_syntax_error(text, "")[0] is None:
                    self.masker, self.text, self.where = masker, text, where
                    self.isolated = tuple(replace(d, filename=source.name) for d in broken.values()
                                          if d is not None)

    def finish(self, result, codes: frozenset[str]) -> Optional[Finished]:
        """The findings placed in cells and the notebook text after fixes; None if a fix crossed cells."""
        name = self.input.name
        where, fixed_sources = self.where, {}
        if result.changed(self.text):
            split = _split(self.masker.unmask(result.source), self.cells)
            if split is None:
                return None
            fixed_sources = {i: s for i, s in split.items() if s != self._source(i)}
            _, where = _join([_Cell(c.index, split[c.index]) for c in self.cells], _Masker())
        sources = {(name, cell.index): fixed_sources.get(cell.index, cell.source) for cell in self.cells}
        diagnostics = [_place(d, where) for d in result.diagnostics]
        diagnostics = [replace(d, edits=_cell_edits(d, where, self.masker, sources.get((name, d.cell), "")))
                       if d.edits else d for d in diagnostics]
        diagnostics += [d for d in self.isolated if d.code in codes]
        text = _dump(self.input.text, fixed_sources) if fixed_sources else self.input.text
        rows = _file_rows(text) if diagnostics else None
        diagnostics = sorted((_in_file(d, rows) for d in diagnostics), key=Diagnostic.sort_key)
        return Finished(tuple(diagnostics), sources, text)

    def place_errors(self, errors: list[str]) -> list[str]:
        """Crashes of rules at their cell and line (`nb.ipynb:cell 3:4`), as findings are shown."""
        placed = []
        for e in errors:
            if isinstance(e, InternalError) and e.row and 0 < e.row < len(self.where) \
                    and self.where[e.row][0] >= 0:
                cell, line = self.where[e.row]
                e = internal_error(e.code, f"{self.input.name}:cell {cell + 1}", line, e.reason)
            placed.append(e)
        return placed

    def _source(self, index: int) -> str:
        return next(c.source for c in self.cells if c.index == index)
