"""Lint one source text: parse, analyse, run the enabled rules, suppress, and apply fixes if asked.

Everything here works on text in memory; reading and writing files is the caller's business (see files.py).
"""

from __future__ import annotations

import ast
import functools
import re
from dataclasses import dataclass, field
from typing import Optional

import libcst as cst
from libcst.metadata import MetadataWrapper, PositionProvider

from gpulint import fixes as fixing
from gpulint import suppression
from gpulint.analysis import ModuleAnalysis
from gpulint.diagnostics import Diagnostic, FixMode, Position
from gpulint.checker import run_rules
from gpulint.rule import all_rules

MAX_FIX_PASSES = 10
SYNTAX_ERROR = "GPU001"


@dataclass
class LintResult:
    diagnostics: list[Diagnostic]
    source: str  # the text after fixes (the input when nothing was fixed)
    fixed_count: int = 0
    errors: list[str] = field(default_factory=list)  # internal errors of single rules, reported, not raised
    # The syntax tree the diagnostics' fixes refer to (for edits computed later, as the language server does).
    module: Optional[cst.Module] = field(default=None, repr=False)

    def changed(self, original: str) -> bool:
        return self.source != original


@functools.lru_cache(maxsize=64)
def _prefilters(codes: frozenset[str]) -> Optional[tuple[re.Pattern, ...]]:
    """The patterns one of which a file must match for an enabled rule to report in it; None: no shortcut."""
    patterns: list[re.Pattern] = []
    for code, cls in all_rules().items():
        if code not in codes or getattr(cls, "pseudo", False):
            continue
        if cls.needs_text is None:
            return None
        if cls.needs_text not in patterns:
            patterns.append(cls.needs_text)
    return tuple(patterns)


def could_have_findings(source: str, codes: frozenset[str]) -> bool:
    """False only if no enabled rule can report in `source`: then the LibCST parse is skipped.

    Sound by construction: each rule declares text its findings need (`Rule.needs_text`), and a rule that
    declares none disables the shortcut. Syntax errors (GPU001) are found by `python_syntax_error` first.
    """
    patterns = _prefilters(codes)
    return patterns is None or any(p.search(source) for p in patterns)


# CPython's parser refuses nesting it cannot handle with these; LibCST's native parser may crash on the same
# input, so such a file is never handed to it.
_TOO_DEEP = ("too many nested", "too complex", "too many statically nested")


def python_syntax_error(source: str, filename: str) -> tuple[Optional[Diagnostic], bool]:
    """Parse with CPython's parser (10x faster than LibCST): (GPU001 diagnostic or None, LibCST may try it).

    CPython's message and position are the ones users know. A file the running Python rejects may still be
    valid for a newer Python, which LibCST may parse: the second value says whether to let it try.
    """
    try:
        ast.parse(source, filename or "<string>")
    except SyntaxError as exc:
        message = exc.msg or "invalid syntax"
        deep = any(t in message for t in _TOO_DEEP)
        return _gpu001(message, filename, exc.lineno or 1, exc.offset or 1), not deep
    except (RecursionError, MemoryError):
        return _gpu001("too deeply nested for Python's parser", filename, 1, 1), False
    except ValueError as exc:  # null bytes on older Pythons
        return _gpu001(str(exc), filename, 1, 1), False
    return None, True


def _gpu001(message: str, filename: str, row: int, column: int) -> Diagnostic:
    where = Position(max(row, 1), max(column, 1))
    return Diagnostic(SYNTAX_ERROR, "syntax-error", f"SyntaxError: {message}", filename=filename,
                      location=where, end_location=where)


def syntax_error_diagnostic(exc: cst.ParserSyntaxError, filename: str) -> Diagnostic:
    message = exc.message.strip().splitlines()[0] if exc.message else "invalid syntax"
    return _gpu001(f"{message} (LibCST's parser)", filename, exc.raw_line, exc.raw_column + 1)


def _run_rules(analysis: ModuleAnalysis, codes: frozenset[str], report_periodic: bool,
               errors: list[str]) -> list[Diagnostic]:
    found, failures = run_rules(analysis, codes, report_periodic)
    for failure in failures:
        if failure.reason.startswith("too deeply nested"):
            errors.append(f"too deeply nested for {failure.code}'s analysis; {failure.code} not checked")
        else:
            errors.append(f"internal error in {failure.code} ({failure.reason}); "
                          f"please report it with the file that triggered it")
    return found


def _place(diagnostics: list[Diagnostic], analysis: ModuleAnalysis, source: str, filename: str) -> None:
    """Attach line/column to reported nodes. Positions are resolved only for files that have findings.

    LibCST's PositionProvider regenerates the whole module; here only the top-level statements that hold a
    finding are, each in a module of its own, then shifted by the lines before it in the source.
    """
    if not diagnostics:
        return
    by_statement: dict = {}
    for d in diagnostics:
        d.filename = filename
        if d.node is not None:
            by_statement.setdefault(_top_level(analysis, d.node), []).append(d)
    module = analysis.module
    positions: dict = {}
    for statement, found in by_statement.items():
        shifted = _statement_positions(module, statement, source)
        if shifted is None:  # not locatable on its own: resolve the whole module once
            positions = MetadataWrapper(module, unsafe_skip_copy=True).resolve(PositionProvider)
            break
        positions.update(shifted)
    for d in diagnostics:
        where = positions.get(d.node) if d.node is not None else None
        if where is not None:
            d.location = Position(where.start.line, where.start.column + 1)
            d.end_location = Position(where.end.line, where.end.column + 1)


