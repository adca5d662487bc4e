"""Files written for PyTorch before 0.4 on Python before 3.7: `x.cuda(async=True)`.

`async` became a keyword in Python 3.7, so such a file no longer parses, and GPU001 alone was reported on it:
every per-step sync in a training script of that era (`loss.data[0]`, `.cpu().numpy()` of each batch) went
unchecked. PyTorch 0.4 renamed the argument `non_blocking`, with the same meaning.

Here the file is read as it was meant: each keyword argument spelt `async` (a name token right after `(` or `,`
and right before a single `=`) is given a stand-in of the same length (`SPELLING`), so that every position in
the text stays where it was, and the text is linted as usual. The rules read the stand-in as `non_blocking`
(`gpulint.syntax.argument`, `data_facts.keyword`, the project model's copies). GPU001 is still reported, at the
parser's position, now with a safe fix: `async=` becomes `non_blocking=` (what PyTorch 0.4 asks for, and what
makes the file parse again). The other findings and fixes are returned for the original text: the stand-in never
leaves this module (messages, fix edits and the fixed text name `async`, or `non_blocking` once GPU001's fix is
applied).

A training script of that era may also be written for Python 2: `print loss.data[0]` and `except IOError, e:`
statements. Those are read as Python 3 spells them (`print(loss.data[0])`, `except IOError as e:`): the closing
parenthesis goes at the end of the statement, so every position before it stays where it was (`print >>f, x`
parses on Python 3 as it is; a statement followed by `;` on its line and any other Python 2 construct, such as
`raise E, "message"`, leave the file to GPU001 alone).
Such a file gets its findings but no fixes (the fixed text would have to be turned back into Python 2, or the
fix would make the whole file Python 3: not a fix of one finding); GPU001 says how the rest was read.
"""

from __future__ import annotations

import io
import tokenize
from dataclasses import replace
from typing import Optional

SPELLING = "asyn_"  # as long as `async`: positions stay; a name nobody writes (a text holding it is left alone)
assert len(SPELLING) == len("async")
RENAMED = "non_blocking"


def positions(source: str) -> Optional[list[tuple[int, int]]]:
    """Where (row 1-based, column 0-based) `async` is written as a keyword argument's name; None when the text
    cannot be tokenized or holds the stand-in already. Empty: no such argument."""
    if "async" not in source or SPELLING in source:
        return None if SPELLING in source else []
    found = []
    try:
        tokens = [t for t in tokenize.generate_tokens(io.StringIO(source).readline)
                  if t.type not in (tokenize.NL, tokenize.NEWLINE, tokenize.COMMENT, tokenize.INDENT,
                                    tokenize.DEDENT)]
    except (tokenize.TokenError, SyntaxError, ValueError):  # IndentationError is a SyntaxError
        return None
    for before, token, after in zip(tokens, tokens[1:], tokens[2:]):
        if token.type == tokenize.NAME and token.string == "async" and before.string in ("(", ",") and \
                after.type == tokenize.OP and after.string == "=":
            found.append(token.start)
    return found


