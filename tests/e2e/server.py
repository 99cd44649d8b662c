"""A scripted loopback server that speaks the OpenAI Chat Completions streaming protocol.

Started by a test on ``127.0.0.1`` with a free port (stdlib ``ThreadingHTTPServer`` in a thread,
so it serves asyncio and trio clients alike, in-process or from a subprocess). Each
``POST /v1/chat/completions`` takes the next scripted :class:`Reply`; every request body is
recorded (decoded JSON) so that a test can assert what the *next* request carried.

Like real backends, the server refuses a request whose history is not well formed: arguments
that do not parse (llama.cpp answers HTTP 500, vLLM HTTP 400) or a call without its result
(OpenAI answers HTTP 400). That check is written here with the standard library on purpose, so
that it does not share code with toolwire's own check.

Replies are SSE bodies, sent with ``Transfer-Encoding: chunked`` (as real servers do) in one
HTTP chunk per SSE event. :class:`Reply` can also cut the body: ``drop`` closes the connection
after some events without the terminating chunk (a broken connection), ``eof`` ends the body
cleanly after some events with no ``[DONE]`` (a server that stopped early).
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, Literal

#: The repository root (``tests/e2e/server.py`` -> parents[2]) and the shared folder beside it.
ROOT = Path(__file__).resolve().parents[2]
SHARED = ROOT.parent / "shared"
STREAMS = SHARED / "fixtures" / "streams"

#: The real llama-cpp-python recording of a ``write`` call cut at ``max_tokens=24`` while the
#: server said ``finish_reason: tool_calls``.
CUT_WRITE = STREAMS / "llama-cpp-python" / "write_max_tokens_24_cut_mid_string.real.sse"
CUT_WRITE_CALL_ID = "call__0_write_cmpl-6c226a42-eaa0-4da1-a5b7-a0d80c86cbfa"

Cut = Literal["none", "drop", "eof"]


@dataclass
class Reply:
    """One scripted answer: an SSE body (or an HTTP error), possibly cut after ``events``."""

    body: bytes = b""
    status: int = 200
    cut: Cut = "none"
    #: With ``cut``: how many SSE events are sent before the cut.
    events: int = 0

    def sse_events(self) -> list[bytes]:
        """The body split into its SSE events (each with its blank-line terminator)."""
        parts = self.body.replace(b"\r\n", b"\n").split(b"\n\n")
        return [part + b"\n\n" for part in parts if part.strip()]


@dataclass
class ScriptedChatServer:
    """The server's script and what it received; thread-safe for one test at a time."""

    replies: list[Reply] = field(default_factory=list)
    requests: list[dict[str, Any]] = field(default_factory=list)
    refused: list[str] = field(default_factory=list)
    base_url: str = ""
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def script(self, *replies: Reply) -> None:
        """Queue replies, answered in order, one per request."""
        with self._lock:
            self.replies.extend(replies)

    def next_reply(self, request: dict[str, Any]) -> Reply:
        with self._lock:
            self.requests.append(request)
            if not self.replies:
                return Reply(body=b'{"error": {"message": "no scripted reply left"}}', status=500)
            return self.replies.pop(0)


def history_errors(messages: list[dict[str, Any]]) -> list[str]:
    """What a strict backend refuses in a history (independent of toolwire on purpose)."""
    errors: list[str] = []
    pending: set[str] = set()
    for position, message in enumerate(messages):
        if message.get("role") == "tool":
            call_id = message.get("tool_call_id")
            if call_id not in pending:
                errors.append(f"message {position}: a tool result for unknown id {call_id!r}")
            pending.discard(call_id)
            continue
        if pending:
            errors.append(f"message {position}: calls {sorted(pending)} have no result")
            pending.clear()
        for call in message.get("tool_calls") or ():
            arguments = call["function"]["arguments"]
            try:
                parsed = json.loads(arguments)
            except ValueError:
                errors.append(f"message {position}: arguments do not parse: {arguments!r}")
                continue
            if not isinstance(parsed, dict):
                errors.append(f"message {position}: arguments are not an object")
            pending.add(call["id"])
    if pending:
        errors.append(f"the last calls {sorted(pending)} have no result")
    return errors


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: _HTTPServer

    def log_message(self, format: str, *args: Any) -> None:
        """Quiet: the test output is not the place for access logs."""

    def do_POST(self) -> None:
        length = int(self.headers.get("Content-Length", "0"))
        request = json.loads(self.rfile.read(length) or b"{}")
        script = self.server.script
        reply = script.next_reply(request)
        problems = history_errors(request.get("messages", []))
        if problems:
            with script._lock:
                script.refused.extend(problems)
            self._send_json(400, {"error": {"message": "; ".join(problems), "type": "invalid"}})
            return
        if reply.status != 200:
            self._send_bytes(reply.status, reply.body, "application/json")
            return
        self._stream(reply)

    def _send_json(self, status: int, payload: dict[str, Any]) -> None:
        self._send_bytes(status, json.dumps(payload).encode(), "application/json")

    def _send_bytes(self, status: int, body: bytes, content_type: str) -> None:
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)
        self.wfile.flush()

    def _stream(self, reply: Reply) -> None:
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Cache-Control", "no-cache")
        self.send_header("Transfer-Encoding", "chunked")
        events = reply.sse_events()
        if reply.cut != "none":
            events = events[: reply.events]
        if reply.cut == "drop":
            # The connection breaks: no terminating chunk, and no keep-alive either.
            self.send_header("Connection", "close")
            self.close_connection = True
        self.end_headers()
        for event in events:
            self.wfile.write(b"%x\r\n%s\r\n" % (len(event), event))
            self.wfile.flush()
        if reply.cut != "drop":
            self.wfile.write(b"0\r\n\r\n")
        self.wfile.flush()


