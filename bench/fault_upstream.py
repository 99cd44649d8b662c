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
from load_upstream import chunk, stream_started

ARGUMENTS = '{"path": "notes.txt", "content": "hello from the soak"}'


def _turn() -> list[bytes]:
    events = [chunk({"role": "assistant", "content": ""})]
    events += [chunk({"content": f"piece {n} "}) for n in range(10)]
    header = {"index": 0, "id": "call_soak", "type": "function"}
    events.append(
        chunk({"tool_calls": [{**header, "function": {"name": "write", "arguments": ""}}]})
    )
    events += [
        chunk({"tool_calls": [{"index": 0, "function": {"arguments": ARGUMENTS[i : i + 8]}}]})
        for i in range(0, len(ARGUMENTS), 8)
    ]
    events.append(chunk({}, "tool_calls"))
    return events


class _Reset(Exception):
    """Raised mid-body: uvicorn drops the connection."""


async def app(scope: dict[str, Any], receive: Any, send: Any) -> None:
    if not await stream_started(scope, receive, send):
        return
    fault = dict(scope["headers"]).get(b"x-fault", b"ok").decode()
    events = _turn()
    if fault == "garbage":
        events.insert(5, b"data: {not json at all\n\n")
    elif fault == "oversize":
        events.insert(5, chunk({"content": "x" * (17 * 1024 * 1024)}))
    for number, event in enumerate(events):
        if number == 4 and fault == "reset":
            raise _Reset("the soak's reset")
        if number == 4 and fault == "stall":
            await anyio.sleep(2)
        await send({"type": "http.response.body", "body": event, "more_body": True})
        await anyio.sleep(0.01)
    await send({"type": "http.response.body", "body": b"data: [DONE]\n\n", "more_body": False})
