"""A loopback Chat Completions upstream that closes its connections the way servers race pools.

It answers ``POST .../chat/completions``: a streamed request with a short SSE answer (chunked),
a whole one with a ``chat.completion`` (``Content-Length``), on one connection after another
as HTTP/1.1 keep-alive allows, every answer saying ``Keep-Alive``. What it does after an
answer is its :class:`Closing` mode, so that a test sees the proxy meet each case for certain,
not by luck of timing:

- ``after_stream``: llama-server's way (``tools/server/server-http.cpp`` of b11434): a whole
  answer keeps the connection, a streamed one closes it. The close comes once the next request
  has arrived on it (or after 2 s), so that the race a pool loses now and then is lost every
  time; that request is never read (``unread``: the kernel then answers it with a reset) or
  read and dropped (``read``: a plain close).
- ``first_request``: a new connection's first request is read and the connection closed,
  nothing answered (a server that hangs up on a request: not a keep-alive race).
- ``cut_second``: a connection's second request gets ``HTTP/1.1 200`` and no more (a reused
  connection whose answer began, then broke off).

It counts connections, requests answered, and requests that came on a connection it was
closing (``stale``). Written for these tests; its answers are OpenAI's documented shapes.
"""

from __future__ import annotations

import json
import select
import socket
import socketserver
import struct
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Literal

Closing = Literal["after_stream", "first_request", "cut_second"]

_KEEP_ALIVE = b"Keep-Alive: timeout=5, max=100\r\n"
#: How long a connection to be closed waits for the request that loses the race.
_WAIT_FOR_NEXT = 2.0


@dataclass
class Counts:
    """What the upstream saw."""

    connections: int = 0
    answered: int = 0
    #: Requests that came on a connection the upstream was closing, never answered.
    stale: int = 0
    #: The request bodies answered, in order.
    bodies: list[bytes] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)


def _answer(stream: bool) -> bytes:
    if not stream:
        message = {"role": "assistant", "content": "hi"}
        body = json.dumps(
            {
                "id": "c",
                "object": "chat.completion",
                "created": 0,
                "model": "m",
                "choices": [{"index": 0, "message": message, "finish_reason": "stop"}],
            }
        ).encode()
        return (
            b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n" + _KEEP_ALIVE
            + f"Content-Length: {len(body)}\r\n\r\n".encode() + body
        )  # fmt: skip
    chunk = {
        "id": "c",
        "object": "chat.completion.chunk",
        "created": 0,
        "model": "m",
        "choices": [{"index": 0, "delta": {"content": "hi"}, "finish_reason": "stop"}],
    }
    events = f"data: {json.dumps(chunk)}\n\ndata: [DONE]\n\n".encode()
    return (
        b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n"
        + _KEEP_ALIVE + b"\r\n" + f"{len(events):x}\r\n".encode() + events + b"\r\n0\r\n\r\n"
    )  # fmt: skip


class _Handler(socketserver.StreamRequestHandler):
    server: _Server

    def handle(self) -> None:
        counts = self.server.counts
        with counts.lock:
            counts.connections += 1
        served = 0
        while True:
            body = self._request()
            if body is None:
                return  # the client closed the connection
            served += 1
            mode = self.server.closing
            if mode == "first_request" and served == 1:
                return  # closed, nothing answered
            if mode == "cut_second" and served == 2:
                self.wfile.write(b"HTTP/1.1 200")
                self.wfile.flush()
                return
            stream = json.loads(body).get("stream") is True
            self.wfile.write(_answer(stream))
            self.wfile.flush()
            with counts.lock:
                counts.answered += 1
                counts.bodies.append(body)
            if mode == "after_stream" and stream:
                self._close_once_the_next_request_came()
                return

    def _request(self) -> bytes | None:
        length = 0
        line = self.rfile.readline()
        if not line:
            return None
        while line not in (b"\r\n", b""):
            if line.lower().startswith(b"content-length:"):
                length = int(line.split(b":")[1])
            line = self.rfile.readline()
        return self.rfile.read(length)

    def _close_once_the_next_request_came(self) -> None:
        connection: socket.socket = self.connection
        readable, _, _ = select.select([connection], [], [], _WAIT_FOR_NEXT)
        came = bool(readable) and bool(connection.recv(1, socket.MSG_PEEK))
        if not came:
            return
        with self.server.counts.lock:
            self.server.counts.stale += 1
        if self.server.unread:
            # Closed with the request unread (no lingering): the kernel sends a reset. Once the
            # whole request is in, so that the reset meets the client's read, not its write.
            _peek_whole_request(connection)
            connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            connection.close()
        else:
            self._request()  # read, and dropped: a plain close follows


def _peek_whole_request(connection: socket.socket) -> None:
    """Wait (a little at a time, 2 s at most) until a whole request is in, left unread."""
    for _ in range(200):
        head, found, body = connection.recv(1 << 20, socket.MSG_PEEK).partition(b"\r\n\r\n")
        lengths = [
            int(line.split(b":")[1])
            for line in head.split(b"\r\n")
            if line.lower().startswith(b"content-length:")
        ]
        if found and len(body) >= (lengths[0] if lengths else 0):
            return
        time.sleep(0.01)


class _Server(socketserver.ThreadingTCPServer):
    daemon_threads = True
    allow_reuse_address = True

    def __init__(self, closing: Closing, unread: bool) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.closing = closing
        self.unread = unread
        self.counts = Counts()


@contextmanager
def closing_upstream(closing: Closing, *, unread: bool = True) -> Iterator[tuple[str, Counts]]:
    """The upstream's ``/v1`` URL and its counts, while it serves in a thread."""
    server = _Server(closing, unread)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/v1", server.counts
    finally:
        server.shutdown()
        server.server_close()
