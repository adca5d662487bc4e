"""Whether a regular expression of the analysis matches anywhere in a module's text: `pattern.search(text) is not
None`, answered faster.

Python's `re` tries every alternative of a top-level alternation at every position of the text, and with
IGNORECASE it cannot skip ahead to a literal: `training._REDUCED_PRECISION` (18 alternatives, IGNORECASE) takes
about 20 ms on a 1,000-line script where it does not match, and an editor's lint asks it on every edit. Here the
pattern is split into its top-level alternatives (a match exists exactly when one of them matches somewhere);
each alternative is searched only where its leading literal occurs in the text (`in`, fast), and with IGNORECASE
on an ASCII text, the lower-cased alternative is searched in the lower-cased text without the flag (for ASCII
text and ASCII literals, the same matches). Anything this does not handle exactly (a character class, a group
extension or a numeric escape under IGNORECASE, back-references, VERBOSE, a non-ASCII text under IGNORECASE) is
searched with the pattern itself. tests/test_textsearch.py compares both on random texts for every pattern used.
"""

from __future__ import annotations

import re
import threading
from typing import NamedTuple, Optional


class _Plan(NamedTuple):
    lower: bool  # search the lower-cased text (the pattern had IGNORECASE)
    parts: tuple  # (literal every match of the alternative contains, the alternative compiled)


_plans: dict = {}
_last: dict = {}  # pattern -> (the text searched last, the answer): the text signature and the facts ask alike
_lock = threading.Lock()
_SIMPLE_ESCAPES = frozenset("bBsSwWdDAZtnrfv")  # escapes that mean the same on a lower-cased ASCII text


def found_in(pattern: re.Pattern, text: str) -> bool:
    """`pattern.search(text) is not None`."""
    with _lock:
        last = _last.get(pattern)
        if last is not None and last[0] is text:
            return last[1]
        if pattern not in _plans:
            _plans[pattern] = _plan(pattern)
        plan = _plans[pattern]
    if plan is None or plan.lower and not text.isascii():
        found = pattern.search(text) is not None
    else:
        hay = text.lower() if plan.lower else text
        found = any(_found_from(core, alternative, hay) for core, alternative in plan.parts)
    with _lock:
        _last[pattern] = (text, found)
    return found


def _found_from(core: str, alternative: re.Pattern, hay: str) -> bool:
    """Whether `alternative` matches in `hay`: every match of it starts with `core` (its leading literal), so the
    search starts where `core` first occurs (a `\\b` there still sees the character before it): the text before
    is not tried character by character (an alternative led by `\\b` gets no literal prefix scan from `re`)."""
    if not core:
        return alternative.search(hay) is not None
    start = hay.find(core)
    return start >= 0 and alternative.search(hay, start) is not None


def _plan(pattern: re.Pattern) -> Optional[_Plan]:
    source = pattern.pattern
    flags = pattern.flags
    if not isinstance(source, str) or flags & re.VERBOSE or not source.isascii():
        return None
    lower = bool(flags & re.IGNORECASE)
    alternatives = _split(source, lower)
    if alternatives is None:
        return None
    parts = []
    for alternative in alternatives:
        if lower:
            alternative = _lowered(alternative)
        try:
            compiled = re.compile(alternative, flags & ~re.IGNORECASE if lower else flags)
        except re.error:
            return None
        parts.append((_leading_literal(alternative), compiled))
    return _Plan(lower, tuple(parts))


def _split(source: str, lower: bool) -> Optional[list[str]]:
    """The top-level alternatives of `source`; None where splitting (or lower-casing) might change a meaning."""
    parts, current, depth, i = [], [], 0, 0
    while i < len(source):
        char = source[i]
        if char == "\\":
            if i + 1 >= len(source):
                return None
            escaped = source[i + 1]
            if escaped.isdigit() or escaped.isalpha() and (lower or escaped in "xuUN") and \
                    escaped not in _SIMPLE_ESCAPES:
                return None  # a back-reference or a character by number: not split, not lower-cased
            current.append(source[i:i + 2])
            i += 2
            continue
        if char == "[":
            end = _class_end(source, i)
            if end is None or lower and not _caseless_class(source[i + 1:end - 1]):
                return None  # a range such as [A-z] is not the same lower-cased
            current.append(source[i:end])
            i = end
            continue
        if char == "(":
            if source.startswith("(?", i) and (lower or source.startswith("(?P=", i)):
                return None  # inline flags, named groups, references: left to the pattern itself
            depth += 1
        elif char == ")":
            depth -= 1
            if depth < 0:
                return None
        elif char == "|" and depth == 0:
            parts.append("".join(current))
            current = []
            i += 1
            continue
        current.append(char)
        i += 1
    if depth != 0:
        return None
    parts.append("".join(current))
    return parts


def _caseless_class(content: str) -> bool:
    """A character class that means the same with or without IGNORECASE, on a text as on its lower-cased copy:
    no letter, no range, no escape but of a punctuation character (`[\\"':]`)."""
    i = 0
    while i < len(content):
        char = content[i]
        if char == "\\":
            if i + 1 >= len(content) or content[i + 1].isalnum():
                return False
            i += 2
            continue
        if char.isalpha() or char == "-":
            return False
        i += 1
    return True


def _class_end(source: str, start: int) -> Optional[int]:
    """The index after the character class opening at `start`."""
    i = start + 1
    if i < len(source) and source[i] == "^":
        i += 1
    if i < len(source) and source[i] == "]":
        i += 1
    while i < len(source):
        if source[i] == "\\":
            i += 2
            continue
        if source[i] == "]":
            return i + 1
        i += 1
    return None


def _lowered(alternative: str) -> str:
    """Literal letters lower-cased, escapes (`\\S`, `\\B`) kept as they are."""
    out, i = [], 0
    while i < len(alternative):
        if alternative[i] == "\\":
            out.append(alternative[i:i + 2])
            i += 2
            continue
        out.append(alternative[i].lower())
        i += 1
    return "".join(out)


_LITERAL = re.compile(r"[A-Za-z0-9_ ]")


def _leading_literal(alternative: str) -> str:
    """Text every match of `alternative` contains: its leading run of literal characters (after a `\\b`), short of
    a character that a quantifier makes optional. "" when there is none."""
    i = 2 if alternative.startswith("\\b") else 0
    literal: list[str] = []
    while i < len(alternative):
        char = alternative[i]
        if char == "\\" and i + 1 < len(alternative) and not alternative[i + 1].isalnum():
            literal.append(alternative[i + 1])
            i += 2
        elif _LITERAL.fullmatch(char):
            literal.append(char)
            i += 1
        else:
            if char in "*?{" and literal:
                literal.pop()  # `ab?`: the b may be absent
            break
    return "".join(literal)
