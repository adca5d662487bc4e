"""Lint one source text: parse, analyse, run the enabled rules, suppress, and apply fixes if asked.

Everything here works on text in memory; reading and writing files is the caller's business (see files.py).
"""

from __future__ import annotations

import ast
import bisect
import functools
import re
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import NamedTuple, Optional

import libcst as cst
from libcst.metadata import MetadataWrapper, PositionProvider
from libcst._nodes.internal import CodegenState

from gpulint import chunked
from gpulint import fixes as fixing
from gpulint import incremental
from gpulint import prefilter
from gpulint import rule_gate
from gpulint import runtime
from gpulint import suppression
from gpulint.bigfile import first_lines
from gpulint.analysis import GPU_HINT, ModuleAnalysis
from gpulint.checker import run_rules
from gpulint.diagnostics import Diagnostic, FixMode, InternalError, Position, internal_error
from gpulint.rule import all_rules
from gpulint.textsearch import found_in
from gpulint.unit_positions import UnitPositions

MAX_FIX_PASSES = 10
SYNTAX_ERROR = "GPU001"


@dataclass
class LintResult:
    diagnostics: list[Diagnostic]
    source: str  # the text after fixes (the input when nothing was fixed)
    fixed_count: int = 0
    # One line each, naming the file: rules that crashed (`diagnostics.internal_error`) or could not follow the
    # code; reported, not raised.
    errors: list[str] = field(default_factory=list)
    # The syntax tree the diagnostics' fixes refer to (for edits computed later, as the language server does).
    module: Optional[cst.Module] = field(default=None, repr=False)

    def changed(self, original: str) -> bool:
        return self.source != original

    @property
    def crashed(self) -> bool:
        """A rule raised: the run must end with exit 2 even though the other findings print."""
        return any(isinstance(e, InternalError) for e in self.errors)


class _RuleFilter(NamedTuple):
    text: Optional[re.Pattern]  # Rule.needs_text
    conditions: Optional[frozenset[str]]  # Rule.reports_in (gpulint.prefilter)


@functools.lru_cache(maxsize=64)
def _prefilters(codes: frozenset[str]) -> Optional[tuple[_RuleFilter, ...]]:
    """What a file must hold for each enabled rule to report in it; None: some rule may report anywhere."""
    filters: list[_RuleFilter] = []
    for code, cls in all_rules().items():
        if code not in codes or getattr(cls, "pseudo", False):
            continue
        if cls.needs_text is None and cls.reports_in is None:
            return None
        wanted = _RuleFilter(cls.needs_text, None if cls.reports_in is None else frozenset(cls.reports_in))
        if wanted not in filters:
            filters.append(wanted)
    return tuple(filters)


def could_have_findings(source: str, codes: frozenset[str], tree: Optional[object] = None) -> bool:
    """False only if no enabled rule can report in `source`: then the LibCST parse is skipped.

    Sound by construction: each rule declares text its findings need (`Rule.needs_text`) and conditions of the
    code they need (`Rule.reports_in`, checked on CPython's `ast` tree: gpulint/prefilter.py); a rule that
    declares neither disables the shortcut. Syntax errors (GPU001) are found by `python_syntax_error` first.
    Without `tree` (a big file, parsed piece by piece) only the text is checked.
    """
    filters = _prefilters(codes)
    if filters is None:
        return True
    facts = None
    searched: dict[re.Pattern, bool] = {}  # rules share patterns (GPU_HINT): one search each
    try:
        for rule in filters:
            if rule.text is not None:
                if rule.text not in searched:
                    searched[rule.text] = found_in(rule.text, source)
                if not searched[rule.text]:
                    continue
            if rule.conditions is None or tree is None:
                return True
            if facts is None:
                facts = prefilter.FileFacts(source, tree)
            if any(facts.holds(c) for c in rule.conditions):
                return True
        return False
    finally:
        if facts is not None:
            facts.release()


def _device_free_codes(source: str, codes: frozenset[str], tree: Optional[object],
                       path: Optional[Path]) -> frozenset[str]:
    """`codes`, or only its rules that read modules naming no device (`Rule.reads_device_free_modules`) where
    the module names none and no other rule would have had it parsed: the other rules keep their files."""
    registry = all_rules()
    wide = frozenset(c for c in codes if getattr(registry.get(c), "reads_device_free_modules", False))
    if not wide or found_in(GPU_HINT, source):
        return codes
    others = codes - wide
    if could_have_findings(source, others, tree) or _model_run_every_step(path, tree):
        return codes
    return wide


