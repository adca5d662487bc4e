"""`gpulint server`: the Language Server Protocol over stdio (pygls), for editors.

It lints the editor's buffer (not the file on disk) shortly after each change, offers each fix as a quick fix,
a `# noqa` action and a fix-all action, and shows a rule's documentation on hover. It never runs user code.

Linting runs on one worker thread so that the server keeps answering while a large file is analysed; every
message to the client is sent from the event loop.
"""

from __future__ import annotations

import asyncio
import gc
import os
import json
import logging
import threading
import traceback
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Iterator, Optional

from lsprotocol import types
from pygls.exceptions import JsonRpcException, JsonRpcInvalidRequest, JsonRpcParseError
from pygls.lsp.server import LanguageServer
from pygls.protocol import LanguageServerProtocol
from pygls.uris import from_fs_path, to_fs_path

from gpulint import __version__
from gpulint.config import ConfigError, Settings, find_config, load
from gpulint.diagnostics import Applicability, Diagnostic, FixMode
from gpulint.editing import TextChange, lsp_lines, minimal_change, noqa_code_at, spot, with_noqa
from gpulint.files import source_lines
from gpulint.fixes import edits_for
from gpulint import incremental
from gpulint.rule import all_rules, rule_url
from gpulint.pipeline import FileOutcome, Input, content_hash, lint_input
from gpulint.analysis.project import project_for

DEBOUNCE_SECONDS = 0.05  # a burst of keystrokes is linted once; short, so feedback stays well under 200 ms
# Buffers larger than this get one informational diagnostic instead of a lint (the CLI's `max-file-size`
# setting, when there is one, is the place for a configurable limit; this is the default it would have).
MAX_FILE_SIZE = 5 * 1024 * 1024
TOO_LARGE = "file-too-large"  # the code of the one informational diagnostic a too-large buffer gets
CONTENT_CACHE_SIZE = 32  # recent texts whose findings are kept: undo/redo and reopening cost nothing
FIX_ALL_KIND = "source.fixAll.gpulint"
CONFIG_NAMES = ("pyproject.toml", "gpulint.toml", ".gpulint.toml")
PYTHON_SUFFIXES = (".py", ".pyi")

log = logging.getLogger(__name__)


@dataclass
class Linted:
    """The findings for one exact text of a document, and what code actions derived from it (cached)."""

    source: str
    diagnostics: list[Diagnostic]
    lsp: list[types.Diagnostic]
    fixed_all: Optional[str] = None
    settings: Settings = field(default_factory=Settings)
    module: Optional[object] = None  # the syntax tree the diagnostics' fixes refer to
    dependencies: frozenset = frozenset()  # other project modules the findings were computed from


@dataclass(frozen=True)
class _Rejected:
    """A message pygls could not turn into a request or notification (wrong shape, invalid params)."""

    id: object
    error: JsonRpcException
    is_request: bool


def _message_id(data: object) -> object:
    value = data.get("id") if isinstance(data, dict) else None
    return value if isinstance(value, (int, str)) and not isinstance(value, bool) else None


class Protocol(LanguageServerProtocol):
    """pygls' protocol, plus the JSON-RPC 2.0 error replies it leaves out, so that no client waits forever.

    pygls already answers an unknown method with -32601 and a cancelled request with -32800; a message whose
    params do not validate, or that is not a JSON-RPC message at all, it only logs. Here a request gets
    -32602 / -32600 with its id, and a body that is not JSON gets -32700 with id null (GpulintServer's
    report_server_error); a broken notification is logged, as notifications get no reply.
    """

    def reply_error(self, msg_id: object, error: JsonRpcException) -> None:
        """An error reply; `id` is null, not left out, when the request's id could not be read (JSON-RPC 2.0)."""
        self._send_data({"jsonrpc": "2.0", "id": msg_id,
                         "error": {"code": error.code, "message": error.message}})

    def structure_message(self, data):
        try:
            return super().structure_message(data)
        except JsonRpcException as exc:
            return _Rejected(_message_id(data), exc, "id" in data and "method" in data)

    def handle_message(self, message) -> None:
        if isinstance(message, _Rejected):
            if message.is_request:
                self.reply_error(message.id, message.error)
            return
        if not hasattr(message, "jsonrpc"):  # valid JSON, but not an object with "jsonrpc" (a list, a number)
            self.reply_error(_message_id(message), JsonRpcInvalidRequest())
            return
        super().handle_message(message)


