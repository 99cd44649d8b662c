"""What healing's data path costs against what any rewriting proxy must do, in memory, side by side.

Run: ``PYTHONPATH=bench .venv/bin/python bench/bench_heal_data_path.py [--chunks 15] [--tools 0]
[--no-usage] [--whole] [--busy 0]``

No sockets and no event-loop I/O: the upstream is ``load_upstream.py``'s turn (the role chunk,
``--chunks`` text chunks, one valid ``write`` call in fragments, the finish, the usage,
``[DONE]``), one read per piece as its server writes them, served from memory by an httpx
transport. Each variant reads that response through httpx as the proxy does
(``aiter_raw``), alternated in rounds; the best round of each counts (``time.process_time``):

- ``pass``: the response as it came (``toolwire serve --no-heal``'s data path);
- ``decode``: ``pass``, and each event's JSON decoded (msgspec): what any reader must do;
- ``rewrite``: ``decode``, and each event encoded and framed again: what any proxy that
  rewrites the stream must do;
- ``heal``: the request and response through ``HealingTransport`` (``toolwire serve``'s data
  path): planned, each read mapped to typed events, judged, observed, re-encoded.

``--whole``: the same turn as one ``chat.completion`` body (its text joined, its call whole, its
finish and usage), asked without ``stream``: one read of JSON, decoded and encoded once.

``--busy N``: before each piece, the upstream does N rounds of unrelated Python work (h11 reading
a small chunked response, as httpcore does for every read of a real upstream), in every variant
alike. In this loop nothing else runs between two reads, so healing's code and data stay hot in
the CPU's caches; in the proxy, the socket's and HTTP's own code runs between them. ``--busy``
shows what that interleaving does to healing's cost beyond ``pass`` (``docs/serve.md``).

It prints microseconds per request and each variant's cost beyond ``pass``, as a ratio to
``rewrite``'s: how far healing is from the least a rewriting proxy must do (issue 20). Then the
CPU from the request to the first piece handed on, bare and healed: what a burst of requests
waits on before its first bytes.
"""

from __future__ import annotations

import argparse
import functools
import gc
import json
import os
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

import anyio
import httpx
import msgspec

os.environ.setdefault("LOAD_PAUSE", "0")
URL = "http://upstream.invalid/v1/chat/completions"


def upstream_pieces(chunks: int) -> list[bytes]:
    """The body pieces ``load_upstream.app`` sends for one turn, one per ASGI write."""
    os.environ["LOAD_CHUNKS"] = str(chunks)
    import load_upstream

    load_upstream.CHUNKS = chunks
    load_upstream.PAUSE = 0.0
    pieces: list[bytes] = []
    request = [{"type": "http.request", "body": b"{}", "more_body": False}]

    async def receive() -> dict[str, Any]:
        return request.pop() if request else {"type": "http.disconnect"}

    async def send(message: dict[str, Any]) -> None:
        if message["type"] == "http.response.body" and message.get("body"):
            pieces.append(message["body"])

    scope = {"type": "http", "method": "POST", "path": "/v1/chat/completions", "headers": []}
    anyio.run(load_upstream.app, scope, receive, send)
    return pieces


#: Rounds of unrelated Python work before each piece (``--busy``).
BUSY = 0
_BUSY_RESPONSE = b"HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n"


def _busy() -> None:
    """One round of ``--busy``: an h11 client reads a small chunked response to its end."""
    import h11

    connection = h11.Connection(h11.CLIENT)
    connection.send(h11.Request(method="GET", target="/", headers=[("Host", "upstream")]))
    connection.send(h11.EndOfMessage())
    connection.receive_data(_BUSY_RESPONSE)
    while not isinstance(connection.next_event(), h11.EndOfMessage):
        pass


class _Pieces(httpx.AsyncByteStream):
    def __init__(self, pieces: list[bytes]) -> None:
        self._pieces = pieces

    async def __aiter__(self) -> AsyncIterator[bytes]:
        for piece in self._pieces:
            for _ in range(BUSY):
                _busy()
            yield piece


#: The turn as one ``chat.completion`` body, asked without ``stream`` (``--whole``).
WHOLE = False


def whole_body(pieces: list[bytes]) -> bytes:
    """The turn of ``pieces`` as one ``chat.completion``: its text joined, its calls whole."""
    chunks = [_decode(event) for piece in pieces for event in _sse_events(piece)]
    deltas = [chunk["choices"][0] for chunk in chunks if chunk.get("choices")]
    calls: dict[int, dict[str, Any]] = {}
    for delta in (choice["delta"] for choice in deltas):
        for fragment in delta.get("tool_calls") or []:
            call = calls.setdefault(
                fragment["index"],
                {"id": fragment.get("id"), "type": "function",
                 "function": {"name": "", "arguments": ""}},
            )  # fmt: skip
            function = fragment.get("function") or {}
            call["function"]["name"] += function.get("name") or ""
            call["function"]["arguments"] += function.get("arguments") or ""
    message = {
        "role": "assistant",
        "content": "".join(choice["delta"].get("content") or "" for choice in deltas),
        "tool_calls": [calls[index] for index in sorted(calls)],
    }
    finish = next(choice["finish_reason"] for choice in deltas if choice.get("finish_reason"))
    usage = next(chunk["usage"] for chunk in chunks if chunk.get("usage"))
    first = chunks[0]
    return _encode(
        {"id": first["id"], "object": "chat.completion", "created": first["created"],
         "model": first["model"], "usage": usage,
         "choices": [{"index": 0, "message": message, "finish_reason": finish}]}
    )  # fmt: skip


