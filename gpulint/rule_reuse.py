"""An editor's re-lint after an edit that changed no code (a comment typed, blank lines, a re-wrapped call), or
only added a number bound to an unused name in a function (`lr3 = 0.13` as it is typed): the rules visit only
the nodes that are new (the statements parsed again: gpulint.incremental, gpulint.splice), and the findings made
at every other node are those of the previous lint of the buffer.

This is exact, not a heuristic. The rules are node visitors with no state of their own between nodes (their
findings are made from the node visited and the module's facts), so a finding is the same whenever the facts
are. When the new text's Python syntax tree is the previous one's (`semantics`: CPython's `ast`, no positions,
per top-level piece), or differs by inert statements (`_inert`), every fact is the same, except for what is read
from the raw text or from line numbers:

- raw-text facts (`targets_gpu`, a DDP module's `no_sync`, ...): `text_signature` evaluates each of them on
  both texts, and any difference means no reuse (tests/test_rule_reuse.py fails when a new reader of
  `analysis.source` appears that the signature does not list);
- line numbers (a helper's line, in a finding's related locations): such findings are computed again;
- the project: the other modules consulted (their digests, the import resolution) must be as they were.

A node's findings are reused only if it is the very node of the previous lint (kept alive by the record, so
its id is its own), and only if the findings' nodes and fix targets are nodes of the new module; positions are
computed afterwards by the runner as for any finding. The module node and the blocks around an edit are new:
rules that look at them run again. A lint that is abandoned or in which a rule failed records nothing.
"""

from __future__ import annotations

import ast
import functools
import hashlib
import re
import sys
import threading
from collections import Counter, OrderedDict
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Optional

from gpulint import ast_walk
from gpulint import incremental
from gpulint.textsearch import found_in

RECORDS = 8  # buffers whose last lint is remembered (each keeps its module alive)
DUMPS = 4096  # pieces whose syntax-tree digest is kept
TREES = 16  # pieces whose syntax tree is kept


@dataclass
class _Record:
    key: tuple  # (codes, report_periodic, text signature)
    semantic: tuple  # `semantics` of the text: (piece text, digest) per piece
    source: str
    module_nodes: list  # the nodes of the module linted, in order (kept alive: their ids stay theirs)
    found: dict  # id of a node -> {rule code: [the findings the rules made visiting it]}
    consulted: object  # gpulint.analysis.project.Consulted: every module the findings were computed from
    digests: dict  # consulted module (not the buffer itself) -> its digest then
    resolver: object  # the project's import resolution then (a new one when a module was created or deleted)
    nodes: Optional[set] = None  # ids of the module's nodes, when first needed


_records: OrderedDict = OrderedDict()
_dumps: OrderedDict = OrderedDict()
_trees: OrderedDict = OrderedDict()  # the pieces parsed last, by text
_lock = threading.Lock()


def semantics(source: str) -> Optional[tuple]:
    """(text, digest) per top-level piece (gpulint.incremental.pieces), the digest of CPython's tree without
    positions, comments or layout: equal for two texts exactly when their code is; None where a piece does not
    parse alone."""
    digests = []
    pending = ""
    lines_above = 0  # as incremental.python_tree counts them: its parse of a piece serves here too
    for part in incremental.pieces(source):
        incremental.checkpoint()
        text = pending + part
        with _lock:
            digest = _dumps.get(text)
        if digest is None:
            tree = _tree(text, lines_above)  # kept: compared with the next version's piece (`_same_code`)
            if tree is None:
                pending = text
                continue
            digest = hashlib.blake2b(ast.dump(tree).encode(), digest_size=16).digest()
            with _lock:
                _dumps[text] = digest
                while len(_dumps) > DUMPS:
                    _dumps.popitem(last=False)
        pending = ""
        lines_above += text.count("\n")
        digests.append((text, digest))
    return None if pending else tuple(digests)


