"""The fault table's machinery: a loopback upstream that fails on purpose, in every wire format.

``docs/healing.md`` ("Faults of the network") has a table: for each of the five healed formats,
streamed and whole, and each fault of the network (the connection dropped, reset, a stall, bytes
that break HTTP, an HTTP 500 on the retry), what the client sees, how many upstream requests
were made and how long it took. :func:`run_case` measures one row; ``tests/heal/
test_fault_table.py`` pins every row, and ``bench/bench_fault_table.py`` prints the table.

:class:`FaultyUpstream` is a raw socket server (the stdlib's HTTP server cannot reset a
connection or break its own framing). Every request gets the same answer, a short text and one
``write`` call, with the fault injected while the call is being sent (after the piece that
opens it: mid-arguments for the formats that stream arguments, right after the whole call for
Gemini and Ollama, whose calls arrive whole; halfway through a whole body). So a fault repeats
on every request, the worst case: the table shows every request toolwire makes. ``retry_5xx``
answers a call toolwire rejects (``content`` is not a string), then HTTP 500 to the retry.

- ``drop``: the server closes the connection (FIN) before the body's end (``drop_once``: only
  the first answer; the next ones are whole);
- ``reset``: it resets the connection (RST, ``SO_LINGER`` 0);
- ``stall``: it sends nothing more until the client goes (the read timeout ends it);
- ``garbage``: a chunk header that is not hex (the body breaks HTTP/1.1 framing).
"""

from __future__ import annotations

import json
import re
import socket
import struct
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, Literal

import httpx
from e2e import gemini_server as gemini
from e2e import ollama_server as ollama
from e2e.anthropic_server import ScriptedMessagesServer, _whole_message, messages_reply
from e2e.loopback import sse_events
from e2e.openai_responses_server import ReplyBuilder
from e2e.server import tool_calls_reply

import toolwire

from .upstream import completion

__all__ = [
    "FAULTS",
    "FORMATS",
    "Case",
    "Fault",
    "FaultyUpstream",
    "Outcome",
    "faulty_upstream",
    "run_case",
]

Fault = Literal["drop_once", "drop", "reset", "stall", "garbage", "retry_5xx"]
FAULTS: tuple[Fault, ...] = ("drop_once", "drop", "reset", "stall", "garbage", "retry_5xx")

WRITE_SCHEMA = {
    "type": "object",
    "properties": {"path": {"type": "string"}, "content": {"type": "string"}},
    "required": ["path", "content"],
}
GOOD = {"path": "notes.txt", "content": "hello from the fault table"}
BAD = {"path": "notes.txt", "content": 42}
USER_TEXT = "Write hello to notes.txt"
#: The codes the client's error may carry (in band, or in a whole error body).
_CODES = re.compile(
    rb"upstream_dropped|upstream_timeout|upstream_protocol_error|retry_http_status"
    rb"|tool_call_rejected|not_json"
)