def _model_run_every_step(path: Optional[Path], tree: Optional[object]) -> bool:
    """A file with no hot loop of its own may still hold per-step code: the `forward` of a model that a loop
    elsewhere in the project calls every step (analysis/forward.py)."""
    from gpulint.analysis.forward import may_run_every_step

    return may_run_every_step(path, tree)


# CPython's parser refuses nesting it cannot handle with these; LibCST's native parser may crash on the same
# input, so such a file is never handed to it.
_TOO_DEEP = ("too many nested", "too complex", "too many statically nested")


def python_syntax_error(source: str, filename: str) -> tuple[Optional[Diagnostic], bool]:
    """Parse with CPython's parser (10x faster than LibCST): (GPU001 diagnostic or None, LibCST may try it).

    CPython's message and position are the ones users know. A file the running Python rejects may still be
    valid for a newer Python, which LibCST may parse: the second value says whether to let it try.
    """
    return _python_parse(source, filename)[:2]


def _python_parse(source: str, filename: str, firsts: Optional[list[int]] = None,
                  path: Optional[Path] = None) -> tuple[Optional[Diagnostic], bool, Optional[object]]:
    """`python_syntax_error`, and the `ast` tree when there is one (a small file that parses); for a big file,
    `firsts` receives where its top-level statements start (`bigfile.python_parse`). For a file on disk
    (`path`), the tree the project model already holds for the same text is taken rather than parsed again."""
    from gpulint.analysis.project import held_python_tree

    held = functools.partial(held_python_tree, path, source) if path is not None else None
    try:
        tree = incremental.python_parse(source, filename or "<string>", firsts, held)
    except SyntaxError as exc:
        message = exc.msg or "invalid syntax"
        deep = any(t in message for t in _TOO_DEEP)
        return _gpu001(message, filename, exc.lineno or 1, exc.offset or 1), not deep, None
    except (RecursionError, MemoryError):
        return _gpu001("too deeply nested for Python's parser", filename, 1, 1), False, None
    except ValueError as exc:  # null bytes on older Pythons
        return _gpu001(str(exc), filename, 1, 1), False, None
    return None, True, tree


def _gpu001(message: str, filename: str, row: int, column: int) -> Diagnostic:
    where = Position(max(row, 1), max(column, 1))
    return Diagnostic(SYNTAX_ERROR, "syntax-error", f"SyntaxError: {message}", filename=filename,
                      location=where, end_location=where)


def syntax_error_diagnostic(exc: cst.ParserSyntaxError, filename: str) -> Diagnostic:
    message = exc.message.strip().splitlines()[0] if exc.message else "invalid syntax"
    return _gpu001(f"{message} (LibCST's parser)", filename, exc.raw_line, exc.raw_column + 1)


class RuleFailure(NamedTuple):
    """A rule that raised: which rule, at which node (None: not at a node), and why ("": too deeply nested)."""

    code: str
    node: Optional[cst.CSTNode]
    reason: str


def _run_rules(analysis: ModuleAnalysis, codes: frozenset[str],
               report_periodic: bool) -> tuple[list[Diagnostic], list[RuleFailure]]:
    """Every enabled rule over the module (gpulint.checker): (findings, failures of rules that raised)."""
    found, errors = run_rules(analysis, codes, report_periodic)
    failures = [RuleFailure(e.code, None, "") if e.reason.startswith("too deeply nested")
                else RuleFailure(e.code, e.node, e.reason) for e in errors]
    return found, failures


def _failure_messages(failures: list[RuleFailure], positions: dict, filename: str) -> list[str]:
    messages = []
    for f in failures:
        if not f.reason:
            messages.append(f"{filename}: too deeply nested for {f.code}'s analysis; {f.code} not checked")
            continue
        where = positions.get(f.node) if f.node is not None else None
        messages.append(internal_error(f.code, filename, where.start.line if where else None, f.reason))
    return messages