class MemoryUpstream(httpx.AsyncBaseTransport):
    """Answers every request with the recorded pieces: an event stream, or one JSON body."""

    def __init__(self, pieces: list[bytes]) -> None:
        self._pieces = pieces

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        await request.aread()
        kind = b"application/json" if WHOLE else b"text/event-stream"
        return httpx.Response(200, headers=[(b"content-type", kind)], stream=_Pieces(self._pieces))


#: Tools offered beside the bench's ``write`` (``--tools``): an agent's list is often 20 or more.
EXTRA_TOOLS = 0


def extra_tool(number: int) -> dict[str, Any]:
    parameter = {"type": "string", "description": "a parameter " * 5}
    schema = {
        "type": "object",
        "properties": {f"p{position}": parameter for position in range(8)},
        "required": ["p0"],
    }
    described = {"name": f"tool_{number}", "description": "Does a thing. " * 20}
    return {"type": "function", "function": {**described, "parameters": schema}}


#: The client asks for the usage chunk itself (``stream_options.include_usage``); without it
#: (``--no-usage``, the openai SDK's default) healing asks for it upstream on the client's behalf.
CLIENT_USAGE = True


@functools.cache
def _content(extra_tools: int, usage: bool, whole: bool) -> bytes:
    from bench_serve_load import REQUEST

    body = {**REQUEST, "tools": [*REQUEST["tools"], *map(extra_tool, range(extra_tools))]}
    if not usage or whole:
        del body["stream_options"]
    if whole:
        del body["stream"]
    return json.dumps(body).encode()


def _request() -> httpx.Request:
    content = _content(EXTRA_TOOLS, CLIENT_USAGE, WHOLE)
    return httpx.Request("POST", URL, headers={"content-type": "application/json"}, content=content)


_decode = msgspec.json.Decoder().decode
_encode = msgspec.json.Encoder().encode


def _sse_events(piece: bytes) -> list[bytes]:
    return [part[6:] for part in piece.split(b"\n\n") if part.startswith(b"data: {")]


def _events(piece: bytes) -> list[bytes]:
    """The JSON documents of one read: its events, or (``--whole``) the read itself."""
    return [piece] if WHOLE else _sse_events(piece)


def variants(pieces: list[bytes]) -> dict[str, Callable[[], Awaitable[int]]]:
    """Each variant: one request, its response read whole; the bytes it handed on."""
    from toolwire.heal import HealingTransport

    upstream = MemoryUpstream(pieces)
    healing = HealingTransport(MemoryUpstream(pieces))

    async def passed() -> int:
        response = await upstream.handle_async_request(_request())
        return sum([len(piece) async for piece in response.aiter_raw()])

    async def decoded() -> int:
        response = await upstream.handle_async_request(_request())
        size = 0
        async for piece in response.aiter_raw():
            for event in _events(piece):
                _decode(event)
            size += len(piece)
        return size

    async def rewritten() -> int:
        response = await upstream.handle_async_request(_request())
        size = 0
        async for piece in response.aiter_raw():
            out = bytearray()
            for event in _events(piece):
                out += b"data: " + _encode(_decode(event)) + b"\n\n"
            size += len(out)
        return size

    async def healed() -> int:
        response = await healing.handle_async_request(_request())
        try:
            return sum([len(piece) async for piece in response.aiter_raw()])
        finally:
            await response.aclose()

    return {"pass": passed, "decode": decoded, "rewrite": rewritten, "heal": healed}


async def healed_body(pieces: list[bytes]) -> bytes:
    """One healed response, whole: what the ``heal`` variant hands on."""
    from toolwire.heal import HealingTransport

    response = await HealingTransport(MemoryUpstream(pieces)).handle_async_request(_request())
    try:
        return b"".join([piece async for piece in response.aiter_raw()])
    finally:
        await response.aclose()


def check_healed(pieces: list[bytes], body: bytes) -> None:
    """The healed response says what the upstream said: every text piece, the call, its finish.

    Measuring an error path instead (a refusal, a 502) would make every figure meaningless.
    """
    if WHOLE:
        _check_whole(pieces, body)
        return
    sent = [_decode(event) for piece in pieces for event in _events(piece)]
    try:
        got = [_decode(event) for event in _events(body)]
    except msgspec.DecodeError as error:
        raise SystemExit(f"the healed response is not whole JSON events: {error}") from None
    text = [c["choices"][0]["delta"].get("content") for c in sent if c["choices"]]
    got_text = [c["choices"][0]["delta"].get("content") for c in got if c["choices"]]
    if [t for t in text if t] != [t for t in got_text if t]:
        raise SystemExit(f"the healed text differs from the upstream's: {body[:300]!r}")
    calls = [
        call["function"]
        for c in got
        if c["choices"]
        for call in c["choices"][0]["delta"].get("tool_calls") or []
    ]
    import load_upstream

    arguments = json.loads(load_upstream.ARGUMENTS)
    if [(f["name"], json.loads(f["arguments"])) for f in calls] != [("write", arguments)]:
        raise SystemExit(f"the healed call differs from the upstream's: {calls!r}")
    if not body.endswith(b"data: [DONE]\n\n"):
        raise SystemExit(f"the healed response did not end with [DONE]: {body[-200:]!r}")


