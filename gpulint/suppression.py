"""`# noqa` comments: `# noqa: GPU101, GPU105` or bare `# noqa` on a line; `# gpulint: noqa` for a whole file."""

from __future__ import annotations

import io
import re
import tokenize
from dataclasses import dataclass, field
from typing import Optional

# The codes: a comma-separated list of words (so `foo-bar` and `GPU1O1` are read as the unknown codes they are,
# not as "no codes": a bare noqa), then more codes after spaces; a trailing remark (`# noqa: E402 (why)`) is not.
_LIST = r"[^\s,#()]+(?:\s*,\s*[^\s,#()]+)*(?:\s+[A-Z]+[0-9]+[A-Z0-9]*(?=\s|,|$))*"
_NOQA = re.compile(rf"#\s*noqa(?::\s*(?P<codes>{_LIST}))?", re.IGNORECASE)
_FILE = re.compile(rf"^#\s*gpulint\s*:\s*noqa(?::\s*(?P<codes>{_LIST}))?\s*$", re.IGNORECASE)
_CODE = re.compile(r"[^\s,]+")  # one word of a codes list
_FOREIGN = re.compile(r"[A-Z]+[0-9]+")  # another tool's code (E501, F401): not ours to judge

ALL = None  # a bare noqa suppresses every code


@dataclass
class Suppressions:
    lines: dict[int, Optional[set[str]]] = field(default_factory=dict)
    file_codes: Optional[set[str]] = field(default_factory=set)  # None: the whole file is off
    # (row, word) for each word of a codes list that is no code of gpulint's: it suppresses nothing
    unknown: list[tuple[int, str]] = field(default_factory=list)

    def suppresses(self, code: str, rows: tuple[int, ...]) -> bool:
        if self.file_codes is None or code in (self.file_codes or ()):
            return True
        for row in rows:
            if row in self.lines:
                codes = self.lines[row]
                if codes is None or code in codes:
                    return True
        return False


def _codes(match: re.Match, row: int = 0, unknown: Optional[list] = None) -> Optional[set[str]]:
    """The codes a noqa comment names (None: a bare noqa). Unknown words are set aside, never read as "all"."""
    text = match.group("codes")
    if text is None:
        return None
    from gpulint.codes import known_codes

    known = known_codes()
    codes = set()
    for word in _CODE.findall(text):
        upper = word.upper()
        if upper in known:
            codes.add(upper)
        elif _FOREIGN.fullmatch(upper) and not upper.startswith("GPU"):
            continue
        elif unknown is not None:
            unknown.append((row, word))
    return codes


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
            codes = _codes(file_match, tok.start[0], result.unknown)
            if codes is None:
                result.file_codes = None
            elif result.file_codes is not None:
                result.file_codes |= codes
            continue
        match = _NOQA.search(tok.string)
        if match:
            result.lines[tok.start[0]] = _codes(match, tok.start[0], result.unknown)
    return result