class GpulintServer(LanguageServer):
    def __init__(self) -> None:
        # Full sync: pygls applies incremental changes with str.splitlines, which miscounts lines holding a
        # form feed or \u2028; the whole text is cheap next to a parse.
        super().__init__("gpulint", __version__, text_document_sync_kind=types.TextDocumentSyncKind.Full,
                         protocol_cls=Protocol)
        self.linted: dict[str, Linted] = {}
        self.by_content: dict[tuple, Linted] = {}  # (content hash, settings) -> findings, oldest first
        self.pending: dict[str, asyncio.Task] = {}
        self.worker = ThreadPoolExecutor(max_workers=1, thread_name_prefix="gpulint-lint")
        self._settings: dict[Path, Settings] = {}
        self._untitled = Settings()  # for buffers not saved anywhere yet
        self._config_of: dict[Path, Optional[Path]] = {}  # directory -> the config file its settings came from
        self._mtimes: dict[Path, Optional[int]] = {}
        self._config_errors: set[str] = set()  # shown since the last reload
        self._config_errors_before: set[str] = set()  # shown before it: not shown again
        self._overlaid: dict[str, Optional[str]] = {}  # uri -> the buffer text the project model has for it
        self._unsaved_files: set[str] = set()  # documents opened before their file existed (a new module)

    # -- messages -----------------------------------------------------------------------------------------
    def report_server_error(self, error: Exception, source) -> None:
        """pygls calls this when a message body cannot be read: its reply is -32700, id null (JSON-RPC 2.0)."""
        if isinstance(error, (json.JSONDecodeError, UnicodeDecodeError)):
            self.protocol.reply_error(None, JsonRpcParseError())
        super().report_server_error(error, source)

    def log(self, message: str, kind: types.MessageType = types.MessageType.Error) -> None:
        self.window_log_message(types.LogMessageParams(type=kind, message=f"gpulint: {message}"))

    # -- settings ------------------------------------------------------------------------------------------
    def settings_for(self, path: Optional[Path]) -> Settings:
        if path is None:
            return self._untitled
        directory = path.parent
        cached = self._settings.get(directory)
        if cached is not None and _mtime(self._config_of.get(directory)) != self._mtimes.get(directory):
            cached = None  # the config file was edited, and no watcher said so (Neovim on Linux, Helix)
        if cached is None:
            config = None
            try:
                config = find_config(directory if directory.is_dir() else Path.cwd())
                settings = load(config, cwd=directory)
            except ConfigError as exc:
                message = str(exc)
                if message not in self._config_errors | self._config_errors_before:
                    self.window_show_message(types.ShowMessageParams(
                        type=types.MessageType.Error, message=f"gpulint: {message} (using the defaults)"))
                self._config_errors.add(message)
                settings = Settings(root=config.parent if config else directory)
            self._settings[directory] = settings
            self._config_of[directory] = config
            self._mtimes[directory] = _mtime(config)
        return self._settings[directory]

    def reload_settings(self) -> None:
        """A configuration file changed: forget every resolved setting and lint the open documents again.

        An error still present after the reload is not shown again (an editor may report one save twice:
        didSave and a file watcher).
        """
        self._settings.clear()
        self._config_errors_before = self._config_errors
        self._config_errors = set()
        self.linted.clear()
        self.by_content.clear()
        for uri in list(self.workspace.text_documents):
            self.lint_later(uri, delay=0)

    # -- linting -------------------------------------------------------------------------------------------
    def is_python(self, uri: str) -> bool:
        document = self.workspace.text_documents.get(uri)
        if document is None:
            return False
        path = to_fs_path(uri)
        return (path or "").endswith(PYTHON_SUFFIXES) or document.language_id == "python"

    async def run(self, function, *args, stale=None, what: str = ""):
        """`function(*args)` on the worker thread. It is abandoned at its next `incremental.checkpoint()` once
        `stale()` is true or the request awaiting it is cancelled ($/cancelRequest, a newer version's edit):
        it raises `incremental.Cancelled` then, and the log says so (`what` it was)."""
        abandoned = threading.Event()
        loop = asyncio.get_running_loop()

        def call():
            if stale is None:
                return function(*args)
            try:
                with incremental.cancellable(lambda: abandoned.is_set() or stale()):
                    return function(*args)
            except incremental.Cancelled:
                loop.call_soon_threadsafe(self.log, f"abandoned {what}", types.MessageType.Log)
                raise

        try:
            return await loop.run_in_executor(self.worker, call)
        except asyncio.CancelledError:
            abandoned.set()
            raise

    async def lint(self, uri: str) -> Optional[Linted]:
        """Findings for the buffer as it is now; None if it is not an open Python document or linting failed."""
        if not self.is_python(uri):
            return None
        document = self.workspace.get_text_document(uri)
        source = document.source
        fs_path = to_fs_path(uri)
        path = Path(fs_path) if fs_path else None
        settings = self.settings_for(path)
        key = (content_hash(source.encode("utf-8", "surrogatepass")), id(settings))
        cached = self.linted.get(uri)
        if cached is None or cached.source != source or cached.settings is not settings:
            cached = self.by_content.get(key)  # the same text seen before (undo, reopen, another buffer)
        if cached is not None and cached.source == source and cached.settings is settings:
            self.linted[uri] = cached
            return cached
        name = str(path) if path else uri

        def stale() -> bool:  # a newer version arrived, or the document was closed: this lint is wasted
            current = self.workspace.text_documents.get(uri)
            return current is None or current.source != source

        def work():
            self.share_buffers()
            return lint_buffer(source, name, path, settings)

        try:
            result = await self.run(work, stale=stale,
                                    what=f"the lint of {name} (version {document.version}): outdated or not wanted")
        except incremental.Cancelled:
            return None
        except Exception:  # the server must outlive any bug of ours
            self.log(f"internal error while linting {name}:\n{traceback.format_exc()}")
            return None
        for error in result.errors:
            self.log(f"{name}: {error}", types.MessageType.Warning)
        lines = lsp_lines(source)
        units = ascii_fast(self.workspace.position_codec.client_num_units)
        rules = all_rules()
        linted = Linted(source, list(result.diagnostics), [to_lsp(d, lines, units, rules)
                                                           for d in result.diagnostics],
                        settings=settings, module=result.module,
                        dependencies=frozenset(Path(p) for p, _ in result.dependencies))
        self.linted[uri] = linted
        self.by_content[key] = linted
        while len(self.by_content) > CONTENT_CACHE_SIZE:
            self.by_content.pop(next(iter(self.by_content)))
        return linted

    async def publish(self, uri: str) -> None:
        with collection_deferred():
            linted = await self.lint(uri)
            document = self.workspace.text_documents.get(uri)
            # Publish only what matches the buffer now: a newer version has its own lint on the way.
            if linted is None or document is None or document.source != linted.source:
                return
            self.text_document_publish_diagnostics(types.PublishDiagnosticsParams(
                uri=uri, version=document.version, diagnostics=linted.lsp))

    def lint_later(self, uri: str, delay: float = DEBOUNCE_SECONDS) -> None:
        """Debounce: a burst of edits is linted once, at its last version."""
        task = self.pending.pop(uri, None)
        if task is not None:
            task.cancel()

        async def later() -> None:
            await asyncio.sleep(delay)
            try:
                await self.publish(uri)
            except asyncio.CancelledError:
                raise
            except Exception:
                self.log(f"internal error on {uri}:\n{traceback.format_exc()}")
            finally:
                if self.pending.get(uri) is asyncio.current_task():
                    del self.pending[uri]

        self.pending[uri] = asyncio.ensure_future(later())

    def forget(self, uri: str) -> None:
        task = self.pending.pop(uri, None)
        if task is not None:
            task.cancel()
        self.linted.pop(uri, None)
        self._unsaved_files.discard(uri)
        path = _python_path(uri)
        if path is not None and self._overlaid.pop(uri, None) is not None:
            self.run_soon(project_for(path).set_text, path, None)  # the module is the file on disk again

    # -- other modules of the project --------------------------------------------------------------------------
    def run_soon(self, function, *args) -> None:
        """`function(*args)` on the worker thread, after what is queued there (the project model is used there)."""
        self.worker.submit(function, *args)

    def share_buffers(self) -> None:
        """On the worker thread: the project model sees every open Python buffer, not the file on disk, so a
        helper edited in the editor counts in the files that import it before it is saved."""
        for uri, document in list(self.workspace.text_documents.items()):
            path = _python_path(uri)
            source = document.source
            if path is not None and self._overlaid.get(uri) != source:
                project_for(path).set_text(path, source)
                self._overlaid[uri] = source

    def module_changed(self, path: Path, *, created_or_deleted: bool = False) -> None:
        """The module at `path` changed (an edit, a save, a file watcher): lint again the open documents whose
        findings were computed from it. A module created or deleted may change what any import names: then
        the import resolution is forgotten and every open document is linted again."""
        path = path.resolve()
        if created_or_deleted:
            self.run_soon(project_for(path).forget, None)
        else:
            self.run_soon(project_for(path).forget, path)  # a file changed on disk with no buffer open

        def affected(linted: Linted) -> bool:
            return created_or_deleted or path in linted.dependencies

        for key in [key for key, linted in self.by_content.items() if affected(linted)]:
            del self.by_content[key]
        for uri in [uri for uri, linted in self.linted.items() if affected(linted)]:
            del self.linted[uri]
            self.lint_later(uri)

    # -- code actions --------------------------------------------------------------------------------------
    async def with_edits(self, linted: Linted, d: Diagnostic) -> Diagnostic:
        """`d` with the engine's edits for its one fix (apply(module, [fix])), computed when first asked for:
        computing every finding's edits at each lint costs a whole-module fix and diff per finding (seconds on
        a large file with many findings; see benchmarks/lsp_latency.py)."""
        if d.fix is not None and not d.edits and linted.module is not None:
            return replace(d, edits=await self.run(edits_for, d, linted.module, linted.source))
        return d

    async def fix_all(self, uri: str, linted: Linted) -> str:
        if linted.fixed_all is None:
            path = to_fs_path(uri)
            result = await self.run(lint_buffer, linted.source, path or uri, Path(path) if path else None,
                                    linted.settings, FixMode.SAFE, stale=lambda: False,
                                    what=f"fixing all of {path or uri}: the request was cancelled")
            linted.fixed_all = result.text
        return linted.fixed_all

    def edit(self, uri: str, old: str, new: str) -> Optional[types.WorkspaceEdit]:
        change = minimal_change(old, new, self.workspace.position_codec.client_num_units)
        if change is None:
            return None
        document = self.workspace.get_text_document(uri)
        return types.WorkspaceEdit(document_changes=[types.TextDocumentEdit(
            text_document=types.OptionalVersionedTextDocumentIdentifier(uri=uri, version=document.version),
            edits=[to_text_edit(change)])])