def _check_whole(pieces: list[bytes], body: bytes) -> None:
    """``check_healed`` for ``--whole``: the healed completion has the upstream's text and call."""
    sent = _decode(pieces[0])["choices"][0]["message"]
    try:
        got = _decode(body)["choices"][0]["message"]
    except (msgspec.DecodeError, KeyError, IndexError, TypeError):
        raise SystemExit(f"the healed response is no completion: {body[:300]!r}") from None
    if got.get("content") != sent["content"]:
        raise SystemExit(f"the healed text differs from the upstream's: {body[:300]!r}")
    calls = [call["function"] for call in got.get("tool_calls") or []]
    import load_upstream

    arguments = json.loads(load_upstream.ARGUMENTS)
    if [(f["name"], json.loads(f["arguments"])) for f in calls] != [("write", arguments)]:
        raise SystemExit(f"the healed call differs from the upstream's: {calls!r}")


async def measure(pieces: list[bytes], rounds: int, requests: int) -> dict[str, float]:
    """Microseconds of CPU per request, the best round of each variant, rounds alternated."""
    check_healed(pieces, await healed_body(pieces))
    runs = variants(pieces)
    for run in runs.values():
        for _ in range(50):  # imports, the tools' compiling, the caches
            assert await run() > 0
    spent: dict[str, list[float]] = {name: [] for name in runs}
    for _ in range(rounds):
        for name, run in runs.items():
            gc.collect()
            start = time.process_time()
            for _ in range(requests):
                await run()
            spent[name].append((time.process_time() - start) / requests * 1e6)
    return {name: min(times) for name, times in spent.items()}


async def first_pieces(pieces: list[bytes], rounds: int, requests: int) -> dict[str, float]:
    """Microseconds of CPU from the request to the first piece handed on, bare and healed.

    What a burst of requests waits on before its first bytes: each request's cost up to there
    (the rest of each response is read outside the timed part). Best round of each, alternated.
    """
    from toolwire.heal import HealingTransport

    transports = {
        "pass": MemoryUpstream(pieces),
        "heal": HealingTransport(MemoryUpstream(pieces)),
    }

    async def until_first(transport: httpx.AsyncBaseTransport) -> float:
        request = _request()
        start = time.process_time()
        response = await transport.handle_async_request(request)
        rest = response.aiter_raw()
        await anext(rest)
        spent = time.process_time() - start
        async for _ in rest:
            pass
        await response.aclose()
        return spent

    for transport in transports.values():
        for _ in range(50):
            await until_first(transport)
    spent: dict[str, list[float]] = {name: [] for name in transports}
    for _ in range(rounds):
        for name, transport in transports.items():
            gc.collect()
            total = 0.0
            for _ in range(requests):
                total += await until_first(transport)
            spent[name].append(total / requests * 1e6)
    return {name: min(times) for name, times in spent.items()}


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--chunks", type=int, default=15)
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--requests", type=int, default=1000)
    parser.add_argument("--tools", type=int, default=0, help="more tools offered (~1.2 KB each)")
    parser.add_argument(
        "--no-usage", action="store_true", help="the client does not ask for the usage chunk"
    )
    parser.add_argument("--whole", action="store_true", help="one chat.completion, not a stream")
    parser.add_argument(
        "--busy", type=int, default=0, help="rounds of unrelated Python work before each piece"
    )
    args = parser.parse_args()
    global EXTRA_TOOLS, CLIENT_USAGE, WHOLE, BUSY
    EXTRA_TOOLS = args.tools
    BUSY = args.busy
    CLIENT_USAGE = not args.no_usage
    pieces = upstream_pieces(args.chunks)
    if args.whole:
        pieces = [whole_body(pieces)]
        WHOLE = True
    best = anyio.run(measure, pieces, args.rounds, args.requests)
    floor = best["rewrite"] - best["pass"]
    size = len(_request().content)
    print(f"{len(pieces)} reads, {sum(map(len, pieces))} bytes per response, {size} per request")
    print(f"{'variant':<8}{'us/request':>12}{'beyond pass':>14}{'x rewrite':>12}")
    for name, spent in best.items():
        beyond = spent - best["pass"]
        print(f"{name:<8}{spent:>12.1f}{beyond:>14.1f}{beyond / floor:>12.2f}")
    first = anyio.run(first_pieces, pieces, args.rounds, args.requests)
    print(f"to the first piece: pass {first['pass']:.1f} us, heal {first['heal']:.1f} us")


if __name__ == "__main__":
    main()