def _positions(analysis: ModuleAnalysis, source: str, nodes: list, firsts: Optional[list[int]] = None) -> dict:
    """Line/column of the given nodes. Positions are resolved only for files that have findings.

    LibCST's PositionProvider regenerates the whole module; here only the smallest statement that holds a node
    is (gpulint/unit_positions.py) or, where that is not possible, the top-level statement that holds it, each
    in a module of its own, then shifted by the lines before it in the source.
    """
    module = analysis.module
    offsets = _TopLevelOffsets(module, source, firsts)
    positions: dict = {}
    nodes_by_statement: dict = {}
    # In an editor the top-level statements' positions are kept between lints (incremental.positions), which
    # is cheaper on every re-lint than printing the units again.
    units = UnitPositions(analysis, source, firsts) if firsts is not None and not incremental.enabled() else None
    for node in nodes:
        if node is None:
            continue
        where = units.position(node) if units is not None else None
        if where is not None:  # from the smallest statement holding it (gpulint/unit_positions.py)
            positions[node] = where
        else:
            nodes_by_statement.setdefault(_top_level(analysis, node), []).append(node)
    for statement, wanted in nodes_by_statement.items():
        shifted = _statement_positions(module, statement, source, offsets)
        if shifted is None:  # not locatable on its own: resolve the whole module once
            return MetadataWrapper(module, unsafe_skip_copy=True).resolve(PositionProvider)
        resolved, lines_before = shifted
        for node in wanted:  # shift only the nodes asked for, not every node of the statement
            where = resolved.get(id(node))
            if where is not None:
                positions[node] = _range(where, lines_before)
    return positions


def _placed(d: Diagnostic, positions: dict, filename: str) -> Diagnostic:
    """A rule's finding with its file and position: a new value, the finding itself is left as it was."""
    where = positions.get(d.node) if d.node is not None else None
    if where is None:
        return replace(d, filename=filename)
    return replace(d, filename=filename, location=Position(where.start.line, where.start.column + 1),
                   end_location=Position(where.end.line, where.end.column + 1))


_NEWLINE = re.compile(r"\r\n|\r|\n")


def _top_level(analysis: ModuleAnalysis, node: cst.CSTNode) -> Optional[cst.CSTNode]:
    current, parent = node, analysis.parent(node)
    while parent is not None and type(parent) is not cst.Module:
        current, parent = parent, analysis.parent(parent)
    return current if parent is not None else None


class _TopLevelOffsets:
    """Where each top-level statement starts in the source, and the line it starts on: one pass for the file.

    (Searching the source for each statement's text, and counting the newlines before it, cost a pass over
    the whole file per statement with findings: quadratic in the file's size.)"""

    def __init__(self, module: cst.Module, source: str, firsts: Optional[list[int]] = None) -> None:
        self.module = module
        self.source = source
        self._starts: Optional[dict] = None
        self._line_starts: Optional[list[int]] = None
        self._firsts = firsts  # first line of each top-level statement of CPython's tree (decorators included)
        self._ast_index: Optional[dict] = None

    def start(self, statement: cst.CSTNode, code: Optional[str] = None) -> Optional[int]:
        """Where `statement` (whose code is `code`, when the caller rendered it already) starts in the source."""
        quick = self._from_lines(statement, code) if self._firsts is not None and self._starts is None else None
        if quick is not None:
            return quick
        if self._starts is None:
            self._starts = {}
            offset = sum(len(self.module.code_for_node(line)) for line in self.module.header)
            for body in self.module.body:
                self._starts[body] = offset
                offset += len(incremental.code_for(self.module, body))
        return self._starts.get(statement)

    def _from_lines(self, statement: cst.CSTNode, code: Optional[str] = None) -> Optional[int]:
        """Where `statement` starts, from the line CPython's tree gives its first token, less the blank and
        comment lines LibCST keeps in front of it: no printing of the statements before it. Checked against the
        statement's own code; None (then every statement before it is printed) when it is not found there."""
        if self._ast_index is None:
            self._ast_index, at = {}, 0
            for body in self.module.body:  # `a = 1; b = 2` is one LibCST line and two CPython statements
                self._ast_index[body] = at
                at += len(body.body) if type(body) is cst.SimpleStatementLine else 1
            if at != len(self._firsts):  # type: ignore[arg-type]
                self._firsts = None
                return None
        at = self._ast_index.get(statement)
        if at is None:
            return None
        line = self._firsts[at] - len(getattr(statement, "leading_lines", ()))  # type: ignore[index]
        if self._line_starts is None:
            self._line_starts = [m.end() for m in _NEWLINE.finditer(self.source)]
        if not 1 <= line <= len(self._line_starts) + 1:
            return None
        offset = self._line_starts[line - 2] if line > 1 else 0
        if code is None:
            code = incremental.code_for(self.module, statement)
        return offset if self.source.startswith(code, offset) else None

    def line(self, offset: int) -> int:
        """Lines (\\n, \\r\\n or \\r ended) before `offset`."""
        if self._line_starts is None:
            self._line_starts = [m.end() for m in _NEWLINE.finditer(self.source)]
        return bisect.bisect_right(self._line_starts, offset)


