"""`# noqa` comments: `# noqa: GPU101, GPU105` or bare `# noqa` on a line; `# gpulint: noqa` for a whole file."""

from __future__ import annotations

import io
import re
import tokenize
from dataclasses import dataclass, field
from typing import Optional

_NOQA = re.compile(r"#\s*noqa(?::\s*(?P<codes>[A-Z]+[0-9]+(?:\s*,?\s*[A-Z]+[0-9]+)*))?", re.IGNORECASE)
_FILE = re.compile(r"^#\s*gpulint\s*:\s*noqa(?::\s*(?P<codes>[A-Z]+[0-9]+(?:\s*,?\s*[A-Z]+[0-9]+)*))?\s*$",
                   re.IGNORECASE)
_CODE = re.compile(r"[A-Z]+[0-9]+", re.IGNORECASE)

ALL = None  # a bare noqa suppresses every code


@dataclass
class Suppressions:
    lines: dict[int, Optional[set[str]]] = field(default_factory=dict)
    file_codes: Optional[set[str]] = field(default_factory=set)  # None: the whole file is off

    def suppresses(self, code: str, rows: tuple[int, ...]) -> bool:
        if self.file_codes is None or code in (self.file_codes or ()):
            return True
        for row in rows:
            if row in self.lines:
                codes = self.lines[row]
                if codes is None or code in codes:
                    return True
        return False


def _codes(match: re.Match) -> Optional[set[str]]:
    text = match.group("codes")
    return None if text is None else {c.upper() for c in _CODE.findall(text)}


def parse(source: str) -> Suppressions:
    """Read suppressions from real comments (tokenize), so `"# noqa"` inside a string does not count."""
    result = Suppressions()
    if "noqa" not in source:
        return result
    try:
        tokens = list(tokenize.generate_tokens(io.StringIO(source).readline))
    except (tokenize.TokenError, SyntaxError, IndentationError):
        return result
    for tok in tokens:
        if tok.type != tokenize.COMMENT:
            continue
        file_match = _FILE.match(tok.string)
        if file_match and tok.line.strip() == tok.string.strip():
            codes = _codes(file_match)
            if codes is None:
                result.file_codes = None
            elif result.file_codes is not None:
                result.file_codes |= codes
            continue
        match = _NOQA.search(tok.string)
        if match:
            result.lines[tok.start[0]] = _codes(match)
    return result