def _raw_text_facts() -> list[Callable[[str], object]]:
    """Every fact a rule or the analysis reads from the raw text (comments included), as a function of it."""
    from gpulint.analysis import GPU_HINT
    from gpulint.analysis.precision import _MIXED
    from gpulint.analysis.tensor_uses import _HINT_BUT_TO
    from gpulint.analysis.training import (_CHOSEN_PRECISION, _DTYPE_CHOICE, _FLOAT_DTYPE_ARGUMENT, _FREEZES,
                                           _REDUCED_PRECISION)
    from gpulint.rule import all_rules

    rules = all_rules()  # the rule loader imports the rules' modules: their patterns are read from there
    ddp = sys.modules[rules["GPU415"].__module__]  # ddp-accumulation-without-no-sync
    compiled = sys.modules[rules["GPU501"].__module__]  # model-not-compiled
    cudnn = sys.modules[rules["GPU413"].__module__]  # cudnn-benchmark-unset
    evaluating = sys.modules[rules["GPU421"].__module__]  # eval-without-no-grad
    patterns = (GPU_HINT, _MIXED, _REDUCED_PRECISION, _CHOSEN_PRECISION, _DTYPE_CHOICE, _FLOAT_DTYPE_ARGUMENT, _FREEZES,
                ddp._HANDLED,
                compiled._COMPILES, cudnn._ONE_SHAPE, evaluating._FROZEN, _HINT_BUT_TO)  # tensor_uses: a GPU named other than by `.to(`
    words = ("cuda", "DistributedDataParallel", "capture_scalar_outputs", "channels_last",
             "ToDevice", "PrefetchLoader",  # these two: analysis/pyg_loaders.py
             "isinstance(",  # analysis/isinstance_narrowing.py's shortcut
             "reset_parameters()")  # GPU408's text guard (rules/throughput/constructed_in_loop.py)
    return [functools.partial(found_in, p) for p in patterns] + [_contains(word) for word in words]


def _contains(word: str) -> Callable[[str], bool]:
    return lambda text: word in text


_facts: list = []


def text_signature(source: str) -> tuple:
    if not _facts:
        _facts.extend(_raw_text_facts())
    return tuple(bool(fact(source)) for fact in _facts)


def run(run) -> None:
    """Visit with `run` (a checker.Run) the nodes of the module, reusing the findings of the top-level
    statements that the previous lint of the same buffer visited, where its code is the same (module doc)."""
    from gpulint.analysis.project import project_for, recording

    analysis = run.analysis
    source, index = analysis.source, analysis.index
    semantic = semantics(source) if source is not None else None
    key = (run.codes, run.report_periodic, text_signature(source) if source is not None else None)
    name = str(analysis.path)
    project = project_for(Path(analysis.path)) if analysis.path is not None else None
    with _lock:
        previous = _records.get(name)  # replaced by this lint's record (kept if this lint is abandoned)
    if previous is not None and (semantic is None or previous.key != key or not _project_as_before(
            previous, project) or not _same_code(previous.semantic, previous.source, semantic, source)):
        previous = None
    found: dict = {}  # id of a node -> {rule code: the findings the rules made visiting it}
    with recording() as consulted:
        if previous is not None:  # what the reused findings were computed from still counts for this lint
            consulted.update(previous.consulted)
            consulted.text.update(previous.consulted.text)
            for path, names in previous.consulted.summaries.items():
                consulted.summaries.setdefault(path, set()).update(names)
            _visit_new(run, index, previous, found)
        else:
            run.visit(index.nodes, found)
    if run.errors or semantic is None:
        with _lock:
            _records.pop(name, None)
        return
    own = Path(analysis.path).resolve() if analysis.path is not None else None
    digests = {p: _digest(project, p) for p in consulted if p != own} if project is not None else {}
    with _lock:
        _records[name] = _Record(key, semantic, source, index.nodes, found, consulted, digests,
                                 project.resolver if project is not None else None)
        _records.move_to_end(name)
        while len(_records) > RECORDS:
            _records.popitem(last=False)


def _visit_new(run, index, previous: _Record, found: dict) -> None:
    """Visit the nodes that are not the previous lint's (an edited statement and the blocks around it); take the
    findings made at the others as they were."""
    old = previous.nodes
    if old is None:
        old = previous.nodes = {id(n) for n in previous.module_nodes}
    nodes = index.nodes
    pending: list = []
    for node in nodes:
        if id(node) not in old:
            pending.append(node)
            continue
        kept = previous.found.get(id(node))
        if kept is None:
            continue
        if not _portable(kept, index):
            pending.append(node)
            continue
        if pending:
            run.visit(pending, found)
            pending = []
        run.add(kept)
        found[id(node)] = kept
    if pending:
        run.visit(pending, found)


def _same_code(old: tuple, old_source: str, new: tuple, new_source: str) -> bool:
    """The two texts' code is the same, or differs only by inert statements (`_inert`) in functions."""
    if len(old) != len(new):
        return False
    for (old_text, old_digest), (new_text, new_digest) in zip(old, new):
        if old_digest != new_digest and not _equal_but_inert(_tree(old_text), _tree(new_text), old_source,
                                                             new_source):
            return False
    return True