@dataclass(frozen=True)
class Case:
    """One wire format: its request, its answer (pieces as the server flushes them)."""

    name: str
    #: The path (and query) of a streamed request, and of a whole one.
    paths: tuple[str, str]
    request: Callable[[bool], dict[str, Any]]
    #: The streamed answer's pieces, for a call's arguments.
    stream: Callable[[dict[str, Any]], list[bytes]]
    #: The whole answer's body, for a call's arguments.
    whole: Callable[[dict[str, Any]], bytes]
    content_type: str
    #: The calls arrive whole (Gemini, Ollama): the fault comes right after the call's piece.
    whole_calls: bool = False

    def path(self, streamed: bool) -> str:
        return self.paths[0] if streamed else self.paths[1]

    def pieces(self, arguments: dict[str, Any], streamed: bool) -> tuple[list[bytes], int]:
        """The answer's pieces and how many go out before the fault (mid-call)."""
        if not streamed:
            body = self.whole(arguments)
            return [body[: len(body) // 2], body[len(body) // 2 :]], 1
        pieces = self.stream(arguments)
        opened = next(i for i, piece in enumerate(pieces) if b'"write"' in piece)
        return pieces, opened + (1 if self.whole_calls else 2)


def _chat_request(streamed: bool) -> dict[str, Any]:
    tool = {"type": "function", "function": {"name": "write", "parameters": WRITE_SCHEMA}}
    return {
        "model": "scripted-model",
        "messages": [{"role": "user", "content": USER_TEXT}],
        "tools": [tool],
        "stream": streamed,
    }


def _anthropic_request(streamed: bool) -> dict[str, Any]:
    return {
        "model": "claude-scripted",
        "max_tokens": 256,
        "messages": [{"role": "user", "content": USER_TEXT}],
        "tools": [{"name": "write", "input_schema": WRITE_SCHEMA}],
        "stream": streamed,
    }


def _anthropic_stream(arguments: dict[str, Any]) -> list[bytes]:
    body = messages_reply(
        ScriptedMessagesServer(),
        ("text", "Writing it."),
        ("tool_use", "toolu_1", "write", json.dumps(arguments)),
    )
    return sse_events(body)


def _responses_request(streamed: bool) -> dict[str, Any]:
    return {
        "model": "gpt-scripted",
        "input": USER_TEXT,
        "tools": [{"type": "function", "name": "write", "parameters": WRITE_SCHEMA}],
        "stream": streamed,
    }


def _responses_reply(arguments: dict[str, Any]) -> list[dict[str, Any]]:
    reply = (
        ReplyBuilder("resp_1")
        .message("msg_1", "Writing it.")
        .call("fc_1", "call_1", "write", json.dumps(arguments))
        .completed()
    )
    return reply.events


def _gemini_request(streamed: bool) -> dict[str, Any]:
    declaration = {"name": "write", "parameters": WRITE_SCHEMA}
    return {
        "contents": [{"role": "user", "parts": [{"text": USER_TEXT}]}],
        "tools": [{"functionDeclarations": [declaration]}],
    }


def _gemini_stream(arguments: dict[str, Any]) -> bytes:
    call = {"functionCall": {"name": "write", "args": arguments}}
    usage = {"promptTokenCount": 60, "candidatesTokenCount": 12, "totalTokenCount": 72}
    return gemini.sse(
        gemini.chunk({"text": "Writing it."}),
        gemini.chunk({**call, "thoughtSignature": gemini.signature(1)}),
        gemini.chunk({"text": ""}, finish="STOP", usage=usage),
    )


def _ollama_request(streamed: bool) -> dict[str, Any]:
    tool = {"type": "function", "function": {"name": "write", "parameters": WRITE_SCHEMA}}
    return {
        "model": ollama.MODEL,
        "messages": [{"role": "user", "content": USER_TEXT}],
        "tools": [tool],
        "stream": streamed,
    }


def _ollama_stream(arguments: dict[str, Any]) -> bytes:
    return ollama.ndjson(
        ollama.chat_line(content="Writing it."),
        ollama.chat_line(calls=[ollama.ollama_call("write", arguments, 0, "call_1")]),
        ollama.done_line("stop"),
    )


def _ndjson_lines(body: bytes) -> list[bytes]:
    return [line + b"\n" for line in body.split(b"\n") if line.strip()]


def _gemini_events(body: bytes) -> list[bytes]:
    return [event + b"\r\n\r\n" for event in body.split(b"\r\n\r\n") if event.strip()]


def _responses_events(events: list[dict[str, Any]]) -> list[bytes]:
    return [
        f"event: {event['type']}\ndata: {json.dumps({**event, 'sequence_number': n})}\n\n".encode()
        for n, event in enumerate(events)
    ]


FORMATS: dict[str, Case] = {
    case.name: case
    for case in (
        Case(
            "Chat",
            ("/v1/chat/completions", "/v1/chat/completions"),
            _chat_request,
            lambda args: sse_events(tool_calls_reply(("call_1", "write", json.dumps(args)))),
            lambda args: completion(("call_1", "write", json.dumps(args))),
            "text/event-stream",
        ),
        Case(
            "Anthropic",
            ("/v1/messages", "/v1/messages"),
            _anthropic_request,
            _anthropic_stream,
            lambda args: _whole_message(b"".join(_anthropic_stream(args))),
            "text/event-stream",
        ),
        Case(
            "Responses",
            ("/v1/responses", "/v1/responses"),
            _responses_request,
            lambda args: _responses_events(_responses_reply(args)),
            lambda args: json.dumps(_responses_reply(args)[-1]["response"]).encode(),
            "text/event-stream",
        ),
        Case(
            "Gemini",
            (
                "/v1beta/models/gemini-scripted:streamGenerateContent?alt=sse",
                "/v1beta/models/gemini-scripted:generateContent",
            ),
            _gemini_request,
            lambda args: _gemini_events(_gemini_stream(args)),
            lambda args: json.dumps(gemini.whole_body(_gemini_stream(args))).encode(),
            "text/event-stream",
            whole_calls=True,
        ),
        Case(
            "Ollama",
            ("/api/chat", "/api/chat"),
            _ollama_request,
            lambda args: _ndjson_lines(_ollama_stream(args)),
            lambda args: json.dumps(ollama.whole_response(_ollama_stream(args))).encode(),
            "application/x-ndjson",
            whole_calls=True,
        ),
    )
}


# -- the upstream ------------------------------------------------------------------------------


@dataclass
class FaultyUpstream:
    """What every request is answered with, and what the server saw."""

    case: Case
    fault: Fault
    streamed: bool
    #: Seconds a stalled answer waits before giving up on its client.
    stall_limit: float = 10.0
    requests: list[dict[str, Any]] = field(default_factory=list)
    port: int = 0
    _lock: threading.Lock = field(default_factory=threading.Lock)

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def answer(self, connection: socket.socket, request: dict[str, Any]) -> None:
        with self._lock:
            number = len(self.requests)
            self.requests.append(request)
        if self.fault == "retry_5xx":
            if number == 0:
                pieces, _ = self.case.pieces(BAD, self.streamed)
                _send(connection, 200, self._type(), pieces)
            else:
                error = {"error": {"message": "the server is overloaded", "type": "server_error"}}
                _send(connection, 500, "application/json", [json.dumps(error).encode()])
            return
        pieces, before = self.case.pieces(GOOD, self.streamed)
        if self.fault == "drop_once" and number > 0:
            _send(connection, 200, self._type(), pieces)
            return
        _send(connection, 200, self._type(), pieces[:before], end=False)
        if self.fault in ("drop", "drop_once"):
            connection.shutdown(socket.SHUT_WR)
        elif self.fault == "reset":
            connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        elif self.fault == "garbage":
            connection.sendall(b"zz\r\nnot a chunk\r\n")
        elif self.fault == "stall":
            _wait_until_gone(connection, self.stall_limit)

    def _type(self) -> str:
        return self.case.content_type if self.streamed else "application/json"


def _send(
    connection: socket.socket,
    status: int,
    content_type: str,
    pieces: list[bytes],
    *,
    end: bool = True,
) -> None:
    """A chunked response: one chunk per piece, the terminating chunk when ``end``."""
    head = f"HTTP/1.1 {status} X\r\ncontent-type: {content_type}\r\ntransfer-encoding: chunked\r\n"
    connection.sendall(head.encode() + b"connection: close\r\n\r\n")
    for piece in pieces:
        connection.sendall(b"%x\r\n%s\r\n" % (len(piece), piece))
    if end:
        connection.sendall(b"0\r\n\r\n")


def _wait_until_gone(connection: socket.socket, limit: float) -> None:
    connection.settimeout(0.02)
    deadline = time.monotonic() + limit
    while time.monotonic() < deadline:
        try:
            if connection.recv(1) == b"":
                return  # the client closed
        except TimeoutError:
            continue
        except OSError:
            return


def _read_request(connection: socket.socket) -> dict[str, Any] | None:
    data = b""
    while b"\r\n\r\n" not in data:
        piece = connection.recv(65536)
        if not piece:
            return None
        data += piece
    head, _, body = data.partition(b"\r\n\r\n")
    length = 0
    for line in head.split(b"\r\n")[1:]:
        name, _, value = line.partition(b":")
        if name.strip().lower() == b"content-length":
            length = int(value.strip())
    while len(body) < length:
        piece = connection.recv(65536)
        if not piece:
            return None
        body += piece
    return json.loads(body or b"{}")


def _serve(listener: socket.socket, upstream: FaultyUpstream, stop: threading.Event) -> None:
    listener.settimeout(0.02)
    while not stop.is_set():
        try:
            connection, _ = listener.accept()
        except TimeoutError:
            continue
        except OSError:
            return
        connection.settimeout(None)
        threading.Thread(target=_handle, args=(connection, upstream), daemon=True).start()


def _handle(connection: socket.socket, upstream: FaultyUpstream) -> None:
    with connection:
        try:
            request = _read_request(connection)
            if request is not None:
                upstream.answer(connection, request)
        except OSError:
            pass  # the client went away


@contextmanager
def faulty_upstream(
    case: Case, fault: Fault, streamed: bool, *, stall_limit: float = 10.0
) -> Iterator[FaultyUpstream]:
    """Serve a :class:`FaultyUpstream` on loopback while the ``with`` block runs."""
    upstream = FaultyUpstream(case, fault, streamed, stall_limit=stall_limit)
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(16)
    upstream.port = listener.getsockname()[1]
    stop = threading.Event()
    thread = threading.Thread(target=_serve, args=(listener, upstream, stop), daemon=True)
    thread.start()
    try:
        yield upstream
    finally:
        stop.set()
        thread.join(timeout=5)
        listener.close()


# -- one row -----------------------------------------------------------------------------------


@dataclass
class Outcome:
    """What the client saw, and what it cost."""

    streamed: bool
    #: The HTTP status the client received (200 for a stream that started).
    status: int
    #: The client's ``x-should-retry`` header.
    should_retry: str | None
    #: The code of the error the client received (in band or in the body), if any.
    code: str | None
    #: The client's stream broke off (``httpx.RemoteProtocolError``) instead of ending.
    dropped: bool
    #: The client received the call (its arguments, whole).
    call: bool
    #: Requests the upstream received.
    requests: int
    seconds: float
    body: bytes = b""

    def seen(self) -> str:
        """What the client sees, in the table's words."""
        if self.dropped:
            return "its stream drops"
        if self.call and self.code is None:
            return "the call, then the finish" if self.streamed else "HTTP 200 with the call"
        where = "in-band error" if self.streamed else f"HTTP {self.status}"
        said = f" `{self.code}`" if self.code else ""
        header = ", `x-should-retry: false`" if self.should_retry == "false" else ""
        return f"{where}{said}{header}"


def _received_call(body: bytes) -> bool:
    """Whether ``body`` carries the ``write`` call with its whole arguments (in any format:
    a JSON string of arguments, escaped, or an object)."""
    text = body.decode("utf-8", "replace").replace('\\"', '"')
    return '"write"' in text and GOOD["content"] in text


async def run_case(
    case: Case,
    fault: Fault,
    streamed: bool,
    *,
    read_timeout: float = 0.2,
    max_retries: int = 2,
) -> Outcome:
    """One request of ``case`` through a :class:`toolwire.HealingTransport` to an upstream that
    fails with ``fault``; what the client saw, the upstream's request count, the time taken."""
    with faulty_upstream(case, fault, streamed, stall_limit=read_timeout * 20 + 2) as upstream:
        transport = toolwire.HealingTransport(max_retries=max_retries)
        timeout = httpx.Timeout(5.0, read=read_timeout)
        async with httpx.AsyncClient(
            transport=transport, base_url=upstream.base_url, timeout=timeout
        ) as client:
            started = time.perf_counter()
            body = bytearray()
            dropped = False
            request = client.build_request("POST", case.path(streamed), json=case.request(streamed))
            response = await client.send(request, stream=True)
            try:
                async for piece in response.aiter_bytes():
                    body += piece
            except httpx.RemoteProtocolError:
                dropped = True
            finally:
                await response.aclose()
            seconds = time.perf_counter() - started
        found = _CODES.search(bytes(body))
        return Outcome(
            streamed=streamed,
            status=response.status_code,
            should_retry=response.headers.get("x-should-retry"),
            code=found.group().decode() if found else None,
            dropped=dropped,
            call=_received_call(bytes(body)),
            requests=len(upstream.requests),
            seconds=seconds,
            body=bytes(body),
        )
