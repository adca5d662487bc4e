"""Editor text arithmetic (gpulint/editing.py): what the language server's positions and edits rest on."""

from __future__ import annotations

import subprocess
import sys

from gpulint import suppression
from gpulint.editing import Spot, lsp_lines, minimal_change, spot, with_noqa


def apply(old: str, change) -> str:
    """Apply one change the way an editor does: LSP lines, UTF-16 columns."""
    def offset(at: Spot) -> int:
        lines = lsp_lines(old)
        base = sum(len(line) for line in lines[: at.line])
        line = lines[at.line] if at.line < len(lines) else ""
        units = chars = 0
        while units < at.character and chars < len(line):
            units += len(line[chars].encode("utf-16-le")) // 2
            chars += 1
        return base + chars

    return old[: offset(change.start)] + change.new_text + old[offset(change.end):]


def test_lines_break_only_where_lsp_does():
    assert lsp_lines("a\x0cb\r\nc\rd\u2028e\nf") == ["a\x0cb\r\n", "c\r", "d\u2028e\n", "f"]


def test_columns_count_utf16_units():
    lines = lsp_lines('print("🚀", x.item())\n')
    assert spot(lines, 1, 13) == Spot(0, 13)  # code-point column 13 is after the two-unit rocket


def test_minimal_change_replaces_only_what_differs_and_keeps_crlf_whole():
    old = "a = 1\r\nb = loader\r\nc = 3\r\n"
    new = "a = 1\r\nb = loader2\r\nc = 3\r\n"
    change = minimal_change(old, new)
    assert change.start == change.end == Spot(1, 10) and change.new_text == "2"
    grown = minimal_change(old, old + "d = 4\r\n")
    assert apply(old, grown) == old + "d = 4\r\n"
    assert grown.start == Spot(3, 0)
    joined = "a = 1\r\nc = 3\r\n"
    assert apply(old, minimal_change(old, joined)) == joined
    assert minimal_change(old, old) is None
    emoji = 'x = "🚀"; y.item()\n'
    assert apply(emoji, minimal_change(emoji, emoji.replace("y.item()", "y"))) == 'x = "🚀"; y\n'


def test_noqa_is_added_merged_and_never_breaks_code():
    source = "x = a.item()\ny = b.item()  # noqa: GPU102 (logged)\n"
    added = with_noqa(source, "GPU101", (1, 1))
    assert added.splitlines()[0] == "x = a.item()  # noqa: GPU101"
    merged = with_noqa(source, "GPU101", (2, 2))
    assert merged.splitlines()[1] == "y = b.item()  # noqa: GPU102, GPU101 (logged)"
    assert with_noqa("x = a.item()  # noqa\n", "GPU101", (1, 1)) is None
    # a `# noqa` inside a string is not a comment
    quoted = 'x = f("# noqa: GPU102", a.item())\n'
    assert with_noqa(quoted, "GPU101", (1, 1)) == 'x = f("# noqa: GPU102", a.item())  # noqa: GPU101\n'
    # the first line ends inside a string / with a backslash: the comment goes on the finding's last line
    for multi in ('x = f("""\n""", a.item())\n', "x = a.item() + \\\n    b\n"):
        fixed = with_noqa(multi, "GPU101", (1, 2))
        assert fixed.splitlines()[0] == multi.splitlines()[0]
        assert fixed.splitlines()[1].endswith("# noqa: GPU101")
        assert suppression.parse(fixed).suppresses("GPU101", (1, 2))
        compile(fixed, "t.py", "exec")
    assert with_noqa('x = f("""\n""", a.item())\n', "GPU101", (1, 1)) is None
    assert with_noqa('x = a.item()\ny = """never closed\n', "GPU101", (1, 1)) is None  # untokenizable: no action


def test_server_without_pygls_is_one_line_and_exit_2():
    blocked = ("import sys; sys.modules['pygls'] = None; sys.modules['lsprotocol'] = None; "
               "from gpulint.cli import main; main(['server'])")
    done = subprocess.run([sys.executable, "-c", blocked], capture_output=True, text=True, timeout=60)
    assert done.returncode == 2
    assert done.stderr.count("\n") == 1 and "pip install 'gpulint[lsp]'" in done.stderr
    assert "Traceback" not in done.stderr
