"""The machinery every scripted loopback server shares; each provider's module adds its protocol.

A test starts a server on ``127.0.0.1`` with a free port: a stdlib ``ThreadingHTTPServer`` in a
thread, so that it serves asyncio and trio clients alike, in-process or from a subprocess. The
server answers each POST with the next scripted reply and records every request (decoded JSON),
so that a test can assert what the *next* request carried. Like a real backend, each provider's
server refuses a request whose history is not well formed; those checks live in the provider's
module (``server.py`` for Chat Completions, ``anthropic_server.py``, ``gemini_server.py``,
``ollama_server.py``, ``openai_responses_server.py``), written with the standard library so that
they share no code with toolwire's own check.

What is here: the script (:class:`ScriptedServer`: replies, requests, refusals, one lock), the
request handler's plumbing (:class:`LoopbackHandler`: reading a body, answering with a body or
with a stream), and starting and stopping the server (:class:`Loopback`). Streams are sent with
``Transfer-Encoding: chunked``, one HTTP chunk per piece (an SSE event, an NDJSON line), as real
servers flush them. A :class:`Reply` can be cut: ``drop`` closes the connection after some
pieces without the terminating chunk (a broken connection), ``eof`` ends the body cleanly after
some pieces (a server that stopped early).
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, Generic, Literal, TypeVar

from data_paths import STREAMS as STREAMS

#: The repository root (``tests/e2e/loopback.py`` -> parents[2]).
ROOT = Path(__file__).resolve().parents[2]

Cut = Literal["none", "drop", "eof"]

#: The header OpenAI's and Anthropic's servers send with a stream.
NO_CACHE = {"Cache-Control": "no-cache"}


@dataclass
class Reply:
    """One scripted answer: a streamed body (or an HTTP error and its body), maybe cut."""

    body: bytes = b""
    status: int = 200
    cut: Cut = "none"
    #: With ``cut``: how many pieces (SSE events, NDJSON lines) are sent before the cut.
    events: int = 0
    #: Seconds between pieces (a slow model).
    pause: float = 0.0
    #: With ``cut="drop"``: seconds between the last piece and the break (a connection that
    #: dies a moment after its last token, so that the client has read that token first).
    linger: float = 0.0


def sse_events(body: bytes) -> list[bytes]:
    """An SSE body split into its events, each with its blank-line terminator."""
    parts = body.replace(b"\r\n", b"\n").split(b"\n\n")
    return [part + b"\n\n" for part in parts if part.strip()]


ReplyT = TypeVar("ReplyT")


@dataclass
class ScriptedServer(Generic[ReplyT]):
    """The server's script and what it received; thread-safe for one test at a time."""

    replies: list[ReplyT] = field(default_factory=list)
    requests: list[Any] = field(default_factory=list)
    refused: list[str] = field(default_factory=list)
    #: ``http://127.0.0.1:<port>`` and the provider's base path, once the server runs.
    base_url: str = ""
    #: Re-entrant: a provider's script may hold it around the calls below.
    _lock: threading.RLock = field(default_factory=threading.RLock)

    def script(self, *replies: ReplyT) -> None:
        """Queue replies, answered in order, one per request that takes one."""
        with self._lock:
            self.replies.extend(replies)

    def record(self, request: Any) -> None:
        """Keep a request (decoded JSON) for the test to read."""
        with self._lock:
            self.requests.append(request)

    def take(self, request: Any) -> ReplyT | None:
        """Record ``request`` and take the next reply (``None`` when the script ran out)."""
        with self._lock:
            self.record(request)
            return self.replies.pop(0) if self.replies else None

    def refuse(self, problems: list[str]) -> None:
        """Note why a request was refused; a test asserts ``refused == []``."""
        with self._lock:
            self.refused.extend(problems)


ScriptT = TypeVar("ScriptT", bound=ScriptedServer[Any])


