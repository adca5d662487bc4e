"""Lint a big module in pieces, so that no more than one piece's LibCST tree is alive at a time (issue 13).

LibCST's tree of a module costs about 170 MB per MB of source, and the analysis holds it through every rule:
a 4 MB generated module peaked at 1.2 GB. Above `THRESHOLD` characters, a module is linted as several
*chunk texts*, one after the other, each tree dropped before the next is parsed:

- CPython's `ast` of the file (piece by piece, `bigfile.pieces`, each piece's tree dropped) lists the top-level
  statements: the lines each spans, the module-level names it binds and the names it reads.
- Statements that read or bind each other's names are kept together (a union-find over names: a function and
  the helpers it calls, a class and its base, a loop and the functions it calls, every binding of one name).
  Imports, and statements that touch no name bound by a `def`/`class` of the module, are *shared*: every chunk
  holds them (they tell each chunk what `torch`, `device` or `criterion` is), and only the first chunk reports
  their findings.
- Groups are packed, in the file's order, into chunks of about `CHUNK` characters. A chunk's text is the file
  without the other chunks' statements (whole lines: each character keeps its column), and each finding's lines
  are mapped back to the file's (`Chunk.line`). (Empty lines in their place would keep the numbers, but every
  chunk would then parse the whole file's lines: quadratic.) The text-wide facts (`analysis.source`: "does the
  module name CUDA", the project model's view of the file) are read from the whole file, as before.
- A finding is kept by the chunk that owns the statement it is on (lines outside every statement: the first).

The findings are those of the whole module where no analysis connects statements other than through module
names (tests/test_chunked.py compares both, with a lowered threshold, on every fixture and on the label
repositories' big files). Fixes and editors always use the whole module (`lint_source` decides).
"""

from __future__ import annotations

import ast
import os
import pickle
from dataclasses import dataclass, field
from typing import Callable, NamedTuple, Optional

from gpulint.bigfile import pieces

# Modules longer than this (characters) are linted in chunks; tests lower it.
THRESHOLD = 1_000_000
# About this many characters of statements per chunk.
CHUNK = 256 * 1024


@dataclass
class _Statement:
    first: int  # first line (decorators included), 1-based
    last: int  # last line
    kind: str = "other"  # "import", "def" (a def or class), "other"
    shared: bool = False
    binds: set = field(default_factory=set)
    reads: set = field(default_factory=set)
    size: int = 0


@dataclass
class Plan:
    """Which lines each chunk keeps (a chunk's own statements, the shared ones and the lines between statements)."""

    chunks: list  # per chunk: sorted list of statement indices it owns
    statements: list  # _Statement per top-level statement


def _names(node: ast.AST) -> tuple[set, set]:
    """(names the top-level statement binds at module level, names it reads anywhere inside)."""
    binds: set = set()
    reads: set = set()
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        binds.add(node.name)
    elif isinstance(node, (ast.Import, ast.ImportFrom)):
        for alias in node.names:
            binds.add((alias.asname or alias.name).split(".")[0])
        return binds, reads
    top_level_targets = not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda))
    for sub in ast.walk(node):
        kind = type(sub)
        if kind is ast.Name:
            reads.add(sub.id)
            if top_level_targets and not isinstance(sub.ctx, ast.Load):
                binds.add(sub.id)  # over-approximate: a name stored inside a comprehension counts too
        elif kind is ast.Global or kind is ast.Nonlocal:
            binds.update(sub.names)
            reads.update(sub.names)
        elif kind is ast.Attribute:
            pass
        elif kind in (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef) and sub is not node and top_level_targets:
            binds.add(sub.name)  # `if ...: def f(): ...` at module level
        elif kind is ast.alias and top_level_targets:
            binds.add((sub.asname or sub.name).split(".")[0])
        elif kind is ast.Constant and isinstance(sub.value, str) and sub.value.isidentifier():
            reads.add(sub.value)  # `globals()["train_1"]`, `__all__ = ["Net"]`, string annotations: stay together
    return binds, reads


