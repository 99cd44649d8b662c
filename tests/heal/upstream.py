"""The upstream of the healing tests: the e2e scripted Chat server (``tests/e2e/server.py``).

It serves the same scripted replies and refuses the same malformed histories; on top of that
it answers a non-streamed request with a JSON body (as a real server does), keeps the raw bytes,
path and headers of every request, serves ``GET /v1/models``, and can stall a stream: send some
events, then keep the connection open until the client goes away (:class:`Stall`), which it
notes in ``gone``; or hang up: close the connection without answering (:class:`Hangup`).
"""

from __future__ import annotations

import json
import threading
import time
from dataclasses import dataclass, field
from typing import Any

import anyio
from e2e.loopback import NO_CACHE, Loopback, LoopbackHandler, Reply, sse_events
from e2e.server import ScriptedChatServer, chat_chunk, history_errors, sse

__all__ = [
    "Hangup",
    "HealUpstream",
    "Reply",
    "Stall",
    "chat_chunk",
    "completion",
    "running_upstream",
    "sse",
    "upstream_went_away",
]


@dataclass
class Stall:
    """Send the first ``events`` events of ``body``, then hold the stream open (comments only)."""

    body: bytes
    events: int
    #: Give up after this many seconds (a test that never closes must not hang the suite).
    limit: float = 10.0


@dataclass
class Hangup:
    """Close the connection without answering: a request the upstream never answered."""


@dataclass
class HealUpstream(ScriptedChatServer):
    """The script, plus what the healing tests read about each request."""

    raw_bodies: list[bytes] = field(default_factory=list)
    headers: list[dict[str, str]] = field(default_factory=list)
    paths: list[str] = field(default_factory=list)
    #: Set when a stalled stream's client went away (a write to it failed).
    gone: threading.Event = field(default_factory=threading.Event)
    #: Bytes of the last stalled stream's events the server managed to write.
    stall_written: int = 0

    def reset(self) -> None:
        """Forget the script and everything received, for the next test.

        ``gone`` is a new event: a stalled stream of an earlier test that notices its client
        left only now sets the event it started with, never the next test's.
        """
        with self._lock:
            self.replies.clear()
            self.requests.clear()
            self.refused.clear()
            self.raw_bodies.clear()
            self.headers.clear()
            self.paths.clear()
            self.gone = threading.Event()
            self.stall_written = 0


class _Handler(LoopbackHandler[HealUpstream]):
    def _note(self, body: bytes) -> None:
        script = self.script
        with script._lock:
            script.raw_bodies.append(body)
            script.headers.append({name.lower(): value for name, value in self.headers.items()})
            script.paths.append(self.path)

    def do_GET(self) -> None:
        self._note(b"")
        self.send_json(
            200,
            {"object": "list", "data": [{"id": "scripted-model", "object": "model",
                                          "created": 0, "owned_by": "tests"}]},
        )

    def do_POST(self) -> None:
        raw = self.read_body()
        self._note(raw)
        request = json.loads(raw or b"{}")
        reply: Any = self.script.next_reply(request)
        problems = history_errors(request.get("messages", []))
        if problems:
            self.script.refuse(problems)
            self.send_json(400, {"error": {"message": "; ".join(problems), "type": "invalid"}})
            return
        if isinstance(reply, Stall):
            self._stall(reply)
            return
        if isinstance(reply, Hangup):
            self.close_connection = True
            return
        if reply.status != 200 or not request.get("stream"):
            self.send_body(reply.status, reply.body, "application/json")
            return
        self.send_reply(reply, sse_events, "text/event-stream", headers=NO_CACHE)

    def _stall(self, reply: Stall) -> None:
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        self.close_connection = True
        deadline = time.monotonic() + reply.limit
        gone = self.script.gone
        try:
            self.script.stall_written = 0
            for piece in sse_events(reply.body)[: reply.events]:
                self.wfile.write(b"%x\r\n%s\r\n" % (len(piece), piece))
                self.wfile.flush()
                self.script.stall_written += len(piece)
            while time.monotonic() < deadline:
                time.sleep(0.02)
                self.wfile.write(b"%x\r\n%s\r\n" % (len(b": ping\n\n"), b": ping\n\n"))
                self.wfile.flush()
        except OSError:  # BrokenPipeError, ConnectionResetError: the client went away
            gone.set()


def running_upstream() -> Loopback[HealUpstream]:
    """Serve a :class:`HealUpstream` (``base_url`` ends in ``/v1``) in a ``with`` block."""
    return Loopback(HealUpstream(), _Handler, base_path="/v1")


def completion(
    *calls: tuple[str, str, str],
    content: str | None = None,
    finish_reason: str = "tool_calls",
    usage: dict[str, int] | None = None,
) -> bytes:
    """A non-streamed ``chat.completion`` body with calls ``(id, name, raw arguments)``."""
    message: dict[str, Any] = {"role": "assistant", "content": content}
    if calls:
        message["tool_calls"] = [
            {"id": call_id, "type": "function", "function": {"name": name, "arguments": raw}}
            for call_id, name, raw in calls
        ]
    body: dict[str, Any] = {
        "id": "chatcmpl-scripted",
        "object": "chat.completion",
        "created": 1796028372,
        "model": "scripted-model",
        "system_fingerprint": "fp_scripted",
        "choices": [
            {"index": 0, "message": message, "logprobs": None, "finish_reason": finish_reason}
        ],
    }
    if usage is not None:
        body["usage"] = usage
    return json.dumps(body).encode()


#: Seconds a stalled stream's server waits to see its client go (it writes every 20 ms).
GONE_WITHIN = 3.0


async def upstream_went_away(upstream: HealUpstream) -> bool:
    """Whether a stalled stream's client left within :data:`GONE_WITHIN` seconds.

    Waited for in a worker thread, because ``gone`` is the server thread's event.
    """
    return await anyio.to_thread.run_sync(upstream.gone.wait, GONE_WITHIN)