def _tree(text: str, lines_above: int = 0) -> Optional[ast.Module]:
    """The piece's tree, kept by its text. Positions are never read here (`ast.dump` leaves them out, and so
    does `_equal_but_inert`), so the tree the syntax check parsed after `lines_above` newlines
    (incremental.piece_tree) serves as it is."""
    with _lock:
        tree = _trees.get(text)
    if tree is None:
        tree = incremental.piece_tree(lines_above, text)
        if tree is None:
            return None
        _keep_tree(text, tree)
    return tree


def _keep_tree(text: str, tree: ast.Module) -> None:
    with _lock:
        _trees[text] = tree
        while len(_trees) > TREES:
            _trees.popitem(last=False)


_BLOCKS = frozenset(("body", "orelse", "finalbody"))
_FUNCTIONS = (ast.FunctionDef, ast.AsyncFunctionDef)


def _equal_but_inert(old: Optional[ast.AST], new: Optional[ast.AST], old_source: str, new_source: str) -> bool:
    """The two trees are equal (as `ast.dump` compares them) once the inert statements of the blocks of
    functions (not of classes inside them) are left out of both."""
    if old is None or new is None:
        return False
    if isinstance(old, ast.Module) and isinstance(new, ast.Module) and _after_a_definition(old) \
            and _after_a_definition(new):
        # A piece that starts with a definition lies after the module's leading imports: an inert statement at
        # its top level (`lr3 = 0.13` typed between two functions or at the end of the file) moves no insertion
        # point (the last leading import, the docstring) and binds a name nothing reads.
        old = ast.Module(body=[s for s in old.body if not _inert(s, old_source)], type_ignores=old.type_ignores)
        new = ast.Module(body=[s for s in new.body if not _inert(s, new_source)], type_ignores=new.type_ignores)
    work: list = [(old, new, False)]
    while work:
        a, b, in_function = work.pop()
        if type(a) is not type(b):
            return False
        if isinstance(a, ast.AST):
            inner = isinstance(a, _FUNCTIONS) or (in_function and not isinstance(a, ast.ClassDef))
            for field in a._fields:
                x, y = getattr(a, field, None), getattr(b, field, None)
                if inner and field in _BLOCKS and isinstance(x, list) and isinstance(y, list):
                    x = [stmt for stmt in x if not _inert(stmt, old_source)]
                    y = [stmt for stmt in y if not _inert(stmt, new_source)]
                work.append((x, y, inner))
        elif isinstance(a, list):
            if len(a) != len(b):
                return False
            work.extend((x, y, in_function) for x, y in zip(a, b))
        elif a != b:
            return False
    return True


def _after_a_definition(piece: ast.Module) -> bool:
    return bool(piece.body) and isinstance(piece.body[0], (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))


def _inert(stmt: ast.stmt, source: str) -> bool:
    """In a function's body, an assignment of a number (or an arithmetic of numbers) to a name that `source`
    mentions nowhere else: `lr3 = 0.13` as it is being typed. Such a statement binds a local nothing reads and
    calls nothing; no fact about another statement can depend on it: no scan of the module looks for a name or
    a number assigned to a name (module doc; tests/test_rule_reuse.py compares with fresh lints)."""
    if not (isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and isinstance(stmt.targets[0], ast.Name)):
        return False
    if not all(isinstance(n, (ast.Constant, ast.UnaryOp, ast.BinOp, ast.operator, ast.unaryop, ast.Load))
               for n in ast_walk.walk(stmt.value)):
        return False
    if not all(isinstance(n.value, (int, float, complex)) and not isinstance(n.value, bool)
               for n in ast_walk.walk(stmt.value) if isinstance(n, ast.Constant)):
        return False
    return _words(source)[stmt.targets[0].id] == 1  # mentioned once in the text: code, strings or comments


_WORD = re.compile(r"\w+")
_word_counts: list = []  # [(source, counts)] of the last two texts: the previous and the new version


def _words(source: str) -> Counter:
    """How often each word occurs in `source` (one pass per text, not one search per statement)."""
    for text, counts in _word_counts:
        if text is source:
            return counts
    counts = Counter(_WORD.findall(source))
    _word_counts.append((source, counts))
    del _word_counts[:-2]
    return counts


def _digest(project, path: Path) -> Optional[str]:
    info = project.module(path)
    return None if info is None else info.digest


def _project_as_before(previous: _Record, project) -> bool:
    if project is None:
        return previous.resolver is None
    return project.resolver is previous.resolver and all(
        _digest(project, p) == digest for p, digest in previous.digests.items())


def _portable(kept: dict, index) -> bool:
    """Findings whose nodes are all in the new module, and that name no line (related locations)."""
    parent = index.parent
    for found in kept.values():
        for d in found:
            if d.related or (d.node is not None and d.node not in parent):
                return False
            if d.fix is not None and any(node not in parent for node in d.fix.changes):
                return False
    return True
