"""A scripted loopback server that speaks Ollama's native ``POST /api/chat`` NDJSON stream.

Started by a test on ``127.0.0.1`` with a free port (stdlib ``ThreadingHTTPServer`` in a
thread, so asyncio and trio clients alike can reach it). Each request takes the next scripted
:class:`Reply`; every request body is recorded (decoded JSON) so that a test can assert what the
*next* request carried.

It refuses a request the way Ollama does, with ``{"error": "..."}`` and an HTTP status, and the
checks are written here with the standard library on purpose, sharing no code with toolwire:

- what Go's decoder refuses (``api.ChatRequest`` in ollama/ollama ``api/types.go``): a body that
  is no JSON object, a ``content`` or ``tool_name`` that is no string, a ``tool_calls`` entry
  without a ``function`` object, and ``arguments`` that are not a JSON object (they are decoded
  into an ordered map: a Chat-Completions-style string is a 400), a non-int ``num_predict``;
- ``model is required`` (``ChatHandler``);
- stricter than Ollama, which renders whatever history it gets: every call must be answered by
  one ``role: tool`` message right after its assistant message, in order, naming its tool in
  ``tool_name`` (and its ``tool_call_id`` when both sides carry ids). A loop that loses a
  result or replays a bad call must fail loudly here, not confuse a model later.

Replies are NDJSON bodies sent with ``Transfer-Encoding: chunked``, one HTTP chunk per line, as
``streamResponse`` flushes them. ``drop`` closes the connection after some lines without the
terminating chunk.
"""

from __future__ import annotations

import json
import threading
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

CREATED = "2025-11-04T16:43:33.123456Z"
MODEL = "qwen3:8b"


@dataclass
class Reply:
    """One scripted answer: an NDJSON body (or an HTTP error), maybe dropped after ``lines``."""

    body: bytes = b""
    status: int = 200
    drop: bool = False
    lines: int = 0


@dataclass
class ScriptedOllama:
    """The server's script and what it received; thread-safe for one test at a time."""

    replies: list[Reply] = field(default_factory=list)
    requests: list[dict[str, Any]] = field(default_factory=list)
    refused: list[str] = field(default_factory=list)
    host: str = ""
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def script(self, *replies: Reply) -> None:
        """Queue replies, answered in order, one per accepted request."""
        with self._lock:
            self.replies.extend(replies)

    def next_reply(self, request: Any) -> Reply:
        with self._lock:
            self.requests.append(request)
            problems = request_errors(request)
            if problems:
                self.refused.extend(problems)
                return Reply(json.dumps({"error": "; ".join(problems)}).encode(), status=400)
            if not self.replies:
                return Reply(b'{"error":"no scripted reply left"}', status=500)
            return self.replies.pop(0)


