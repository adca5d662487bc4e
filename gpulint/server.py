"""`gpulint server`: the Language Server Protocol over stdio (pygls), for editors.

It lints the editor's buffer (not the file on disk) shortly after each change, offers each fix as a quick fix,
a `# noqa` action and a fix-all action, and shows a rule's documentation on hover. It never runs user code.
"""

from __future__ import annotations

import asyncio
import logging
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Optional

from lsprotocol import types
from pygls.lsp.server import LanguageServer
from pygls.uris import to_fs_path

from gpulint import __version__
from gpulint import suppression
from gpulint.config import ConfigError, Settings, find_config, load
from gpulint.diagnostics import Applicability, Diagnostic, FixMode
from gpulint.fixes import edits_for
from gpulint.rule import DOCS_URL, all_rules
from gpulint.runner import lint_source

DEBOUNCE_SECONDS = 0.2
FIX_ALL_KIND = "source.fixAll.gpulint"
CONFIG_NAMES = ("pyproject.toml", "gpulint.toml", ".gpulint.toml")
_NOQA = re.compile(r"#\s*noqa(?::\s*(?P<codes>[A-Z]+[0-9]+(?:\s*,?\s*[A-Z]+[0-9]+)*))?", re.IGNORECASE)

log = logging.getLogger(__name__)


@dataclass
class Linted:
    version: Optional[int]
    source: str
    diagnostics: list[Diagnostic]
    module: Optional[object] = None  # the syntax tree the fixes refer to

    def edits(self, d: Diagnostic):
        """The fix's edits, computed when first asked for: on a large file with many fixable findings,
        computing them all at every lint would take seconds (each is the whole module fixed and diffed)."""
        if d.fix is not None and not d.edits and self.module is not None:
            d.edits = edits_for(d, self.module, self.source)
        return d.edits


class GpulintServer(LanguageServer):
    def __init__(self) -> None:
        super().__init__("gpulint", __version__)
        self.linted: dict[str, Linted] = {}
        self.pending: dict[str, asyncio.Task] = {}
        # (config file, its mtime) -> settings: an edited config is read again even if no editor said so
        self._settings: dict[tuple[Optional[Path], int], Settings] = {}
        self._reported_config_errors: set[str] = set()

    # -- settings ------------------------------------------------------------------------------------------
    def settings_for(self, path: Path) -> Settings:
        config = find_config(path.parent if path.parent.exists() else Path.cwd())
        try:
            key = (config, config.stat().st_mtime_ns if config is not None else 0)
        except OSError:
            key = (config, -1)
        if key not in self._settings:
            try:
                self._settings[key] = load(config, cwd=path.parent)
            except ConfigError as exc:
                if str(exc) not in self._reported_config_errors:
                    self._reported_config_errors.add(str(exc))
                    self.window_show_message(types.ShowMessageParams(
                        type=types.MessageType.Error, message=f"gpulint: {exc} (using defaults)"))
                self._settings[key] = Settings(root=path.parent)
        return self._settings[key]

    def reload_settings(self) -> None:
        self._settings.clear()
        self._reported_config_errors.clear()
        for uri in list(self.linted):
            self.lint_now(uri)

    # -- linting -------------------------------------------------------------------------------------------
    def lint_now(self, uri: str) -> None:
        document = self.workspace.get_text_document(uri)
        path = Path(to_fs_path(uri) or "untitled.py")
        if path.suffix not in (".py", ".pyi") and document.language_id != "python":
            return  # a config file or a notebook the editor opened; scripts without a suffix still count
        source = document.source
        try:
            settings = self.settings_for(path)
            result = lint_source(source, str(path), settings.enabled_codes(path),
                                 report_periodic=settings.report_periodic)
            found = result.diagnostics
            for error in result.errors:
                self.window_log_message(types.LogMessageParams(type=types.MessageType.Warning,
                                                               message=f"gpulint: {path}: {error}"))
        except Exception as exc:  # the server must outlive any bug of ours
            log.exception("linting %s failed", uri)
            self.window_log_message(types.LogMessageParams(
                type=types.MessageType.Error, message=f"gpulint: internal error on {path}: {exc!r}"))
            return
        self.linted[uri] = Linted(document.version, source, found, result.module)
        text = self.text(source)
        self.text_document_publish_diagnostics(types.PublishDiagnosticsParams(
            uri=uri, version=document.version, diagnostics=[to_lsp(d, text) for d in found]))

    def text(self, source: str) -> "Text":
        return Text(source, self.workspace.position_codec.client_num_units)

    def lint_later(self, uri: str) -> None:
        """Debounce: a burst of edits is linted once, at its last version."""
        task = self.pending.pop(uri, None)
        if task is not None:
            task.cancel()

        async def run() -> None:
            await asyncio.sleep(DEBOUNCE_SECONDS)
            self.pending.pop(uri, None)
            self.lint_now(uri)

        self.pending[uri] = asyncio.ensure_future(run())

    def current(self, uri: str) -> Optional[Linted]:
        """Findings for the buffer as it is now (lint it first if an edit is still waiting)."""
        document = self.workspace.get_text_document(uri)
        linted = self.linted.get(uri)
        if linted is None or linted.source != document.source:
            task = self.pending.pop(uri, None)
            if task is not None:
                task.cancel()
            self.lint_now(uri)
            linted = self.linted.get(uri)
        return linted


