"""Reuse across the lints of an editor's buffer (gpulint.incremental): unchanged top-level definitions keep their
parse, findings are exactly those of a fresh lint, and a lint can be abandoned midway."""

from __future__ import annotations

import ast
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


def test_without_reuse_no_piece_is_kept():
    saved, incremental._reuse = incremental._reuse, None
    try:  # the same definition in another text is parsed again: only a whole text seen a moment ago is kept
        assert incremental.parse_module(SCRIPT).body[1] is not incremental.parse_module(SCRIPT + "\n").body[1]
    finally:
        incremental._reuse = saved


def test_a_script_whose_model_it_trains_is_parsed_once(tmp_path, monkeypatch):
    """The script's lint and the model code in it (analysis/forward.py reads the script's loops to know that
    `Net.forward` runs every step) share one LibCST parse."""
    from gpulint import bigfile
    from gpulint.analysis.project import project_for

    script = tmp_path / "train.py"
    script.write_text(
        "import torch\nimport torch.nn as nn\n\n\nclass Net(nn.Module):\n    def forward(self, x):\n"
        "        print(x.sum().item())\n        return x\n\n\nmodel = Net().cuda()\n"
        "opt = torch.optim.SGD(model.parameters(), lr=0.1)\nfor x in loader:\n    loss = model(x).sum()\n"
        "    loss.backward()\n    opt.step()\n")
    (tmp_path / "pyproject.toml").write_text("")
    project_for(script).forget(None)
    parses, project_parses = [], []
    real, real_ast = bigfile.parse_module, ast.parse
    monkeypatch.setattr(bigfile, "parse_module", lambda text: parses.append(text) or real(text))
    monkeypatch.setattr(ast, "parse", lambda source, *a, **k: (
        project_parses.append(source) if isinstance(source, bytes) else None) or real_ast(source, *a, **k))
    saved, incremental._reuse = incremental._reuse, None
    try:
        incremental._recent_modules.clear()
        found = lint_source(script.read_text(), str(script), CODES, path=script).diagnostics
    finally:
        incremental._reuse = saved
    assert ("GPU101", 7) in [(d.code, d.location.row) for d in found]  # model code run every step
    assert len(parses) == 1
    assert project_parses == []  # the project model took the `ast` tree the script's own lint made


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


def test_a_repeated_definition_gets_positions_of_its_own(reuse):
    """Two identical definitions are two pieces of the same text: each needs nodes of its own (a shared node
    gave both findings the line of the second)."""
    twice = "def f(loader):\n    for x in loader:\n        print(x.cuda().item())\n\n\n"
    text = "import torch\n\n" + twice + twice + "def g():\n    pass\n"
    lint_source(text, "t.py", CODES)
    rows = [d.location.row for d in lint_source(text, "t.py", CODES).diagnostics if d.code == "GPU101"]
    assert rows == [5, 10]


def test_the_definition_after_an_edited_one_keeps_its_node(reuse):
    """The comment lines above `second` are parsed with the edited `first`; unchanged, they leave `second` (and
    what is kept by its node: positions, its syntax-index walk) as it was."""
    before = incremental.parse_module(SCRIPT)
    after = incremental.parse_module(SCRIPT.replace("print(x.item())", "print(x.item() + 1)"))
    assert after.body[1] is not before.body[1] and after.body[2] is before.body[2]
    assert after.code == SCRIPT.replace("print(x.item())", "print(x.item() + 1)")


def _index_tables(index) -> tuple:
    """Everything a syntax index records, nodes by identity."""
    parents = {id(k): id(v) for k, v in index.parent.items()}
    assert {k: id(v) for k, v in index.up.items()} == parents  # the id-keyed copy a walk up reads
    return ([id(n) for n in index.nodes], parents,
            [(key, [(b.name, id(b.scope), b.kind, id(b.value), b.index, id(b.source)) for b in found])
             for key, found in index.bindings.items()],
            [(name, [id(f) for f in found]) for name, found in index.functions.items()],
            [(name, id(c)) for name, c in index.classes.items()], list(index.imports.aliases.items()),
            [id(n) for n in index.import_nodes])


@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: p.relative_to(ROOT).as_posix())
def test_a_syntax_index_merged_from_kept_walks_is_the_whole_walk(path: Path, reuse):
    from gpulint.analysis.tree import SyntaxIndex

    text = path.read_text()
    for version in [*edits(text), "import numpy as torch\n" + text, SCRIPT, SCRIPT + "x = [y for y in range(3)]\n"]:
        try:
            module = incremental.parse_module(version)
        except cst.ParserSyntaxError:
            continue  # a deleted line that broke the syntax
        merged = [_index_tables(SyntaxIndex().build(module)) for _ in range(2)]  # walked, then kept walks
        saved, incremental._reuse = incremental._reuse, None
        whole = _index_tables(SyntaxIndex().build(module))
        incremental._reuse = saved
        assert merged == [whole, whole]


