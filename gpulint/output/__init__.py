"""Output formats. Each takes the findings of a run and returns the text to print."""

from __future__ import annotations

from typing import Callable

from gpulint.output import concise, full, github, json_format, json_lines, junit, sarif

FORMATS: dict[str, Callable] = {
    "full": full.render,
    "concise": concise.render,
    "json": json_format.render,
    "json-lines": json_lines.render,
    "github": github.render,
    "sarif": sarif.render,
    "junit": junit.render,
}
