"""The language server's edit helpers, without a client: where a `# noqa` comment may go."""

from __future__ import annotations

import pytest

pytest.importorskip("pygls")

from gpulint.diagnostics import Diagnostic, Position  # noqa: E402
from gpulint.server import Text, noqa_edit  # noqa: E402


def action(source: str):
    d = Diagnostic("GPU101", "item-in-loop", "m", location=Position(1, 5), end_location=Position(2, 12))
    return noqa_edit(d, Text(source, len))


def test_noqa_never_lands_inside_a_string_or_after_a_backslash():
    # Row 1 ends inside a triple-quoted string; row 2 ends with a line continuation: no safe place.
    assert action('x = f("""\n""").item() + \\\n    1\n') is None


def test_noqa_goes_on_the_last_row_when_the_first_cannot_take_it():
    edit = action('x = f("""\n""").item() + 1\n')
    assert (edit.range.start.line, edit.new_text) == (1, '""").item() + 1  # noqa: GPU101')
