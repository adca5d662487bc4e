"""The project model of a big module without its whole `ast` tree (issue 13).

CPython's `ast` of a module costs about 150 MB per MB of source, and `ModuleInfo` held it for the whole lint
(its functions' and methods' nodes, `calls_named`'s index of every call): a 4 MB generated module peaked at
700 MB even when linted in chunks (gpulint/chunked.py). Above `THRESHOLD` bytes, a module on disk is read into a
`LazyModuleInfo` instead:

- the file is parsed piece by piece (`bigfile.pieces`), each piece's tree dropped after it is read; what is kept
  is small: the imports, registries, `sys.path` entries, the classes' bases and properties, where each top-level
  statement is (its *unit*: the lines it spans; statements sharing a line form one unit), and for each last name
  of a call the units that make such a call;
- a function's or method's node (`functions[name]`, `classes[name].methods[name]`) is parsed from its unit's
  lines when asked for, with its lines numbered as in the file; the last `CACHED_UNITS` units parsed are kept,
  so the nodes of the definitions a lint is looking at stay the same objects;
- `calls_named(name)` parses only the units that make such a call and gives the calls in the order, and with
  the scopes' assignments, that the whole tree's index gives (module-level assignments: one dict for the
  module, read once when a module-level call is asked for; a function's: tagged with its unit, `same_scope`);
- `statements()` streams the top-level statements, piece by piece, for the few whole-module walks
  (forward._hot_file's called names, default_device's setters).

What cannot be told statement by statement is over-approximated where only an over-approximation was asked for:
the prefilter's "may hold a hot loop" of the module (forward._hot_file) is True, so the analysis that decides it
runs. Findings are those of the whole tree (tests/test_lazy_module.py, threshold lowered, on every fixture and
on the label repositories' big files).
"""

from __future__ import annotations

import ast
import re
from collections import OrderedDict
from collections.abc import Mapping
from pathlib import Path
from typing import Iterator, Optional

from gpulint import ast_walk
from gpulint.bigfile import pieces

# Modules on disk longer than this (bytes) get a `LazyModuleInfo`; tests lower it.
THRESHOLD = 1_000_000
# Parsed units kept (a unit is one top-level statement, or those sharing a line).
CACHED_UNITS = 128
CACHED_INDEXES = 8

_CODING = re.compile(rb"^[ \t\f]*#.*?coding[:=][ \t]*([-\w.]+)")


class _Unsplittable(Exception):
    """The pieces do not parse alone (a cut inside a string, a syntax error): use the whole tree."""


def lazy_info(path: Path, raw: bytes, digest: str):
    """A `LazyModuleInfo` of the module, or None where the whole tree must be used (small, not UTF-8, `\\r`
    line ends, pieces that do not parse alone)."""
    if len(raw) <= THRESHOLD or b"\r" in raw:
        return None
    for line in raw.split(b"\n", 2)[:2]:
        match = _CODING.match(line)
        if match is not None and match.group(1).lower().replace(b"_", b"-") not in (b"utf-8", b"utf8"):
            return None
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        return None
    if text.startswith("\ufeff"):
        text = text[1:]
    try:
        return LazyModuleInfo(path, text, digest)
    except (_Unsplittable, SyntaxError, ValueError, RecursionError, MemoryError):
        return None


def same_scope(a: dict, b: dict) -> bool:
    """Two scopes' assignments (`calls_named`) are of the same scope: the same dict, or a lazy module's
    function scope parsed twice."""
    if a is b:
        return True
    key = getattr(a, "key", None)
    return key is not None and key == getattr(b, "key", None)


class _ScopeAssigns(dict):
    """A function scope's assignments in a lazy module, tagged with (unit, scope) so a re-parse is the same."""

    key: tuple = ()


def _import_project():
    from gpulint.analysis import project

    return project


class _Defs(Mapping):
    """name -> node, each parsed from its unit when asked for (`LazyModuleInfo._node`)."""

    def __init__(self, info: "LazyModuleInfo", where: dict) -> None:
        self._info = info
        self._where = where  # name -> (unit, statement index in the unit[, index in a class body])

    def __getitem__(self, name: str):
        return self._info._node(self._where[name])

    def __contains__(self, name: object) -> bool:
        return name in self._where

    def __iter__(self):
        return iter(self._where)

    def __len__(self) -> int:
        return len(self._where)

    __eq__ = object.__eq__
    __hash__ = object.__hash__

    def __repr__(self) -> str:
        return f"<lazy definitions {list(self._where)}>"


