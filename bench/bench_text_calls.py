"""Benchmark: what reading calls left in the text costs, against the code of a base commit, in
one run.

Run: ``.venv/bin/python bench/bench_text_calls.py [--runs N] [--size 20000] [--base 37c812a]``

The base (default ``37c812a``, the tree before issue 28's readers) is exported with
``git archive`` into a temporary directory and imported in the same process as the package
``toolwire_at_<commit>`` (the package imports itself only relatively), so that the same
workloads run through today's tree and the base's, alternated within each round. Every figure
below is given for both (``base_*``), with today's against the base's (``*_vs_base``).

The streams are Chat Completions bodies (real OpenAI chunk envelope, as in
``bench_stream.py``), ``content`` sent in deltas of 4 characters, SSE-framed, handed over as
64 KB reads, read with ``Pipeline("vllm", tools=[write])`` (a local profile: ``text_calls``
is ``auto``, on).

1. A text-only answer of ``--size`` characters: the pipeline with ``text_calls="off"`` against
   the same pipeline with the text stage (``auto``). Two answers: plain prose, and markdown with
   inline code, ``<`` and ``[`` in it (a batch of deltas that holds one of those is searched
   for tokens; one with nothing but inline code passes without a scan).
2. A ``write`` call of ``--size`` characters left in the text as
   ``<tool_call>{"name": "write", "arguments": {...}}</tool_call>``: the pipeline recovering
   and judging it, against the floor (decode each chunk to a typed Struct, join the content,
   one JSON decode of the call object), and against the same call sent as a structured call.
3. Hostile text of ``--size`` x 8 characters (a run of ``<tool_call>`` openers; unclosed
   fences): time per KB at 1x and 8x, to show it is flat.

Each figure is the best of ``--runs`` runs, CPU time (``time.process_time``), inside one
event loop; the variants compared (today's and the base's, stage on and off) are alternated
within each run, so that a busy moment of a shared machine falls on all of them alike.
"""

from __future__ import annotations

import argparse
import contextlib
import gc
import importlib
import io
import json
import subprocess
import sys
import tarfile
import tempfile
import time
from collections.abc import AsyncIterator, Callable, Coroutine, Iterator
from pathlib import Path
from types import ModuleType
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


@contextlib.contextmanager
def base_package(commit: str) -> Iterator[ModuleType]:
    """The package as it was at ``commit``, imported as ``toolwire_at_<commit>`` from a
    temporary export (``git archive``) of the repository, removed afterwards."""
    root = Path(__file__).resolve().parent.parent
    archive = subprocess.run(
        ["git", "-C", str(root), "archive", "--format=tar", commit],
        check=True,
        capture_output=True,
    ).stdout
    name = f"toolwire_at_{commit}"
    with tempfile.TemporaryDirectory(prefix="bench-text-calls-") as directory:
        with tarfile.open(fileobj=io.BytesIO(archive)) as tar:
            if hasattr(tarfile, "data_filter"):  # 3.11.4 on
                tar.extractall(Path(directory) / name, filter="data")
            else:  # the archive is this repository's own
                tar.extractall(Path(directory) / name)
        sys.path.insert(0, directory)
        try:
            yield importlib.import_module(name)
        finally:
            sys.path.remove(directory)


def _ms(seconds: float) -> float:
    return round(seconds * 1e3, 3)


async def main(runs: int, size: int, base: ModuleType) -> dict[str, Any]:
    results: dict[str, Any] = {"base": base.__name__}
    #: Today's pipeline and the base's, each with the text stage on (``auto`` for a local
    #: profile) and off.
    on = toolwire.Pipeline("vllm", tools=TOOLS)
    base_on = base.Pipeline("vllm", tools=TOOLS)
    pipelines = {
        "on": on,
        "off": on.replace(text_calls="off"),
        "base_on": base_on,
        "base_off": base_on.replace(text_calls="off"),
    }

    def collect(pipeline: Any, reads: list[bytes]) -> Callable[[], Any]:
        return lambda: pipeline.collect(_reads(reads))

    for name, unit in (("prose", PROSE), ("markdown", MARKDOWN)):
        text = repeated(unit, size)
        reads = reads_of(content_body(text))
        for pipeline in pipelines.values():
            turn = await pipeline.collect(_reads(reads))
            assert turn.text == text
            assert not turn.calls
        best = await alternated(
            runs, **{key: collect(pipeline, reads) for key, pipeline in pipelines.items()}
        )
        results[f"text_only_{name}"] = {
            "off_ms": _ms(best["off"]),
            "on_ms": _ms(best["on"]),
            "ratio": round(best["on"] / best["off"], 3),
            "base_off_ms": _ms(best["base_off"]),
            "base_on_ms": _ms(best["base_on"]),
            "base_ratio": round(best["base_on"] / best["base_off"], 3),
            "on_vs_base": round(best["on"] / best["base_on"], 3),
            "off_vs_base": round(best["off"] / best["base_off"], 3),
        }

    arguments = arguments_text(size)
    call_text = '<tool_call>{"name": "write", "arguments": ' + arguments + "}</tool_call>"
    reads = reads_of(content_body(call_text))
    for pipeline in (on, base_on):
        turn = await pipeline.collect(_reads(reads))
        assert [c.arguments for c in turn.runnable] == [json.loads(arguments)]
    structured, _ = build_body(len(arguments) // PIECE)
    s_reads = reads_of(structured)
    best = await alternated(
        runs,
        floor=lambda: floor(reads),
        recovered=collect(on, reads),
        base_recovered=collect(base_on, reads),
        structured=collect(pipelines["off"], s_reads),
    )
    results["call_in_text"] = {
        "floor_ms": _ms(best["floor"]),
        "recovered_ms": _ms(best["recovered"]),
        "ratio_to_floor": round(best["recovered"] / best["floor"], 3),
        "base_recovered_ms": _ms(best["base_recovered"]),
        "base_ratio_to_floor": round(best["base_recovered"] / best["floor"], 3),
        "structured_call_ms": _ms(best["structured"]),
        "structured_ratio_to_its_floor_body": round(best["structured"] / best["floor"], 3),
    }

    for name, unit in (("openers", "<tool_call>"), ("unclosed_fences", "```\nx\n")):
        texts = {f"{factor}x": repeated(unit, size * factor) for factor in (1, 8)}
        bodies = {factor: reads_of(content_body(text)) for factor, text in texts.items()}
        best = await alternated(
            runs,
            **{
                f"{key}{factor}": collect(pipeline, bodies[factor])
                for factor in texts
                for key, pipeline in (("", on), ("base_", base_on))
            },
        )
        results[f"hostile_{name}"] = {
            f"{key}{factor}_us_per_kb": round(best[f"{key}{factor}"] * 1e6 / (len(text) / 1024))
            for key in ("", "base_")
            for factor, text in texts.items()
        }
    return results


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=15)
    parser.add_argument("--size", type=int, default=20_000)
    parser.add_argument("--base", default="37c812a", help="the commit to compare with")
    args = parser.parse_args()
    with base_package(args.base) as base:
        print(json.dumps(anyio.run(main, args.runs, args.size, base), indent=2))
