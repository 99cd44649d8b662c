"""The fake upstream of ``bench_serve_sequential.py``: a Chat server that answers at once.

Every POST answers one ``write`` call, whole (JSON with a length) or streamed (SSE), in the shape
the request asked for. A request for the model ``cut`` whose history is its first user message
gets a call cut by the token limit instead (``finish_reason: length``, arguments broken off): the
healing proxy asks again with a longer history, and that retry gets the good call. It runs on
uvicorn (asyncio sets ``TCP_NODELAY`` on its sockets, as real servers do). Run:
``uvicorn --app-dir bench sequential_upstream:app``.
"""

from __future__ import annotations

from typing import Any

import msgspec
from load_upstream import lifespan

_encode = msgspec.json.Encoder().encode
GOOD = '{"path": "notes.txt", "content": "hello"}'
CUT = '{"path": "notes.txt", "content": "hel'


def _call(arguments: str) -> dict[str, Any]:
    return {
        "id": "call_1",
        "type": "function",
        "function": {"name": "write", "arguments": arguments},
    }


def _whole(arguments: str, finish: str) -> bytes:
    message = {"role": "assistant", "content": None, "tool_calls": [_call(arguments)]}
    choice = {"index": 0, "message": message, "finish_reason": finish}
    return _encode({"id": "chatcmpl-seq", "object": "chat.completion", "created": 0,
                    "model": "seq", "choices": [choice]})  # fmt: skip


def _events(arguments: str, finish: str) -> list[bytes]:
    def chunk(delta: dict[str, Any], finish_reason: str | None = None) -> bytes:
        choice = {"index": 0, "delta": delta, "finish_reason": finish_reason}
        body = {"id": "chatcmpl-seq", "object": "chat.completion.chunk", "created": 0,
                "model": "seq", "choices": [choice]}  # fmt: skip
        return b"data: " + _encode(body) + b"\n\n"

    opening = {**_call(""), "index": 0}
    pieces = [chunk({"role": "assistant", "content": None}), chunk({"tool_calls": [opening]})]
    for start in range(0, len(arguments), 8):
        fragment = {"index": 0, "function": {"arguments": arguments[start : start + 8]}}
        pieces.append(chunk({"tool_calls": [fragment]}))
    return [*pieces, chunk({}, finish), b"data: [DONE]\n\n"]


async def app(scope: dict[str, Any], receive: Any, send: Any) -> None:
    if scope["type"] == "lifespan":
        await lifespan(receive, send)
    if scope["type"] != "http":
        return
    raw = b""
    more = True
    while more:
        message = await receive()
        raw += message.get("body", b"")
        more = message.get("more_body", False)
    request = msgspec.json.decode(raw or b"{}")
    cut = request.get("model") == "cut" and len(request.get("messages", [])) == 1
    arguments, finish = (CUT, "length") if cut else (GOOD, "tool_calls")
    if not request.get("stream"):
        body = _whole(arguments, finish)
        headers = [(b"content-type", b"application/json"), (b"content-length", b"%d" % len(body))]
        await send({"type": "http.response.start", "status": 200, "headers": headers})
        await send({"type": "http.response.body", "body": body})
        return
    headers = [(b"content-type", b"text/event-stream")]
    await send({"type": "http.response.start", "status": 200, "headers": headers})
    for piece in _events(arguments, finish):
        await send({"type": "http.response.body", "body": piece, "more_body": True})
    await send({"type": "http.response.body", "body": b"", "more_body": False})
