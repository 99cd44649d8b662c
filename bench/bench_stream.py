"""Benchmark: one big streamed ``write`` tool call through toolwire, against a floor and the SDK.

Run: ``.venv/bin/python bench/bench_stream.py [--runs N] [--profile]``

The stream: a ``write`` call whose JSON arguments (``{"path": ..., "content": ...}``) are
``4 * chunks`` characters long, sent as Chat Completions chunks of 4 argument characters each
(real OpenAI chunk envelope: id/object/created/model/system_fingerprint/choices[0].delta.tool_calls
[0].function.arguments/logprobs/finish_reason/usage/obfuscation), SSE-framed, then a finish chunk,
a usage chunk and ``[DONE]``; the body is handed over as 64 KB reads.

What is inside each timed region (everything a user would pay, from the 64 KB reads to the
parsed arguments dict):

- floor: join the reads, split lines, decode every ``data:`` payload with msgspec (both to a
  dict and to a typed Struct are measured; the cheaper is the floor), join the argument pieces,
  decode the joined arguments once with msgspec. No SSE rules, no error handling, no events.
- openai SDK: the same line split, ``json.loads`` + ``openai._models.construct_type`` per chunk
  (exactly what ``AsyncStream`` does per event with default settings, minus its SSE decoder, so
  this is a lower bound for the SDK), ``ChatCompletionStreamState.handle_chunk`` per chunk,
  ``get_final_completion()`` and ``json.loads`` of the final arguments. A second row times only
  ``handle_chunk`` + ``get_final_completion`` over chunk objects built outside the timed region.
- toolwire: ``await toolwire.collect(<async iterable of the 64 KB reads>, judge=...)`` on asyncio,
  inside one event loop (the loop start-up is outside), then ``msgspec.json.decode`` of the
  call's ``arguments_raw`` when no judge ran (the judge parses the arguments itself).
"""

from __future__ import annotations

import argparse
import cProfile
import gc
import io
import json
import pstats
import time
from collections.abc import AsyncIterator, Callable
from typing import Any

import anyio
import msgspec

import toolwire

READ_SIZE = 64 * 1024
PIECE = 4
ENVELOPE = {
    "id": "chatcmpl-C2QD4vblfNcSDeoXmULJR4umoKNqY",
    "object": "chat.completion.chunk",
    "created": 1754693442,
    "model": "gpt-4o-2024-08-06",
    "service_tier": "default",
    "system_fingerprint": "fp_07871e2ad8",
}
_compact = json.JSONEncoder(separators=(",", ":"), ensure_ascii=False).encode


def arguments_text(length: int) -> str:
    """A ``write`` call's JSON arguments of exactly ``length`` characters (realistic content)."""
    line = 'def handler(event):  # "quoted", tabs\tand unicode é€ — line\n'
    path = "src/generated/module.py"
    content = ""
    while len(json.dumps({"path": path, "content": content}, ensure_ascii=False)) < length:
        content += line
    text = json.dumps({"path": path, "content": content}, ensure_ascii=False)
    while len(text) > length:  # trim to the exact size, keeping valid JSON
        content = content[:-1]
        text = json.dumps({"path": path, "content": content}, ensure_ascii=False)
    return text


def chunk(delta: dict[str, Any], finish: str | None = None, usage: Any = None) -> bytes:
    body = {
        **ENVELOPE,
        "choices": [{"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}],
        "usage": usage,
        "obfuscation": "Bkpoehp1mPtgpuo",
    }
    return b"data: " + _compact(body).encode() + b"\n\n"


def build_body(chunks: int) -> tuple[bytes, str]:
    """The SSE body of one call with ``chunks`` argument chunks, and its arguments text."""
    arguments = arguments_text(chunks * PIECE)
    parts = [
        chunk(
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {
                        "index": 0,
                        "id": "call_CCGIWaMeYWmxOQ91orkmTvzn",
                        "type": "function",
                        "function": {"name": "write", "arguments": ""},
                    }
                ],
                "refusal": None,
            }
        )
    ]
    for start in range(0, len(arguments), PIECE):
        piece = arguments[start : start + PIECE]
        parts.append(chunk({"tool_calls": [{"index": 0, "function": {"arguments": piece}}]}))
    parts.append(chunk({}, "tool_calls"))
    usage = {"prompt_tokens": 448, "completion_tokens": chunks, "total_tokens": 448 + chunks}
    parts.append(
        b"data: "
        + _compact({**ENVELOPE, "choices": [], "usage": usage}).encode()
        + b"\n\ndata: [DONE]\n\n"
    )
    return b"".join(parts), arguments


