"""Benchmark: what telemetry costs on the 20 KB streamed ``write`` call (target: under 10%).

Run: ``.venv/bin/python bench/bench_telemetry.py [--runs N] [--chunks N]``

The stream: one ``write`` call whose JSON arguments are ``4 * chunks`` characters long (5,750
chunks: 23,000 characters), sent as real-looking Chat Completions chunks of 4 argument characters
each, SSE-framed, then a finish chunk, a usage chunk and ``[DONE]``, handed over as 64 KB reads.
The arguments are valid JSON, so the judge finds nothing to repair: this is the case where
telemetry should cost least, and it must stay cheap there (every turn pays it).

Each timed region is one ``await toolwire.collect(reads, judge=True, ...)`` on asyncio, with:

- ``off``: telemetry off: a ``NoOpTracerProvider`` and a ``NoOpMeterProvider`` passed in;
- ``proxy``: no provider given and none installed globally (the API's proxy providers: what a
  user without an OpenTelemetry SDK gets);
- ``sdk``: the OpenTelemetry SDK: a ``TracerProvider`` with a ``BatchSpanProcessor`` over an
  ``InMemorySpanExporter`` and a ``MeterProvider`` with an ``InMemoryMetricReader``.

The configurations are interleaved run by run and the minimum of N runs is kept for each; the
ratio ``sdk / off - 1`` is the overhead.
"""

from __future__ import annotations

import argparse
import gc
import time
from collections.abc import AsyncIterator, Callable
from typing import Any

import anyio
from bench_stream import build_body, reads_of  # the same 20 KB stream, built once
from opentelemetry import metrics, trace
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

import toolwire


def build_reads(chunks: int) -> tuple[list[bytes], int]:
    """bench_stream.py's SSE body as 64 KB reads, and the length of its arguments."""
    body, arguments = build_body(chunks)
    return reads_of(body), len(arguments)


async def _aiter(reads: list[bytes]) -> AsyncIterator[bytes]:
    for read in reads:
        yield read


def configurations() -> tuple[dict[str, dict[str, Any]], Callable[[], None]]:
    """The keyword arguments of each configuration, and a function that shuts the SDK down."""
    exporter = InMemorySpanExporter()
    tracer_provider = TracerProvider()
    tracer_provider.add_span_processor(BatchSpanProcessor(exporter))
    meter_provider = MeterProvider(metric_readers=[InMemoryMetricReader()])

    def shutdown() -> None:
        tracer_provider.shutdown()
        meter_provider.shutdown()

    configs: dict[str, dict[str, Any]] = {
        "off": {
            "tracer_provider": trace.NoOpTracerProvider(),
            "meter_provider": metrics.NoOpMeterProvider(),
        },
        "proxy": {},
        "sdk": {"tracer_provider": tracer_provider, "meter_provider": meter_provider},
    }
    return configs, shutdown


async def main_async(runs: int, chunks: int) -> None:
    reads, length = build_reads(chunks)
    size = sum(len(read) for read in reads)
    print(
        f"stream: {chunks} argument chunks, {length} argument characters, {size} bytes, "
        f"{len(reads)} reads of <= 64 KB; judge on; min of {runs} runs, interleaved"
    )
    configs, shutdown = configurations()
    best = {name: float("inf") for name in configs}
    for options in configs.values():  # warm up: imports, caches, instruments
        turn = await toolwire.collect(_aiter(reads), **options)
        assert [call.outcome for call in turn.calls] == ["ok"], turn.calls
    gc.collect()
    gc.disable()
    try:
        for _ in range(runs):
            for name, options in configs.items():
                start = time.perf_counter()
                await toolwire.collect(_aiter(reads), **options)
                best[name] = min(best[name], time.perf_counter() - start)
    finally:
        gc.enable()
        shutdown()
    for name, seconds in best.items():
        print(f"  {name:<6} {seconds * 1e3:8.3f} ms")
    overhead = best["sdk"] / best["off"] - 1
    print(f"telemetry overhead (sdk vs off): {overhead * 100:+.2f}%  (target < 10%)")
    print(f"proxy vs off: {(best['proxy'] / best['off'] - 1) * 100:+.2f}%")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=30)
    parser.add_argument("--chunks", type=int, default=5750)
    options = parser.parse_args()
    anyio.run(main_async, options.runs, options.chunks)


if __name__ == "__main__":
    main()
