"""Output formats. Each takes the finished result of a run (a `Report`) and returns the text to print."""

from __future__ import annotations

from typing import Callable

from gpulint.output import (azure, concise, full, github, gitlab, json_format, json_lines, junit, pylint, rdjson,
                            sarif)
from gpulint.output.report import Report

FORMATS: dict[str, Callable[[Report], str]] = {
    "full": full.render,
    "concise": concise.render,
    "json": json_format.render,
    "json-lines": json_lines.render,
    "github": github.render,
    "sarif": sarif.render,
    "junit": junit.render,
    "gitlab": gitlab.render,
    "pylint": pylint.render,
    "azure": azure.render,
    "rdjson": rdjson.render,
}
