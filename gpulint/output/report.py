"""What an output writer gets: the finished, typed result of a run."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Mapping, Optional

from gpulint.diagnostics import Diagnostic


@dataclass(frozen=True)
class Report:
    diagnostics: tuple[Diagnostic, ...]  # every finding of the run, sorted by file, cell, position, code
    sources: Mapping = field(default_factory=dict)  # (filename, cell) -> text, for the lines under findings
    summary: Optional[str] = None  # "Found 3 findings ...", for the human formats; None: print none