_deferring = 0  # publishes under way (on the event loop) that hold the garbage collector off


@contextmanager
def collection_deferred() -> Iterator[None]:
    """Python's cyclic garbage collector off from a lint's start until its diagnostics are sent: a lint
    allocates about a million objects, and the collections they trigger midway (re-scanning what the reuse of
    gpulint.incremental keeps) cost a fifth of a lint on a buffer dense with findings. The collector runs once
    they are sent (on the next allocation, as the thresholds are passed): the same work, after the editor has
    its answer."""
    global _deferring
    _deferring += 1
    if _deferring == 1:
        gc.disable()
    try:
        yield
    finally:
        _deferring -= 1
        if _deferring == 0:
            gc.enable()


def _python_path(uri: str) -> Optional[Path]:
    path = to_fs_path(uri)
    return Path(path).resolve() if path and path.endswith(PYTHON_SUFFIXES) else None


def lint_buffer(source: str, name: str, path: Optional[Path], settings: Settings,
                fix: FixMode = FixMode.NONE) -> FileOutcome:
    """The one place the server calls the linter: an editor's buffer, never written to disk.

    A buffer over MAX_FILE_SIZE is not linted: one informational finding says so (the CLI skips such files).
    """
    size = len(source.encode("utf-8", "surrogatepass"))
    if size > MAX_FILE_SIZE:
        return FileOutcome(path or Path(name), (_too_large(name, size),), text=source)
    return lint_input(Input.from_text(source, name, path), settings, fix, write=False, digests=False)


