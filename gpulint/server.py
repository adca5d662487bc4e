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
from gpulint.config import ConfigError, Settings, find_config, load
from gpulint.diagnostics import Applicability, Diagnostic, FixMode
from gpulint.rule import DOCS_URL, all_rules
from gpulint.runner import lint_source

DEBOUNCE_SECONDS = 0.2
FIX_ALL_KIND = "source.fixAll.gpulint"
CONFIG_NAMES = ("pyproject.toml", "gpulint.toml", ".gpulint.toml")
_NOQA = re.compile(r"#\s*noqa(?::\s*(?P<codes>[A-Z]+[0-9]+(?:\s*,\s*[A-Z]+[0-9]+)*))?", re.IGNORECASE)

log = logging.getLogger(__name__)


@dataclass
class Linted:
    version: Optional[int]
    source: str
    diagnostics: list[Diagnostic]


class GpulintServer(LanguageServer):
    def __init__(self) -> None:
        super().__init__("gpulint", __version__)
        self.linted: dict[str, Linted] = {}
        self.pending: dict[str, asyncio.Task] = {}
        self._settings: dict[Optional[Path], Settings] = {}
        self._reported_config_errors: set[str] = set()

    # -- settings ------------------------------------------------------------------------------------------
    def settings_for(self, path: Path) -> Settings:
        config = find_config(path.parent if path.parent.exists() else Path.cwd())
        if config not in self._settings:
            try:
                self._settings[config] = load(config, cwd=path.parent)
            except ConfigError as exc:
                if str(exc) not in self._reported_config_errors:
                    self._reported_config_errors.add(str(exc))
                    self.window_show_message(types.ShowMessageParams(
                        type=types.MessageType.Error, message=f"gpulint: {exc} (using defaults)"))
                self._settings[config] = Settings(root=path.parent)
        return self._settings[config]

    def reload_settings(self) -> None:
        self._settings.clear()
        self._reported_config_errors.clear()
        for uri in list(self.linted):
            self.lint_now(uri)

    # -- linting -------------------------------------------------------------------------------------------
    def lint_now(self, uri: str) -> None:
        document = self.workspace.get_text_document(uri)
        path = Path(to_fs_path(uri) or "untitled.py")
        if path.suffix not in (".py", ".pyi"):
            return
        source = document.source
        try:
            settings = self.settings_for(path)
            result = lint_source(source, str(path), settings.enabled_codes(path),
                                 report_periodic=settings.report_periodic, want_edits=True)
            found = result.diagnostics
            for error in result.errors:
                self.window_log_message(types.LogMessageParams(type=types.MessageType.Warning,
                                                               message=f"gpulint: {path}: {error}"))
        except Exception as exc:  # the server must outlive any bug of ours
            log.exception("linting %s failed", uri)
            self.window_log_message(types.LogMessageParams(
                type=types.MessageType.Error, message=f"gpulint: internal error on {path}: {exc!r}"))
            return
        self.linted[uri] = Linted(document.version, source, found)
        lines = source.splitlines()
        self.text_document_publish_diagnostics(types.PublishDiagnosticsParams(
            uri=uri, version=document.version, diagnostics=[to_lsp(d, lines) for d in found]))

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
def _utf16(line: str, column: int) -> int:
    """1-based code-point column -> 0-based UTF-16 offset, as LSP counts by default."""
    prefix = line[: max(column - 1, 0)]
    return len(prefix.encode("utf-16-le")) // 2


def lsp_range(d: Diagnostic, lines: list[str]) -> types.Range:
    def pos(row: int, column: int) -> types.Position:
        line = lines[row - 1] if 0 < row <= len(lines) else ""
        return types.Position(line=max(row - 1, 0), character=_utf16(line, column))

    return types.Range(start=pos(d.location.row, d.location.column),
                       end=pos(d.end_location.row, d.end_location.column))


def to_lsp(d: Diagnostic, lines: list[str]) -> types.Diagnostic:
    return types.Diagnostic(
        range=lsp_range(d, lines),
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


def _whole_document_edit(source: str, new_text: str) -> types.TextEdit:
    lines = source.split("\n")
    end = types.Position(line=len(lines) - 1, character=len(lines[-1].encode("utf-16-le")) // 2)
    return types.TextEdit(range=types.Range(start=types.Position(line=0, character=0), end=end), new_text=new_text)


def _line_edits(d: Diagnostic) -> list[types.TextEdit]:
    """The engine's line-based edits for this one fix (apply(module, [fix]) against the original text)."""
    return [types.TextEdit(range=types.Range(start=types.Position(line=e.location.row - 1, character=0),
                                             end=types.Position(line=e.end_location.row - 1, character=0)),
                           new_text=e.content) for e in d.edits]


def noqa_edit(d: Diagnostic, lines: list[str]) -> Optional[types.TextEdit]:
    row = d.location.row
    if not 0 < row <= len(lines):
        return None
    line = lines[row - 1]
    match = _NOQA.search(line)
    if match and match.group("codes") is None:
        return None  # a bare noqa already silences everything
    if match:
        codes = [c.strip().upper() for c in match.group("codes").split(",")]
        if d.code in codes:
            return None
        new_line = line[: match.start()] + f"# noqa: {', '.join([*codes, d.code])}" + line[match.end():]
    else:
        new_line = line.rstrip() + f"  # noqa: {d.code}"
    end = len(line.encode("utf-16-le")) // 2
    return types.TextEdit(range=types.Range(start=types.Position(line=row - 1, character=0),
                                            end=types.Position(line=row - 1, character=end)), new_text=new_line)


# -- the server --------------------------------------------------------------------------------------------
def build() -> GpulintServer:
    server = GpulintServer()

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
        lines = linted.source.splitlines()
        only = params.context.only
        actions: list[types.CodeAction] = []
        wants_quickfix = not only or any(k.startswith(types.CodeActionKind.QuickFix) for k in only)
        if wants_quickfix:
            for d in linted.diagnostics:
                if not _overlaps(lsp_range(d, lines), params.range):
                    continue
                lsp_d = to_lsp(d, lines)
                if d.fix is not None and d.edits:
                    unsafe = d.fix.applicability is Applicability.UNSAFE
                    actions.append(types.CodeAction(
                        title=f"{d.fix.message} ({d.code}{', unsafe' if unsafe else ''})",
                        kind=types.CodeActionKind.QuickFix, diagnostics=[lsp_d], is_preferred=not unsafe,
                        edit=types.WorkspaceEdit(changes={uri: _line_edits(d)})))
                edit = noqa_edit(d, lines)
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
                    edit=types.WorkspaceEdit(changes={uri: [_whole_document_edit(linted.source, fixed)]})))
        return actions

    @server.feature(types.TEXT_DOCUMENT_HOVER)
    def hover(ls: GpulintServer, params: types.HoverParams) -> Optional[types.Hover]:
        linted = ls.current(params.text_document.uri)
        if linted is None:
            return None
        lines = linted.source.splitlines()
        here = types.Range(start=params.position, end=params.position)
        rules = all_rules()
        for d in linted.diagnostics:
            if d.code in rules and _overlaps(lsp_range(d, lines), here):
                return types.Hover(contents=types.MarkupContent(kind=types.MarkupKind.Markdown,
                                                                value=rules[d.code].documentation()),
                                   range=lsp_range(d, lines))
        return None

    return server


def serve() -> None:
    build().start_io()