class _FixEdits:
    """Each finding's fix as text edits of the file, as `fixes.edits_for` computes them, without rebuilding and
    printing the whole module per finding (quadratic in a module dense with findings): only the top-level
    statements a fix changes are rebuilt, and spliced into the text at their offsets. Where a statement is not
    where the module's own printing puts it, the whole module is rebuilt as before."""

    def __init__(self, analysis: ModuleAnalysis, source: str) -> None:
        self.analysis = analysis
        self.source = source
        self.offsets = _TopLevelOffsets(analysis.module, source)
        self._exact: Optional[bool] = None

    def of(self, d: Diagnostic):
        if d.fix is None:
            return ()
        module = self.analysis.module
        spliced = self._spliced(d.fix) if self._prints_as_source() else None
        if spliced is None:
            return fixing.edits_for(d, module, self.source)
        return fixing.text_edits(self.source, spliced)

    def _prints_as_source(self) -> bool:
        if self._exact is None:
            self._exact = self.analysis.module.code == self.source
        return self._exact

    def _spliced(self, fix) -> Optional[str]:
        module = self.analysis.module
        statements = dict.fromkeys(_top_level(self.analysis, node) for node in fix.changes)
        if None in statements:
            return None
        pieces = []
        for statement in statements:
            start = self.offsets.start(statement)
            old = module.code_for_node(statement)
            if start is None or self.source[start:start + len(old)] != old:
                return None
            new = statement.visit(fixing.Replace(fix.changes))
            if isinstance(new, cst.FlattenSentinel):
                text = "".join(module.code_for_node(s) for s in new.nodes)
            elif isinstance(new, cst.RemovalSentinel):
                text = ""
            else:
                text = module.code_for_node(new)
            pieces.append((start, start + len(old), text))
        pieces.sort()
        out, at = [], 0
        for start, end, text in pieces:
            out += [self.source[at:start], text]
            at = end
        out.append(self.source[at:])
        return "".join(out)


def _statement_positions(module: cst.Module, statement: Optional[cst.CSTNode], source: str,
                         offsets: _TopLevelOffsets) -> Optional[tuple[dict, int]]:
    if statement is None:
        return None
    shape = (module.default_newline, module.default_indent)
    code, resolved = incremental.positions(shape, statement, lambda: _alone_positions(module, statement))
    offset = offsets.start(statement, code)
    if offset is None or source[offset:offset + len(code)] != code:
        return None  # not where the module's own code puts it (e.g. no final newline): resolve the module
    return resolved, offsets.line(offset)


def _alone_positions(module: cst.Module, statement: cst.CSTNode) -> tuple[str, dict]:
    """The statement's code and its nodes' positions, as rendering it in a module of its own gives them (its code
    is the statement's own code in `module`: same defaults, nothing around it): positions by node id, as
    (start line, start column, end line, end column)."""
    state = _PositionsState(module.default_indent, module.default_newline)
    statement._codegen(state)
    return "".join(state.tokens), state.ranges


_LINE_BREAK = re.compile(r"\r\n?|\n")


