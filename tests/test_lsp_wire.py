"""`gpulint server` under a misbehaving client: raw bytes over a real stdio connection, no LSP library between.

Whatever arrives (malformed JSON, truncated bodies, non-objects, unknown methods, invalid params, requests for
documents never opened, cancellations, bursts of edits), every request gets its JSON-RPC 2.0 reply, the server
keeps answering, and its diagnostics for the final text are the CLI's.
"""

from __future__ import annotations

import json
import os
import queue
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path

import pytest

pytest.importorskip("pygls")
from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

GPULINT = Path(sys.executable).with_name("gpulint")
TIMEOUT = 60  # seconds: only reached when the server is wedged

SCRIPT = textwrap.dedent("""\
    import torch
    from torch.utils.data import DataLoader
    device = "cuda"
    model = torch.nn.Linear(4, 2).to(device)
    loader = DataLoader([1, 2])
    total = 0
    for step, (x, y) in enumerate(loader):
        loss = model(x).sum()
        loss.backward()
        print(loss.item())
        total += loss
        torch.cuda.empty_cache()
""")
SNIPPETS = ["    x = x.cuda()\n", "    print(loss.item())\n", "torch.cuda.synchronize()\n", "    total += loss\n",
            "def f(:\n", "    y = y.to(device)\n", "# comment\n", "\n", "    optimizer.step()\n", "    ]\n"]


class Wire:
    """A client that speaks LSP framing over the server's stdin/stdout and nothing more."""

    def __init__(self, cwd: Path) -> None:
        command = [str(GPULINT), "server"] if GPULINT.exists() else [sys.executable, "-m", "gpulint", "server"]
        self.proc = subprocess.Popen(command, cwd=cwd, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=subprocess.DEVNULL)
        self.inbox: queue.Queue = queue.Queue()
        self.responses: dict = {}
        self.notifications: list[dict] = []
        self.next_id = 0
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        out = self.proc.stdout
        while True:
            length = None
            while True:
                line = out.readline()
                if not line:
                    self.inbox.put(None)
                    return
                if line.lower().startswith(b"content-length:"):
                    length = int(line.split(b":")[1])
                if line in (b"\r\n", b"\n") and length is not None:
                    break
            self.inbox.put(json.loads(out.read(length)))

    def send_bytes(self, body: bytes) -> None:
        self.proc.stdin.write(b"Content-Length: %d\r\n\r\n" % len(body) + body)
        self.proc.stdin.flush()

    def send(self, message: dict) -> None:
        self.send_bytes(json.dumps(message).encode())

    def notify(self, method: str, params) -> None:
        self.send({"jsonrpc": "2.0", "method": method, "params": params})

    def request_id(self, method: str, params) -> int:
        self.next_id += 1
        self.send({"jsonrpc": "2.0", "id": self.next_id, "method": method, "params": params})
        return self.next_id

    def _pump(self, until, what: str):
        deadline = time.monotonic() + TIMEOUT
        while (found := until()) is None:
            try:
                message = self.inbox.get(timeout=max(0.0, deadline - time.monotonic()))
            except queue.Empty:
                raise AssertionError(f"no {what} within {TIMEOUT} s: the server is wedged") from None
            assert message is not None, f"the server exited (code {self.proc.poll()}) while waiting for {what}"
            if "method" in message:
                if "id" in message:  # a request from the server (registerCapability...): accept it
                    self.send({"jsonrpc": "2.0", "id": message["id"], "result": None})
                else:
                    self.notifications.append(message)
            else:
                self.responses.setdefault(message.get("id"), []).append(message)
        return found

    def until(self, found, what: str):
        """Read the server's messages until `found()` is not None (or fail after TIMEOUT, naming `what`)."""
        return self._pump(found, what)

    def reply(self, msg_id) -> dict:
        return self._pump(lambda: (self.responses.get(msg_id) or [None]).pop(0) if self.responses.get(msg_id)
                          else None, f"reply to {msg_id!r}")

    def request(self, method: str, params) -> dict:
        return self.reply(self.request_id(method, params))

    def diagnostics(self, uri: str, version: int) -> list[dict]:
        def published():
            for n in self.notifications:
                p = n["params"]
                if n["method"] == "textDocument/publishDiagnostics" and p["uri"] == uri and p.get("version") == version:
                    return p["diagnostics"]
            return None
        return self._pump(published, f"diagnostics for {uri} v{version}")

    def close(self) -> None:
        try:
            self.request("shutdown", None)
            self.notify("exit", None)
            self.proc.wait(timeout=10)
        except Exception:
            self.proc.kill()
            self.proc.wait()