class LoopbackHandler(BaseHTTPRequestHandler, Generic[ScriptT]):
    """HTTP/1.1 plumbing; a provider's handler writes ``do_POST`` with these."""

    protocol_version = "HTTP/1.1"
    #: TCP_NODELAY: the status line and headers, then the body or each chunk, go out as separate
    #: small writes; with Nagle's algorithm each waits for the client's delayed ACK (~40 ms on
    #: loopback), which is not what a real server's flushed stream does.
    disable_nagle_algorithm = True
    server: _HTTPServer[ScriptT]

    @property
    def script(self) -> ScriptT:
        return self.server.script

    def log_message(self, format: str, *args: Any) -> None:
        """Quiet: the test output is not the place for access logs."""

    def read_body(self) -> bytes:
        length = int(self.headers.get("Content-Length", "0"))
        return self.rfile.read(length)

    def read_json(self) -> Any:
        """The request body decoded (an empty body reads as ``{}``)."""
        return json.loads(self.read_body() or b"{}")

    def send_body(self, status: int, body: bytes, content_type: str = "application/json") -> None:
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)
        self.wfile.flush()

    def send_json(self, status: int, payload: Any, content_type: str = "application/json") -> None:
        self.send_body(status, json.dumps(payload).encode(), content_type)

    def send_stream(
        self,
        pieces: list[bytes],
        content_type: str,
        *,
        headers: Mapping[str, str] | None = None,
        drop: bool = False,
        pause: float = 0.0,
        linger: float = 0.0,
    ) -> None:
        """Stream ``pieces``, one HTTP chunk each (``pause`` seconds apart); ``drop`` leaves
        out the terminating chunk (``linger`` seconds after the last piece)."""
        self.send_response(200)
        self.send_header("Content-Type", content_type)
        for name, value in (headers or {}).items():
            self.send_header(name, value)
        self.send_header("Transfer-Encoding", "chunked")
        if drop:
            # The connection breaks: no terminating chunk, and no keep-alive either.
            self.send_header("Connection", "close")
            self.close_connection = True
        self.end_headers()
        for piece in pieces:
            if pause:
                time.sleep(pause)
            self.wfile.write(b"%x\r\n%s\r\n" % (len(piece), piece))
            self.wfile.flush()
        if not drop:
            self.wfile.write(b"0\r\n\r\n")
        self.wfile.flush()
        if drop and linger:
            time.sleep(linger)

    def send_reply(
        self,
        reply: Reply,
        split: Callable[[bytes], list[bytes]],
        content_type: str,
        *,
        headers: Mapping[str, str] | None = None,
        error_type: str = "application/json",
    ) -> None:
        """Answer with ``reply``: its error status and body, or its body ``split`` and streamed."""
        if reply.status != 200:
            self.send_body(reply.status, reply.body, error_type)
            return
        pieces = split(reply.body)
        if reply.cut != "none":
            pieces = pieces[: reply.events]
        self.send_stream(
            pieces,
            content_type,
            headers=headers,
            drop=reply.cut == "drop",
            pause=reply.pause,
            linger=reply.linger,
        )

    def send_sse_reply(self, reply: Reply) -> None:
        """``reply`` as OpenAI and Anthropic stream SSE: one chunk per event, not to be cached."""
        self.send_reply(reply, sse_events, "text/event-stream", headers=NO_CACHE)


class _HTTPServer(ThreadingHTTPServer, Generic[ScriptT]):
    daemon_threads = False
    block_on_close = True

    def __init__(self, script: ScriptT, handler: type[LoopbackHandler[ScriptT]]) -> None:
        super().__init__(("127.0.0.1", 0), handler)
        self.script = script


class Loopback(Generic[ScriptT]):
    """Serve ``script`` in a thread while the ``with`` block runs; closes every socket on exit.

    ``base_path`` is appended to the script's ``base_url`` (``/v1`` for the OpenAI clients).
    """

    def __init__(
        self, script: ScriptT, handler: type[LoopbackHandler[ScriptT]], *, base_path: str = ""
    ) -> None:
        self.script = script
        self.handler = handler
        self.base_path = base_path

    def __enter__(self) -> ScriptT:
        self.httpd = _HTTPServer(self.script, self.handler)
        host, port = self.httpd.server_address[:2]
        self.script.base_url = f"http://{host!s}:{port}{self.base_path}"
        self.thread = threading.Thread(
            target=self.httpd.serve_forever, kwargs={"poll_interval": 0.01}, daemon=True
        )
        self.thread.start()
        return self.script

    def __exit__(self, *exc_info: object) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()
        self.thread.join(timeout=5)