def _too_large(name: str, size: int) -> Diagnostic:
    return Diagnostic(TOO_LARGE, "file-too-large", f"{Path(name).name} is {size / 1e6:.1f} MB, over the "
                      f"{MAX_FILE_SIZE / 1e6:.0f} MB limit for one file: gpulint does not lint it")


def _mtime(path: Optional[Path]) -> Optional[int]:
    try:
        return path.stat().st_mtime_ns if path is not None else None
    except OSError:
        return None


# -- conversions -------------------------------------------------------------------------------------------
def lsp_range(d: Diagnostic, lines: list[str], units) -> types.Range:
    start = spot(lines, d.location.row, d.location.column, units)
    end = spot(lines, d.end_location.row, d.end_location.column, units)
    return types.Range(start=types.Position(*start), end=types.Position(*end))


def ascii_fast(units):
    """`units` (how many code units of the client's encoding a text takes), answered `len(text)` for ASCII text
    (one unit per character in UTF-8, UTF-16 and UTF-32 alike) without pygls's count character by character."""
    return lambda text: len(text) if text.isascii() else units(text)


def to_lsp(d: Diagnostic, lines: list[str], units, rules: Optional[dict] = None) -> types.Diagnostic:
    rule = (rules if rules is not None else all_rules()).get(d.code)
    if rule is None:  # not a rule's finding: the buffer was not linted (too large)
        return types.Diagnostic(range=lsp_range(d, lines, units), message=d.message, code=d.code,
                                severity=types.DiagnosticSeverity.Information, source="gpulint")
    return types.Diagnostic(
        range=lsp_range(d, lines, units),
        message=d.message,
        severity=types.DiagnosticSeverity.Error if rule is not None and rule.severity.value == "error"
        else types.DiagnosticSeverity.Warning,
        code=d.code,
        code_description=types.CodeDescription(href=rule_url(d.code)),
        source="gpulint",
        data={"fix": d.fix.applicability.value if d.fix else None},
        related_information=[_related(r) for r in d.related] or None,
    )