def reads_of(body: bytes) -> list[bytes]:
    return [body[i : i + READ_SIZE] for i in range(0, len(body), READ_SIZE)]


# -- (a) the floor --------------------------------------------------------------------------------


def floor_dict(reads: list[bytes]) -> dict[str, Any]:
    decode = msgspec.json.decode
    pieces: list[str] = []
    for line in b"".join(reads).split(b"\n"):
        if line[:6] != b"data: " or line == b"data: [DONE]":
            continue
        data = decode(line[6:])
        choices = data["choices"]
        if choices:
            calls = choices[0]["delta"].get("tool_calls")
            if calls:
                arguments = calls[0]["function"].get("arguments")
                if arguments:
                    pieces.append(arguments)
    result: dict[str, Any] = decode("".join(pieces))
    return result


class _F(msgspec.Struct):
    arguments: str | None = None


class _T(msgspec.Struct):
    function: _F | None = None


class _D(msgspec.Struct):
    tool_calls: list[_T] | None = None


class _C(msgspec.Struct):
    delta: _D | None = None


class _Chunk(msgspec.Struct):
    choices: list[_C] = []


_typed = msgspec.json.Decoder(_Chunk).decode


def floor_typed(reads: list[bytes]) -> dict[str, Any]:
    pieces: list[str] = []
    for line in b"".join(reads).split(b"\n"):
        if line[:6] != b"data: " or line == b"data: [DONE]":
            continue
        choices = _typed(line[6:]).choices
        if choices:
            delta = choices[0].delta
            if delta is not None and delta.tool_calls:
                function = delta.tool_calls[0].function
                if function is not None and function.arguments:
                    pieces.append(function.arguments)
    result: dict[str, Any] = msgspec.json.decode("".join(pieces))
    return result


# -- (b) the openai SDK -------------------------------------------------------------------------


def sdk_objects(reads: list[bytes]) -> list[Any]:
    from openai._models import construct_type
    from openai.types.chat import ChatCompletionChunk

    objects = []
    for line in b"".join(reads).split(b"\n"):
        if line[:6] != b"data: " or line == b"data: [DONE]":
            continue
        objects.append(construct_type(type_=ChatCompletionChunk, value=json.loads(line[6:])))
    return objects


def sdk_accumulate(objects: list[Any]) -> dict[str, Any]:
    from openai.lib.streaming.chat import ChatCompletionStreamState

    state: Any = ChatCompletionStreamState()
    for obj in objects:
        state.handle_chunk(obj)
    completion = state.get_final_completion()
    result: dict[str, Any] = json.loads(
        completion.choices[0].message.tool_calls[0].function.arguments
    )
    return result


def sdk_full(reads: list[bytes]) -> dict[str, Any]:
    return sdk_accumulate(sdk_objects(reads))


# -- (c) toolwire ---------------------------------------------------------------------------------


async def _aiter(reads: list[bytes]) -> AsyncIterator[bytes]:
    for read in reads:
        yield read


async def toolwire_collect(reads: list[bytes], judge: bool) -> dict[str, Any]:
    turn = await toolwire.collect(_aiter(reads), judge=judge)
    (call,) = turn.calls
    if judge:
        assert call.arguments is not None, call.verdict
        return call.arguments
    result: dict[str, Any] = msgspec.json.decode(call.arguments_raw)
    return result


# -- timing ---------------------------------------------------------------------------------------


def best_of(runs: int, function: Callable[[], Any]) -> float:
    function()  # warm-up (imports, caches)
    times = []
    gc.collect()
    for _ in range(runs):
        start = time.perf_counter()
        function()
        times.append(time.perf_counter() - start)
    return min(times)


async def best_of_async(runs: int, function: Callable[[], Any]) -> float:
    await function()
    times = []
    gc.collect()
    for _ in range(runs):
        start = time.perf_counter()
        await function()
        times.append(time.perf_counter() - start)
    return min(times)


