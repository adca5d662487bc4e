"""`gpulint server` end to end: a real LSP client (pytest-lsp) talks to it over stdio.

One server serves the whole module (starting one costs ~1.5 s); each test uses its own document.
"""

from __future__ import annotations

import asyncio
import os
import sys
import textwrap
from pathlib import Path

import pytest

pytest.importorskip("pygls")
pytest_lsp = pytest.importorskip("pytest_lsp")

from lsprotocol import types  # noqa: E402
from pytest_lsp import ClientServerConfig, LanguageClient, client_capabilities  # noqa: E402
from pytest_lsp import make_test_lsp_client  # noqa: E402

from gpulint.diagnostics import FixMode  # noqa: E402
from gpulint.editing import lsp_lines  # noqa: E402
from gpulint.rule import all_rules  # noqa: E402
from gpulint.runner import lint_source  # noqa: E402

pytestmark = pytest.mark.asyncio(loop_scope="module")

# A form feed in a comment (str.splitlines breaks there, LSP does not) and a rocket (two UTF-16 units):
# both would shift positions if the server counted lines or columns the wrong way.
SOURCE = textwrap.dedent("""\
    import torch
    from torch.utils.data import DataLoader
    # ---- setup ----\x0c
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
WAIT = 60  # seconds: reached only when the server never publishes


def make_client() -> LanguageClient:
    client = make_test_lsp_client()
    client.registrations = []

    @client.feature(types.CLIENT_REGISTER_CAPABILITY)
    def register(client: LanguageClient, params: types.RegistrationParams) -> None:
        client.registrations.extend(params.registrations)

    return client


@pytest.fixture(scope="module")
def workspace(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("ws")


@pytest_lsp.fixture(scope="module", config=ClientServerConfig(
    server_command=[sys.executable, "-m", "gpulint", "server"], client_factory=make_client))
async def client(lsp_client: LanguageClient, workspace: Path):
    await lsp_client.initialize_session(types.InitializeParams(
        capabilities=client_capabilities("visual-studio-code"), root_uri=workspace.as_uri(),
        workspace_folders=[types.WorkspaceFolder(uri=workspace.as_uri(), name="ws")]))
    yield
    await lsp_client.shutdown_session()


def apply_edits(text: str, edits: list[types.TextEdit]) -> str:
    """Apply LSP edits (UTF-16 positions, lines split as LSP splits them) as an editor would."""
    def offset(pos: types.Position) -> int:
        lines = lsp_lines(text)
        before = sum(len(line) for line in lines[: pos.line])
        line = lines[pos.line] if pos.line < len(lines) else ""
        units, chars = 0, 0
        while units < pos.character and chars < len(line):
            units += len(line[chars].encode("utf-16-le")) // 2
            chars += 1
        return before + chars

    for edit in sorted(edits, key=lambda e: (e.range.start.line, e.range.start.character), reverse=True):
        text = text[: offset(edit.range.start)] + edit.new_text + text[offset(edit.range.end):]
    return text


def edits_of(action: types.CodeAction, uri: str) -> list[types.TextEdit]:
    (change,) = action.edit.document_changes
    assert change.text_document.uri == uri
    return change.edits


async def diagnostics_after(client: LanguageClient, uri: str, send) -> list[types.Diagnostic]:
    """Send a notification, then wait for the diagnostics of `uri` (other documents may publish meanwhile)."""
    client.diagnostics.pop(uri, None)
    send()

    async def published() -> None:
        while uri not in client.diagnostics:
            await client.wait_for_notification(types.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS)

    await asyncio.wait_for(published(), WAIT)  # a server that never publishes fails the test, not hangs it
    return client.diagnostics[uri]


async def open_document(client: LanguageClient, path: Path, text: str = SOURCE) -> list[types.Diagnostic]:
    return await diagnostics_after(client, path.as_uri(), lambda: client.text_document_did_open(
        types.DidOpenTextDocumentParams(text_document=types.TextDocumentItem(
            uri=path.as_uri(), language_id="python", version=1, text=text))))


def change(client: LanguageClient, path: Path, text: str, version: int) -> None:
    client.text_document_did_change(types.DidChangeTextDocumentParams(
        text_document=types.VersionedTextDocumentIdentifier(uri=path.as_uri(), version=version),
        content_changes=[types.TextDocumentContentChangeWholeDocument(text=text)]))


async def code_actions(client: LanguageClient, path: Path, where: types.Range, only=None):
    return await client.text_document_code_action_async(types.CodeActionParams(
        text_document=types.TextDocumentIdentifier(uri=path.as_uri()), range=where,
        context=types.CodeActionContext(diagnostics=[], only=only)))


async def test_diagnostics_on_open_with_codes_and_ranges(client: LanguageClient, workspace: Path):
    found = await open_document(client, workspace / "open.py")
    by_code = {d.code: d for d in found}
    assert set(by_code) == {"GPU101", "GPU110", "GPU201"}
    item = by_code["GPU101"]
    # print("🚀", loss.item()): the rocket is two UTF-16 units, so the call starts at character 16
    assert (item.range.start.line, item.range.start.character, item.range.end.character) == (9, 16, 27)
    assert item.severity == types.DiagnosticSeverity.Warning and item.source == "gpulint"
    assert item.code_description.href == "docs/rules/GPU101.md"
    loader = by_code["GPU201"].range  # after the form-feed line: still line 5 as the editor counts
    assert (loader.start.line, loader.start.character, loader.end.line, loader.end.character) == (5, 9, 5, 27)


async def test_unsaved_buffer_is_linted_and_bursts_settle_on_the_last_version(client, workspace):
    path = workspace / "burst.py"
    path.write_text(SOURCE)
    await open_document(client, path)
    client.diagnostics.pop(path.as_uri())
    for version in range(2, 32):  # 30 rapid edits; the last one removes the finding
        text = SOURCE if version < 31 else SOURCE.replace('print("🚀", loss.item())', "pass")
        change(client, path, text, version)
    hover = await client.text_document_hover_async(types.HoverParams(  # answered during the burst
        text_document=types.TextDocumentIdentifier(uri=path.as_uri()), position=types.Position(line=0, character=0)))
    assert hover is None
    while path.as_uri() not in client.diagnostics:
        await client.wait_for_notification(types.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS)
    assert {d.code for d in client.diagnostics[path.as_uri()]} == {"GPU110", "GPU201"}
    assert path.read_text() == SOURCE  # the file on disk was never the input


async def test_quick_fixes_give_the_engines_text(client, workspace):
    path = workspace / "quickfix.py"
    found = await open_document(client, path)
    target = next(d for d in found if d.code == "GPU201")
    actions = await code_actions(client, path, target.range)
    fix = next(a for a in actions if "pin_memory" in a.title)
    assert fix.kind == types.CodeActionKind.QuickFix and fix.is_preferred and "(unsafe)" not in fix.title
    fixed = apply_edits(SOURCE, edits_of(fix, path.as_uri()))
    assert fixed == lint_source(SOURCE, "train.py", frozenset({"GPU201"}), fix=FixMode.SAFE).source
    assert fixed != SOURCE

    target = next(d for d in found if d.code == "GPU110")
    unsafe = next(a for a in await code_actions(client, path, target.range) if "(unsafe)" in a.title)
    assert not unsafe.is_preferred
    fixed = apply_edits(SOURCE, edits_of(unsafe, path.as_uri()))
    assert fixed == lint_source(SOURCE, "train.py", frozenset({"GPU110"}), fix=FixMode.UNSAFE).source
    assert "empty_cache" not in fixed


async def test_noqa_action_adds_and_merges(client, workspace):
    path = workspace / "noqa.py"
    text = SOURCE.replace("torch.cuda.empty_cache()", "print(loss.item()); torch.cuda.empty_cache()  # noqa: GPU110")
    found = await open_document(client, path, text)
    rocket = next(d for d in found if d.code == "GPU101" and d.range.start.line == 9)
    noqa = next(a for a in await code_actions(client, path, rocket.range)
                if a.title == "Disable GPU101 for this line")
    fixed = apply_edits(text, edits_of(noqa, path.as_uri()))
    assert '    print("🚀", loss.item())  # noqa: GPU101\n' in fixed
    merged = next(d for d in found if d.code == "GPU101" and d.range.start.line == 10)
    noqa = next(a for a in await code_actions(client, path, merged.range)
                if a.title == "Disable GPU101 for this line")
    fixed = apply_edits(fixed, edits_of(noqa, path.as_uri()))
    assert "torch.cuda.empty_cache()  # noqa: GPU110, GPU101\n" in fixed
    assert not [d for d in lint_source(fixed, "t.py", ALL).diagnostics if d.code == "GPU101"]


async def test_fix_all(client, workspace):
    path = workspace / "fixall.py"
    await open_document(client, path)
    nowhere = types.Range(start=types.Position(line=0, character=0), end=types.Position(line=0, character=0))
    for only in (["source.fixAll.gpulint"], ["source.fixAll"]):
        actions = await code_actions(client, path, nowhere, only=only)
        assert [a.kind for a in actions] == ["source.fixAll.gpulint"]
    fixed = apply_edits(SOURCE, edits_of(actions[0], path.as_uri()))
    assert fixed == lint_source(SOURCE, "train.py", ALL, fix=FixMode.SAFE).source
    assert "pin_memory=True" in fixed and "empty_cache" in fixed  # the unsafe fix is not part of fix-all
    assert not await code_actions(client, path, nowhere, only=["refactor"])


async def test_hover_shows_the_rule_docs(client, workspace):
    path = workspace / "hover.py"
    found = await open_document(client, path)
    target = next(d for d in found if d.code == "GPU110")
    hover = await client.text_document_hover_async(types.HoverParams(
        text_document=types.TextDocumentIdentifier(uri=path.as_uri()), position=target.range.start))
    assert hover.contents.kind == types.MarkupKind.Markdown
    assert hover.contents.value.startswith("GPU110 `empty-cache-in-loop`")
    assert "## Fix safety" in hover.contents.value and hover.range == target.range


async def test_hover_on_a_noqa_code_shows_the_rule_it_silences(client, workspace):
    path = workspace / "hover_noqa.py"
    text = SOURCE.replace("torch.cuda.empty_cache()", "torch.cuda.empty_cache()  # noqa: GPU101, gpu110")
    found = await open_document(client, path, text)
    assert not [d for d in found if d.code == "GPU110"]  # silenced: no finding left to hover
    line = next(i for i, t in enumerate(lsp_lines(text)) if "# noqa" in t)
    column = lsp_lines(text)[line].index("gpu110") + 2
    hover = await client.text_document_hover_async(types.HoverParams(
        text_document=types.TextDocumentIdentifier(uri=path.as_uri()),
        position=types.Position(line=line, character=column)))
    assert hover is not None and hover.contents.value.startswith("GPU110 `empty-cache-in-loop`")
    assert (hover.range.start.character, hover.range.end.character) == (column - 2, column + 4)
    elsewhere = await client.text_document_hover_async(types.HoverParams(
        text_document=types.TextDocumentIdentifier(uri=path.as_uri()), position=types.Position(line=0, character=0)))
    assert elsewhere is None


async def test_syntax_error_buffer_keeps_the_server_alive(client, workspace):
    path = workspace / "broken.py"
    await open_document(client, path)
    broken = await diagnostics_after(client, path.as_uri(), lambda: change(client, path, SOURCE + "for x in :\n", 2))
    assert [d.code for d in broken] == ["GPU001"] and broken[0].severity == types.DiagnosticSeverity.Error
    assert broken[0].range.start.line == 11
    actions = await code_actions(client, path, broken[0].range)
    assert not [a for a in actions if a.title.startswith("Disable")]
    fixed = await diagnostics_after(client, path.as_uri(), lambda: change(client, path, SOURCE, 3))
    assert {d.code for d in fixed} == {"GPU101", "GPU110", "GPU201"}


async def test_config_is_read_and_reloaded(client, workspace):
    assert {r.method for r in client.registrations} == {types.WORKSPACE_DID_CHANGE_WATCHED_FILES}
    project = workspace / "project"
    project.mkdir()
    path = project / "train.py"
    config = project / "pyproject.toml"
    config.write_text('[tool.gpulint]\nignore = ["GPU110"]\n')
    found = await open_document(client, path)
    assert {d.code for d in found} == {"GPU101", "GPU201"}
    config.write_text('[tool.gpulint]\nignore = ["GPU101"]\n')

    def config_changed():
        client.workspace_did_change_watched_files(types.DidChangeWatchedFilesParams(changes=[types.FileEvent(
            uri=config.as_uri(), type=types.FileChangeType.Changed)]))

    assert {d.code for d in await diagnostics_after(client, path.as_uri(), config_changed)} == {"GPU110", "GPU201"}

    # A broken configuration: one error message, the defaults meanwhile, and the server carries on.
    config.write_text('[tool.gpulint]\nselect = ["NOPE"]\n')
    messages = len(client.messages)
    assert {d.code for d in await diagnostics_after(client, path.as_uri(), config_changed)} == \
        {"GPU101", "GPU110", "GPU201"}
    await diagnostics_after(client, path.as_uri(), config_changed)  # the same save reported twice
    shown = client.messages[messages:]
    assert len(shown) == 1 and shown[0].type == types.MessageType.Error and "NOPE" in shown[0].message



TRAIN = textwrap.dedent("""\
    import torch
    import utils
    from helpers2 import report

    device = "cuda"
    model = torch.nn.Linear(4, 2).to(device)
    for step in range(100):
        x = torch.randn(8, 4, device=device)
        loss = model(x).sum()
        loss.backward()
        utils.log_loss(loss)
        report(loss)
""")
SYNCING_HELPER = "def log_loss(loss):\n    print(loss.item())\n"
QUIET_HELPER = "def log_loss(loss):\n    print(loss)\n"


def watched_file(client: LanguageClient, path: Path, kind: types.FileChangeType):
    return lambda: client.workspace_did_change_watched_files(types.DidChangeWatchedFilesParams(
        changes=[types.FileEvent(uri=path.as_uri(), type=kind)]))


def calls_flagged(found: list[types.Diagnostic]) -> list[int]:
    """Lines (1-based) of the helper calls reported as syncing every step."""
    return sorted(d.range.start.line + 1 for d in found if d.code == "GPU112")


async def test_open_documents_are_linted_again_when_a_module_they_import_changes(client, workspace):
    project = workspace / "deps"
    project.mkdir()
    (project / "pyproject.toml").write_text("")
    utils, train = project / "utils.py", project / "train.py"
    utils.write_text(SYNCING_HELPER)
    assert calls_flagged(await open_document(client, train, TRAIN)) == [11]  # `utils.log_loss(loss)`

    # The helper edited in the editor, not saved: train.py's findings follow the buffer.
    await open_document(client, utils, SYNCING_HELPER)
    found = await diagnostics_after(client, train.as_uri(), lambda: change(client, utils, QUIET_HELPER, 2))
    assert calls_flagged(found) == []
    found = await diagnostics_after(client, train.as_uri(), lambda: change(client, utils, SYNCING_HELPER, 3))
    assert calls_flagged(found) == [11]
    # Closed unsaved: the module is the file on disk again; written and saved elsewhere: the file watcher.
    client.text_document_did_close(types.DidCloseTextDocumentParams(
        text_document=types.TextDocumentIdentifier(uri=utils.as_uri())))
    utils.write_text(QUIET_HELPER)
    found = await diagnostics_after(client, train.as_uri(), watched_file(client, utils, types.FileChangeType.Changed))
    assert calls_flagged(found) == []

    # A module created after the server started: `from helpers2 import report` names it from now on.
    (project / "helpers2.py").write_text("def report(x):\n    return x.tolist()\n")
    found = await diagnostics_after(client, train.as_uri(),
                                    watched_file(client, project / "helpers2.py", types.FileChangeType.Created))
    assert calls_flagged(found) == [12]


async def test_saving_a_new_module_counts_for_the_documents_that_import_it(neovim, workspace):
    """Neovim watches no files on Linux: the first save of a new module is what tells the server."""
    project = workspace / "newmodule"
    project.mkdir()
    (project / "pyproject.toml").write_text("")
    (project / "utils.py").write_text(QUIET_HELPER)
    train, helper = project / "train.py", project / "helpers2.py"
    assert calls_flagged(await open_document(neovim, train, TRAIN)) == []
    text = "def report(x):\n    return x.tolist()\n"
    await open_document(neovim, helper, text)  # a new buffer: nothing on disk yet
    helper.write_text(text)
    found = await diagnostics_after(neovim, train.as_uri(), lambda: neovim.text_document_did_save(
        types.DidSaveTextDocumentParams(text_document=types.TextDocumentIdentifier(uri=helper.as_uri()))))
    assert calls_flagged(found) == [12]


@pytest_lsp.fixture(scope="module", config=ClientServerConfig(
    server_command=[sys.executable, "-m", "gpulint", "server"], client_factory=make_client))
async def neovim(lsp_client: LanguageClient, workspace: Path):
    """Neovim offers UTF-8 positions first (pygls agrees on them) and, on Linux, does not watch files."""
    caps = client_capabilities("neovim")
    assert caps.general.position_encodings[0] == types.PositionEncodingKind.Utf8
    await lsp_client.initialize_session(types.InitializeParams(capabilities=caps, root_uri=workspace.as_uri()))
    yield
    await lsp_client.shutdown_session()


async def test_positions_in_the_encoding_the_editor_chose(neovim, workspace):
    found = await open_document(neovim, workspace / "utf8.py")
    item = next(d for d in found if d.code == "GPU101")
    # In UTF-8 the rocket is four bytes: the `.item()` call starts at byte 18 and ends at byte 29.
    assert (item.range.start.line, item.range.start.character, item.range.end.character) == (9, 18, 29)


async def test_an_edited_config_applies_without_a_file_watcher(neovim, workspace):
    project = workspace / "unwatched"
    project.mkdir()
    path, config = project / "train.py", project / "gpulint.toml"
    config.write_text('ignore = ["GPU110"]\n')
    assert {d.code for d in await open_document(neovim, path)} == {"GPU101", "GPU201"}
    assert not neovim.registrations  # nothing to tell the server that the file changes
    config.write_text('ignore = ["GPU101"]\n')
    os.utime(config, ns=(config.stat().st_atime_ns, config.stat().st_mtime_ns + 10**9))
    # The next lint (here: a save with the text unchanged) reads the edited file.
    found = await diagnostics_after(neovim, path.as_uri(), lambda: neovim.text_document_did_save(
        types.DidSaveTextDocumentParams(text_document=types.TextDocumentIdentifier(uri=path.as_uri()))))
    assert {d.code for d in found} == {"GPU110", "GPU201"}


async def test_save_lints_the_buffer_not_the_file(client, workspace):
    path = workspace / "saved.py"
    path.write_text(SOURCE)
    await open_document(client, path)
    change(client, path, SOURCE.replace("    torch.cuda.empty_cache()\n", ""), 2)
    found = await diagnostics_after(client, path.as_uri(), lambda: client.text_document_did_save(
        types.DidSaveTextDocumentParams(text_document=types.TextDocumentIdentifier(uri=path.as_uri()))))
    assert {d.code for d in found} == {"GPU101", "GPU201"}  # the file on disk still has the empty_cache call


async def test_python_without_a_suffix_is_linted_and_other_languages_are_not(client, workspace):
    script = workspace / "train"  # `#!/usr/bin/env python`, no .py: the editor says it is Python
    assert {d.code for d in await open_document(client, script)} == {"GPU101", "GPU110", "GPU201"}
    notes = workspace / "notes.txt"
    client.text_document_did_open(types.DidOpenTextDocumentParams(text_document=types.TextDocumentItem(
        uri=notes.as_uri(), language_id="plaintext", version=1, text=SOURCE)))
    await open_document(client, workspace / "after.py", "x = 1\n")  # the server has handled notes.txt by now
    assert notes.as_uri() not in client.diagnostics


@pytest.mark.parametrize("newline", ["\r\n", "\r"])
async def test_fixes_in_files_with_other_line_endings_and_no_final_newline(client, workspace, newline):
    path = workspace / f"endings{len(newline)}.py"
    text = SOURCE.rstrip("\n").replace("\n", newline)  # the last line (empty_cache) has no line break
    found = await open_document(client, path, text)
    last = next(d for d in found if d.code == "GPU110")
    fix = next(a for a in await code_actions(client, path, last.range) if "(unsafe)" in a.title)
    assert apply_edits(text, edits_of(fix, path.as_uri())) == \
        lint_source(text, "train.py", frozenset({"GPU110"}), fix=FixMode.UNSAFE).source
    nowhere = types.Range(start=types.Position(line=0, character=0), end=types.Position(line=0, character=0))
    [fix_all] = await code_actions(client, path, nowhere, only=["source.fixAll"])
    assert apply_edits(text, edits_of(fix_all, path.as_uri())) == \
        lint_source(text, "train.py", ALL, fix=FixMode.SAFE).source

# A server whose engine raises on one document: the bug is logged, the server lives on.
_FAULTY = ("import gpulint.server as s\n"
           "real = s.lint_input\n"
           "def faulty(source, *args, **kwargs):\n"
           "    if 'BOOM' in source.text:\n"
           "        raise RuntimeError('engine bug')\n"
           "    return real(source, *args, **kwargs)\n"
           "s.lint_input = faulty\n"
           "s.serve()\n")


@pytest_lsp.fixture(scope="module", config=ClientServerConfig(
    server_command=[sys.executable, "-c", _FAULTY], client_factory=make_client))
async def faulty_client(lsp_client: LanguageClient, workspace: Path):
    await lsp_client.initialize_session(types.InitializeParams(
        capabilities=client_capabilities("neovim"), root_uri=workspace.as_uri()))
    yield
    await lsp_client.shutdown_session()


async def test_an_internal_error_is_logged_and_the_server_lives_on(faulty_client: LanguageClient, workspace):
    client = faulty_client
    path = workspace / "faulty.py"
    client.text_document_did_open(types.DidOpenTextDocumentParams(text_document=types.TextDocumentItem(
        uri=path.as_uri(), language_id="python", version=1, text=SOURCE + "# BOOM\n")))
    while not any("engine bug" in m.message for m in client.log_messages):
        await client.wait_for_notification(types.WINDOW_LOG_MESSAGE)
    logged = next(m for m in client.log_messages if "engine bug" in m.message)
    assert logged.type == types.MessageType.Error and "internal error" in logged.message
    assert {d.code for d in await diagnostics_after(client, path.as_uri(), lambda: change(client, path, SOURCE, 2))} \
        == {"GPU101", "GPU110", "GPU201"}
