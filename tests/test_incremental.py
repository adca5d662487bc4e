"""Reuse across the lints of an editor's buffer (gpulint.incremental): unchanged top-level definitions keep their
parse, findings are exactly those of a fresh lint, and a lint can be abandoned midway."""

from __future__ import annotations

import textwrap
from pathlib import Path

import libcst as cst
import pytest

from gpulint import bigfile, incremental
from gpulint.rule import all_rules
from gpulint.runner import lint_source

ROOT = Path(__file__).resolve().parent.parent
CODES = frozenset(all_rules())
EXAMPLES = sorted((ROOT / "fixtures" / "examples").glob("*.py")) + sorted(
    (ROOT / "fixtures" / "rules").glob("GPU1*/positive*.py"))


@pytest.fixture
def reuse():
    saved = incremental._reuse
    incremental._reuse = None
    incremental.enable()
    yield incremental._reuse
    incremental._reuse = saved


def edits(text: str) -> list[str]:
    """The text, then a comment typed in the middle, a definition added at the end, a line deleted."""
    lines = text.splitlines(keepends=True)
    middle = len(lines) // 2
    return [text, "".join(lines[:middle] + ["# typing\n"] + lines[middle:]),
            text + "\n\ndef added(x):\n    return x.item()\n", "".join(lines[:middle] + lines[middle + 1:])]


def findings(text: str, name: str) -> list[tuple]:
    return [(d.code, d.location, d.end_location, d.message) for d in lint_source(text, name, CODES).diagnostics]


@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: p.relative_to(ROOT).as_posix())
def test_findings_with_reuse_are_those_of_a_fresh_lint(path: Path, reuse):
    expected = []
    saved, incremental._reuse = incremental._reuse, None
    for text in edits(path.read_text()):
        expected.append(findings(text, path.name))
    incremental._reuse = saved
    assert [findings(text, path.name) for text in edits(path.read_text())] == expected


SCRIPT = textwrap.dedent("""\
    # a header comment
    import torch


    def first(loader):
        for x in loader:
            print(x.item())
        # an indented comment after the loop


    # a comment before a decorated definition
    @torch.no_grad()
    def second(x):
        return x


    class Third:
        def step(self, loss):
            return loss.item()
    if __name__ == "__main__":
        first([])
""")


@pytest.mark.parametrize("newline", ["\n", "\r\n"])
@pytest.mark.parametrize("final", [True, False])
def test_a_module_joined_from_reused_pieces_is_the_whole_parse(reuse, newline, final):
    text = SCRIPT.replace("\n", newline)
    text = text if final else text.rstrip(newline)
    for version in edits(text):
        module = incremental.parse_module(version)
        assert module.code == version
    for tiny in ("", "\n", "# only a comment", "x = 1"):
        assert incremental.parse_module(tiny).deep_equals(cst.parse_module(tiny))
        assert module.deep_equals(cst.parse_module(version))


def test_unchanged_definitions_keep_their_nodes(reuse):
    before = incremental.parse_module(SCRIPT)
    after = incremental.parse_module(SCRIPT.replace("    return x\n", "    return x + 1\n"))
    assert len(before.body) == len(after.body) == 5
    first, second, third = before.body[1], before.body[2], before.body[3]
    assert after.body[1] is first  # not parsed again
    assert after.body[2] is not second  # the edited one is
    assert after.body[3].body is third.body  # its leading lines come from the edited piece; the rest is kept


def test_without_reuse_nothing_is_kept():
    saved, incremental._reuse = incremental._reuse, None
    try:
        assert incremental.parse_module(SCRIPT).body[1] is not incremental.parse_module(SCRIPT).body[1]
    finally:
        incremental._reuse = saved


def test_syntax_errors_are_found_in_pieces_seen_before_and_across_them(reuse):
    lint_source(SCRIPT, "s.py", CODES)
    broken = SCRIPT.replace("    return x\n", "    return x +\n")
    (found,) = lint_source(broken, "s.py", CODES).diagnostics
    assert (found.code, found.location.row) == ("GPU001", broken.splitlines().index("    return x +") + 1)


def test_a_cut_inside_a_string_falls_back_to_the_whole_text(reuse):
    text = SCRIPT + 'DOC = """\ndef not_a_function():\n    pass\n"""\n'
    assert any(p.startswith("def not_a_function") for p in bigfile.pieces(text, 1))  # a cut inside the string
    for _ in range(2):
        assert incremental.parse_module(text).deep_equals(cst.parse_module(text))
        assert not [d for d in lint_source(text, "s.py", CODES).diagnostics if d.code == "GPU001"]

def test_a_stale_lint_stops_at_its_next_checkpoint(reuse):
    calls = []

    def stale() -> bool:
        calls.append(1)
        return len(calls) > 2

    big = SCRIPT + "".join(f"\ndef copy_{i}(loader):\n    for x in loader:\n        print(x.cuda().item())\n"
                           for i in range(50))
    with incremental.cancellable(stale), pytest.raises(incremental.Cancelled):
        lint_source(big, "big.py", CODES)
    assert len(calls) == 3  # it stopped at the first checkpoint after the buffer went stale
    saved, incremental._reuse = incremental._reuse, None
    fresh = findings(big, "big.py")
    incremental._reuse = saved
    assert len(fresh) >= 50 and findings(big, "big.py") == fresh  # nothing it left behind spoils the next lint