class _HTTPServer(ThreadingHTTPServer):
    daemon_threads = False
    block_on_close = True

    def __init__(self, script: ScriptedChatServer) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.script = script


class running_server:
    """Serve a :class:`ScriptedChatServer` in a thread; closes every socket on exit."""

    def __enter__(self) -> ScriptedChatServer:
        self.script = ScriptedChatServer()
        self.httpd = _HTTPServer(self.script)
        host, port = self.httpd.server_address[:2]
        self.script.base_url = f"http://{host!s}:{port}/v1"
        self.thread = threading.Thread(
            target=self.httpd.serve_forever, kwargs={"poll_interval": 0.01}, daemon=True
        )
        self.thread.start()
        return self.script

    def __exit__(self, *exc_info: object) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()
        self.thread.join(timeout=5)


# -- building replies by hand, in the Chat chunk format ----------------------------------------


def chat_chunk(
    delta: dict[str, Any] | None = None, finish_reason: str | None = None
) -> dict[str, Any]:
    """One Chat Completions chunk with one choice (the shape llama.cpp and OpenAI send)."""
    return {
        "id": "chatcmpl-scripted",
        "object": "chat.completion.chunk",
        "created": 1796028372,
        "model": "scripted-model",
        "choices": [
            {"index": 0, "delta": delta or {}, "logprobs": None, "finish_reason": finish_reason}
        ],
    }


def sse(chunks: Iterable[dict[str, Any]], *, done: bool = True) -> bytes:
    """Frame chunks as an SSE body, ``data: [DONE]`` last unless ``done`` is false."""
    body = b"".join(b"data: " + json.dumps(chunk).encode() + b"\n\n" for chunk in chunks)
    return body + (b"data: [DONE]\n\n" if done else b"")


def _pieces(text: str, size: int) -> Iterator[str]:
    for start in range(0, len(text), size):
        yield text[start : start + size]


def tool_calls_reply(
    *calls: tuple[str, str, str], finish_reason: str = "tool_calls", piece: int = 7
) -> bytes:
    """A turn of parallel calls ``(id, name, raw arguments)``, arguments in small fragments.

    Each call opens on its own index with its id and name, as OpenAI streams parallel calls.
    """
    chunks = [chat_chunk({"role": "assistant", "content": None})]
    for index, (call_id, name, arguments) in enumerate(calls):
        header = {"index": index, "id": call_id, "type": "function"}
        chunks.append(
            chat_chunk({"tool_calls": [{**header, "function": {"name": name, "arguments": ""}}]})
        )
        for fragment in _pieces(arguments, piece):
            chunks.append(
                chat_chunk({"tool_calls": [{"index": index, "function": {"arguments": fragment}}]})
            )
    chunks.append(chat_chunk(finish_reason=finish_reason))
    return sse(chunks)


def text_reply(text: str, finish_reason: str = "stop") -> bytes:
    """A turn of plain text."""
    chunks = [chat_chunk({"role": "assistant", "content": ""})]
    chunks.extend(chat_chunk({"content": piece}) for piece in _pieces(text, 5))
    chunks.append(chat_chunk(finish_reason=finish_reason))
    return sse(chunks)


def cut_write_reply() -> bytes:
    """The recorded cut-off ``write`` turn, byte for byte."""
    return CUT_WRITE.read_bytes()