HELPER = textwrap.dedent("""\
    import torch
    from torch.utils.data import DataLoader

    loader = DataLoader(dataset, batch_size=32, num_workers=4, pin_memory=True)


    def helper(x):
        return x.item()


    def train(model):
        for x, y in loader:
            y = model(x.cuda())
            helper(y)
            torch.cuda.synchronize()
""")


@pytest.mark.parametrize("edit", [
    ("pin_memory=True", "pin_memory=False"),  # a module-level loader: GPU202 on `x.cuda()` in `train` goes
    ("import torch\n", "import numpy as torch\n"),  # what `torch.cuda` names in `train`
    ("    return x.item()\n", "    return x.item()\n\n\ndef train(model):\n    pass\n"),  # shadowed
])
def test_an_edit_elsewhere_changes_findings_in_an_unchanged_definition(reuse, edit):
    """`train` is not edited (its piece, nodes and index walk are kept), but what it means depends on the rest of
    the module: the findings after the edit must be those of a fresh lint, and differ from before."""
    path = ROOT / "fixtures" / "projects" / "lsp_edit.py"  # a path in a project: helpers are summarised
    edited = HELPER.replace(*edit)
    before = [(d.code, d.location.row) for d in lint_source(HELPER, str(path), CODES, path=path).diagnostics]
    after = [(d.code, d.location.row) for d in lint_source(edited, str(path), CODES, path=path).diagnostics]
    saved, incremental._reuse = incremental._reuse, None
    fresh = [(d.code, d.location.row) for d in lint_source(edited, str(path), CODES, path=path).diagnostics]
    incremental._reuse = saved
    assert after == fresh and after != before
    assert incremental.parse_module(edited).body[-1] is incremental.parse_module(HELPER).body[-1]  # kept


def test_positions_from_the_provider_pass_are_libcsts(reuse):
    from libcst.metadata import MetadataWrapper, PositionProvider

    from gpulint.runner import node_positions

    for path in EXAMPLES[:8]:
        module = cst.parse_module(path.read_text())
        assert node_positions(module) == dict(MetadataWrapper(module, unsafe_skip_copy=True).resolve(
            PositionProvider))


@pytest.mark.parametrize("path", EXAMPLES[:10], ids=lambda p: p.relative_to(ROOT).as_posix())
def test_the_project_models_tree_from_kept_pieces_is_the_whole_parse(path: Path, reuse):
    """The project model parses the buffer with CPython's `ast` on every edit: from pieces kept by their text and
    first line, the tree (line numbers included) is the one `ast.parse` gives for the whole text."""
    import ast

    text = path.read_text()
    for version in [*edits(text), *edits(text)]:  # the second time from kept pieces
        try:
            whole = ast.dump(ast.parse(version), include_attributes=True)
        except SyntaxError:
            assert incremental.python_tree(version) is None
            continue
        assert ast.dump(incremental.python_tree(version), include_attributes=True) == whole
    for odd in ("# -*- coding: latin-1 -*-\n" + text, text.replace("\n", "\r\n"), "\ufeff" + text):
        assert incremental.python_tree(odd) is None  # read otherwise by a whole parse: left to it


def test_the_server_holds_the_garbage_collector_off_only_while_a_lint_is_published():
    """The collector waits while lints are under way (overlapping ones included) and is back once the last one
    is sent, even when it fails: a server that left it off would grow without bound."""
    import gc

    pytest.importorskip("pygls")
    from gpulint.server import collection_deferred

    assert gc.isenabled()
    with collection_deferred():
        with pytest.raises(RuntimeError), collection_deferred():
            assert not gc.isenabled()
            raise RuntimeError("a lint that failed")
        assert not gc.isenabled()  # the outer one is still under way
    assert gc.isenabled()


def test_an_edited_piece_is_parsed_by_cpython_once_per_lint(reuse, monkeypatch):
    """The syntax check, the buffer's `ast` tree and the comparison of code (gpulint.rule_reuse) share one parse
    of an edited piece (incremental.piece_tree): on a 1,000-line function that was three parses per keystroke."""
    import ast

    from gpulint import rule_reuse

    text = (ROOT / "fixtures" / "examples" / "naive_train.py").read_text()
    text += "".join(f"\n\ndef copy_{i}():\n" + "".join(f"    {line}\n" for line in text.splitlines())
                    for i in range(3))
    lint_source(text, "s.py", CODES)
    lines = text.splitlines(keepends=True)
    middle = len(lines) // 2
    edited = "".join(lines[:middle] + ["    v3 = loss.item()\n"] + lines[middle:])
    piece = next(p for p in incremental.pieces(edited) if "v3 = loss.item()" in p)
    parsed: list[str] = []
    real = ast.parse
    monkeypatch.setattr(ast, "parse", lambda source, *a, **k: parsed.append(source) or real(source, *a, **k))
    with rule_reuse._lock:
        rule_reuse._trees.clear()
        rule_reuse._dumps.clear()
    assert lint_source(edited, "s.py", CODES).diagnostics == lint_source(edited, "s.py", CODES).diagnostics
    assert len([s for s in parsed if s.endswith(piece)]) == 1