def request_errors(request: Any) -> list[str]:
    """What Ollama refuses in a chat request, plus the strict pairing of calls and results."""
    if not isinstance(request, dict):
        return ["json: cannot unmarshal into Go value of type api.ChatRequest"]
    errors: list[str] = []
    if not request.get("model"):
        errors.append("model is required")
    options = request.get("options") or {}
    if not isinstance(options.get("num_predict", 0), int):
        errors.append("option num_predict must be of type integer")
    pending: list[tuple[str | None, str]] = []
    for position, message in enumerate(request.get("messages") or ()):
        for key in ("role", "content", "tool_name", "tool_call_id", "thinking"):
            if key in message and not isinstance(message[key], str):
                errors.append(f"json: cannot unmarshal into Go struct field Message.{key}")
        if message.get("role") == "tool":
            if not pending:
                errors.append(f"message {position}: a tool result with no call to answer")
                continue
            call_id, name = pending.pop(0)
            if message.get("tool_name") != name:
                errors.append(
                    f"message {position}: tool_name {message.get('tool_name')!r} "
                    f"answers a call of {name!r}"
                )
            given = message.get("tool_call_id")
            if call_id is not None and given is not None and given != call_id:
                errors.append(f"message {position}: tool_call_id {given!r} is not {call_id!r}")
            continue
        if pending:
            errors.append(f"message {position}: calls {pending} have no result")
            pending.clear()
        for call in message.get("tool_calls") or ():
            function = call.get("function")
            if not isinstance(function, dict):
                errors.append(f"message {position}: a tool call without a function object")
                continue
            if not isinstance(function.get("arguments", {}), dict):
                errors.append(
                    "json: cannot unmarshal "
                    f"{type(function['arguments']).__name__} into Go struct field "
                    "ToolCallFunction.messages.tool_calls.function.arguments of type "
                    "map[string]interface {}"
                )
            pending.append((call.get("id"), function.get("name")))
    if pending:
        errors.append(f"the last calls {pending} have no result")
    return errors


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: _HTTPServer

    def log_message(self, format: str, *args: Any) -> None:
        """Quiet: the test output is not the place for access logs."""

    def do_POST(self) -> None:
        length = int(self.headers.get("Content-Length", "0"))
        raw = self.rfile.read(length)
        if self.path != "/api/chat":
            self._send(404, b"404 page not found", "text/plain")
            return
        try:
            request = json.loads(raw or b"null")
        except ValueError as error:
            self._send(400, json.dumps({"error": str(error)}).encode(), "application/json")
            return
        reply = self.server.script.next_reply(request)
        if reply.status != 200:
            self._send(reply.status, reply.body, "application/json; charset=utf-8")
            return
        self._stream(reply)

    def _send(self, status: int, body: bytes, content_type: str) -> None:
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)
        self.wfile.flush()

    def _stream(self, reply: Reply) -> None:
        self.send_response(200)
        self.send_header("Content-Type", "application/x-ndjson")
        self.send_header("Transfer-Encoding", "chunked")
        lines = [part + b"\n" for part in reply.body.split(b"\n") if part.strip()]
        if reply.drop:
            lines = lines[: reply.lines]
            self.send_header("Connection", "close")
            self.close_connection = True
        self.end_headers()
        for item in lines:
            self.wfile.write(b"%x\r\n%s\r\n" % (len(item), item))
            self.wfile.flush()
        if not reply.drop:
            self.wfile.write(b"0\r\n\r\n")
        self.wfile.flush()


class _HTTPServer(ThreadingHTTPServer):
    daemon_threads = False
    block_on_close = True

    def __init__(self, script: ScriptedOllama) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.script = script


class running_ollama:
    """Serve a :class:`ScriptedOllama` in a thread; closes every socket on exit."""

    def __enter__(self) -> ScriptedOllama:
        self.script = ScriptedOllama()
        self.httpd = _HTTPServer(self.script)
        host, port = self.httpd.server_address[:2]
        self.script.host = f"http://{host!s}:{port}"
        self.thread = threading.Thread(
            target=self.httpd.serve_forever, kwargs={"poll_interval": 0.01}, daemon=True
        )
        self.thread.start()
        return self.script

    def __exit__(self, *exc_info: object) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()
        self.thread.join(timeout=5)


# -- building replies, in the shape of api.ChatResponse --------------------------------------


def chat_line(
    *, content: str = "", thinking: str = "", calls: list[dict[str, Any]] | None = None
) -> dict[str, Any]:
    """One ``done: false`` line."""
    message: dict[str, Any] = {"role": "assistant", "content": content}
    if thinking:
        message["thinking"] = thinking
    if calls:
        message["tool_calls"] = calls
    return {"model": MODEL, "created_at": CREATED, "message": message, "done": False}


def done_line(
    reason: str = "stop", *, eval_count: int = 20, calls: list[dict[str, Any]] | None = None
) -> dict[str, Any]:
    """The last line, with ``done_reason`` and the counters."""
    last = chat_line(calls=calls)
    last.update(
        done=True,
        done_reason=reason,
        total_duration=912345678,
        load_duration=12345678,
        prompt_eval_count=211,
        prompt_eval_duration=45678901,
        eval_count=eval_count,
        eval_duration=812345678,
    )
    return last


def ollama_call(name: str, arguments: dict[str, Any], index: int, call_id: str) -> dict[str, Any]:
    """A whole ``api.ToolCall`` as Ollama (v0.12.10+) writes it."""
    return {"id": call_id, "function": {"index": index, "name": name, "arguments": arguments}}


def ndjson(*lines: dict[str, Any]) -> bytes:
    """Compact JSON lines, as Go's ``json.Marshal`` and ``streamResponse`` write them."""
    return b"".join(json.dumps(item, separators=(",", ":")).encode() + b"\n" for item in lines)