def _related(r) -> types.DiagnosticRelatedInformation:
    """Where a helper called in the loop pays the cost: a location in another file of the project."""
    where = types.Position(line=max(r.row - 1, 0), character=0)
    uri = from_fs_path(os.path.abspath(r.filename)) or r.filename
    return types.DiagnosticRelatedInformation(location=types.Location(uri=uri, range=types.Range(where, where)),
                                              message=r.message or "the cost is paid here")


def to_text_edit(change: TextChange) -> types.TextEdit:
    return types.TextEdit(range=types.Range(start=types.Position(*change.start), end=types.Position(*change.end)),
                          new_text=change.new_text)


def _touches(a: types.Range, b: types.Range) -> bool:
    def key(p: types.Position):
        return (p.line, p.character)

    return key(a.start) <= key(b.end) and key(b.start) <= key(a.end)


def _engine_fix(source: str, d: Diagnostic) -> str:
    """Rebuild the text after this one fix from the engine's edits (whole lines, split as the engine split)."""
    lines = source_lines(source)
    out: list[str] = []
    cursor = 0
    for e in sorted(d.edits, key=lambda e: e.location.row):
        out.extend(lines[cursor: e.location.row - 1])
        out.append(e.content)
        cursor = e.end_location.row - 1
    out.extend(lines[cursor:])
    return "".join(out)