# -- conversions -------------------------------------------------------------------------------------------
_LINE_BREAK = re.compile(r"\r\n|\r|\n")


class Text:
    """A buffer as LSP sees it: lines end at LF, CRLF or CR only (not at the form feeds and other breaks that
    str.splitlines knows), columns count the code units the client and server agreed on (UTF-16 by default,
    UTF-8 for Neovim and Helix)."""

    def __init__(self, source: str, units) -> None:
        self.source = source
        self.lines = _LINE_BREAK.split(source)  # "a\n" -> ["a", ""]: the empty last line is a real position
        self.units = units

    def position(self, row: int, column: int) -> types.Position:
        """1-based row and code-point column -> an LSP position, kept inside the document."""
        if row > len(self.lines):
            return self.end()
        line = self.lines[max(row - 1, 0)]
        return types.Position(line=max(row - 1, 0), character=self.units(line[: max(column - 1, 0)]))

    def end(self) -> types.Position:
        return types.Position(line=len(self.lines) - 1, character=self.units(self.lines[-1]))

    def whole(self) -> types.Range:
        return types.Range(start=types.Position(line=0, character=0), end=self.end())


def lsp_range(d: Diagnostic, text: Text) -> types.Range:
    return types.Range(start=text.position(d.location.row, d.location.column),
                       end=text.position(d.end_location.row, d.end_location.column))


def to_lsp(d: Diagnostic, text: Text) -> types.Diagnostic:
    return types.Diagnostic(
        range=lsp_range(d, text),
        message=d.message,
        severity=types.DiagnosticSeverity.Error if d.code == "GPU001" else types.DiagnosticSeverity.Warning,
        code=d.code,
        code_description=types.CodeDescription(href=DOCS_URL.format(name=d.name)),
        source="gpulint",
        data={"fix": d.fix.applicability.value if d.fix else None},
    )


def _overlaps(a: types.Range, b: types.Range) -> bool:
    def key(p: types.Position):
        return (p.line, p.character)

    return key(a.start) <= key(b.end) and key(b.start) <= key(a.end)


def _line_edits(d: Diagnostic, text: Text) -> list[types.TextEdit]:
    """The engine's line-based edits for this one fix (the fix applied alone to the buffer's text)."""
    return [types.TextEdit(range=types.Range(start=text.position(e.location.row, 1),
                                             end=text.position(e.end_location.row, 1)),
                           new_text=e.content) for e in d.edits]


def noqa_edit(d: Diagnostic, text: Text) -> Optional[types.TextEdit]:
    """Add `# noqa: CODE` to the finding's first line (or its last, where the first ends in a backslash),
    merged into a `# noqa: ...` already there. None where a comment cannot go or would change nothing."""
    for row in dict.fromkeys((d.location.row, d.end_location.row)):
        if not 0 < row <= len(text.lines) or text.lines[row - 1].rstrip().endswith("\\"):
            continue
        line = text.lines[row - 1]
        match = _NOQA.search(line)
        if match and match.group("codes") is None:
            return None  # a bare noqa already silences everything
        if match:
            codes = [c.upper() for c in re.findall(r"[A-Z]+[0-9]+", match.group("codes"), re.IGNORECASE)]
            if d.code in codes:
                return None
            new_line = line[: match.start()] + f"# noqa: {', '.join([*codes, d.code])}" + line[match.end():]
        else:
            new_line = line.rstrip() + f"  # noqa: {d.code}"
        # The comment must really be a comment (not the inside of a string that spans lines).
        lines = list(text.lines)
        lines[row - 1] = new_line
        if not suppression.parse("\n".join(lines)).suppresses(d.code, (row,)):
            continue
        return types.TextEdit(range=types.Range(start=text.position(row, 1), end=text.position(row, len(line) + 1)),
                              new_text=new_line)
    return None


