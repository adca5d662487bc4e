"""What a rule reports: a finding at a node, optionally with a fix."""

from __future__ import annotations

import enum
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Mapping, Optional, Union

if TYPE_CHECKING:  # libcst is imported only when something is parsed: a warm cached run never needs it
    import libcst as cst

# Each rule's documentation, generated from the rule class (`gpulint rule --all --write-docs docs/rules`), as a
# path relative to the repository root: the same file on any checkout or forge, no invented web site.
DOCS_URL = "docs/rules/{code}.md"


def rule_url(code: str) -> str:
    return DOCS_URL.format(code=code)


class Applicability(str, enum.Enum):
    """How far a fix can be trusted, as in Ruff: safe fixes run with --fix, unsafe ones need --unsafe-fixes."""

    SAFE = "safe"
    UNSAFE = "unsafe"


# A replacement for one original node: a new node, a removal, or several statements in place of one.
Replacement = Union["cst.CSTNode", "cst.RemovalSentinel", "cst.FlattenSentinel"]


class FixMode(enum.Enum):
    NONE = "none"
    SAFE = "safe"
    UNSAFE = "unsafe"

    def allows(self, applicability: Applicability) -> bool:
        if self is FixMode.NONE:
            return False
        return self is FixMode.UNSAFE or applicability is Applicability.SAFE


@dataclass(frozen=True)
class Fix:
    """A change to the syntax tree, expressed as original node -> replacement.

    Several nodes may change together (a flag initialised before a loop and checked after it); the fix is
    applied whole or not at all. An unsafe fix may carry a safe `fallback`, applied instead where unsafe fixes
    are not allowed (GPU410: the device-resident batch with --unsafe-fixes, the pinned copy with --fix).
    """

    message: str
    applicability: Applicability
    changes: Mapping[cst.CSTNode, Replacement]
    fallback: Optional["Fix"] = None

    def allowed(self, mode: "FixMode") -> Optional["Fix"]:
        """The fix `mode` applies here: this one, else its fallback, else None."""
        if mode.allows(self.applicability):
            return self
        if self.fallback is not None and mode.allows(self.fallback.applicability):
            return self.fallback
        return None


@dataclass(frozen=True)
class Position:
    row: int  # 1-based
    column: int  # 1-based, in characters


@dataclass(frozen=True)
class Edit:
    """A text edit in Ruff's JSON shape: replace [location, end_location) with content."""

    content: str
    location: Position
    end_location: Position


@dataclass(frozen=True)
class Related:
    """Another place a finding involves: where a helper called in the loop pays the cost (`utils.py:88`)."""

    filename: str
    row: int
    message: str = ""

    def where(self) -> str:
        return f"{self.filename}:{self.row}"


@dataclass(frozen=True)
class Diagnostic:
    """One finding. Immutable: each stage (rule -> placed -> suppressed/selected -> output) makes a new value
    with `dataclasses.replace`; nothing completes a diagnostic in place."""

    code: str
    name: str
    message: str
    node: Optional[cst.CSTNode] = field(default=None, repr=False, compare=False)
    fix: Optional[Fix] = field(default=None, repr=False, compare=False)
    # Filled in by the runner once the positions of reported nodes are known.
    location: Position = Position(1, 1)
    end_location: Position = Position(1, 1)
    filename: str = ""
    edits: tuple[Edit, ...] = ()
    # Set for notebooks: which code cell the finding is in (0-based) and its line within that cell.
    cell: Optional[int] = None
    # Notebooks: the first and last line of the .ipynb file itself that hold the finding's source lines (for
    # annotations on the raw file: GitHub, SARIF); None where they could not be told.
    file_rows: Optional[tuple[int, int]] = None
    # Other places the finding involves (a helper's line in another module), as JSON `related`, SARIF
    # `relatedLocations`, LSP `relatedInformation`, and "via file:line" in text output.
    related: tuple[Related, ...] = ()

    def portable(self) -> "Diagnostic":
        """This finding without syntax-tree nodes, so it can cross a process boundary (and be cached)."""
        if self.node is None and (self.fix is None or not self.fix.changes):
            return self
        fix = None if self.fix is None else replace(self.fix, changes={})
        return replace(self, node=None, fix=fix)

    def sort_key(self) -> tuple:
        cell = -1 if self.cell is None else self.cell
        return (self.filename, cell, self.location.row, self.location.column, self.code)


class InternalError(str):
    """The line for a crash inside a rule: an error message that fails the run (exit 2). Its parts stay with
    it, so that a view can place the line elsewhere (a notebook's cell)."""

    code: str = ""
    row: Optional[int] = None
    reason: str = ""


def internal_error(code: str, filename: str, row: Optional[int], reason: str) -> InternalError:
    """The one line a crash inside a rule prints: `internal error in GPU101 on train.py:12: <reason>`.

    The only place this line is formatted: whatever runs the rules hands (code, row, reason) here."""
    where = f"{filename}:{row}" if row else filename
    error = InternalError(f"internal error in {code} on {where}: {reason}")
    error.code, error.row, error.reason = code, row, reason
    return error
