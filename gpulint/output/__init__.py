"""Output formats. Each takes the findings of a run and returns the text to print."""

from __future__ import annotations

from typing import Callable

from gpulint.output import concise, full, json_format

FORMATS: dict[str, Callable] = {
    "full": full.render,
    "concise": concise.render,
    "json": json_format.render,
}