@pytest.fixture(scope="module")
def wire(tmp_path_factory):
    cwd = tmp_path_factory.mktemp("wire")
    client = Wire(cwd)
    reply = client.request("initialize", {"processId": None, "rootUri": cwd.as_uri(), "capabilities": {}})
    assert "capabilities" in reply["result"]
    client.notify("initialized", {})
    client.cwd = cwd
    yield client
    client.close()


def open_doc(wire: Wire, name: str, text: str) -> str:
    path = wire.cwd / name
    uri = path.as_uri()
    wire.notify("textDocument/didOpen", {"textDocument": {"uri": uri, "languageId": "python", "version": 1,
                                                          "text": text}})
    return uri


def hover_params(uri: str) -> dict:
    return {"textDocument": {"uri": uri}, "position": {"line": 9, "character": 12}}


def assert_alive(wire: Wire, uri: str) -> None:
    """A normal request still gets its normal answer: the rule's documentation under the cursor."""
    result = wire.request("textDocument/hover", hover_params(uri))["result"]
    assert result is not None and "GPU" in result["contents"]["value"]


@pytest.fixture(scope="module")
def doc(wire):
    uri = open_doc(wire, "alive.py", SCRIPT)
    wire.diagnostics(uri, 1)
    return uri


def test_malformed_json_gets_a_parse_error_reply(wire, doc):
    for body in (b'{"jsonrpc": "2.0", "id": 1, "method": "textDocument/hov', b"\xff\xfe not utf-8", b"}"):
        wire.send_bytes(body)
        reply = wire.reply(None)
        assert reply["error"]["code"] == -32700 and reply["id"] is None
    assert_alive(wire, doc)


def test_a_json_value_that_is_no_message_is_an_invalid_request(wire, doc):
    for value in ([1, 2], 3, "x", {"id": 77, "method": "textDocument/hover"}):
        wire.send(value)
        reply = wire.reply(77 if isinstance(value, dict) else None)
        assert reply["error"]["code"] == -32600
    assert_alive(wire, doc)


def test_unknown_method_and_invalid_params_get_their_error_codes(wire, doc):
    assert wire.request("gpulint/noSuchMethod", {})["error"]["code"] == -32601
    assert wire.request("textDocument/hover", {"textDocument": {"uri": doc}})["error"]["code"] == -32602
    assert wire.request("textDocument/codeAction", {"textDocument": 5})["error"]["code"] == -32602
    wire.notify("textDocument/didChange", {"nonsense": True})  # a notification gets no reply, and no harm
    wire.notify("gpulint/unknownNotification", {})
    assert_alive(wire, doc)


def test_a_document_never_opened_gets_empty_results(wire, doc):
    ghost = (wire.cwd / "never_opened.py").as_uri()
    assert wire.request("textDocument/hover", hover_params(ghost)) == {"jsonrpc": "2.0", "id": wire.next_id,
                                                                        "result": None}
    actions = wire.request("textDocument/codeAction", {
        "textDocument": {"uri": ghost}, "range": {"start": {"line": 0, "character": 0},
                                                  "end": {"line": 9, "character": 0}}, "context": {"diagnostics": []}})
    assert actions["result"] == []
    wire.notify("textDocument/didChange", {"textDocument": {"uri": ghost, "version": 2},
                                           "contentChanges": [{"text": "x = 1\n"}]})
    wire.notify("textDocument/didClose", {"textDocument": {"uri": ghost}})
    assert_alive(wire, doc)