# -- the server --------------------------------------------------------------------------------------------
def build() -> GpulintServer:
    server = GpulintServer()

    @server.feature(types.INITIALIZED)
    async def initialized(ls: GpulintServer, params: types.InitializedParams) -> None:
        """Ask the editor to tell us when a config file changes (where it can watch files for us)."""
        workspace_caps = ls.client_capabilities.workspace
        watch = workspace_caps.did_change_watched_files if workspace_caps else None
        if not (watch and watch.dynamic_registration):
            return  # settings are still re-read when a config file's mtime changes, at the next lint
        options = types.DidChangeWatchedFilesRegistrationOptions(
            watchers=[types.FileSystemWatcher(glob_pattern=f"**/{name}") for name in CONFIG_NAMES])
        try:
            await ls.client_register_capability_async(types.RegistrationParams(registrations=[types.Registration(
                id="gpulint-config-watcher", method=types.WORKSPACE_DID_CHANGE_WATCHED_FILES,
                register_options=options)]))
        except Exception as exc:  # an editor that refuses: fine, see above
            log.info("file watcher registration refused: %s", exc)

    @server.feature(types.TEXT_DOCUMENT_DID_OPEN)
    def did_open(ls: GpulintServer, params: types.DidOpenTextDocumentParams) -> None:
        ls.lint_now(params.text_document.uri)

    @server.feature(types.TEXT_DOCUMENT_DID_CHANGE)
    def did_change(ls: GpulintServer, params: types.DidChangeTextDocumentParams) -> None:
        ls.lint_later(params.text_document.uri)

    @server.feature(types.TEXT_DOCUMENT_DID_SAVE)
    def did_save(ls: GpulintServer, params: types.DidSaveTextDocumentParams) -> None:
        path = Path(to_fs_path(params.text_document.uri) or "")
        if path.name in CONFIG_NAMES:
            ls.reload_settings()
        else:
            ls.lint_now(params.text_document.uri)

    @server.feature(types.TEXT_DOCUMENT_DID_CLOSE)
    def did_close(ls: GpulintServer, params: types.DidCloseTextDocumentParams) -> None:
        uri = params.text_document.uri
        ls.linted.pop(uri, None)
        task = ls.pending.pop(uri, None)
        if task is not None:
            task.cancel()
        ls.text_document_publish_diagnostics(types.PublishDiagnosticsParams(uri=uri, diagnostics=[]))

    @server.feature(types.WORKSPACE_DID_CHANGE_WATCHED_FILES)
    def watched(ls: GpulintServer, params: types.DidChangeWatchedFilesParams) -> None:
        if any(Path(to_fs_path(c.uri) or "").name in CONFIG_NAMES for c in params.changes):
            ls.reload_settings()

    @server.feature(types.TEXT_DOCUMENT_CODE_ACTION, types.CodeActionOptions(
        code_action_kinds=[types.CodeActionKind.QuickFix, types.CodeActionKind.SourceFixAll, FIX_ALL_KIND]))
    def code_action(ls: GpulintServer, params: types.CodeActionParams) -> list[types.CodeAction]:
        uri = params.text_document.uri
        linted = ls.current(uri)
        if linted is None:
            return []
        text = ls.text(linted.source)
        only = params.context.only
        actions: list[types.CodeAction] = []
        wants_quickfix = not only or any(k.startswith(types.CodeActionKind.QuickFix) for k in only)
        if wants_quickfix:
            for d in linted.diagnostics:
                if not _overlaps(lsp_range(d, text), params.range):
                    continue
                lsp_d = to_lsp(d, text)
                if d.fix is not None and linted.edits(d):
                    unsafe = d.fix.applicability is Applicability.UNSAFE
                    actions.append(types.CodeAction(
                        title=f"{d.fix.message} ({d.code}{', unsafe' if unsafe else ''})",
                        kind=types.CodeActionKind.QuickFix, diagnostics=[lsp_d], is_preferred=not unsafe,
                        edit=types.WorkspaceEdit(changes={uri: _line_edits(d, text)})))
                edit = noqa_edit(d, text)
                if edit is not None:
                    actions.append(types.CodeAction(
                        title=f"Disable {d.code} for this line", kind=types.CodeActionKind.QuickFix,
                        diagnostics=[lsp_d], edit=types.WorkspaceEdit(changes={uri: [edit]})))
        wants_fix_all = not only or any(k in (types.CodeActionKind.Source, types.CodeActionKind.SourceFixAll,
                                              FIX_ALL_KIND) for k in only)
        if wants_fix_all and any(d.fix is not None and d.fix.applicability is Applicability.SAFE
                                 for d in linted.diagnostics):
            path = Path(to_fs_path(uri) or "untitled.py")
            settings = ls.settings_for(path)
            fixed = lint_source(linted.source, str(path), settings.enabled_codes(path),
                                report_periodic=settings.report_periodic, fix=FixMode.SAFE).source
            if fixed != linted.source:
                actions.append(types.CodeAction(
                    title="gpulint: fix all safe findings", kind=FIX_ALL_KIND,
                    edit=types.WorkspaceEdit(changes={uri: [types.TextEdit(range=text.whole(), new_text=fixed)]})))
        return actions

    @server.feature(types.TEXT_DOCUMENT_HOVER)
    def hover(ls: GpulintServer, params: types.HoverParams) -> Optional[types.Hover]:
        linted = ls.current(params.text_document.uri)
        if linted is None:
            return None
        text = ls.text(linted.source)
        here = types.Range(start=params.position, end=params.position)
        rules = all_rules()
        for d in linted.diagnostics:
            if d.code in rules and _overlaps(lsp_range(d, text), here):
                return types.Hover(contents=types.MarkupContent(kind=types.MarkupKind.Markdown,
                                                                value=rules[d.code].documentation()),
                                   range=lsp_range(d, text))
        return None

    return server


def serve() -> None:
    build().start_io()
