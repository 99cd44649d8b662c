"""Benchmark: what reading calls left in the text costs, side by side in one run.

Run: ``.venv/bin/python bench/bench_text_calls.py [--runs N] [--size 20000]``

The streams are Chat Completions bodies (real OpenAI chunk envelope, as in
``bench_stream.py``), ``content`` sent in deltas of 4 characters, SSE-framed, handed over as
64 KB reads, read with ``Pipeline("vllm", tools=[write])`` (a local profile: ``text_calls``
is ``auto``, on).

1. A text-only answer of ``--size`` characters: the pipeline with ``text_calls="off"`` against
   the same pipeline with the text stage (``auto``). Two answers: plain prose, and markdown with
   inline code, ``<`` and ``[`` in it (every delta that holds one of those goes the slow path).
2. A ``write`` call of ``--size`` characters left in the text as
   ``<tool_call>{"name": "write", "arguments": {...}}</tool_call>``: the pipeline recovering
   and judging it, against the floor (decode each chunk to a typed Struct, join the content,
   one JSON decode of the call object), and against the same call sent as a structured call.
3. Hostile text of ``--size`` x 8 characters (a run of ``<tool_call>`` openers; unclosed
   fences): time per KB at 1x and 8x, to show it is flat.

Each figure is the best of ``--runs`` runs, CPU time (``time.process_time``), inside one
event loop; the variants compared are alternated within each run, so that a busy moment of a
shared machine falls on all of them alike.
"""

from __future__ import annotations

import argparse
import gc
import json
import time
from collections.abc import AsyncIterator, Callable, Coroutine
from typing import Any

import anyio
import msgspec
from bench_stream import arguments_text, build_body, chunk, reads_of

import toolwire

PIECE = 4
TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "write",
            "parameters": {
                "type": "object",
                "properties": {"path": {"type": "string"}, "content": {"type": "string"}},
            },
        },
    }
]
PROSE = "The handler reads the event, checks its fields and writes the result; then it returns. "
MARKDOWN = "Call `handler(event)` when a < b, see [the docs](x) and {braces} in `code`.\n"


def content_body(text: str) -> bytes:
    """An SSE body whose assistant content is ``text``, in deltas of 4 characters."""
    parts = [chunk({"role": "assistant", "content": ""})]
    parts += [chunk({"content": text[i : i + PIECE]}) for i in range(0, len(text), PIECE)]
    parts.append(chunk({}, "stop"))
    parts.append(b"data: [DONE]\n\n")
    return b"".join(parts)


def repeated(unit: str, size: int) -> str:
    return (unit * (size // len(unit) + 1))[:size]


class _D(msgspec.Struct):
    content: str | None = None


class _C(msgspec.Struct):
    delta: _D | None = None


class _Chunk(msgspec.Struct):
    choices: list[_C] = []


_typed = msgspec.json.Decoder(_Chunk).decode


def floor(reads: list[bytes]) -> Any:
    """Decode each chunk, join the content, one JSON decode of the call object."""
    pieces: list[str] = []
    for line in b"".join(reads).split(b"\n"):
        if line[:6] != b"data: " or line == b"data: [DONE]":
            continue
        choices = _typed(line[6:]).choices
        if choices and choices[0].delta is not None and choices[0].delta.content:
            pieces.append(choices[0].delta.content)
    text = "".join(pieces)
    return msgspec.json.decode(text[len("<tool_call>") : -len("</tool_call>")])


async def _reads(reads: list[bytes]) -> AsyncIterator[bytes]:
    for read in reads:
        yield read


async def alternated(
    runs: int, **variants: Callable[[], Coroutine[Any, Any, Any]] | Callable[[], Any]
) -> dict[str, float]:
    """The best CPU time of each variant over ``runs`` rounds, the variants alternated within
    each round (so that a busy moment of a shared machine falls on all of them alike)."""
    times: dict[str, list[float]] = {name: [] for name in variants}
    for _ in range(runs):
        for name, run in variants.items():
            gc.collect()
            start = time.process_time()
            result = run()
            if isinstance(result, Coroutine):
                await result
            times[name].append(time.process_time() - start)
    return {name: min(spent) for name, spent in times.items()}


async def main(runs: int, size: int) -> dict[str, Any]:
    on = toolwire.Pipeline("vllm", tools=TOOLS)
    off = on.replace(text_calls="off")
    results: dict[str, Any] = {}

    def collect(pipeline: toolwire.Pipeline, reads: list[bytes]) -> Callable[[], Any]:
        return lambda: pipeline.collect(_reads(reads))

    for name, unit in (("prose", PROSE), ("markdown", MARKDOWN)):
        text = repeated(unit, size)
        reads = reads_of(content_body(text))
        turn = await on.collect(_reads(reads))
        assert turn.text == text
        assert not turn.calls
        best = await alternated(runs, off=collect(off, reads), on=collect(on, reads))
        results[f"text_only_{name}"] = {
            "off_ms": best["off"] * 1e3,
            "on_ms": best["on"] * 1e3,
            "ratio": best["on"] / best["off"],
        }

    arguments = arguments_text(size)
    call_text = '<tool_call>{"name": "write", "arguments": ' + arguments + "}</tool_call>"
    reads = reads_of(content_body(call_text))
    turn = await on.collect(_reads(reads))
    assert [c.arguments for c in turn.runnable] == [json.loads(arguments)]
    structured, _ = build_body(len(arguments) // PIECE)
    s_reads = reads_of(structured)
    best = await alternated(
        runs,
        floor=lambda: floor(reads),
        recovered=collect(on, reads),
        structured=collect(off, s_reads),
    )
    results["call_in_text"] = {
        "floor_ms": best["floor"] * 1e3,
        "recovered_ms": best["recovered"] * 1e3,
        "ratio_to_floor": best["recovered"] / best["floor"],
        "structured_call_ms": best["structured"] * 1e3,
        "structured_ratio_to_its_floor_body": best["structured"] / best["floor"],
    }

    for name, unit in (("openers", "<tool_call>"), ("unclosed_fences", "```\nx\n")):
        per_kb = {}
        texts = {f"{factor}x": repeated(unit, size * factor) for factor in (1, 8)}
        best = await alternated(
            runs,
            **{
                factor: collect(on, reads_of(content_body(text)))
                for factor, text in texts.items()
            },
        )
        for factor, text in texts.items():
            per_kb[f"{factor}_us_per_kb"] = best[factor] * 1e6 / (len(text) / 1024)
        results[f"hostile_{name}"] = per_kb
    return results


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=15)
    parser.add_argument("--size", type=int, default=20_000)
    args = parser.parse_args()
    print(json.dumps(anyio.run(main, args.runs, args.size), indent=2))