class _PositionsState(CodegenState):
    """LibCST's `PositionProvidingCodegenState`, the same positions at a third of its cost (it was the largest
    part of linting a module dense with findings): one rendering gives both the code and the positions, the
    positions are tuples by node id (no `CodeRange` per node, no `CSTNode.__hash__`), and the syntactic
    positions are recorded by a plain context manager instead of a generator (tests/test_big_module.py
    compares both on every fixture)."""

    def __init__(self, indent: str, newline: str) -> None:
        super().__init__(default_indent=indent, default_newline=newline)
        self.line, self.column = 1, 0
        self.starts: list[tuple[int, int]] = []
        self.ranges: dict[int, tuple[int, int, int, int]] = {}

    def add_indent_tokens(self) -> None:
        for token in self.indent_tokens:
            self.add_token(token)

    def add_token(self, value: str) -> None:
        self.tokens.append(value)
        if "\n" in value or "\r" in value:
            segments = _LINE_BREAK.split(value)
            self.line += len(segments) - 1
            self.column = len(segments[-1])
        else:
            self.column += len(value)

    def before_codegen(self, node: cst.CSTNode) -> None:
        self.starts.append((self.line, self.column))

    def after_codegen(self, node: cst.CSTNode) -> None:
        line, column = self.starts.pop()
        if id(node) not in self.ranges:  # a syntactic position recorded inside it stands
            self.ranges[id(node)] = (line, column, self.line, self.column)

    def record_syntactic_position(self, node: cst.CSTNode, *, start_node: Optional[cst.CSTNode] = None,
                                  end_node: Optional[cst.CSTNode] = None) -> "_Syntactic":
        return _Syntactic(self, node, start_node, end_node)


class _Syntactic:
    """What `record_syntactic_position` records: the node's extent without its surrounding whitespace, or
    hoisted from the child nodes named."""

    __slots__ = ("state", "node", "start_node", "end_node", "start")

    def __init__(self, state: _PositionsState, node, start_node, end_node) -> None:
        self.state, self.node, self.start_node, self.end_node = state, node, start_node, end_node

    def __enter__(self) -> None:
        self.start = (self.state.line, self.state.column)

    def __exit__(self, *exc) -> None:
        ranges = self.state.ranges
        start = ranges[id(self.start_node)][:2] if self.start_node is not None else self.start
        end = ranges[id(self.end_node)][2:] if self.end_node is not None else (self.state.line, self.state.column)
        ranges[id(self.node)] = (*start, *end)


def node_positions(module: cst.Module) -> dict:
    """`MetadataWrapper(module, unsafe_skip_copy=True).resolve(PositionProvider)`, without the wrapper's visit of
    every node (which rebuilds each one): the provider's own codegen pass alone, a third of the cost
    (tests/test_incremental.py compares both)."""
    provider = PositionProvider()
    provider._gen_impl(module)
    return provider._computed  # type: ignore[return-value]


def _range(where: tuple[int, int, int, int], lines: int):
    """A `CodeRange` from `_PositionsState`'s tuple, `lines` further down."""
    from libcst.metadata import CodePosition, CodeRange

    return CodeRange(CodePosition(where[0] + lines, where[1]), CodePosition(where[2] + lines, where[3]))


def _analyse(source: str, filename: str, codes: frozenset[str], report_periodic: bool, errors: list[str],
             path: Optional[Path] = None, firsts: Optional[list[int]] = None, python_accepted: bool = False,
             gate: Optional[rule_gate.Gate] = None):
    # big files piece by piece: memory bounded by the tree (in an editor, unchanged pieces are reused)
    with runtime.trusted_parse(python_accepted):  # a batch run: LibCST's node checks are skipped (runtime.py)
        module = incremental.parse_module(source)
    incremental.checkpoint()
    analysis = ModuleAnalysis(module, source, path)
    if gate is not None:  # no hot loop: the rules that report only around one are not run (rule_gate.py)
        codes = gate.codes(analysis, codes)
    found, failures = _run_rules(analysis, codes, report_periodic)
    incremental.checkpoint()
    diagnostics: list[Diagnostic] = []
    if found or failures:
        positions = _positions(analysis, source, [d.node for d in found] + [f.node for f in failures], firsts)
        diagnostics = [_placed(d, positions, filename) for d in found]
        errors.extend(_failure_messages(failures, positions, filename))
    if diagnostics:
        sup = suppression.parse(source)
        diagnostics = [d for d in diagnostics
                       if not sup.suppresses(d.code, (d.location.row, d.end_location.row))]
    diagnostics.sort(key=Diagnostic.sort_key)
    return analysis, diagnostics