def python2_edits(source: str) -> Optional[list[tuple[int, int, int, str]]]:
    """The edits (row, start column, end column, new text) that turn the Python 2 `print x, y` and
    `except E, e:` statements of `source` into Python 3's, each ending at or after the last token of its
    statement (`print` gets `(` for its space and `)` at the statement's end; `, e` becomes ` as e`); None when
    the text cannot be tokenized or a statement is one this cannot rewrite in place. Empty: none."""
    if "print" not in source and "except" not in source:
        return []
    try:
        tokens = [t for t in tokenize.generate_tokens(io.StringIO(source).readline)
                  if t.type not in (tokenize.NL, tokenize.COMMENT)]
    except (tokenize.TokenError, SyntaxError, ValueError):
        return None
    edits: list[tuple[int, int, int, str]] = []
    starts = (tokenize.NEWLINE, tokenize.INDENT, tokenize.DEDENT)
    for i, token in enumerate(tokens):
        if token.type != tokenize.NAME or token.string not in ("print", "except"):
            continue
        before = tokens[i - 1] if i else None
        at_start = before is None or before.type in starts or before.string in (";", ":") and \
            before.start[0] == token.start[0]
        after = tokens[i + 1] if i + 1 < len(tokens) else None
        if not at_start or after is None:
            continue
        end = next((j for j in range(i + 1, len(tokens)) if tokens[j].type in (tokenize.NEWLINE,
                                                                           tokenize.ENDMARKER)), None)
        if end is None:
            return None
        if token.string == "print":
            if after.type in (tokenize.NEWLINE, tokenize.ENDMARKER) or after.type == tokenize.OP and after.string in (
                    "(", "=", ".", ")", ",", "[", ";", ":", "+=", "-="):
                continue  # `print(x)`, `print`, `print = f`: Python 3 already
            if after.string == ">>":
                continue  # `print >>f, x` parses on Python 3 (a tuple of a shift): left as written
            if any(t.string == ";" for t in tokens[i + 1:end]):
                return None  # `print x; y = 1` (the closing parenthesis would move `y`)
            last = tokens[end - 1]
            if token.end[0] != after.start[0] or after.start[1] != token.end[1] + 1:
                return None  # `print` and its first value not one space apart on one line
            edits.append((token.end[0], token.end[1], token.end[1] + 1, "("))
            edits.append((last.end[0], last.end[1], last.end[1], ")"))
        else:
            depth = 0
            for j in range(i + 1, end):
                t = tokens[j]
                if t.type == tokenize.OP and t.string in "([{":
                    depth += 1
                elif t.type == tokenize.OP and t.string in ")]}":
                    depth -= 1
                elif t.type == tokenize.OP and t.string == "," and depth == 0:
                    name, colon = tokens[j + 1], tokens[j + 2] if j + 2 < end else None
                    if name.type != tokenize.NAME or colon is None or colon.string != ":":
                        return None  # `except (A, B), e:` is fine above; `except A, B:` is not Python 3
                    edits.append((t.start[0], t.start[1], name.start[1], " as "))
                    break
                elif t.type == tokenize.OP and t.string == ":" and depth == 0:
                    break
    return edits


def _edited(source: str, edits: list[tuple[int, int, int, str]]) -> str:
    lines = source.splitlines(keepends=True)
    for row, start, end, text in sorted(edits, key=lambda e: (e[0], e[1]), reverse=True):
        line = lines[row - 1]
        lines[row - 1] = line[:start] + text + line[end:]
    return "".join(lines)


def shimmed(source: str, where: Optional[list[tuple[int, int]]] = None,
            python2: Optional[list] = None) -> Optional[str]:
    """`source` with every `async=` keyword argument (at `where`, else found) spelt `SPELLING=`, and its Python 2
    statements (`python2`, else found) rewritten, when that makes it parse; else None."""
    where = positions(source) if where is None else where
    python2 = python2_edits(source) if python2 is None else python2
    if not where and not python2:
        return None
    lines = source.splitlines(keepends=True)
    for row, column in where or ():
        line = lines[row - 1]
        lines[row - 1] = line[:column] + SPELLING + line[column + len(SPELLING):]
    text = "".join(lines)
    if python2:
        text = _edited(text, python2)
    try:
        compile(text, "<legacy>", "exec", dont_inherit=True, flags=0x400)  # ast.PyCF_ONLY_AST: no bytecode
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None  # some other error too: GPU001 as before
    return text


