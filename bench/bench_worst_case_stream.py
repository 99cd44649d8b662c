"""Worst-case stream inputs at 10 KB, 100 KB and 1 MB: time per KB must stay flat.

Run from the repository root: ``python bench/bench_worst_case_stream.py``.

Each shape is a stream that used to cost more than linear time or unbounded memory (issue 9):

- ``long_line``: one SSE ``data:`` line of N bytes fed in 1 KB reads (it was re-copied on every
  read: 4 MB took 4.6 s);
- ``many_calls``: N/40 parallel calls, each on a new index (each new call was checked against
  every earlier one: 20 k calls took 4.7 s);
- ``big_arguments``: one call whose arguments are N bytes in 64-byte pieces;
- ``bad_lines``: N/20 lines that are not JSON (each made an error record, without a cap).

The figure is the minimum over runs of ``collect`` on the whole stream, in µs per KB of body.
"""

from __future__ import annotations

import argparse
import gc
import json
import time
from collections.abc import AsyncIterator, Callable

import anyio

import toolwire

SIZES = (10_000, 100_000, 1_000_000)


def _chunk(delta: dict[str, object], finish: str | None = None) -> bytes:
    payload = {"id": "x", "model": "m", "choices": [{"index": 0, "delta": delta,
                                                     "finish_reason": finish}]}
    return b"data: " + json.dumps(payload).encode() + b"\n\n"


def long_line(size: int) -> list[bytes]:
    text = "x" * size
    body = _chunk({"content": text}) + _chunk({}, "stop") + b"data: [DONE]\n\n"
    return [body[i : i + 1024] for i in range(0, len(body), 1024)]


def many_calls(size: int) -> list[bytes]:
    count = max(1, size // 40)
    parts = [
        _chunk({"tool_calls": [{"index": n, "id": f"c{n}", "function": {"name": "f",
                                                                        "arguments": "{}"}}]})
        for n in range(count)
    ]
    parts.append(_chunk({}, "tool_calls") + b"data: [DONE]\n\n")
    return [b"".join(parts)]


def big_arguments(size: int) -> list[bytes]:
    head = _chunk({"tool_calls": [{"index": 0, "id": "c", "function": {"name": "f",
                                                                       "arguments": '{"a": "'}}]})
    piece = _chunk({"tool_calls": [{"index": 0, "function": {"arguments": "y" * 64}}]})
    tail = _chunk({"tool_calls": [{"index": 0, "function": {"arguments": '"}'}}]})
    body = head + piece * max(1, size // len(piece)) + tail + _chunk({}, "tool_calls")
    return [body[i : i + 65536] for i in range(0, len(body), 65536)]


def bad_lines(size: int) -> list[bytes]:
    line = b"data: this line is not json at all\n\n"
    return [line * max(1, size // len(line)) + _chunk({}, "stop") + b"data: [DONE]\n\n"]


SHAPES: dict[str, Callable[[int], list[bytes]]] = {
    "long_line": long_line,
    "many_calls": many_calls,
    "big_arguments": big_arguments,
    "bad_lines": bad_lines,
}


async def _reads(parts: list[bytes]) -> AsyncIterator[bytes]:
    for part in parts:
        yield part


async def best_of(parts: list[bytes], runs: int) -> float:
    best = float("inf")
    for _ in range(runs):
        gc.collect()
        start = time.perf_counter()
        await toolwire.collect(_reads(parts))
        best = min(best, time.perf_counter() - start)
    return best


async def main(runs: int) -> None:
    print(f"{'shape':<16}" + "".join(f"{size // 1000:>10} KB" for size in SIZES) + "   (us/KB)")
    for name, build in SHAPES.items():
        cells = []
        for size in SIZES:
            parts = build(size)
            kb = sum(len(part) for part in parts) / 1000
            seconds = await best_of(parts, runs)
            cells.append(f"{seconds * 1e6 / kb:>13.2f}")
        print(f"{name:<16}" + "".join(cells))


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    anyio.run(main, parser.parse_args().runs)