def _statements(source: str, filename: str) -> Optional[list[_Statement]]:
    found: list[_Statement] = []
    lines_above = 0
    for part in pieces(source):
        try:
            tree = ast.parse(part, filename)
        except (SyntaxError, ValueError, RecursionError, MemoryError):
            return None
        for stmt in tree.body:
            first = min([stmt.lineno, *(d.lineno for d in getattr(stmt, "decorator_list", ()))])
            binds, reads = _names(stmt)
            kind = "import" if isinstance(stmt, (ast.Import, ast.ImportFrom)) else \
                "def" if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) else "other"
            found.append(_Statement(lines_above + first, lines_above + (stmt.end_lineno or stmt.lineno), kind,
                                    binds=binds, reads=reads))
        del tree
        lines_above += part.count("\n")
    return found


def plan(source: str, filename: str = "<string>", chunk: Optional[int] = None) -> Optional[Plan]:
    """How to lint `source` in chunks; None when it is one chunk (or cannot be cut: `\\r` line ends)."""
    if "\r" in source:
        return None
    statements = _statements(source, filename)
    if not statements or len(statements) < 2:
        return None
    line_starts = [0]
    at = source.find("\n")
    while at != -1:
        line_starts.append(at + 1)
        at = source.find("\n", at + 1)
    line_starts.append(len(source))
    for s in statements:
        s.size = line_starts[min(s.last, len(line_starts) - 1)] - line_starts[min(s.first - 1, len(line_starts) - 1)]
    # Names bound by a `def`/`class`, and (to a fixed point) by any statement that reads or binds one of them:
    # such statements are not shared; the others (imports, `device = torch.device("cuda")`) are.
    special = set()
    for s in statements:
        s.shared = s.kind != "def"
        if not s.shared:
            special.update(s.binds)
    changed = True
    while changed:
        changed = False
        for s in statements:
            if s.shared and (s.binds & special or (s.kind == "other" and s.reads & special)):
                s.shared = False
                special.update(s.binds)
                changed = True
    parent = list(range(len(statements)))

    def find(i: int) -> int:
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

    def union(a: int, b: int) -> None:
        ra, rb = find(a), find(b)
        if ra != rb:
            parent[max(ra, rb)] = min(ra, rb)

    binders: dict[str, int] = {}
    for i, s in enumerate(statements):
        if s.shared:
            continue
        for name in s.binds:
            j = binders.setdefault(name, i)
            if j != i:
                union(i, j)
    for i, s in enumerate(statements):
        if not s.shared:
            for name in s.reads:
                j = binders.get(name)
                if j is not None:
                    union(i, j)
    owner: dict[int, int] = {}  # lines shared by two statements (`a = 1; b = f()`) keep them together
    for i, s in enumerate(statements):
        for line in (s.first, s.last):
            j = owner.setdefault(line, i)
            if j != i:
                union(i, j)
    groups: dict[int, list[int]] = {}
    for i, s in enumerate(statements):
        if not s.shared:
            groups.setdefault(find(i), []).append(i)
    size = chunk or CHUNK
    chunks: list[list[int]] = []
    current: list[int] = []
    current_size = 0
    for root in sorted(groups):
        members = groups[root]
        current.extend(members)
        current_size += sum(statements[i].size for i in members)
        if current_size >= size:
            chunks.append(sorted(current))
            current, current_size = [], 0
    if current:
        chunks.append(sorted(current))
    if len(chunks) < 2:
        return None
    return Plan(chunks, statements)


class Chunk(NamedTuple):
    """One chunk's text, and how its lines map back to the file's."""

    text: str
    lines: list  # the file's line number of each of the chunk's lines
    reports: set  # the file's lines whose findings this chunk reports
    firsts: list  # the chunk's line of each statement it keeps (as `bigfile.first_lines` gives them)

    def line(self, row: int) -> int:
        """The file's line of the chunk's line `row` (past its end: counted on from its last line)."""
        if 1 <= row <= len(self.lines):
            return self.lines[row - 1]
        return (self.lines[-1] if self.lines else 0) + row - len(self.lines)


