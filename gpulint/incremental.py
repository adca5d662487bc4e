"""What the lints of an editor's buffer can share with the previous ones, and how to abandon one midway.

An editor re-lints the same buffer after each burst of typing; most of it did not change. When reuse is on
(the language server turns it on; the CLI lints each file once and does not), parsing is done per top-level
definition, as `bigfile` cuts a big module, and each piece's syntax tree is kept by its text: an unchanged
piece keeps its very nodes. So do the renderings the runner needs for positions (each top-level statement's
code and the positions of its nodes), kept by statement node. Findings cannot change: the module is the one
`bigfile.parse_module` joins from the same pieces (tests/test_faults.py compares such joins with a whole parse),
and a position is what rendering that same node gave before.

A piece that changed is parsed again only where it changed when it is a function edited inside its body
(gpulint.splice), and the rules run again only on the nodes that are new when the code is the same as the
previous lint's or differs by a number bound to an unused name (gpulint.rule_reuse).

Cancellation: `cancellable(stale)` around a lint makes `checkpoint()` (between pieces, between phases, every few
hundred nodes of the rules' walk) raise `Cancelled` once `stale()` is true, e.g. a newer version of the buffer
arrived; the half-done lint is dropped, and nothing it cached is wrong (caches hold only finished values).
"""

from __future__ import annotations

import ast
import re
import threading
from collections import OrderedDict
from contextlib import contextmanager
from typing import Callable, Iterator, Optional

import libcst as cst

from gpulint import bigfile, splice

CACHE_CHARACTERS = 8 * 1024 * 1024  # parsed pieces kept, by total text size (LRU)
STATEMENTS = 4096  # top-level statements whose renderings are kept
INDEXED_NODES = 400_000  # nodes of the top-level statements whose syntax-index walks are kept (a few files' worth)


class Cancelled(BaseException):
    """The lint was abandoned (a BaseException, so that no `except Exception` of a rule swallows it)."""


_local = threading.local()


@contextmanager
def cancellable(stale: Callable[[], bool]) -> Iterator[None]:
    outer = getattr(_local, "stale", None)
    _local.stale = stale
    try:
        yield
    finally:
        _local.stale = outer


def checkpoint() -> None:
    stale = getattr(_local, "stale", None)
    if stale is not None and stale():
        raise Cancelled()


