"""Benchmark: what healing costs per response in process, next to the bare transport.

Run: ``.venv/bin/python bench/bench_heal_transport.py [--streams N] [--runs R]``

The same scripted Chat Completions response (a role chunk, 20 text chunks, one valid ``write``
call in 8-character fragments, the finish, ``[DONE]``), served by an ``httpx.MockTransport``
piece by piece, read to the end through an ``httpx.AsyncClient`` whose transport is:

- bare: the mock itself;
- healing: ``toolwire.HealingTransport(wrapped=mock)``: the request planned, the response read by
  the pipeline, every call judged, re-encoded as chunks;
- healing, new tools each request: the same, with a tool list the process has never seen in
  every request (its schemas compiled each time; an agent sends the same tools every turn, so
  this is the cold path, once per distinct tool list).

Reported: microseconds per response (median of ``--runs`` runs of ``--streams`` sequential
responses) and the ratio to bare. Nothing of the network is in it: this is toolwire's own cost.
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import AsyncIterator
from typing import Any

import anyio
import httpx
import msgspec

import toolwire

_encode = msgspec.json.Encoder().encode
ARGUMENTS = '{"path": "notes.txt", "content": "hello from the bench"}'


def _chunk(delta: dict[str, Any], finish: str | None = None) -> bytes:
    body = {
        "id": "chatcmpl-bench",
        "object": "chat.completion.chunk",
        "created": 0,
        "model": "bench",
        "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
    }
    return b"data: " + _encode(body) + b"\n\n"


PIECES = [
    _chunk({"role": "assistant", "content": ""}),
    *(_chunk({"content": f"word{i} "}) for i in range(20)),
    _chunk(
        {
            "tool_calls": [
                {
                    "index": 0,
                    "id": "call_bench",
                    "type": "function",
                    "function": {"name": "write", "arguments": ""},
                }
            ]
        }
    ),
    *(
        _chunk({"tool_calls": [{"index": 0, "function": {"arguments": ARGUMENTS[i : i + 8]}}]})
        for i in range(0, len(ARGUMENTS), 8)
    ),
    _chunk({}, "tool_calls"),
    b"data: [DONE]\n\n",
]


def tools(name: str = "write") -> list[dict[str, Any]]:
    return [
        {
            "type": "function",
            "function": {
                "name": "write",
                "description": name,
                "parameters": {
                    "type": "object",
                    "required": ["path", "content"],
                    "properties": {"path": {"type": "string"}, "content": {"type": "string"}},
                },
            },
        }
    ]


class _Body(httpx.AsyncByteStream):
    async def __aiter__(self) -> AsyncIterator[bytes]:
        for piece in PIECES:
            yield piece


def _respond(request: httpx.Request) -> httpx.Response:
    return httpx.Response(200, headers={"content-type": "text/event-stream"}, stream=_Body())


async def per_response_us(mode: str, streams: int) -> float:
    mock = httpx.MockTransport(_respond)
    transport: httpx.AsyncBaseTransport = (
        mock if mode == "bare" else toolwire.HealingTransport(wrapped=mock)
    )
    same = _encode({"model": "m", "messages": [{"role": "user", "content": "x"}],
                    "tools": tools(), "stream": True})  # fmt: skip
    async with httpx.AsyncClient(transport=transport) as client:
        started = time.perf_counter()
        for number in range(streams):
            content = same
            if mode == "heal-new-tools":
                fresh = tools(f"v{number}-{time.perf_counter_ns()}")
                content = _encode({"model": "m", "messages": [], "stream": True, "tools": fresh})
            async with client.stream(
                "POST", "http://bench/v1/chat/completions", content=content
            ) as response:
                async for _ in response.aiter_raw():
                    pass
        return (time.perf_counter() - started) / streams * 1e6


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--streams", type=int, default=300)
    parser.add_argument("--runs", type=int, default=7)
    args = parser.parse_args()
    modes = ("bare", "heal", "heal-new-tools")
    samples: dict[str, list[float]] = {mode: [] for mode in modes}
    for _ in range(args.runs):  # interleaved, so every mode sees the same machine
        for mode in modes:
            samples[mode].append(anyio.run(per_response_us, mode, args.streams))
    bare = statistics.median(samples["bare"])
    print(f"{args.streams} responses of {len(PIECES)} pieces, median of {args.runs} runs")
    for mode in modes:
        value = statistics.median(samples[mode])
        print(f"  {mode:<15} {value:8.1f} µs per response   {value / bare:5.2f}x bare")


if __name__ == "__main__":
    main()