_NEWLINE = re.compile(r"\r\n|\r|\n")


def _top_level(analysis: ModuleAnalysis, node: cst.CSTNode) -> Optional[cst.CSTNode]:
    current, parent = node, analysis.parent(node)
    while parent is not None and not isinstance(parent, cst.Module):
        current, parent = parent, analysis.parent(parent)
    return current if parent is not None else None


def _statement_positions(module: cst.Module, statement: Optional[cst.CSTNode], source: str) -> Optional[dict]:
    if statement is None:
        return None
    alone = cst.Module(body=[statement], header=(), footer=(), default_newline=module.default_newline,
                       default_indent=module.default_indent, has_trailing_newline=True)
    wrapper = MetadataWrapper(alone, unsafe_skip_copy=True)
    code = wrapper.module.code
    offset = source.find(code)
    if offset < 0 or source.find(code, offset + 1) >= 0:
        return None  # not found, or found twice: which one is it?
    if offset and source[offset - 1] not in "\r\n":
        return None
    lines_before = len(_NEWLINE.findall(source, 0, offset))
    resolved = wrapper.resolve(PositionProvider)
    return {node: _shift(where, lines_before) for node, where in resolved.items()}


def _shift(where, lines: int):
    from libcst.metadata import CodePosition, CodeRange

    if not lines:
        return where
    return CodeRange(CodePosition(where.start.line + lines, where.start.column),
                     CodePosition(where.end.line + lines, where.end.column))


def _analyse(source: str, filename: str, codes: frozenset[str], report_periodic: bool, errors: list[str]):
    module = cst.parse_module(source)
    analysis = ModuleAnalysis(module, source)
    diagnostics = _run_rules(analysis, codes, report_periodic, errors)
    _place(diagnostics, analysis, source, filename)
    if diagnostics:
        sup = suppression.parse(source)
        diagnostics = [d for d in diagnostics
                       if not sup.suppresses(d.code, (d.location.row, d.end_location.row))]
    diagnostics.sort(key=Diagnostic.sort_key)
    return analysis, diagnostics


def lint_source(source: str, filename: str, codes: frozenset[str], *, report_periodic: bool = False,
                fix: FixMode = FixMode.NONE, want_edits: bool = False, prefilter: bool = True) -> LintResult:
    """Lint `source`; with `fix`, apply fixes pass by pass until none is left (Ruff's loop).

    `prefilter=False` parses every file (the property tests compare both ways).
    """
    errors: list[str] = []
    syntax_error, libcst_may_try = python_syntax_error(source, filename)
    if syntax_error is not None and not libcst_may_try:
        return LintResult([syntax_error] if SYNTAX_ERROR in codes else [], source)
    if syntax_error is None and prefilter and not could_have_findings(source, codes):
        return LintResult([], source)
    try:
        analysis, diagnostics = _analyse(source, filename, codes, report_periodic, errors)
    except cst.ParserSyntaxError as exc:
        found = syntax_error or syntax_error_diagnostic(exc, filename)
        return LintResult([found] if SYNTAX_ERROR in codes else [], source)
    except cst.CSTValidationError as exc:
        # LibCST's parser (newer Unicode tables) accepted what its own node checks then refuse, e.g. a name
        # made of a code point Python does not know yet: CPython's verdict stands.
        found = syntax_error or _gpu001(f"LibCST cannot represent this file ({exc})", filename, 1, 1)
        return LintResult([found] if SYNTAX_ERROR in codes else [], source)
    except RecursionError:
        return LintResult([], source, errors=["too deeply nested for gpulint's analysis; not checked"])

    fixed_count = 0
    current = source
    for _ in range(MAX_FIX_PASSES if fix is not FixMode.NONE else 0):
        candidates = [d.fix for d in diagnostics if d.fix is not None and fix.allows(d.fix.applicability)]
        if not candidates:
            break
        chosen = fixing.non_overlapping(candidates, analysis.index.is_ancestor_or_self)
        new_text = fixing.apply(analysis.module, chosen).code
        if new_text == current:
            break
        try:
            analysis, diagnostics = _analyse(new_text, filename, codes, report_periodic, errors)
            if syntax_error is None:  # the input compiled: the output must too
                compile(new_text, filename or "<fixed>", "exec", dont_inherit=True)
        except (cst.ParserSyntaxError, SyntaxError, ValueError, RecursionError) as exc:
            # A fix that breaks the code is a bug of ours: keep the last good text and say so.
            errors.append(f"a fix produced invalid code ({exc.__class__.__name__}); it was not applied")
            analysis, diagnostics = _analyse(current, filename, codes, report_periodic, errors)
            break
        fixed_count += len(chosen)
        current = new_text

    if want_edits:
        for d in diagnostics:
            d.edits = fixing.edits_for(d, analysis.module, current)
    return LintResult(diagnostics, current, fixed_count, errors, module=analysis.module)


def fix_source(source: str, *, unsafe: bool = False, filename: str = "<string>") -> str:
    """The fixed text of `source` with the default rules enabled: what `gpulint check --fix` would write."""
    codes = frozenset(code for code, rule in all_rules().items() if not rule.preview)
    mode = FixMode.UNSAFE if unsafe else FixMode.SAFE
    return lint_source(source, filename, codes, fix=mode).source