def chunk_text(source: str, the_plan: Plan, index: int) -> Chunk:
    """Chunk `index`: the file without the other chunks' statements (the lines between statements kept)."""
    lines = source.split("\n")
    dropped = bytearray(len(lines) + 1)
    own = set(the_plan.chunks[index])
    reports: set = set()
    kept_firsts: list = []
    for i, s in enumerate(the_plan.statements):
        if s.shared or i in own:
            kept_firsts.append(s.first)
            if i in own or index == 0:
                reports.update(range(s.first, s.last + 1))
            continue
        for line in range(s.first, min(s.last, len(lines)) + 1):
            dropped[line] = 1
    if index == 0:
        covered = bytearray(len(lines) + 2)
        for s in the_plan.statements:
            covered[s.first:s.last + 1] = b"\x01" * (s.last + 1 - s.first)
        reports.update(line for line in range(1, len(lines) + 2) if not covered[line])
    kept = [line for line in range(1, len(lines) + 1) if not dropped[line]]
    where = {line: at for at, line in enumerate(kept, 1)}
    return Chunk("\n".join(lines[line - 1] for line in kept), kept, reports, [where[f] for f in kept_firsts])


# A second process lints every other chunk (issue 13: the chunks are independent, and a big module would
# otherwise keep one core of two idle). 0: one process (`--jobs 1`, tests comparing both).
HELPERS = 1


def helpers_for(jobs: int) -> None:
    """The run's `--jobs`: one process for the chunks of a big module when it is 1."""
    global HELPERS
    HELPERS = 1 if jobs >= 2 else 0


def _may_fork(count: int) -> bool:
    if HELPERS <= 0 or count < 2 or not hasattr(os, "fork"):
        return False
    import multiprocessing

    if multiprocessing.current_process().daemon:
        return False  # a worker of the pool (parallel.py): the other workers use the other cores
    try:
        cores = len(os.sched_getaffinity(0))
    except AttributeError:  # pragma: no cover (macOS)
        cores = os.cpu_count() or 1
    return cores >= 2


def map_chunks(lint_one: Callable[[int], object], count: int) -> list:
    """`[lint_one(i) for i in range(count)]`, the odd chunks in a forked helper process (each process with its own
    project model, as the pool's workers) while this one lints the even ones. The results must pickle; where the
    helper fails, its chunks are linted here."""
    helper = _Helper(lint_one, range(1, count, 2)) if _may_fork(count) else None
    results: dict[int, object] = {}
    for index in range(count):
        if helper is None or index % 2 == 0:
            results[index] = lint_one(index)
    if helper is not None:
        results.update(helper.results() or {})
    for index in range(count):
        if index not in results:
            results[index] = lint_one(index)
    return [results[index] for index in range(count)]


class _Helper:
    """A forked process linting `indices`; its results come back pickled through a pipe."""

    def __init__(self, lint_one: Callable[[int], object], indices) -> None:
        self.pid = -1
        read, write = os.pipe()
        try:
            pid = os.fork()
        except OSError:
            os.close(read)
            os.close(write)
            self.read = -1
            return
        if pid == 0:  # the helper
            os.close(read)
            try:
                data = pickle.dumps({i: lint_one(i) for i in indices}, protocol=pickle.HIGHEST_PROTOCOL)
            except BaseException:  # noqa: BLE001 (anything: the parent lints these chunks itself)
                data = pickle.dumps(None)
            try:
                with os.fdopen(write, "wb") as out:
                    out.write(data)
            finally:
                os._exit(0)
        os.close(write)
        self.pid, self.read = pid, read

    def results(self) -> Optional[dict]:
        if self.read < 0:
            return None
        try:
            with os.fdopen(self.read, "rb") as got:
                data = got.read()
        finally:
            os.waitpid(self.pid, 0)
        try:
            return pickle.loads(data) if data else None
        except Exception:  # noqa: BLE001
            return None