def rule_docs(rule) -> str:
    """The Markdown that hover shows for a rule (the one place that says where it comes from)."""
    return rule.documentation()


def _noqa_hover(source: str, position: types.Position, units) -> Optional[types.Hover]:
    """Hovering a code in a `# noqa:` comment shows that rule's documentation (it has no finding to hover)."""
    lines = lsp_lines(source)
    line = lines[position.line].rstrip("\r\n") if position.line < len(lines) else ""
    found = noqa_code_at(line, position.character, units)
    rule = all_rules().get(found[0]) if found else None
    if rule is None:
        return None
    return types.Hover(contents=types.MarkupContent(kind=types.MarkupKind.Markdown, value=rule_docs(rule)),
                       range=types.Range(start=types.Position(position.line, found[1]),
                                         end=types.Position(position.line, found[2])))


def _wanted(only: Optional[list[str]], kind: str) -> bool:
    """LSP kinds are hierarchical: asking for `source.fixAll` includes `source.fixAll.gpulint`."""
    return not only or any(kind == k or kind.startswith(f"{k}.") for k in only)


# -- the server --------------------------------------------------------------------------------------------
def build() -> GpulintServer:
    server = GpulintServer()

    @server.feature(types.INITIALIZED)
    async def initialized(ls: GpulintServer, params: types.InitializedParams) -> None:
        watch = ls.client_capabilities.workspace
        if watch and watch.did_change_watched_files and watch.did_change_watched_files.dynamic_registration:
            try:
                await ls.client_register_capability_async(types.RegistrationParams(registrations=[
                    types.Registration(id="gpulint-config", method=types.WORKSPACE_DID_CHANGE_WATCHED_FILES,
                                       register_options=types.DidChangeWatchedFilesRegistrationOptions(
                                           watchers=[types.FileSystemWatcher(glob_pattern=f"**/{name}")
                                                     for name in CONFIG_NAMES + ("*.py",)]))]))
            except Exception as exc:  # a client that cannot watch still gets didSave reloads
                ls.log(f"could not watch configuration files ({exc})", types.MessageType.Info)

    @server.feature(types.TEXT_DOCUMENT_DID_OPEN)
    def did_open(ls: GpulintServer, params: types.DidOpenTextDocumentParams) -> None:
        uri = params.text_document.uri
        path = _python_path(uri)
        if path is not None and not path.exists():
            ls._unsaved_files.add(uri)  # its first save creates a module that imports may name
        ls.lint_later(uri, delay=0)

    @server.feature(types.TEXT_DOCUMENT_DID_CHANGE)
    def did_change(ls: GpulintServer, params: types.DidChangeTextDocumentParams) -> None:
        uri = params.text_document.uri
        ls.lint_later(uri)
        path = _python_path(uri)
        if path is not None:
            ls.module_changed(path)

    @server.feature(types.TEXT_DOCUMENT_DID_SAVE)
    def did_save(ls: GpulintServer, params: types.DidSaveTextDocumentParams) -> None:
        uri = params.text_document.uri
        path = to_fs_path(uri)
        if path and Path(path).name in CONFIG_NAMES:
            ls.reload_settings()
            return
        ls.lint_later(uri, delay=0)
        if _python_path(uri) is not None:
            created = uri in ls._unsaved_files
            ls._unsaved_files.discard(uri)
            ls.module_changed(Path(path), created_or_deleted=created)

    @server.feature(types.TEXT_DOCUMENT_DID_CLOSE)
    def did_close(ls: GpulintServer, params: types.DidCloseTextDocumentParams) -> None:
        ls.forget(params.text_document.uri)
        ls.text_document_publish_diagnostics(types.PublishDiagnosticsParams(uri=params.text_document.uri,
                                                                            diagnostics=[]))

    @server.feature(types.WORKSPACE_DID_CHANGE_WATCHED_FILES)
    def watched(ls: GpulintServer, params: types.DidChangeWatchedFilesParams) -> None:
        if any(Path(to_fs_path(c.uri) or "").name in CONFIG_NAMES for c in params.changes):
            ls.reload_settings()
            return
        for c in params.changes:
            path = _python_path(c.uri)
            if path is not None:
                ls.module_changed(path, created_or_deleted=c.type != types.FileChangeType.Changed)

    @server.feature(types.TEXT_DOCUMENT_CODE_ACTION, types.CodeActionOptions(
        code_action_kinds=[types.CodeActionKind.QuickFix, types.CodeActionKind.SourceFixAll, FIX_ALL_KIND]))
    async def code_action(ls: GpulintServer, params: types.CodeActionParams) -> list[types.CodeAction]:
        uri = params.text_document.uri
        linted = await ls.lint(uri)
        if linted is None:
            return []
        source = linted.source
        only = params.context.only
        actions: list[types.CodeAction] = []
        if _wanted(only, types.CodeActionKind.QuickFix):
            here = [(d, lsp_d) for d, lsp_d in zip(linted.diagnostics, linted.lsp)
                    if _touches(lsp_d.range, params.range)]
            for d, lsp_d in here:
                fixed = await ls.with_edits(linted, d) if d.fix is not None else None
                if fixed is not None and fixed.edits:
                    unsafe = fixed.fix.applicability is Applicability.UNSAFE
                    edit = ls.edit(uri, source, _engine_fix(source, fixed))
                    if edit is not None:
                        actions.append(types.CodeAction(
                            title=f"gpulint ({d.code}): {fixed.fix.message}{' (unsafe)' if unsafe else ''}",
                            kind=types.CodeActionKind.QuickFix, diagnostics=[lsp_d], is_preferred=not unsafe,
                            edit=edit))
                if d.code == "GPU001":
                    continue
                silenced = with_noqa(source, d.code, (d.location.row, d.end_location.row))
                if silenced is not None:
                    actions.append(types.CodeAction(
                        title=f"Disable {d.code} for this line", kind=types.CodeActionKind.QuickFix,
                        diagnostics=[lsp_d], edit=ls.edit(uri, source, silenced)))
        if _wanted(only, FIX_ALL_KIND) and any(d.fix is not None and d.fix.allowed(FixMode.SAFE) is not None
                                               for d in linted.diagnostics):
            edit = ls.edit(uri, source, await ls.fix_all(uri, linted))
            if edit is not None:
                actions.append(types.CodeAction(title="gpulint: fix all safe findings", kind=FIX_ALL_KIND,
                                                edit=edit))
        return actions

    @server.feature(types.TEXT_DOCUMENT_HOVER)
    async def hover(ls: GpulintServer, params: types.HoverParams) -> Optional[types.Hover]:
        linted = await ls.lint(params.text_document.uri)
        if linted is None:
            return None
        here = types.Range(start=params.position, end=params.position)
        rules = all_rules()
        found = [(d, lsp_d) for d, lsp_d in zip(linted.diagnostics, linted.lsp)
                 if d.code in rules and _touches(lsp_d.range, here)]
        if not found:
            return _noqa_hover(linted.source, params.position, ls.workspace.position_codec.client_num_units)
        text = "\n\n---\n\n".join(dict.fromkeys(rule_docs(rules[d.code]) for d, _ in found))
        return types.Hover(contents=types.MarkupContent(kind=types.MarkupKind.Markdown, value=text),
                           range=found[0][1].range)

    return server


def serve() -> None:
    all_rules()  # import the rules once, before any worker thread needs them
    incremental.enable()  # an editor lints the same buffer again and again: reuse what did not change
    build().start_io()