class _Reuse:
    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.pieces: OrderedDict[str, cst.Module] = OrderedDict()
        self.characters = 0
        # By node (strong references, so bounded by count; a value may hold its own key):
        self.compiles = _Recent(STATEMENTS)  # pieces CPython's parser accepted
        self.led = _Recent(STATEMENTS)  # a piece's first statement -> (lead lines, it with them before it)
        self.code = _Recent(STATEMENTS)  # top-level statement -> (module shape, its code)
        self.positions = _Recent(STATEMENTS // 8)  # statement -> (module shape, (code, node positions))
        self.indexes = _Weighed(INDEXED_NODES)  # statement -> its syntax index walk (analysis/tree.py)
        self.trees = _Recent(STATEMENTS // 8)  # (lines above, piece) -> its `ast` tree (or _FAILED)
        self.by_node = _Recent(STATEMENTS)  # (kind, id of a node) -> (the node, a fact of it alone): `by_node`
        self.last: list[str] = []  # the pieces of the last parse, in order (where an edited piece comes from)
        # A piece spliced from another (gpulint.splice) shares nodes with it: piece text -> the id that their
        # family has in common (a piece absent here is a family of its own)
        self.family: dict[str, int] = {}


class _Recent(OrderedDict):
    """A dict that keeps its `size` most recently stored entries."""

    def __init__(self, size: int) -> None:
        super().__init__()
        self.size = size

    def __setitem__(self, key, value) -> None:
        super().__setitem__(key, value)
        self.move_to_end(key)
        while len(self) > self.size:
            self.popitem(last=False)


class _Weighed:
    """Values by node, the most recently stored kept while their total weight is under `limit`."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.weight = 0
        self.entries: OrderedDict = OrderedDict()  # key -> (value, weight)
        self.lock = threading.Lock()

    def get(self, key):
        with self.lock:
            found = self.entries.get(key)
            if found is None:
                return None
            self.entries.move_to_end(key)
            return found[0]

    def put(self, key, value, weight: int) -> None:
        with self.lock:
            old = self.entries.pop(key, None)
            if old is not None:
                self.weight -= old[1]
            self.entries[key] = (value, weight)
            self.weight += weight
            while self.weight > self.limit and len(self.entries) > 1:
                _, (_, dropped) = self.entries.popitem(last=False)
                self.weight -= dropped


_reuse: Optional[_Reuse] = None


def by_node(kind: object, node: cst.CSTNode):
    """What `keep_by_node(kind, node, value)` kept for this very node (None: nothing, or reuse is off). For facts
    that are a function of the node alone (nodes never change: an unchanged statement keeps its nodes)."""
    reuse = _reuse
    if reuse is None:
        return None
    with reuse.lock:
        found = reuse.by_node.get((kind, id(node)))
    return found[1] if found is not None and found[0] is node else None


def keep_by_node(kind: object, node: cst.CSTNode, value) -> None:
    reuse = _reuse
    if reuse is not None:
        with reuse.lock:
            reuse.by_node[(kind, id(node))] = (node, value)  # the node is kept alive: its id stays its own


def statement_indexes() -> Optional[_Weighed]:
    """Where the syntax index keeps each top-level statement's walk, when reuse is on (else None)."""
    return _reuse.indexes if _reuse is not None else None


def enable() -> None:
    """Keep parses and renderings for the next lints of the same text (the language server calls this)."""
    global _reuse
    if _reuse is None:
        _reuse = _Reuse()


def enabled() -> bool:
    return _reuse is not None


_START = re.compile(r"^(?:@|def |class |async def )", re.MULTILINE)
MAX_MERGES = 8  # pieces that do not parse alone, in a row, before the whole text is parsed instead


def pieces(source: str) -> list[str]:
    """`source` cut before each top-level `def`/`class` or the first decorator above it.

    A cut that is not between two statements (a `def` at column 0 inside a string, a decorator whose
    arguments span lines) leaves a piece that does not parse alone: `_each` merges it with the next."""
    cuts = [0]
    for match in _START.finditer(source):
        start = match.start()
        above = source.rfind("\n", 0, start - 1) + 1
        if start and not source.startswith("@", above):
            cuts.append(start)
    cuts.append(len(source))
    return [source[a:b] for a, b in zip(cuts, cuts[1:]) if b > a]


def _each(source: str, parse: Callable[[str], Optional[object]]) -> Optional[list]:
    """`parse` of each piece, a piece that does not parse taken together with the next; None when the end is
    reached with a piece that does not parse, or too many in a row do not (then the caller parses the whole)."""
    results, pending, failures = [], "", 0
    for part in pieces(source):
        checkpoint()
        text = pending + part
        result = parse(text)
        if result is None:
            pending, failures = text, failures + 1
            if failures > MAX_MERGES:
                return None
            continue
        results.append(result)
        pending, failures = "", 0
    return None if pending else results


class _RecentByText:
    """The last few trees parsed outside an editor, by their text: a training script is parsed once although
    its own lint, the model code it calls (analysis/forward.py reads the script's loops) and the project model
    (analysis/project.py) each need its tree. Big texts are never kept: memory stays bounded by the file being
    linted."""

    SIZE = 8
    MAX_CHARS = 400_000

    def __init__(self, size: int = SIZE, total_chars: Optional[int] = None) -> None:
        self.entries: OrderedDict[str, object] = OrderedDict()
        self.lock = threading.Lock()
        self.size = size
        self.total_chars = total_chars  # None: only `size` bounds what is kept
        self.chars = 0
        self.companions: dict[str, dict] = {}  # `companion`: by text, while its entry is kept

    def companion(self, text: str, tree) -> Optional[dict]:
        """A dict kept with the entry for `text` while that entry is `tree` itself (dropped with it); None
        when `tree` is not the kept entry (a big text, one evicted, or one parsed afresh)."""
        with self.lock:
            if self.entries.get(text) is not tree:
                return None
            found = self.companions.get(text)
            if found is None:
                found = self.companions[text] = {}
            return found

    def get(self, text: str):
        with self.lock:
            known = self.entries.get(text)
            if known is not None:
                self.entries.move_to_end(text)
            return known

    def put(self, text: str, tree) -> None:
        if tree is None or len(text) > self.MAX_CHARS:
            return
        with self.lock:
            if text not in self.entries:
                self.chars += len(text)
            elif self.entries[text] is not tree:
                self.companions.pop(text, None)  # it was another tree's
            self.entries[text] = tree
            self.entries.move_to_end(text)
            while len(self.entries) > self.size or (self.total_chars is not None and self.chars > self.total_chars
                                                    and len(self.entries) > 1):
                dropped = self.entries.popitem(last=False)[0]
                self.companions.pop(dropped, None)
                self.chars -= len(dropped)

    def clear(self) -> None:
        with self.lock:
            self.entries.clear()
            self.companions.clear()
            self.chars = 0


# LibCST modules (about 35 bytes per character of text): a worker that linted a training script finds its tree
# here when a model file asks which of its calls run every step (analysis/forward.py `_hot_calls`), and the
# other way round; with 8 kept, 5 of pytorch/examples' 54 LibCST parses in two workers were of a text the same
# worker had parsed before (issue 11, speed5).
_recent_modules = _RecentByText(size=64, total_chars=600_000)
# CPython `ast` trees: more of them, bounded by their texts' total size (a tree is about 40 times its text). In
# a batch run a worker's project model asks for the trees of the files it lints (summaries, call sites, the
# loops of callers) before or after their own lints; with 8 trees kept, half the files of pytorch/examples
# were parsed twice by the worker that linted them (issue 11, speed5). The project model holds the trees it
# parsed anyway, so most entries cost nothing more.
_recent_trees = _RecentByText(size=256, total_chars=1_000_000)


def module_companion(source: Optional[str], module: cst.Module) -> Optional[dict]:
    """In a batch run, a dict kept with `module` for as long as the recent modules keep it (it was parsed from
    `source` by `parse_module`), else None. Every `ModuleAnalysis` of that very module object (a training script's
    own lint and its caller analysis, analysis/forward.py `_hot_calls`) keeps there what it would compute alike:
    the syntax index, and the loop roles per file (analysis/__init__.py). An editor keeps nothing here: the
    project its answers depend on changes between lints of the same tree."""
    from gpulint import runtime

    if source is None or not runtime.batch_mode():
        return None
    return _recent_modules.companion(source, module)


def parse_module(source: str) -> cst.Module:
    """The module `cst.parse_module(source)` gives, reusing the pieces parsed before when reuse is on (and,
    when it is off, a module parsed from the same text a moment ago)."""
    reuse = _reuse
    if reuse is None:
        module = _recent_modules.get(source)
        if module is None:
            module = bigfile.parse_module(source)
            _recent_modules.put(source, module)
        return module  # type: ignore[return-value]
    seen: set[int] = set()
    texts: list[str] = []
    last = reuse.last

    def piece(text: str) -> Optional[cst.Module]:
        origin = last[len(texts)] if len(texts) < len(last) else None
        texts.append(text)
        module = _piece(reuse, text, origin)
        family = reuse.family.get(text, id(module))
        if module is not None and family in seen:
            # The same text twice in the buffer (a definition repeated), or a piece spliced from another one
            # of the buffer (gpulint.splice: they share nodes): a node may stand in one place of a module only
            # (parents, positions are by node), so the repeat gets nodes of its own.
            return cst.parse_module(text)
        seen.add(family)
        return module

    modules = _each(source, piece)
    reuse.last = texts
    if not modules:  # empty, or a piece that does not parse: the error (or the text) as a whole parse has it
        return bigfile.parse_module(source)
    if len(modules) == 1:
        return modules[0]
    first = modules[0]
    if not first.body or any(m.default_indent != first.default_indent or m.default_newline != first.default_newline
                             or m.encoding != first.encoding or not m.body for m in modules):
        return bigfile.parse_module(source)
    body: list[cst.BaseStatement] = list(first.body)
    carried: tuple = tuple(first.footer)
    for module in modules[1:]:
        statements = list(module.body)
        lead = (*carried, *module.header)
        if lead:
            statements[0] = _led(reuse, statements[0], lead)
        body.extend(statements)
        carried = tuple(module.footer)
    return first.with_changes(body=body, footer=carried, has_trailing_newline=modules[-1].has_trailing_newline)


def python_parse(source: str, filename: str, firsts: Optional[list[int]] = None,
                 held: Optional[Callable[[], Optional[ast.Module]]] = None) -> Optional[ast.Module]:
    """`bigfile.python_parse`: raise CPython's SyntaxError for `source`, skipping the pieces it accepted before.
    Returns the `ast` tree where `bigfile.python_parse` gives one; None when reusing pieces (no whole tree then:
    the prefilter lets such a buffer through). Outside an editor, `held` (if given) is asked for a tree of this
    very text that is already in memory (the project model's parse of the file: `project.held_python_tree`)
    before a text small enough for one whole tree is parsed again."""
    reuse = _reuse
    if reuse is None:
        tree = _recent_trees.get(source)
        if tree is None and held is not None and len(bigfile.pieces(source)) == 1:
            tree = held()
        if tree is None:
            tree = bigfile.python_parse(source, filename, firsts)
            _recent_trees.put(source, tree)
        return tree  # type: ignore[return-value]

    lines_above = [0]  # as `python_tree` counts them: the tree made here is the one it needs

    def accepted(text: str) -> Optional[bool]:
        if text not in reuse.compiles:
            if piece_tree(lines_above[0], text) is None:
                return None
            reuse.compiles[text] = True
        lines_above[0] += text.count("\n")
        return True

    if _each(source, accepted) is None:
        ast.parse(source, filename)  # the real error, at its real place
    return None


_COOKIE = re.compile(r"^[ \t\f]*#.*?coding[:=]", re.MULTILINE)


def python_tree(source: str) -> Optional[ast.Module]:
    """`ast.parse(source)` when reuse is on, from the pieces (`pieces`) parsed before where they start on the
    same line: each piece is parsed after as many newlines as there are lines above it, so that its nodes carry
    the line numbers of the whole text, and the bodies are joined. None when reuse is off, or where a whole
    parse could read the text otherwise (a piece that does not parse, a coding cookie, a BOM, `\\r` line ends,
    the `barry_as_FLUFL` future): the caller parses the whole text then."""
    reuse = _reuse
    if reuse is None or "\r" in source or source.startswith("\ufeff") or "barry_as_FLUFL" in source \
            or _COOKIE.search("\n".join(source.split("\n", 2)[:2])):
        return None
    trees: list[ast.Module] = []
    lines_above, pending, failures = 0, "", 0
    for part in pieces(source):
        text = pending + part
        tree = piece_tree(lines_above, text)
        if tree is None:  # not a whole statement (a cut inside a string): merged with the next, as `_each`
            pending, failures = text, failures + 1
            if failures > MAX_MERGES:
                return None
            continue
        trees.append(tree)
        lines_above += text.count("\n")
        pending, failures = "", 0
    if pending or not trees:
        return None
    return ast.Module(body=[stmt for tree in trees for stmt in tree.body], type_ignores=[])


def piece_tree(lines_above: int, text: str) -> Optional[ast.Module]:
    """CPython's tree of one piece, parsed after `lines_above` newlines (its nodes carry the lines of the whole
    text); None where it does not parse alone. Kept by (lines above, text) when reuse is on: the syntax check
    (`python_parse`), the buffer's tree (`python_tree`) and the comparison of code (`rule_reuse.semantics`, which
    reads no position) share one parse of an edited piece instead of three."""
    reuse = _reuse
    key = (lines_above, text)
    if reuse is not None:
        with reuse.lock:
            tree = reuse.trees.get(key)
        if tree is not None:
            return None if tree is _FAILED else tree
    try:
        tree = ast.parse("\n" * lines_above + text)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        tree = _FAILED
    if reuse is not None:
        with reuse.lock:
            reuse.trees[key] = tree
    return None if tree is _FAILED else tree


_FAILED = object()


def _piece(reuse: _Reuse, text: str, origin: Optional[str] = None) -> Optional[cst.Module]:
    """The tree of the piece `text`, kept by text; a new one is spliced from the tree of `origin` (the piece at
    its place in the previous parse) where only a few statements of a function changed (gpulint.splice)."""
    with reuse.lock:
        found = reuse.pieces.get(text)
        if found is not None:
            reuse.pieces.move_to_end(text)
            return None if found is _FAILED else found
        before = reuse.pieces.get(origin) if origin is not None else None
    module = None
    if before is not None and before is not _FAILED:
        module = splice.splice(origin, before, text)  # type: ignore[arg-type]
    if module is not None:
        reuse.family[text] = reuse.family.get(origin, id(before))  # type: ignore[arg-type]
    else:
        try:
            module = cst.parse_module(text)
        except (cst.ParserSyntaxError, RecursionError):
            module = _FAILED
    with reuse.lock:
        reuse.pieces[text] = module
        reuse.characters += len(text)
        while reuse.characters > CACHE_CHARACTERS and len(reuse.pieces) > 1:
            old, _ = reuse.pieces.popitem(last=False)
            reuse.characters -= len(old)
            reuse.family.pop(old, None)
    return None if module is _FAILED else module


def _led(reuse: _Reuse, statement: cst.BaseStatement, lead: tuple) -> cst.BaseStatement:
    """`statement` with `lead` (EmptyLine nodes) before its own leading lines; the same node for the same lead."""
    with reuse.lock:
        known = reuse.led.get(statement)
    # The same lead, or one equal to it: lines re-parsed with an edited piece before (its footer) but unchanged,
    # so the statement after an edited definition keeps its node (and what is kept by node: positions, index).
    if known is not None and len(known[0]) == len(lead) and all(
            old is new or old.deep_equals(new) for old, new in zip(known[0], lead)):
        return known[1]
    led = statement.with_changes(leading_lines=[*lead, *statement.leading_lines])
    with reuse.lock:
        reuse.led[statement] = (lead, led)
    return led


def code_for(module: cst.Module, statement: cst.CSTNode) -> str:
    """`module.code_for_node(statement)`, rendered once per statement node when reuse is on."""
    reuse = _reuse
    if reuse is None:
        return module.code_for_node(statement)
    shape = (module.default_indent, module.default_newline)
    known = reuse.code.get(statement)
    if known is None or known[0] != shape:
        known = reuse.code[statement] = (shape, module.code_for_node(statement))
    return known[1]


def positions(shape: tuple, statement: cst.CSTNode, compute: Callable[[], Optional[tuple]]) -> Optional[tuple]:
    """`compute()` (a statement's code and node positions when rendered alone in a module of `shape`), once per
    statement node when reuse is on."""
    reuse = _reuse
    if reuse is None:
        return compute()
    known = reuse.positions.get(statement)
    if known is None or known[0] != shape:
        value = compute()
        if value is None:
            return None
        known = reuse.positions[statement] = (shape, value)
    return known[1]


def recent_python_tree(raw: bytes) -> tuple[Optional[str], Optional[ast.Module]]:
    """(the text of `raw` where it is plain UTF-8 without a coding cookie, the `ast` tree parsed from that text a
    moment ago if any): the project model then takes the tree the file's own lint made (and the other way)."""
    if _reuse is not None or not plain_utf8(raw):
        return None, None
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        return None, None
    return text, _recent_trees.get(text)  # type: ignore[return-value]


def plain_utf8(raw: bytes) -> bool:
    """`raw` has neither a UTF-8 BOM nor a coding cookie: CPython's parser reads those bytes as the same text
    as their UTF-8 decoding, so a tree parsed from either is the tree of the other."""
    return not raw.startswith(b"\xef\xbb\xbf") and not _COOKIE.search(
        b"\n".join(raw.split(b"\n", 2)[:2]).decode("latin-1"))


def remember_python_tree(text: Optional[str], tree: Optional[ast.Module]) -> None:
    if text is not None and _reuse is None:
        _recent_trees.put(text, tree)