class LazyModuleInfo:
    """`project.ModuleInfo` of a big module, its definitions' trees parsed on demand (see the module's docstring).
    Created through `lazy_info`; a subclass of `ModuleInfo` (made on first use: project.py imports this module)."""

    def __new__(cls, *args, **kwargs):
        return object.__new__(_lazy_class())

    def __init__(self, path: Path, text: str, digest: str) -> None:
        project = _import_project()
        self.path = path
        self.digest = digest
        self.imports = {}
        self.classes = {}
        self.registries = {}
        self.type_vars = {}
        self.star_imports = []
        self.plain_imports = []
        self.chosen_modules = {}
        self.aliases = {}
        self.alias_choices = {}
        self.displays = {}
        self._calls_by_name = None
        self._text = text
        self._lines = text.split("\n")
        self._units: list[list[int]] = []  # [first line, last line]
        self._cache: OrderedDict = OrderedDict()  # unit -> [tree, scopes or None]
        self._index_cache: OrderedDict = OrderedDict()  # `indexed`: build -> its index, the last few
        self._call_units: dict[str, list[int]] = {}  # last name of a call -> units making one
        self._module_assigns: Optional[dict] = None
        self._class_at: dict[str, tuple] = {}
        functions: dict[str, tuple] = {}
        path_statements: Optional[list] = [] if "sys.path" in text else None
        self._unit_sizes: list[int] = []
        lines_above = 0
        for part in pieces(text):
            tree = ast.parse(part, str(path))
            if lines_above:
                ast.increment_lineno(tree, lines_above)
            for stmt in tree.body:
                first = min([stmt.lineno, *(d.lineno for d in getattr(stmt, "decorator_list", ()))])
                last = stmt.end_lineno or stmt.lineno
                if self._units and first <= self._units[-1][1]:
                    unit = len(self._units) - 1
                    self._units[-1][1] = max(last, self._units[-1][1])
                    position = self._unit_sizes[-1]
                    self._unit_sizes[-1] += 1
                else:
                    unit = len(self._units)
                    self._units.append([first, last])
                    self._unit_sizes.append(1)
                    position = 0
                self._statement(project, stmt, unit, position, functions)
                if path_statements is not None and isinstance(stmt, (ast.Assign, ast.Expr, ast.If, ast.Try,
                                                                     ast.With)):
                    path_statements.append(stmt)
            del tree
            lines_above += part.count("\n")
        if lines_above + 1 != len(self._lines):
            raise _Unsplittable()
        self.functions = _Defs(self, functions)
        self.sys_path = project._sys_path_entries(path_statements) if path_statements else ()
        del self._unit_sizes

    def _statement(self, project, stmt: ast.stmt, unit: int, position: int, functions: dict) -> None:
        if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef)):
            functions[stmt.name] = (unit, position)
        elif isinstance(stmt, ast.ClassDef):
            methods: dict = {}
            nodes: dict = {}
            for index, s in enumerate(stmt.body):
                if isinstance(s, (ast.FunctionDef, ast.AsyncFunctionDef)) and not (
                        s.name in methods and project._accessor(s)):
                    methods[s.name] = (unit, position, index)
                    nodes[s.name] = s
            bases = tuple(project._dotted(b.value if isinstance(b, ast.Subscript) else b) or "" for b in stmt.bases)
            properties = frozenset(name for name, s in nodes.items() if project._is_property(s))
            self.classes[stmt.name] = project.ClassSummary(stmt.name, self.path, stmt.lineno, _Defs(self, methods),
                                                           bases, properties)
            self._class_at[stmt.name] = (unit, position)
        else:
            project.ModuleInfo._top_level(self, stmt)  # imports, registries, imports under `if`/`try`
        calls = self._call_units
        for node in ast_walk.walk(stmt):
            if type(node) is ast.Call:
                dotted = project._dotted(node.func)
                if dotted is not None:
                    found = calls.setdefault(dotted.rsplit(".", 1)[-1], [])
                    if not found or found[-1] != unit:
                        found.append(unit)

    # -- units -------------------------------------------------------------------------------------------------
    def _unit(self, unit: int) -> list:
        cached = self._cache.get(unit)
        if cached is not None:
            self._cache.move_to_end(unit)
            return cached
        first, last = self._units[unit]
        tree = ast.parse("\n".join(self._lines[first - 1:last]), str(self.path))
        if first > 1:
            ast.increment_lineno(tree, first - 1)
        cached = self._cache[unit] = [tree, None]
        while len(self._cache) > CACHED_UNITS:
            self._cache.popitem(last=False)
        return cached

    def _node(self, where: tuple):
        node = self._unit(where[0])[0].body[where[1]]
        return node.body[where[2]] if len(where) > 2 else node

    def class_node(self, name: str) -> Optional[ast.ClassDef]:
        where = self._class_at.get(name)
        return self._node(where) if where is not None else None

    def _scopes(self, unit: int) -> list:
        cached = self._unit(unit)
        if cached[1] is None:
            scopes = list(_import_project()._scopes(cached[0]))
            for i in range(1, len(scopes)):
                tagged = _ScopeAssigns(scopes[i][1])
                tagged.key = (id(self), unit, i)
                scopes[i] = (scopes[i][0], tagged)
            cached[1] = scopes
        return cached[1]

    def statements(self) -> Iterator[ast.stmt]:
        """The module's top-level statements, their lines as in the file, one piece's tree alive at a time."""
        lines_above = 0
        for part in pieces(self._text):
            tree = ast.parse(part, str(self.path))
            if lines_above:
                ast.increment_lineno(tree, lines_above)
            yield from tree.body
            del tree
            lines_above += part.count("\n")

    @property
    def tree(self) -> ast.Module:
        """The whole tree (not kept): for a walk this module does not stream yet."""
        return ast.parse(self._text, str(self.path))

    def indexed(self, build):
        """`ModuleInfo.indexed`: `build(tree)` of the whole tree, the last `CACHED_INDEXES` indexes kept. Questions
        about many classes or names of this module come one after another from one index (the calls binding
        instances of each class, tensor_params), so each is asked of a kept index instead of a whole new parse
        per question; an index may hold nodes, so only a few are kept."""
        found = self._index_cache.get(build)
        if found is not None:
            self._index_cache.move_to_end(build)
            return found
        found = self._index_cache[build] = build(self.tree)
        while len(self._index_cache) > CACHED_INDEXES:
            self._index_cache.popitem(last=False)
        return found

    # -- calls ---------------------------------------------------------------------------------------------------
    def calls_named(self, name: str) -> list:
        """`ModuleInfo.calls_named`, the same calls in the same order, from the units that make them."""
        units = self._call_units.get(name)
        if not units:
            return []
        project = _import_project()

        def named(call) -> bool:
            dotted = project._dotted(call.func)
            return dotted is not None and dotted.rsplit(".", 1)[-1] == name

        found: list = []
        # the whole tree's module scope is walked from its last statement back (project._scopes)
        for unit in reversed(units):
            calls = [c for c in self._scopes(unit)[0][0] if named(c)]
            if calls:
                assigns = self._module_level_assigns()
                found.extend((c, assigns) for c in calls)
        for unit in units:
            for calls, assigns in self._scopes(unit)[1:]:
                found.extend((c, assigns) for c in calls if named(c))
        return found

    def _module_level_assigns(self) -> dict:
        """The module scope's assignments, as `project._scopes` gives them for the whole tree."""
        if self._module_assigns is None:
            project = _import_project()
            per_piece = []
            lines_above = 0
            for part in pieces(self._text):
                tree = ast.parse(part, str(self.path))
                if lines_above:
                    ast.increment_lineno(tree, lines_above)
                per_piece.append(next(project._scopes(tree))[1])
                del tree
                lines_above += part.count("\n")
            merged: dict = {}
            for assigns in reversed(per_piece):
                for key, values in assigns.items():
                    merged.setdefault(key, []).extend(values)
            self._module_assigns = merged
        return self._module_assigns


_CLASS = None


def _lazy_class():
    """`LazyModuleInfo` as a subclass of `project.ModuleInfo` (isinstance checks keep working)."""
    global _CLASS
    if _CLASS is None:
        project = _import_project()
        _CLASS = type("LazyModuleInfo", (LazyModuleInfo, project.ModuleInfo), {})
    return _CLASS