def judge_available() -> bool:
    try:
        import toolwire.stages.judge  # noqa: F401
    except ImportError:
        return False
    return True


async def main_async(runs: int, profile: bool) -> None:
    chunks = 5750
    body, arguments = build_body(chunks)
    reads = reads_of(body)
    expected = json.loads(arguments)
    print(
        f"payload: arguments {len(arguments):,} chars, {chunks:,} argument chunks, "
        f"SSE body {len(body):,} bytes, {len(reads)} reads of 64 KB; min of {runs} runs\n"
    )
    for check in (floor_dict, floor_typed, sdk_full):
        assert check(reads) == expected, check.__name__
    assert await toolwire_collect(reads, judge=False) == expected

    rows: list[tuple[str, float | None, str]] = []
    t_dict = best_of(runs, lambda: floor_dict(reads))
    t_typed = best_of(runs, lambda: floor_typed(reads))
    floor = min(t_dict, t_typed)
    floor_name = "typed Struct" if t_typed <= t_dict else "dict"
    rows.append(("floor: msgspec -> dict", t_dict, "split lines, decode each, join, decode"))
    rows.append(("floor: msgspec -> typed Struct", t_typed, "same, typed decoding"))
    objects = sdk_objects(reads)
    rows.append(
        (
            "openai SDK (parse + StreamState)",
            best_of(runs, lambda: sdk_full(reads)),
            "json.loads + construct_type + handle_chunk",
        )
    )
    rows.append(
        (
            "openai SDK StreamState only",
            best_of(runs, lambda: sdk_accumulate(objects)),
            "handle_chunk on prebuilt objects",
        )
    )
    rows.append(
        (
            "toolwire.collect judge=False",
            await best_of_async(runs, lambda: toolwire_collect(reads, judge=False)),
            "64 KB reads -> Turn, + decode args",
        )
    )
    if judge_available():
        assert await toolwire_collect(reads, judge=True) == expected
        t_judge: float | None = await best_of_async(
            runs, lambda: toolwire_collect(reads, judge=True)
        )
        note = "64 KB reads -> judged Turn"
    else:
        t_judge, note = None, "toolwire.stages.judge not importable yet"
    rows.append(("toolwire.collect judge=True", t_judge, note))

    print(f"{'what':<36} {'ms':>9} {'x floor':>8}   inside the timed region")
    print("-" * 100)
    for name, seconds, what in rows:
        if seconds is None:
            print(f"{name:<36} {'n/a':>9} {'':>8}   {what}")
        else:
            print(f"{name:<36} {seconds * 1e3:9.2f} {seconds / floor:8.2f}   {what}")
    print(f"(floor = the cheaper msgspec variant: {floor_name})\n")

    print("linearity (toolwire.collect judge=False; floor for reference)")
    print(
        f"{'args KB':>8} {'chunks':>7} {'toolwire ms':>12} {'us/KB':>8}"
        f" {'floor ms':>9} {'ratio':>6}"
    )
    for kilobytes in (10, 40, 160):
        n = kilobytes * 1024 // PIECE
        big_body, _ = build_body(n)
        big = reads_of(big_body)
        t_tw = await best_of_async(max(3, runs // 2), lambda big=big: toolwire_collect(big, False))
        t_fl = best_of(max(3, runs // 2), lambda big=big: floor_typed(big))
        print(
            f"{kilobytes:>8} {n:>7} {t_tw * 1e3:12.2f} {t_tw * 1e6 / kilobytes:8.1f} "
            f"{t_fl * 1e3:9.2f} {t_tw / t_fl:6.2f}"
        )

    if profile:
        profiler = cProfile.Profile()
        profiler.enable()
        for _ in range(5):
            await toolwire_collect(reads, judge=False)
        profiler.disable()
        out = io.StringIO()
        pstats.Stats(profiler, stream=out).sort_stats("tottime").print_stats(15)
        print("\ncProfile of 5 x toolwire.collect(judge=False), by own time:")
        print(out.getvalue())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=15)
    parser.add_argument("--profile", action="store_true")
    options = parser.parse_args()
    anyio.run(main_async, options.runs, options.profile)


if __name__ == "__main__":
    main()
