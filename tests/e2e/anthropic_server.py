"""A scripted loopback server that speaks the Anthropic Messages streaming protocol.

Started by a test on ``127.0.0.1`` with a free port (stdlib ``ThreadingHTTPServer`` in a thread,
so it serves asyncio and trio clients alike). Each ``POST /v1/messages`` takes the next scripted
:class:`Reply`; every request body is recorded (decoded JSON) so that a test can assert what the
*next* request carried.

Like the real API, the server refuses (HTTP 400, ``invalid_request_error``) a request whose
history is not well formed: a ``tool_use`` without a ``tool_result`` first in the very next user
message, a ``tool_result`` that answers no ``tool_use`` of the message before, a ``tool_use``
``input`` that is not an object, an id outside ``^[a-zA-Z0-9_-]+$`` or used twice, an empty text
block, or a ``thinking`` block whose signature is not one this server issued for that text (the
real API verifies signatures). The check is written here with the standard library on purpose,
so that it shares no code with toolwire's own check.

Replies are SSE bodies with ``event:`` lines, sent with ``Transfer-Encoding: chunked``, one
HTTP chunk per event.
"""

from __future__ import annotations

import json
import re
import threading
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
STREAMS = ROOT.parent / "shared" / "fixtures" / "streams" / "anthropic"

#: The real recording of a ``make_file`` call cut at ``max_tokens`` with no content_block_stop.
CUT_MAKE_FILE = STREAMS / "max_tokens_mid_tool_input_no_block_stop.sse"
CUT_MAKE_FILE_ID = "toolu_01EKqbqmZrGRXy18eN7m9kvY"
#: The derived recording of an ``overloaded_error`` event after two text deltas.
OVERLOADED = STREAMS / "error_overloaded_mid_stream.derived.sse"

_ID = re.compile(r"^[a-zA-Z0-9_-]+$")


@dataclass
class Reply:
    """One scripted answer: an SSE body, or an HTTP error with a JSON body."""

    body: bytes = b""
    status: int = 200

    def sse_events(self) -> list[bytes]:
        parts = self.body.replace(b"\r\n", b"\n").split(b"\n\n")
        return [part + b"\n\n" for part in parts if part.strip()]


@dataclass
class ScriptedMessagesServer:
    """The script, what was received, and the thinking signatures issued."""

    replies: list[Reply] = field(default_factory=list)
    requests: list[dict[str, Any]] = field(default_factory=list)
    refused: list[str] = field(default_factory=list)
    #: signature -> the thinking text it signs (what this server sent).
    signatures: dict[str, str] = field(default_factory=dict)
    base_url: str = ""
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def script(self, *replies: Reply) -> None:
        with self._lock:
            self.replies.extend(replies)

    def next_reply(self, request: dict[str, Any]) -> Reply:
        with self._lock:
            self.requests.append(request)
            if not self.replies:
                return Reply(_error_body("api_error", "no scripted reply left"), status=500)
            return self.replies.pop(0)


def history_errors(messages: list[Any], signatures: dict[str, str]) -> list[str]:
    """What the Messages API refuses in a history (independent of toolwire on purpose)."""
    errors: list[str] = []
    used: set[str] = set()
    expected: list[str] = []  # the tool_use ids the next message must answer first
    for position, message in enumerate(messages):
        where = f"messages.{position}"
        content = message.get("content")
        blocks = content if isinstance(content, list) else []
        if message.get("role") == "user":
            results = []
            for block in blocks:
                if block.get("type") != "tool_result":
                    break
                results.append(block.get("tool_use_id"))
            stray = [b for b in blocks[len(results) :] if b.get("type") == "tool_result"]
            if stray:
                errors.append(f"{where}: tool_result blocks must come first in the content")
            if sorted(results) != sorted(expected) or len(set(results)) != len(results):
                errors.append(
                    f"{where}: tool_use ids {expected} need exactly one tool_result each "
                    f"at the start of this message; got {results}"
                )
            expected = []
            continue
        if expected:
            errors.append(f"{where}: tool_use ids {expected} were found without tool_result")
        expected = []
        for block in blocks:
            kind = block.get("type")
            if kind == "text" and not block.get("text"):
                errors.append(f"{where}: text content blocks must be non-empty")
            elif kind == "thinking":
                if signatures.get(block.get("signature", "")) != block.get("thinking"):
                    errors.append(f"{where}: Invalid `signature` in `thinking` block")
            elif kind == "tool_use":
                call_id = block.get("id")
                if not isinstance(call_id, str) or not _ID.match(call_id):
                    errors.append(f"{where}: tool_use.id should match ^[a-zA-Z0-9_-]+$")
                elif call_id in used:
                    errors.append(f"{where}: tool_use ids must be unique: {call_id}")
                if not isinstance(block.get("input"), dict):
                    errors.append(f"{where}: tool_use.input: Input should be a valid dictionary")
                used.add(call_id)
                expected.append(call_id)
    if expected:
        errors.append(f"tool_use ids {expected} were found without tool_result blocks")
    return errors


