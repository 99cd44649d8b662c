"""The fake upstream of ``bench_fault_soak.py``: a Chat server that fails on request.

The request's ``x-fault`` header (forwarded by the proxy) picks the stream: ``ok`` (text, one
valid call, the finish, ``[DONE]``), ``reset`` (a few events, then the connection dropped),
``stall`` (a few events, a 2 s silence, then the rest), ``garbage`` (an event that is not
JSON in the middle), ``oversize`` (an event of 17 MiB in the middle). Run:
``uvicorn --app-dir bench fault_upstream:app``.
"""

from __future__ import annotations

from typing import Any

import anyio
import msgspec

_encode = msgspec.json.Encoder().encode
ARGUMENTS = '{"path": "notes.txt", "content": "hello from the soak"}'


def _chunk(delta: dict[str, Any], finish: str | None = None) -> bytes:
    body = {
        "id": "chatcmpl-soak",
        "object": "chat.completion.chunk",
        "created": 0,
        "model": "soak",
        "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
    }
    return b"data: " + _encode(body) + b"\n\n"


def _turn() -> list[bytes]:
    events = [_chunk({"role": "assistant", "content": ""})]
    events += [_chunk({"content": f"piece {n} "}) for n in range(10)]
    header = {"index": 0, "id": "call_soak", "type": "function"}
    events.append(
        _chunk({"tool_calls": [{**header, "function": {"name": "write", "arguments": ""}}]})
    )
    events += [
        _chunk({"tool_calls": [{"index": 0, "function": {"arguments": ARGUMENTS[i : i + 8]}}]})
        for i in range(0, len(ARGUMENTS), 8)
    ]
    events.append(_chunk({}, "tool_calls"))
    return events


class _Reset(Exception):
    """Raised mid-body: uvicorn drops the connection."""


async def app(scope: dict[str, Any], receive: Any, send: Any) -> None:
    if scope["type"] == "lifespan":
        while True:
            message = await receive()
            if message["type"] == "lifespan.startup":
                await send({"type": "lifespan.startup.complete"})
            else:
                await send({"type": "lifespan.shutdown.complete"})
                return
    if scope["type"] != "http":
        return
    more = True
    while more:
        more = (await receive()).get("more_body", False)
    fault = dict(scope["headers"]).get(b"x-fault", b"ok").decode()
    await send(
        {
            "type": "http.response.start",
            "status": 200,
            "headers": [(b"content-type", b"text/event-stream")],
        }
    )
    events = _turn()
    if fault == "garbage":
        events.insert(5, b"data: {not json at all\n\n")
    elif fault == "oversize":
        events.insert(5, _chunk({"content": "x" * (17 * 1024 * 1024)}))
    for number, event in enumerate(events):
        if number == 4 and fault == "reset":
            raise _Reset("the soak's reset")
        if number == 4 and fault == "stall":
            await anyio.sleep(2)
        await send({"type": "http.response.body", "body": event, "more_body": True})
        await anyio.sleep(0.01)
    await send({"type": "http.response.body", "body": b"data: [DONE]\n\n", "more_body": False})