def test_cancel_request_is_honoured(wire, doc):
    # A long buffer, so that the code action is still waiting for its lint when the cancellation arrives.
    uri = open_doc(wire, "cancel.py", SCRIPT + "".join(
        f"\ndef copy_{i}():\n" + textwrap.indent(SCRIPT, "    ") for i in range(40)))
    msg_id = wire.request_id("textDocument/codeAction", {
        "textDocument": {"uri": uri}, "range": {"start": {"line": 9, "character": 0},
                                                "end": {"line": 9, "character": 5}}, "context": {"diagnostics": []}})
    wire.notify("$/cancelRequest", {"id": msg_id})
    assert wire.reply(msg_id)["error"]["code"] == -32800
    assert_alive(wire, doc)


def test_an_edit_abandons_the_running_lint_of_a_big_document(wire, doc):
    """The lint of an outdated version stops where it is: the newest version waits for no more than that."""
    big = SCRIPT + "".join(f"\ndef copy_{i}():\n" + textwrap.indent(SCRIPT, "    ") for i in range(1200))
    wire.diagnostics(open_doc(wire, "before-big.py", SCRIPT + "# new text\n"), 1)  # earlier tests' lints done
    uri = open_doc(wire, "big.py", big)
    time.sleep(2)  # not a measurement: the lint of version 1 (about 10 s on an idle core) is under way by then
    small = SCRIPT.replace("        torch.cuda.empty_cache()\n", "")
    wire.notify("textDocument/didChange", {"textDocument": {"uri": uri, "version": 2},
                                           "contentChanges": [{"text": small}]})
    final = wire.diagnostics(uri, 2)
    assert sorted(lsp_key(d) for d in final) == cli_findings({"big.py": small}, wire.cwd)["big.py"]
    def abandoned() -> list:  # the log line is queued on the server's loop: it may follow the diagnostics
        logged = [n["params"]["message"] for n in list(wire.notifications) if n["method"] == "window/logMessage"]
        return [m for m in logged if "abandoned the lint of" in m and "big.py (version 1)" in m]

    # Read the wire until the line comes: notifications reach `wire.notifications` only while it is read.
    assert wire.until(lambda: abandoned() or None, "the log line of the abandoned lint")
    assert not [n for n in wire.notifications if n["method"] == "textDocument/publishDiagnostics"
                and n["params"]["uri"] == uri and n["params"].get("version") == 1]


def test_a_burst_of_edits_settles_on_the_latest_version(wire, doc):
    uri = open_doc(wire, "burst.py", SCRIPT)
    lines = SCRIPT.splitlines(keepends=True)
    for version in range(2, 12):
        text = "".join(lines[:-1] + ["    x = x.cuda()\n"] * version + lines[-1:])
        wire.notify("textDocument/didChange", {"textDocument": {"uri": uri, "version": version},
                                               "contentChanges": [{"text": text}]})
    final = wire.diagnostics(uri, 11)
    assert sorted(lsp_key(d) for d in final) == cli_findings({"burst.py": text}, wire.cwd)["burst.py"]
    # Nothing for an older version arrives after the latest one.
    published = [n["params"].get("version") for n in wire.notifications
                 if n["method"] == "textDocument/publishDiagnostics" and n["params"]["uri"] == uri]
    assert published[-1] == 11


def lsp_key(d: dict) -> tuple:
    r = d["range"]
    return (d["code"], r["start"]["line"] + 1, r["start"]["character"] + 1, r["end"]["line"] + 1,
            r["end"]["character"] + 1)


def cli_findings(texts: dict[str, str], cwd: Path) -> dict[str, list[tuple]]:
    """A fresh `gpulint check --output-format json` on the given texts (ASCII only: columns agree)."""
    folder = cwd / f"cli-{time.monotonic_ns()}"
    folder.mkdir()
    for name, text in texts.items():
        (folder / name).write_text(text)
    run = subprocess.run([str(GPULINT), "check", "--output-format", "json", "--no-cache", *texts], cwd=folder,
                         capture_output=True, text=True, env={**os.environ, "NO_COLOR": "1"})
    assert run.returncode in (0, 1), run.stderr
    found: dict[str, list[tuple]] = {name: [] for name in texts}
    for d in json.loads(run.stdout):
        found[Path(d["filename"]).name].append((d["code"], d["location"]["row"], d["location"]["column"],
                                                d["end_location"]["row"], d["end_location"]["column"]))
    return {name: sorted(rows) for name, rows in found.items()}