def _error_body(kind: str, message: str) -> bytes:
    return json.dumps({"type": "error", "error": {"type": kind, "message": message}}).encode()


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
        problems = [] if self.path == "/v1/messages" else [f"unknown path {self.path}"]
        if not isinstance(request.get("max_tokens"), int):
            problems.append("max_tokens: Field required")
        problems += history_errors(request.get("messages", []), script.signatures)
        if problems:
            with script._lock:
                script.refused.extend(problems)
            self._send(400, _error_body("invalid_request_error", "; ".join(problems)))
            return
        if reply.status != 200:
            self._send(reply.status, reply.body)
            return
        self._stream(reply)

    def _send(self, status: int, body: bytes) -> None:
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)
        self.wfile.flush()

    def _stream(self, reply: Reply) -> None:
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Cache-Control", "no-cache")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        for event in reply.sse_events():
            self.wfile.write(b"%x\r\n%s\r\n" % (len(event), event))
            self.wfile.flush()
        self.wfile.write(b"0\r\n\r\n")
        self.wfile.flush()


class _HTTPServer(ThreadingHTTPServer):
    daemon_threads = False
    block_on_close = True

    def __init__(self, script: ScriptedMessagesServer) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.script = script


class running_server:
    """Serve a :class:`ScriptedMessagesServer` in a thread; closes every socket on exit."""

    def __enter__(self) -> ScriptedMessagesServer:
        self.script = ScriptedMessagesServer()
        self.httpd = _HTTPServer(self.script)
        host, port = self.httpd.server_address[:2]
        self.script.base_url = f"http://{host!s}:{port}"
        self.thread = threading.Thread(
            target=self.httpd.serve_forever, kwargs={"poll_interval": 0.01}, daemon=True
        )
        self.thread.start()
        return self.script

    def __exit__(self, *exc_info: object) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()
        self.thread.join(timeout=5)


# -- building replies, in the Messages event format ---------------------------------------------


def _event(payload: dict[str, Any]) -> bytes:
    return f"event: {payload['type']}\ndata: {json.dumps(payload)}\n\n".encode()


def _pieces(text: str, size: int = 7) -> list[str]:
    return [text[i : i + size] for i in range(0, len(text), size)]


def messages_reply(
    server: ScriptedMessagesServer,
    *blocks: tuple[str, ...],
    stop_reason: str = "tool_use",
    msg_id: str = "msg_scripted",
) -> bytes:
    """A turn of blocks: ``("text", text)``, ``("thinking", text)``, ``("tool_use", id, name,
    raw input)``. A thinking block is signed, and the signature remembered by ``server``.
    """
    events = [
        _event(
            {
                "type": "message_start",
                "message": {
                    "id": msg_id,
                    "type": "message",
                    "role": "assistant",
                    "model": "claude-scripted",
                    "content": [],
                    "stop_reason": None,
                    "usage": {"input_tokens": 100, "output_tokens": 1},
                },
            }
        ),
        _event({"type": "ping"}),
    ]
    for index, block in enumerate(blocks):
        kind = block[0]
        if kind == "text":
            start: dict[str, Any] = {"type": "text", "text": ""}
            deltas = [{"type": "text_delta", "text": piece} for piece in _pieces(block[1])]
        elif kind == "thinking":
            signature = f"sig-{msg_id}-{index}"
            server.signatures[signature] = block[1]
            start = {"type": "thinking", "thinking": "", "signature": ""}
            deltas = [{"type": "thinking_delta", "thinking": p} for p in _pieces(block[1])]
            deltas.append({"type": "signature_delta", "signature": signature})
        else:
            start = {"type": "tool_use", "id": block[1], "name": block[2], "input": {}}
            deltas = [{"type": "input_json_delta", "partial_json": ""}]
            deltas += [{"type": "input_json_delta", "partial_json": p} for p in _pieces(block[3])]
        events.append(
            _event({"type": "content_block_start", "index": index, "content_block": start})
        )
        events += [
            _event({"type": "content_block_delta", "index": index, "delta": delta})
            for delta in deltas
        ]
        events.append(_event({"type": "content_block_stop", "index": index}))
    events.append(
        _event(
            {
                "type": "message_delta",
                "delta": {"stop_reason": stop_reason, "stop_sequence": None},
                "usage": {"output_tokens": 50},
            }
        )
    )
    events.append(_event({"type": "message_stop"}))
    return b"".join(events)