def lint_source(source: str, filename: str, codes: frozenset[str], *, report_periodic: bool = False,
                fix: FixMode = FixMode.NONE, want_edits: bool = False, prefilter: bool = True,
                path: Optional[Path] = None) -> LintResult:
    """Lint `source`; with `fix`, apply fixes pass by pass until none is left (Ruff's loop).

    `prefilter=False` parses every file (the property tests compare both ways).
    """
    errors: list[str] = []
    big_file_firsts: list[int] = []
    syntax_error, libcst_may_try, tree = _python_parse(source, filename, big_file_firsts, path)
    if syntax_error is not None and ("async" in source or "print" in source or "except" in source):
        # `x.cuda(async=True)`, `print loss.data[0]`: read as PyTorch 0.3 and Python 2 meant it
        from gpulint import legacy_syntax

        legacy = legacy_syntax.lint(source, filename, codes, syntax_error, report_periodic=report_periodic,
                                    fix=fix, want_edits=want_edits, prefilter=prefilter, path=path)
        if legacy is not None:
            return legacy
    if syntax_error is not None and not libcst_may_try:
        return LintResult([syntax_error] if SYNTAX_ERROR in codes else [], source)
    if syntax_error is None and prefilter and not could_have_findings(source, codes, tree) \
            and not _model_run_every_step(path, tree):
        return LintResult([], source)
    if syntax_error is None and prefilter:
        codes = _device_free_codes(source, codes, tree, path)
    # not needed past the prefilter: do not hold it through the analysis, only where its statements start
    if tree is None and syntax_error is None and not big_file_firsts:  # an editor's buffer: from kept pieces
        tree = incremental.python_tree(source)
    firsts = first_lines(tree) if isinstance(tree, ast.Module) else big_file_firsts or None
    if fix is FixMode.NONE and not want_edits and syntax_error is None and len(source) > chunked.THRESHOLD \
            and not incremental.enabled():
        # a big module in chunks, each tree dropped before the next: memory bounded (gpulint/chunked.py)
        pieces = _lint_chunked(source, filename, codes, report_periodic, path, tree if prefilter else False)
        if pieces is not None:
            return pieces
    gate = rule_gate.Gate(path, tree) if prefilter else None
    del tree
    try:
        analysis, diagnostics = _analyse(source, filename, codes, report_periodic, errors, path, firsts,
                                         python_accepted=syntax_error is None, gate=gate)
    except cst.ParserSyntaxError as exc:
        found = syntax_error or syntax_error_diagnostic(exc, filename)
        return LintResult([found] if SYNTAX_ERROR in codes else [], source)
    except cst.CSTValidationError as exc:
        # LibCST's parser (newer Unicode tables) accepted what its own node checks then refuse, e.g. a name
        # made of a code point Python does not know yet: CPython's verdict stands.
        found = syntax_error or _gpu001(f"LibCST cannot represent this file ({exc})", filename, 1, 1)
        return LintResult([found] if SYNTAX_ERROR in codes else [], source)
    except RecursionError:
        return LintResult([], source, errors=[f"{filename}: too deeply nested for gpulint's analysis; not checked"])

    fixed_count = 0
    current = source
    for _ in range(MAX_FIX_PASSES if fix is not FixMode.NONE else 0):
        candidates = [f for f in (d.fix.allowed(fix) for d in diagnostics if d.fix is not None) if f is not None]
        if not candidates:
            break
        chosen = fixing.non_overlapping(candidates, analysis.index.is_ancestor_or_self)
        new_text = fixing.apply(analysis.module, chosen).code
        if new_text == current:
            break
        _release(analysis)  # this pass's analysis is done with: a new one is made for the fixed text
        try:
            analysis, diagnostics = _analyse(new_text, filename, codes, report_periodic, errors, path)
            if syntax_error is None:  # the input compiled: the output must too
                compile(new_text, filename or "<fixed>", "exec", dont_inherit=True)
        except (cst.ParserSyntaxError, SyntaxError, ValueError, RecursionError) as exc:
            # A fix that breaks the code is a bug of ours: keep the last good text and say so.
            errors.append(f"{filename}: a fix produced invalid code ({exc.__class__.__name__}); it was not applied")
            analysis, diagnostics = _analyse(current, filename, codes, report_periodic, errors, path)
            break
        fixed_count += len(chosen)
        current = new_text

    if want_edits:
        edits = _FixEdits(analysis, current)
        diagnostics = [replace(d, edits=edits.of(d)) for d in diagnostics]
    _release(analysis)
    return LintResult(diagnostics, current, fixed_count, errors, module=analysis.module)