# -- fuzz ------------------------------------------------------------------------------------------------------
json_values = st.recursive(st.none() | st.booleans() | st.integers() | st.text(max_size=8),
                           lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner,
                                                                                        max_size=3), max_leaves=8)
methods = st.sampled_from(["textDocument/hover", "textDocument/codeAction", "textDocument/didChange",
                           "textDocument/didOpen", "textDocument/didSave", "workspace/didChangeWatchedFiles",
                           "$/cancelRequest", "gpulint/x", "textDocument/definition"]) | st.text(max_size=10).filter(
    lambda m: m not in ("initialize", "shutdown", "exit"))
garbage = st.one_of(
    st.binary(max_size=40).map(lambda b: ("bytes", b)),
    st.builds(lambda m, p, cut: ("bytes", json.dumps({"jsonrpc": "2.0", "id": 0, "method": m, "params": p})
                                 .encode()[:cut]), methods, json_values, st.integers(1, 60)),
    json_values.map(lambda v: ("json", v)),
    st.tuples(methods, json_values, st.booleans()).map(lambda t: ("rpc", t)),
)
edit = st.tuples(st.sampled_from(["insert", "delete", "replace"]), st.integers(0, 30), st.sampled_from(SNIPPETS))


def apply_edit(text: str, e) -> str:
    op, at, snippet = e
    lines = text.splitlines(keepends=True)
    at = at % (len(lines) + 1)
    if op == "insert":
        lines.insert(at, snippet)
    elif lines and at < len(lines):
        lines[at: at + 1] = [] if op == "delete" else [snippet]
    return "".join(lines)


def test_fuzzed_messages_and_edits_never_wedge_the_server(wire, doc):
    finals: dict[str, tuple[str, list[dict]]] = {}

    @settings(max_examples=12, deadline=None, database=None,
              suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
    @given(st.lists(st.one_of(garbage.map(lambda g: ("garbage", g)), edit.map(lambda e: ("edit", e))),
                    max_size=12))
    def session(steps):
        name = f"fuzz{len(finals)}.py"
        uri = open_doc(wire, name, SCRIPT)
        text, version = SCRIPT, 1
        for kind, step in steps:
            if kind == "edit":
                text, version = apply_edit(text, step), version + 1
                wire.notify("textDocument/didChange", {"textDocument": {"uri": uri, "version": version},
                                                       "contentChanges": [{"text": text}]})
                continue
            what, payload = step
            if what == "bytes":
                wire.send_bytes(payload)
            elif what == "json":
                wire.send(payload)
            else:
                method, params, is_request = payload
                if method in ("initialize", "shutdown", "exit"):
                    continue
                if is_request:
                    reply = wire.request(method, params)  # every request gets its reply
                    assert ("result" in reply) != ("error" in reply)
                else:
                    wire.notify(method, params)
        alive = wire.request("textDocument/hover", hover_params(doc))["result"]
        assert alive is not None and "GPU" in alive["contents"]["value"]
        finals[name] = (text, wire.diagnostics(uri, version))

    session()
    cli = cli_findings({name: text for name, (text, _) in finals.items()}, wire.cwd)
    for name, (_, diagnostics) in finals.items():
        assert sorted(lsp_key(d) for d in diagnostics) == cli[name], name


def test_a_buffer_over_the_size_limit_gets_one_informational_diagnostic(wire, doc):
    from gpulint.server import MAX_FILE_SIZE

    line = "x = torch.zeros(3).cuda().item()  # padding padding padding padding padding\n"
    text = SCRIPT + line * (MAX_FILE_SIZE // len(line) + 1)
    uri = open_doc(wire, "huge.py", text)
    (found,) = wire.diagnostics(uri, 1)
    assert found["severity"] == 3 and "limit" in found["message"] and found["code"] == "file-too-large"
    # Back under the limit, it is linted as usual.
    wire.notify("textDocument/didChange", {"textDocument": {"uri": uri, "version": 2},
                                           "contentChanges": [{"text": SCRIPT}]})
    assert {d["code"] for d in wire.diagnostics(uri, 2)} >= {"GPU101"}
    assert_alive(wire, doc)
