"""Output formats. Each takes the finished result of a run (a `Report`) and returns the text to print.

A format's module is imported when the format is used: a run prints one format, and importing all of them (the
XML and JSON writers) was a tenth of a cached run's start-up."""

from __future__ import annotations

import importlib
from typing import Callable, Iterator, Mapping

from gpulint.output.report import Report

_MODULES = {
    "full": "full",
    "concise": "concise",
    "json": "json_format",
    "json-lines": "json_lines",
    "github": "github",
    "sarif": "sarif",
    "junit": "junit",
    "gitlab": "gitlab",
    "pylint": "pylint",
    "azure": "azure",
    "rdjson": "rdjson",
}


class _Formats(Mapping[str, Callable[[Report], str]]):
    """Format name -> its `render`, the module imported on first use."""

    def __getitem__(self, name: str) -> Callable[[Report], str]:
        return importlib.import_module(f"gpulint.output.{_MODULES[name]}").render

    def __iter__(self) -> Iterator[str]:
        return iter(_MODULES)

    def __len__(self) -> int:
        return len(_MODULES)


FORMATS: Mapping[str, Callable[[Report], str]] = _Formats()