def _lint_chunked(source: str, filename: str, codes: frozenset[str], report_periodic: bool, path: Optional[Path],
                  tree) -> Optional[LintResult]:
    """`lint_source` without fixes, one chunk of the module at a time (gpulint/chunked.py); None: not cut."""
    from gpulint.bigfile import parse_module

    plan = chunked.plan(source, filename)
    if plan is None:
        return None

    def lint_one(index: int):
        """One chunk's findings (placed in the file, portable) and error lines; None: LibCST refused it."""
        chunk = chunked.chunk_text(source, plan, index)
        try:
            with runtime.trusted_parse(True):
                module = parse_module(chunk.text)
        except (cst.ParserSyntaxError, cst.CSTValidationError, RecursionError):
            return None
        analysis = ModuleAnalysis(module, chunk.text, path)
        analysis.source = source  # the module-wide text facts and the project model's view: the whole file's
        del module
        gate = rule_gate.Gate(path, tree) if tree is not False else None
        codes_here = gate.codes(analysis, codes) if gate is not None else codes
        rules_found, failures = _run_rules(analysis, codes_here, report_periodic)
        kept: list[Diagnostic] = []
        messages: list[str] = []
        if rules_found or failures:
            positions = _positions_in(analysis, chunk.text,
                                      [d.node for d in rules_found] + [f.node for f in failures], chunk.firsts)
            for d in rules_found:
                d = _placed(d, positions, filename).portable()
                if d.location is not None:
                    d = replace(d, location=Position(chunk.line(d.location.row), d.location.column),
                                end_location=Position(chunk.line(d.end_location.row), d.end_location.column))
                if d.location is None or d.location.row in chunk.reports:
                    kept.append(d)
            for f in failures:
                where = positions.get(f.node) if f.node is not None else None
                row = chunk.line(where.start.line) if where is not None else None
                if row is not None and row not in chunk.reports:
                    continue
                messages.append(internal_error(f.code, filename, row, f.reason) if f.reason else
                                _failure_messages([f], {}, filename)[0])
        analysis.release()
        del analysis, chunk
        return kept, messages

    found: list[Diagnostic] = []
    errors: list[str] = []
    # the chunks are independent: a second process lints every other one (chunked.map_chunks)
    for result in chunked.map_chunks(lint_one, len(plan.chunks)):
        if result is None:
            return None
        found.extend(result[0])
        errors.extend(m for m in result[1] if m not in errors)
    if found:
        sup = suppression.parse(source)
        found = [d for d in found if not sup.suppresses(d.code, (d.location.row, d.end_location.row))]
    found.sort(key=Diagnostic.sort_key)
    return LintResult(found, source, 0, errors)


def _positions_in(analysis: ModuleAnalysis, text: str, nodes: list, firsts: list) -> dict:
    """`_positions` of a chunk's nodes: its text, not the whole file's, places them (line for line the same)."""
    whole, analysis.source = analysis.source, text
    try:
        return _positions(analysis, text, nodes, firsts)
    finally:
        analysis.source = whole


def _release(analysis: ModuleAnalysis) -> None:
    """In a batch run, the analysis of a lint that is done is released (`ModuleAnalysis.release`): its tree is
    then freed by reference counting rather than by a garbage collection, which a batch run makes rare
    (gpulint/runtime.py). An editor keeps its analyses' facts for the next lint (gpulint/incremental.py)."""
    if runtime.batch_mode() and not incremental.enabled():
        analysis.release()


def fix_source(source: str, *, unsafe: bool = False, filename: str = "<string>") -> str:
    """The fixed text of `source` with the default rules enabled: what `gpulint check --fix` would write."""
    codes = frozenset(code for code, rule in all_rules().items() if not rule.preview)
    mode = FixMode.UNSAFE if unsafe else FixMode.SAFE
    return lint_source(source, filename, codes, fix=mode).source
