"""An edited function parsed again only where it changed (gpulint.splice): the tree is the one a whole parse
gives, node for node (`deep_equals`) and text for text, after random edits; unchanged statements keep their
nodes."""

from __future__ import annotations

from pathlib import Path

import libcst as cst
from hypothesis import given, settings
from hypothesis import strategies as st

from gpulint import incremental, splice

ROOT = Path(__file__).resolve().parent.parent
FUNCTIONS = [piece for path in sorted((ROOT / "fixtures" / "examples").glob("*.py")) + sorted(
    (ROOT / "fixtures" / "projects").rglob("*.py")) for piece in incremental.pieces(path.read_text())
    if piece.startswith("def ") and piece.endswith("\n")]
SNIPPETS = ["lr3 = 0.13", "# a note", "", "x = f(a,\n      b)", "for i in y:\n    z = i",
            "if a:\n    pass\nelse:\n    b = 1", "x = g(\n# low\n  1,\n\n  2)", "y = [\n  1]  # t", "return x",
            "    # deeper", "with a:\n    b()\n\n    # after"]


@settings(max_examples=300, deadline=None)
@given(st.sampled_from(FUNCTIONS), st.data())
def test_a_spliced_function_is_the_whole_parse(function, data):
    lines = function.splitlines(keepends=True)
    at = data.draw(st.integers(1, len(lines)))
    following = next((line for line in lines[at:] if line.strip()), "    ")
    indent = data.draw(st.sampled_from([following[:len(following) - len(following.lstrip())], "    ", "        "]))
    snippet = data.draw(st.sampled_from(SNIPPETS))
    inserted = "".join((indent + line if line else "") + "\n" for line in snippet.split("\n"))
    edited = "".join(lines[:at] + lines[at + 1:]) if data.draw(st.booleans()) and at < len(lines) else \
        "".join(lines[:at] + [inserted] + lines[at:])
    old = cst.parse_module(function)
    spliced = splice.splice(function, old, edited)
    if spliced is None:
        return
    whole = cst.parse_module(edited)
    assert spliced.code == edited
    assert spliced.deep_equals(whole)


def test_typing_in_a_long_function_keeps_the_other_statements_nodes():
    function = "def main(args):\n" + "".join(f"    step{i} = run(args, {i})\n" for i in range(50))
    old = cst.parse_module(function)
    edited = function.replace("    step20 =", "    lr3 = 0.13\n    step20 =")
    spliced = splice.splice(function, old, edited)
    assert spliced is not None and spliced.code == edited and spliced.deep_equals(cst.parse_module(edited))
    before, after = old.body[0].body.body, spliced.body[0].body.body
    assert len(after) == 51 and all(a is b for a, b in zip(before[:20], after[:20]))
    assert all(a is b for a, b in zip(before[21:], after[22:]))  # step20 (after the insertion) is parsed again


def test_a_function_and_its_edited_copy_in_one_buffer_do_not_share_nodes():
    saved = incremental._reuse
    incremental._reuse = None
    incremental.enable()
    try:
        body = "".join(f"    step{i} = run({i})\n" for i in range(10))
        first = f"def main():\n{body}"
        incremental.parse_module(first)
        edited = "def main():\n" + body.replace("step5 =", "lr = 1\n    step5 =")
        text = first + "\n\n" + edited  # the edited copy sits where nothing was: parsed, or spliced from `first`
        incremental.parse_module(f"{first}\n\n{first}")
        module = incremental.parse_module(text)
        assert module.code == text and module.deep_equals(cst.parse_module(text))
        a, b = module.body
        inner = {id(n) for n in a.body.body}
        assert not inner & {id(n) for n in b.body.body}
    finally:
        incremental._reuse = saved
