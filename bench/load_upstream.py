"""The fake upstream of ``bench_serve_load.py``: a Chat Completions server on uvicorn.

Every POST streams one turn: the role chunk, ``CHUNKS`` text chunks ``PAUSE`` seconds apart, each
carrying the time it was sent (``time.time_ns()``, the same clock as the client's on loopback),
then one valid ``write`` call in fragments, the finish, the usage, ``[DONE]``. It never sends a
broken call: what the bench measures is the cost of judging and re-encoding every stream, not
the retries. Run: ``uvicorn --app-dir bench load_upstream:app``.
"""

from __future__ import annotations

import os
import time
from typing import Any

import anyio
import msgspec

CHUNKS = int(os.environ.get("LOAD_CHUNKS", "20"))
PAUSE = float(os.environ.get("LOAD_PAUSE", "0.05"))
_encode = msgspec.json.Encoder().encode
ARGUMENTS = '{"path": "notes.txt", "content": "hello from the load test"}'


def chunk(delta: dict[str, Any], finish: str | None = None) -> bytes:
    """One ``chat.completion.chunk`` event (the soak's upstream sends the same)."""
    return _chunk(delta, finish)


def _chunk(delta: dict[str, Any], finish: str | None = None) -> bytes:
    body = {
        "id": "chatcmpl-load",
        "object": "chat.completion.chunk",
        "created": 0,
        "model": "load",
        "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
    }
    return b"data: " + _encode(body) + b"\n\n"


async def lifespan(receive: Any, send: Any) -> None:
    """Answer uvicorn's startup and shutdown (nothing to set up or release)."""
    while True:
        message = await receive()
        if message["type"] == "lifespan.startup":
            await send({"type": "lifespan.startup.complete"})
        else:
            await send({"type": "lifespan.shutdown.complete"})
            return


async def stream_started(scope: dict[str, Any], receive: Any, send: Any) -> bool:
    """Serve the lifespan; for a request, read its body and start a 200 event stream.

    ``True`` when the caller is to send the stream's body (the soak's upstream shares it).
    """
    if scope["type"] == "lifespan":
        await lifespan(receive, send)
        return False
    if scope["type"] != "http":
        return False
    more = True
    while more:
        more = (await receive()).get("more_body", False)
    await send(
        {
            "type": "http.response.start",
            "status": 200,
            "headers": [(b"content-type", b"text/event-stream")],
        }
    )
    return True


async def app(scope: dict[str, Any], receive: Any, send: Any) -> None:
    if not await stream_started(scope, receive, send):
        return

    async def piece(data: bytes) -> None:
        await send({"type": "http.response.body", "body": data, "more_body": True})

    await piece(_chunk({"role": "assistant", "content": ""}))
    for _ in range(CHUNKS):
        await anyio.sleep(PAUSE)
        await piece(_chunk({"content": f"t{time.time_ns()} "}))
    header = {"index": 0, "id": "call_load", "type": "function"}
    await piece(
        _chunk({"tool_calls": [{**header, "function": {"name": "write", "arguments": ""}}]})
    )
    for start in range(0, len(ARGUMENTS), 8):
        fragment = ARGUMENTS[start : start + 8]
        await piece(_chunk({"tool_calls": [{"index": 0, "function": {"arguments": fragment}}]}))
    await piece(_chunk({}, "tool_calls"))
    usage = {"prompt_tokens": 10, "completion_tokens": CHUNKS + 12, "total_tokens": CHUNKS + 22}
    await piece(
        b"data: "
        + _encode(
            {
                "id": "chatcmpl-load",
                "object": "chat.completion.chunk",
                "created": 0,
                "model": "load",
                "choices": [],
                "usage": usage,
            }
        )
        + b"\n\n"
    )
    await send({"type": "http.response.body", "body": b"data: [DONE]\n\n", "more_body": False})
