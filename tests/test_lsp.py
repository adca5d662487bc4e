"""`gpulint server` end to end: a real LSP client (pytest-lsp) talks to it over stdio.

As in an editor session, one server serves every test of the module (one per editor profile); each test works
in its own folder, so no test sees another's files or configuration.
"""

from __future__ import annotations

import os
import re
import sys
import textwrap
from pathlib import Path

import pytest

pytest.importorskip("pygls")
pytest_lsp = pytest.importorskip("pytest_lsp")

from lsprotocol import types  # noqa: E402
from pytest_lsp import ClientServerConfig, LanguageClient, client_capabilities  # noqa: E402

from gpulint.diagnostics import FixMode  # noqa: E402
from gpulint.rule import all_rules  # noqa: E402
from gpulint.runner import lint_source  # noqa: E402

SOURCE = textwrap.dedent("""\
    import torch
    from torch.utils.data import DataLoader

    device = "cuda"
    model = torch.nn.Linear(4, 2).to(device)
    loader = DataLoader([1, 2])
    for step, (x, y) in enumerate(loader):
        loss = model(x).sum()  # é, a non-ASCII comment
        loss.backward()
        print("🚀", loss.item())
        torch.cuda.empty_cache()
""")
ALL = frozenset(all_rules())


pytestmark = pytest.mark.asyncio(loop_scope="module")


