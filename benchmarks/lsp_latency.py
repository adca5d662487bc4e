"""What the language server costs per edit: in process (the lint itself) and end to end, as an editor sees it.

    python benchmarks/lsp_latency.py [--copies 24] [--file train.py] [--keystrokes 15] [--where end|middle]
                                     [--typing comment|code|read]

The buffer is FILE, or the shipped naive training script followed by COPIES functions holding its body (a
worst case: a finding every few lines). In process: "cold" is a lint of a text never seen (what the CLI does
per file); "per edit" is the lint the server runs after a burst of typing, with the pieces of the previous
lint that did not change reused (gpulint.incremental); "per code action" is one finding's fix edits, computed
when the editor asks (--eager-edits adds what computing every fix's edits at each lint would cost: minutes on
the synthetic buffer).

End to end (the default; --no-editor skips it): `gpulint server` over stdio, the buffer opened, then KEYSTROKES
bursts of keystrokes 30 ms apart, on a line of their own at the end of the file or (--where middle) in the
middle of the file (indented as the line after it: inside the enclosing function, if any). With --typing
comment (the default) a burst types five letters into a comment; with --typing code it types a statement,
`lr3 = 0.13`, one character at a time, so the versions between keystrokes do not all parse (`lr3 =`) and
the last one changes the code (a number bound to a new name: the rules rerun only where the tree changed);
with --typing read it types `v3 = loss.item()`, a statement that reads a tensor (no reuse: every rule runs
on the whole module). The figure is the time from the last keystroke's didChange to the
publishDiagnostics of that version (median and worst), the server's CPU time over the same span (read from
/proc: what the lint costs whatever else the machine runs), and the same with an undo (text seen before:
answered from the server's cache). The load average is printed before and after: the machine may be shared.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Optional

from gpulint import incremental
from gpulint.fixes import edits_for
from gpulint.rule import all_rules
from gpulint.runner import lint_source

EXAMPLE = Path(__file__).resolve().parent.parent / "fixtures" / "examples" / "naive_train.py"


def best(fn, repeat: int) -> float:
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return min(times)


def synthetic(copies: int) -> str:
    body = EXAMPLE.read_text()
    return body + "".join(f"\n\ndef copy_{i}():\n" + "".join(f"    {line}\n" for line in body.splitlines())
                          for i in range(copies))


def keystrokes(typing: str, burst: int) -> list[str]:
    """The line being typed after each keystroke of one burst (each burst types something new)."""
    if typing in ("code", "read"):
        statement = f"lr{burst} = 0.1{burst}" if typing == "code" else f"v{burst} = loss.item()"
        return [statement[:i] for i in range(1, len(statement) + 1)]
    return [f"# note {burst} " + "abcde"[:i] for i in range(1, 6)]


def typed(text: str, where: str, note: str) -> str:
    """`text` with the line `note` typed at the end, or on a new line in the middle (indented as the line
    after it, so that it sits inside the enclosing block)."""
    if where == "end":
        return text + f"{note}\n"
    lines = text.splitlines(keepends=True)
    middle = len(lines) // 2
    after = next((line for line in lines[middle:] if line.strip()), "")
    indent = after[:len(after) - len(after.lstrip())]
    return "".join(lines[:middle]) + f"{indent}{note}\n" + "".join(lines[middle:])


def in_process(text: str, repeat: int, where: str, eager_edits: bool, typing: str = "comment") -> None:
    codes = frozenset(all_rules())
    result = lint_source(text, "buffer.py", codes)
    fixable = [d for d in result.diagnostics if d.fix is not None]
    print(f"buffer: {len(text.splitlines())} lines, {len(result.diagnostics)} findings, {len(fixable)} fixable")
    cold = best(lambda: lint_source(text, "buffer.py", codes), repeat)
    print(f"cold lint (a text never seen):   {cold * 1000:8.0f} ms")
    incremental.enable()
    lint_source(text, "buffer.py", codes)
    edits = iter(range(10**6))
    per_edit = best(lambda: lint_source(typed(text, where, keystrokes(typing, next(edits))[-1]), "buffer.py",
                                        codes), repeat)
    print(f"per edit ({where}, {typing}, reuse on): {per_edit * 1000:6.0f} ms")
    if fixable:
        one = best(lambda: edits_for(fixable[0], result.module, text), repeat)
        print(f"per code action (one finding):   {one * 1000:8.0f} ms")
    if fixable and eager_edits:
        eager = best(lambda: lint_source(text, "buffer.py", codes, want_edits=True), 1)
        print(f"per edit with edits for all:     {eager * 1000:8.0f} ms")


class Server:
    """`gpulint server` on pipes; records when each publishDiagnostics arrives."""

    def __init__(self, command: Optional[list[str]] = None) -> None:
        script = Path(sys.executable).with_name("gpulint")
        if command is None:
            command = [str(script), "server"] if script.exists() else [sys.executable, "-m", "gpulint", "server"]
        self.proc = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE)
        self.published: dict[tuple[str, int], float] = {}
        self.published_cpu: dict[tuple[str, int], float] = {}
        self.replies: dict[int, dict] = {}
        self.cond = threading.Condition()
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        while True:
            length = 0
            while (line := self.proc.stdout.readline()) not in (b"\r\n", b""):
                if line.lower().startswith(b"content-length:"):
                    length = int(line.split(b":")[1])
            if not line:
                return
            message = json.loads(self.proc.stdout.read(length))
            with self.cond:
                if message.get("method") == "textDocument/publishDiagnostics":
                    p = message["params"]
                    self.published[(p["uri"], p.get("version"))] = time.perf_counter()
                    self.published_cpu[(p["uri"], p.get("version"))] = self.cpu()
                elif "id" in message and "method" in message:
                    self.send({"jsonrpc": "2.0", "id": message["id"], "result": None})
                elif "id" in message:
                    self.replies[message["id"]] = message
                self.cond.notify_all()

    def cpu(self) -> float:
        """CPU seconds the server process has used (Linux): what the lint costs, whatever else the machine runs."""
        try:
            fields = Path(f"/proc/{self.proc.pid}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            return float("nan")
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")

    def send(self, message: dict) -> None:
        body = json.dumps(message).encode()
        self.proc.stdin.write(b"Content-Length: %d\r\n\r\n" % len(body) + body)
        self.proc.stdin.flush()

    def wait(self, predicate, timeout: float = 600):
        with self.cond:
            if not self.cond.wait_for(predicate, timeout):
                raise SystemExit("the server did not answer")

    def change(self, uri: str, version: int, text: str) -> float:
        self.sent_cpu = self.cpu()
        sent = time.perf_counter()
        self.send({"jsonrpc": "2.0", "method": "textDocument/didChange", "params": {
            "textDocument": {"uri": uri, "version": version}, "contentChanges": [{"text": text}]}})
        return sent


def editor(text: str, bursts: int, where: str, command: Optional[list[str]] = None,
           typing: str = "comment") -> None:
    server = Server(command)
    server.send({"jsonrpc": "2.0", "id": 1, "method": "initialize",
                 "params": {"processId": None, "rootUri": None, "capabilities": {}}})
    server.wait(lambda: 1 in server.replies)
    server.send({"jsonrpc": "2.0", "method": "initialized", "params": {}})
    uri = (Path.cwd() / "lsp_latency_buffer.py").as_uri()
    server.send({"jsonrpc": "2.0", "method": "textDocument/didOpen", "params": {"textDocument": {
        "uri": uri, "languageId": "python", "version": 1, "text": text}}})
    server.wait(lambda: (uri, 1) in server.published)
    version, fresh, undo, cpu = 1, [], [], []
    for burst in range(bursts):
        for line in keystrokes(typing, burst):
            version += 1
            last = server.change(uri, version, typed(text, where, line))
            time.sleep(0.03)
        server.wait(lambda: (uri, version) in server.published)
        fresh.append(server.published[(uri, version)] - last)
        cpu.append(server.published_cpu[(uri, version)] - server.sent_cpu)
        version += 1  # undo the burst: back to the opened text, which the server has seen
        last = server.change(uri, version, text)
        server.wait(lambda: (uri, version) in server.published)
        undo.append(server.published[(uri, version)] - last)
    print(f"last keystroke -> diagnostics, new text:  median {statistics.median(fresh) * 1000:6.0f} ms, "
          f"worst {max(fresh) * 1000:6.0f} ms ({bursts} bursts typing {typing}, {where})")
    print(f"last keystroke -> diagnostics, undo:      median {statistics.median(undo) * 1000:6.0f} ms, "
          f"worst {max(undo) * 1000:6.0f} ms")
    print(f"server CPU, last keystroke -> diagnostics: median {statistics.median(cpu) * 1000:6.0f} ms, "
          f"worst {max(cpu) * 1000:6.0f} ms (new text; on an idle core the wait is about this + the debounce)")
    server.send({"jsonrpc": "2.0", "id": 2, "method": "shutdown", "params": None})
    server.wait(lambda: 2 in server.replies)
    server.send({"jsonrpc": "2.0", "method": "exit", "params": None})
    try:
        server.proc.wait(timeout=10)
    except subprocess.TimeoutExpired:  # a server still busy with a lint it cannot drop
        server.proc.kill()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--copies", type=int, default=24, help="synthetic buffer: ~40 lines per copy")
    parser.add_argument("--file", type=Path, help="benchmark this file instead of the synthetic buffer")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--keystrokes", type=int, default=15, help="bursts of typing, end to end")
    parser.add_argument("--where", choices=("end", "middle"), default="end", help="where the keystrokes go")
    parser.add_argument("--typing", choices=("comment", "code", "read"), default="comment",
                        help="type into a comment, a number bound to a new name (`lr3 = 0.13`), or a statement "
                             "that reads a tensor (`v3 = loss.item()`), character by character")
    parser.add_argument("--no-editor", action="store_true", help="only the in-process figures")
    parser.add_argument("--no-in-process", action="store_true", help="only the end-to-end figures")
    parser.add_argument("--server", help="the server's command line (default: this checkout's `gpulint server`),"
                        " e.g. another checkout's to compare")
    parser.add_argument("--eager-edits", action="store_true", help="also time every fix's edits at each lint")
    args = parser.parse_args()
    text = args.file.read_text() if args.file else synthetic(args.copies)
    print("load average before: %.2f %.2f %.2f" % os.getloadavg())
    if not args.no_in_process:
        in_process(text, args.repeat, args.where, args.eager_edits, args.typing)
    if not args.no_editor:
        editor(text, args.keystrokes, args.where, args.server.split() if args.server else None, args.typing)
    print("load average after:  %.2f %.2f %.2f" % os.getloadavg())


if __name__ == "__main__":
    main()