def lint(source: str, filename: str, codes: frozenset, syntax_error, **options):
    """The lint of a legacy file (`runner.lint_source`'s result for `source`), or None when `source` is not
    one (its syntax error is something else)."""
    from gpulint import runner
    from gpulint.diagnostics import Applicability, Edit, Fix, FixMode, Position

    where = positions(source)
    python2 = python2_edits(source)
    if where is None or python2 is None or not where and not python2:
        return None
    text = shimmed(source, where, python2)
    if text is None:
        return None
    if python2:
        return _lint_python2(source, text, filename, codes, syntax_error, bool(where), **options)
    fix: FixMode = options.get("fix", FixMode.NONE)
    result = runner.lint_source(text, filename, codes, **options)
    reported = runner.SYNTAX_ERROR in codes
    if reported and fix.allows(Applicability.SAFE):
        modern = result.source.replace(SPELLING, RENAMED)  # the file as PyTorch 0.4 and Python 3.7 spell it
        again = runner.lint_source(modern, filename, codes, **{**options, "fix": FixMode.NONE})
        return replace(again, fixed_count=result.fixed_count + 1, errors=result.errors + again.errors)
    diagnostics = [_restored(d) for d in result.diagnostics]
    if reported:
        edits = tuple(Edit(RENAMED, Position(row, column + 1), Position(row, column + 1 + len("async")))
                      for row, column in where)
        message = f"{syntax_error.message} (`async=` is PyTorch 0.3's `non_blocking=`, and a keyword since Python " \
            "3.7; the rest of the file was checked as if it were renamed)"
        found = replace(syntax_error, message=message, fix=Fix("Rename `async=` to `non_blocking=`",
                                                                 Applicability.SAFE, {}),
                        edits=edits if options.get("want_edits") else ())
        diagnostics = sorted([found, *diagnostics], key=lambda d: d.sort_key())
    return replace(result, diagnostics=diagnostics, source=result.source.replace(SPELLING, "async"))


def _lint_python2(source: str, text: str, filename: str, codes: frozenset, syntax_error, renamed: bool, **options):
    """A Python 2 file's findings, read from its Python 3 spelling `text`, reported on `source` without fixes."""
    from gpulint import runner
    from gpulint.diagnostics import FixMode

    result = runner.lint_source(text, filename, codes, **{**options, "fix": FixMode.NONE, "want_edits": False})
    diagnostics = [replace(_restored(d), fix=None, edits=()) for d in result.diagnostics]
    if runner.SYNTAX_ERROR in codes:
        also = " and `async=` read as `non_blocking=`" if renamed else ""
        message = f"{syntax_error.message} (a Python 2 file: the rest of it was checked with its `print` and " \
            f"`except E, e` statements read as Python 3's{also}; no fix is applied to it)"
        diagnostics = sorted([replace(syntax_error, message=message), *diagnostics], key=lambda d: d.sort_key())
    return replace(result, diagnostics=diagnostics, source=source, fixed_count=0)


def _restored(d):
    """A finding on the shimmed text, as it reads on the original."""
    if SPELLING not in d.message and not any(SPELLING in e.content for e in d.edits) and \
            not any(SPELLING in r.message for r in d.related):
        return d
    return replace(d, message=d.message.replace(SPELLING, "async"),
                   edits=tuple(replace(e, content=e.content.replace(SPELLING, "async")) for e in d.edits),
                   related=tuple(replace(r, message=r.message.replace(SPELLING, "async")) for r in d.related))


def is_non_blocking(name: str) -> bool:
    return name == RENAMED or name == SPELLING


def parse_python(raw: bytes, filename: str):
    """`ast.parse` of a file on disk (the project model's summaries), reading a legacy file as `lint` does."""
    import ast

    try:
        return ast.parse(raw, filename)
    except SyntaxError:
        shim = shimmed(raw.decode("utf-8", errors="replace")) \
            if b"async" in raw or b"print" in raw or b"except" in raw else None
        if shim is None:
            raise
        tree = ast.parse(shim, filename)
        tree.legacy_async = True  # type: ignore[attr-defined]  # not the tree of the text: never handed out as it
        return tree


def is_shimmed(tree) -> bool:
    """The tree `parse_python` made of the renamed text (the file's own lint must still report GPU001)."""
    return getattr(tree, "legacy_async", False)
