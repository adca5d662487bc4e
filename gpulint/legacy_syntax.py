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


def shimmed(source: str, where: Optional[list[tuple[int, int]]] = None) -> Optional[str]:
    """`source` with every `async=` keyword argument (at `where`, else found) spelt `SPELLING=`, when that makes it
    parse; else None."""
    where = positions(source) if where is None else where
    if not where:
        return None
    lines = source.splitlines(keepends=True)
    for row, column in where:
        line = lines[row - 1]
        lines[row - 1] = line[:column] + SPELLING + line[column + len(SPELLING):]
    text = "".join(lines)
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
    text = shimmed(source, where) if where else None
    if text is None:
        return None
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
        shim = shimmed(raw.decode("utf-8", errors="replace")) if b"async" in raw else None
        if shim is None:
            raise
        tree = ast.parse(shim, filename)
        tree.legacy_async = True  # type: ignore[attr-defined]  # not the tree of the text: never handed out as it
        return tree


def is_shimmed(tree) -> bool:
    """The tree `parse_python` made of the renamed text (the file's own lint must still report GPU001)."""
    return getattr(tree, "legacy_async", False)