@pytest.fixture(scope="module")
def root(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("lsp-workspace")


@pytest.fixture
def workspace(root: Path, request) -> Path:
    folder = root / re.sub(r"\W+", "_", request.node.name)
    folder.mkdir()
    (folder / "train.py").write_text(SOURCE)
    return folder


SERVER = ClientServerConfig(server_command=[sys.executable, "-m", "gpulint", "server"])


async def start(lsp_client: LanguageClient, workspace: Path, editor: str) -> None:
    lsp_client.registrations = []

    @lsp_client.feature(types.CLIENT_REGISTER_CAPABILITY)
    def register(params: types.RegistrationParams) -> None:
        lsp_client.registrations.extend(params.registrations)

    await lsp_client.initialize_session(types.InitializeParams(
        capabilities=client_capabilities(editor), root_uri=workspace.as_uri(),
        workspace_folders=[types.WorkspaceFolder(uri=workspace.as_uri(), name="ws")]))


@pytest_lsp.fixture(config=SERVER, scope="module")
async def client(lsp_client: LanguageClient, root: Path):
    await start(lsp_client, root, "visual-studio-code")  # UTF-16 positions, watches files for servers
    yield
    await lsp_client.shutdown_session()


@pytest_lsp.fixture(config=SERVER, scope="module")
async def neovim(lsp_client: LanguageClient, root: Path):
    await start(lsp_client, root, "neovim")  # offers UTF-8 positions first, so pygls agrees on UTF-8
    yield
    await lsp_client.shutdown_session()


def apply_edits(text: str, edits: list[types.TextEdit]) -> str:
    """Apply LSP edits (UTF-16 positions) as an editor would."""
    lines = text.splitlines(keepends=True)

    def offset(pos: types.Position) -> int:
        before = sum(len(line) for line in lines[: pos.line])
        line = lines[pos.line] if pos.line < len(lines) else ""
        units, chars = 0, 0
        while units < pos.character and chars < len(line):
            units += len(line[chars].encode("utf-16-le")) // 2
            chars += 1
        return before + chars

    for edit in sorted(edits, key=lambda e: (e.range.start.line, e.range.start.character), reverse=True):
        text = text[: offset(edit.range.start)] + edit.new_text + text[offset(edit.range.end):]
        lines = text.splitlines(keepends=True)
    return text


async def published(client: LanguageClient, path: Path) -> list[types.Diagnostic]:
    """The next diagnostics the server publishes for `path` (other files' are let pass)."""
    while (await client.wait_for_notification(types.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS)).uri != path.as_uri():
        pass
    return client.diagnostics[path.as_uri()]


async def open_document(client: LanguageClient, path: Path, text: str, version: int = 1,
                        language: str = "python"):
    client.text_document_did_open(types.DidOpenTextDocumentParams(text_document=types.TextDocumentItem(
        uri=path.as_uri(), language_id=language, version=version, text=text)))
    return await published(client, path)


async def change(client: LanguageClient, path: Path, text: str, version: int):
    client.text_document_did_change(types.DidChangeTextDocumentParams(
        text_document=types.VersionedTextDocumentIdentifier(uri=path.as_uri(), version=version),
        content_changes=[types.TextDocumentContentChangeWholeDocument(text=text)]))


async def test_diagnostics_on_open_with_codes_and_ranges(client: LanguageClient, workspace: Path):
    found = await open_document(client, workspace / "train.py", SOURCE)
    by_code = {d.code: d for d in found}
    assert set(by_code) == {"GPU101", "GPU110", "GPU201"}
    item = by_code["GPU101"]
    # print("🚀", loss.item()): the rocket is two UTF-16 units, so the call starts at character 16
    assert (item.range.start.line, item.range.start.character, item.range.end.character) == (9, 16, 27)
    assert item.severity == types.DiagnosticSeverity.Warning and item.source == "gpulint"
    assert item.code_description.href.endswith("item-in-loop")


async def test_python_scripts_without_a_suffix_and_only_python(client, workspace):
    script = workspace / "train"  # `#!/usr/bin/env python`, no .py: the editor says it is Python
    assert {d.code for d in await open_document(client, script, SOURCE)} == {"GPU101", "GPU110", "GPU201"}
    notes = workspace / "notes.txt"
    client.text_document_did_open(types.DidOpenTextDocumentParams(text_document=types.TextDocumentItem(
        uri=notes.as_uri(), language_id="plaintext", version=1, text=SOURCE)))
    await open_document(client, workspace / "after.py", "x = 1\n")  # the server has handled notes.txt by now
    assert notes.as_uri() not in client.diagnostics


async def test_positions_in_the_encoding_the_editor_chose(neovim: LanguageClient, workspace: Path):
    found = await open_document(neovim, workspace / "train.py", SOURCE)
    item = next(d for d in found if d.code == "GPU101")
    # In UTF-8 the rocket is four bytes: `.item()` call starts at byte 18 and ends at byte 29.
    assert (item.range.start.line, item.range.start.character, item.range.end.character) == (9, 18, 29)


async def test_save_lints_the_buffer_at_once(client, workspace):
    path = workspace / "train.py"
    await open_document(client, path, SOURCE)
    edited = SOURCE.replace("    torch.cuda.empty_cache()\n", "")
    await change(client, path, edited, 2)
    client.text_document_did_save(types.DidSaveTextDocumentParams(
        text_document=types.TextDocumentIdentifier(uri=path.as_uri())))
    await published(client, path)
    # The buffer, not the file on disk (which still has the empty_cache call), and without the debounce wait.
    assert {d.code for d in client.diagnostics[path.as_uri()]} == {"GPU101", "GPU201"}


async def test_unsaved_buffer_is_linted_and_bursts_settle_on_the_last_version(client, workspace):
    path = workspace / "train.py"
    await open_document(client, path, SOURCE)
    for version in range(2, 32):  # 30 rapid edits; the last one removes the finding
        text = SOURCE if version < 31 else SOURCE.replace('print("🚀", loss.item())', "pass")
        await change(client, path, text, version)
    for _ in range(5):
        if "GPU101" not in {d.code for d in await published(client, path)}:
            break
    assert {d.code for d in client.diagnostics[path.as_uri()]} == {"GPU110", "GPU201"}
    assert path.read_text() == SOURCE  # the file on disk was never the input


async def test_quick_fix_gives_the_engines_text(client, workspace):
    path = workspace / "train.py"
    found = await open_document(client, path, SOURCE)
    target = next(d for d in found if d.code == "GPU201")
    actions = await client.text_document_code_action_async(types.CodeActionParams(
        text_document=types.TextDocumentIdentifier(uri=path.as_uri()), range=target.range,
        context=types.CodeActionContext(diagnostics=[target])))
    fix = next(a for a in actions if "pin_memory" in a.title)
    assert fix.kind == types.CodeActionKind.QuickFix and fix.is_preferred
    fixed = apply_edits(SOURCE, fix.edit.changes[path.as_uri()])
    expected = lint_source(SOURCE, "train.py", frozenset({"GPU201"}), fix=FixMode.SAFE).source
    assert fixed == expected
    unsafe = await client.text_document_code_action_async(types.CodeActionParams(
        text_document=types.TextDocumentIdentifier(uri=path.as_uri()),
        range=next(d for d in found if d.code == "GPU110").range, context=types.CodeActionContext(diagnostics=[])))
    titles = [a.title for a in unsafe]
    assert any("unsafe" in t and "empty_cache" in t for t in titles)


async def test_noqa_action(client, workspace):
    path = workspace / "train.py"
    found = await open_document(client, path, SOURCE)
    target = next(d for d in found if d.code == "GPU101")
    actions = await client.text_document_code_action_async(types.CodeActionParams(
        text_document=types.TextDocumentIdentifier(uri=path.as_uri()), range=target.range,
        context=types.CodeActionContext(diagnostics=[target])))
    noqa = next(a for a in actions if a.title == "Disable GPU101 for this line")
    fixed = apply_edits(SOURCE, noqa.edit.changes[path.as_uri()])
    assert '    print("🚀", loss.item())  # noqa: GPU101\n' in fixed
    assert not [d for d in lint_source(fixed, "t.py", ALL).diagnostics if d.code == "GPU101"]


async def test_noqa_action_extends_an_existing_noqa_comment(client, workspace):
    path = workspace / "train.py"
    text = SOURCE.replace('print("🚀", loss.item())', 'print("🚀", loss.item())  # noqa: GPU110')
    found = await open_document(client, path, text)
    target = next(d for d in found if d.code == "GPU101")
    actions = await client.text_document_code_action_async(types.CodeActionParams(
        text_document=types.TextDocumentIdentifier(uri=path.as_uri()), range=target.range,
        context=types.CodeActionContext(diagnostics=[target])))
    noqa = next(a for a in actions if a.title == "Disable GPU101 for this line")
    fixed = apply_edits(text, noqa.edit.changes[path.as_uri()])
    assert '    print("🚀", loss.item())  # noqa: GPU110, GPU101\n' in fixed


@pytest.mark.parametrize("newline", ["\r\n", "\r"])
async def test_fixes_in_files_with_other_line_endings_and_no_final_newline(client, workspace, newline):
    path = workspace / "train.py"
    text = SOURCE.rstrip("\n").replace("\n", newline)  # the last line (empty_cache) has no line break
    found = await open_document(client, path, text)
    last = next(d for d in found if d.code == "GPU110")
    actions = await client.text_document_code_action_async(types.CodeActionParams(
        text_document=types.TextDocumentIdentifier(uri=path.as_uri()), range=last.range,
        context=types.CodeActionContext(diagnostics=[last])))
    fix = next(a for a in actions if "empty_cache" in a.title)
    assert all(e.range.end.line <= 10 for e in fix.edit.changes[path.as_uri()])  # inside the document
    assert apply_edits(text, fix.edit.changes[path.as_uri()]) == \
        lint_source(text, "train.py", frozenset({"GPU110"}), fix=FixMode.UNSAFE).source
    actions = await client.text_document_code_action_async(types.CodeActionParams(
        text_document=types.TextDocumentIdentifier(uri=path.as_uri()),
        range=types.Range(start=types.Position(line=0, character=0), end=types.Position(line=0, character=0)),
        context=types.CodeActionContext(diagnostics=[], only=["source.fixAll"])))
    assert apply_edits(text, actions[0].edit.changes[path.as_uri()]) == \
        lint_source(text, "train.py", ALL, fix=FixMode.SAFE).source


async def test_fix_all(client, workspace):
    path = workspace / "train.py"
    await open_document(client, path, SOURCE)
    actions = await client.text_document_code_action_async(types.CodeActionParams(
        text_document=types.TextDocumentIdentifier(uri=path.as_uri()),
        range=types.Range(start=types.Position(line=0, character=0), end=types.Position(line=0, character=0)),
        context=types.CodeActionContext(diagnostics=[], only=["source.fixAll.gpulint"])))
    assert [a.kind for a in actions] == ["source.fixAll.gpulint"]
    fixed = apply_edits(SOURCE, actions[0].edit.changes[path.as_uri()])
    assert fixed == lint_source(SOURCE, "train.py", ALL, fix=FixMode.SAFE).source
    assert "empty_cache" in fixed  # the unsafe fix is not part of fix-all


async def test_hover_shows_the_rule_docs(client, workspace):
    path = workspace / "train.py"
    found = await open_document(client, path, SOURCE)
    target = next(d for d in found if d.code == "GPU110")
    hover = await client.text_document_hover_async(types.HoverParams(
        text_document=types.TextDocumentIdentifier(uri=path.as_uri()), position=target.range.start))
    assert hover.contents.value.startswith("GPU110 `empty-cache-in-loop`")
    assert "## Fix safety" in hover.contents.value


async def test_syntax_error_buffer_keeps_the_server_alive(client, workspace):
    path = workspace / "train.py"
    await open_document(client, path, SOURCE)
    await change(client, path, SOURCE + "for x in :\n", 2)
    broken = await published(client, path)
    assert [d.code for d in broken] == ["GPU001"] and broken[0].severity == types.DiagnosticSeverity.Error
    await change(client, path, SOURCE, 3)
    assert {d.code for d in await published(client, path)} == {"GPU101", "GPU110", "GPU201"}


async def test_config_is_read_and_reloaded(client, workspace):
    path = workspace / "train.py"
    config = workspace / "pyproject.toml"
    config.write_text('[tool.gpulint]\nignore = ["GPU110"]\n')
    found = await open_document(client, path, SOURCE)
    assert "GPU110" not in {d.code for d in found}
    config.write_text('[tool.gpulint]\nignore = ["GPU101"]\n')
    client.workspace_did_change_watched_files(types.DidChangeWatchedFilesParams(changes=[types.FileEvent(
        uri=config.as_uri(), type=types.FileChangeType.Changed)]))
    assert {d.code for d in await published(client, path)} == {"GPU110", "GPU201"}


async def test_the_server_asks_to_watch_config_files(client, workspace):
    await open_document(client, workspace / "train.py", SOURCE)  # by now the registration has arrived
    watchers = [w for r in client.registrations if r.method == types.WORKSPACE_DID_CHANGE_WATCHED_FILES
                for w in r.register_options["watchers"]]
    assert {w["globPattern"] for w in watchers} >= {"**/pyproject.toml", "**/gpulint.toml"}


async def test_an_edited_config_applies_at_the_next_lint_without_a_watcher(neovim, workspace):
    path = workspace / "train.py"
    config = workspace / "gpulint.toml"
    config.write_text('ignore = ["GPU110"]\n')
    assert "GPU110" not in {d.code for d in await open_document(neovim, path, SOURCE)}
    config.write_text('ignore = ["GPU101"]\n')
    os.utime(config, ns=(config.stat().st_atime_ns, config.stat().st_mtime_ns + 10**9))
    await change(neovim, path, SOURCE, 2)  # Neovim (here) cannot watch files: no event, just the next edit
    assert {d.code for d in await published(neovim, path)} == {"GPU110", "GPU201"}

