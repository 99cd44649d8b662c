"""Load test: N concurrent streamed requests through ``toolwire serve``, healing on and off.

Run: ``.venv/bin/python bench/bench_serve_load.py [--streams 500] [--rounds 2] [--json]``

Three processes on loopback, each the real thing: a fake Chat Completions upstream on uvicorn
(``load_upstream.py``: 40 text chunks 50 ms apart, each stamped with the time it was sent, then
one valid call in fragments), and two ``toolwire serve`` processes in front of it, one healing,
one with ``--no-heal`` (the bare pass-through proxy: the same app on the same server, with
nothing judged or re-encoded). The bench process is the client (httpx): each round opens all
``--streams`` requests at once against one proxy, rounds alternate bare / healing, so both see
the same machine in one run. Before the rounds, ``--warmup`` unmeasured rounds of 50 streams
warm each proxy up (the imports and the tools' compiling of its first requests).

Per stream it records the time to the first body byte (from the request being sent) and, per
text chunk, its delivery latency (arrival minus the upstream's stamp: the same clock, on
loopback). Chunk latencies count only chunks the upstream sent once every stream of the round
was open (the steady state of 500 concurrent streams, not the burst of opening them). It
reports p50 and p99 of both for each proxy, what healing adds, the proxy's peak RSS growth per
open stream, its CPU time per stream, and errors (a status that is not 200, a stream without
its call or ``[DONE]``, an exception): the target is zero.

``--workers 1 2`` compares worker counts instead (``toolwire serve --workers N``, healing, or
bare with ``--no-heal``): throughput, not latency. Each round runs ``--streams`` clients for
``--duration`` seconds, each sending its next request as soon as its last stream ended, on
kept-alive connections, against one proxy; rounds alternate between the proxies. It reports
requests/s and text chunks/s (``--pause 0``: the upstream sends as fast as it can; ``--chunks
0`` measures requests, ``--chunks 200`` chunks), and the CPU each process took: the proxy's
workers one by one (how evenly they shared the work), the upstream, the client.
``--load-cpus 1`` pins the client and the upstream to CPU 1 (``taskset``) and ``--proxy-cpus``
the proxies, to give the load generator its own core budget as far as the machine allows.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import signal
import socket
import statistics
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio
import httpx
import psutil
from process_cpu import cpu_seconds

HERE = Path(__file__).resolve().parent
TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "write",
            "parameters": {
                "type": "object",
                "required": ["path", "content"],
                "properties": {"path": {"type": "string"}, "content": {"type": "string"}},
            },
        },
    }
]
REQUEST = {
    "model": "load",
    "messages": [{"role": "user", "content": "write"}],
    "tools": TOOLS,
    "stream": True,
    "stream_options": {"include_usage": True},
}
_STAMP = re.compile(rb'"content":"t(\d+) "')
_LISTENING = re.compile(r"at (http://[^ ;]+/v1)")


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


def _wait_http(url: str, deadline: float) -> None:
    while time.monotonic() < deadline:
        try:
            httpx.get(url, timeout=1)
            return
        except httpx.HTTPError:
            time.sleep(0.05)
    raise RuntimeError(f"{url} never answered")


def _pinned(cpus: str | None) -> list[str]:
    """The command prefix that runs a process on ``cpus`` (``taskset``'s list), if any."""
    return ["taskset", "-c", cpus] if cpus else []


def start_upstream(
    app: str = "load_upstream:app", cpus: str | None = None
) -> tuple[subprocess.Popen[bytes], str]:
    """Run the fake upstream ``app`` (a module of this folder) on uvicorn; its ``/v1`` URL."""
    port = _free_port()
    process = subprocess.Popen(
        [
            *_pinned(cpus),
            sys.executable,
            "-m",
            "uvicorn",
            "--app-dir",
            str(HERE),
            app,
            "--port",
            str(port),
            "--log-level",
            "warning",
            "--no-access-log",
            "--backlog",
            "4096",
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    _wait_http(f"http://127.0.0.1:{port}/", time.monotonic() + 20)
    return process, f"http://127.0.0.1:{port}/v1"


def start_proxy(
    upstream: str, *extra: str, cpus: str | None = None
) -> tuple[subprocess.Popen[bytes], str]:
    process = subprocess.Popen(
        [
            *_pinned(cpus),
            sys.executable,
            "-m",
            "toolwire.cli",
            "serve",
            "--upstream",
            upstream,
            "--port",
            "0",
            "--log-level",
            "warning",
            *extra,
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    assert process.stderr is not None
    line = process.stderr.readline().decode()
    found = _LISTENING.search(line)
    if not found:
        raise RuntimeError(f"toolwire serve did not start: {line}")
    threading.Thread(target=process.stderr.read, daemon=True).start()  # keep the pipe drained
    base = found.group(1)
    _wait_http(base.removesuffix("/v1") + "/healthz", time.monotonic() + 20)
    return process, base


@dataclass
class Round:
    mode: str
    ttfb: list[float] = field(default_factory=list)
    #: (the upstream's stamp, the delivery latency) of every text chunk.
    stamped: list[tuple[int, float]] = field(default_factory=list)
    #: When each stream's first byte arrived (time.time_ns).
    first_byte_ns: list[int] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    peak_rss_growth: int = 0
    seconds: float = 0.0
    cpu_seconds: float = 0.0

    @property
    def chunk(self) -> list[float]:
        """The latencies of the chunks sent once every stream was open (the steady state)."""
        if not self.first_byte_ns:
            return []
        all_open = max(self.first_byte_ns)
        return [latency for stamp, latency in self.stamped if stamp > all_open]


async def one_stream(client: httpx.AsyncClient, url: str, result: Round) -> None:
    try:
        started = time.perf_counter()
        async with client.stream("POST", url, json=REQUEST) as response:
            if response.status_code != 200:
                result.errors.append(f"HTTP {response.status_code}")
                await response.aread()
                return
            first = True
            body = bytearray()
            async for piece in response.aiter_raw():
                now_ns = time.time_ns()
                if first:
                    result.ttfb.append(time.perf_counter() - started)
                    result.first_byte_ns.append(now_ns)
                    first = False
                for stamp in _STAMP.findall(piece):
                    result.stamped.append((int(stamp), (now_ns - int(stamp)) / 1e9))
                body += piece
        if b"[DONE]" not in body or b'"call_load"' not in body:
            result.errors.append("incomplete stream")
    except Exception as error:  # every failure is counted, none stops the round
        result.errors.append(f"{type(error).__name__}: {error}")


async def run_round(mode: str, base: str, pid: int, streams: int) -> Round:
    result = Round(mode)
    process = psutil.Process(pid)
    base_rss = process.memory_info().rss
    cpu_before = cpu_seconds(process)
    peak = base_rss
    done = anyio.Event()

    async def sample() -> None:
        nonlocal peak
        while not done.is_set():
            peak = max(peak, process.memory_info().rss)
            await anyio.sleep(0.02)

    limits = httpx.Limits(max_connections=streams + 10, max_keepalive_connections=streams + 10)
    timeout = httpx.Timeout(60.0)
    async with httpx.AsyncClient(limits=limits, timeout=timeout) as client:
        started = time.perf_counter()
        async with anyio.create_task_group() as group:
            group.start_soon(sample)
            async with anyio.create_task_group() as requests:
                for _ in range(streams):
                    requests.start_soon(one_stream, client, f"{base}/chat/completions", result)
            done.set()
        result.seconds = time.perf_counter() - started
    result.peak_rss_growth = peak - base_rss
    result.cpu_seconds = cpu_seconds(process) - cpu_before
    return result


def percentile(values: list[float], q: float) -> float:
    if not values:
        return float("nan")
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def summary(rounds: list[Round], streams: int) -> dict[str, Any]:
    out: dict[str, Any] = {"streams": streams}
    for mode in ("bare", "heal"):
        mine = [r for r in rounds if r.mode == mode]
        ttfb = [v for r in mine for v in r.ttfb]
        chunk = [v for r in mine for v in r.chunk]
        stamped = sum(len(r.stamped) for r in mine)
        out[mode] = {
            "rounds": len(mine),
            "ttfb_ms": {"p50": percentile(ttfb, 0.5) * 1e3, "p99": percentile(ttfb, 0.99) * 1e3},
            "chunk_ms": {
                "p50": percentile(chunk, 0.5) * 1e3,
                "p99": percentile(chunk, 0.99) * 1e3,
            },
            "chunks_received": stamped,
            "chunks_measured": len(chunk),
            "rss_per_stream_kb": statistics.mean(r.peak_rss_growth for r in mine) / streams / 1024,
            "proxy_cpu_ms_per_stream": statistics.mean(r.cpu_seconds for r in mine) / streams * 1e3,
            "errors": sum(len(r.errors) for r in mine),
            "error_kinds": sorted({e for r in mine for e in r.errors})[:5],
            "round_seconds": [round(r.seconds, 2) for r in mine],
        }
    for metric in ("ttfb_ms", "chunk_ms"):
        for q in ("p50", "p99"):
            heal, bare = out["heal"][metric][q], out["bare"][metric][q]
            out.setdefault("added_ms", {})[f"{metric}.{q}"] = heal - bare
    # Issue 20's targets, side by side in this run: healing's CPU per stream as a multiple of
    # the bare proxy's (<= 1.15), and what it adds to the first byte's p50 (<= +20 ms).
    cpu = {mode: [r.cpu_seconds for r in rounds if r.mode == mode] for mode in ("bare", "heal")}
    out["cpu_ratio"] = sum(cpu["heal"]) / sum(cpu["bare"])
    out["cpu_ratio_per_round_pair"] = [
        round(heal / bare, 3) for bare, heal in zip(cpu["bare"], cpu["heal"], strict=True)
    ]
    return out


# -- worker counts: throughput -----------------------------------------------------------------


@dataclass
class Throughput:
    """One round of ``--workers``: what was served in it and the CPU each process took."""

    workers: int
    seconds: float = 0.0
    requests: int = 0
    chunks: int = 0
    errors: list[str] = field(default_factory=list)
    #: CPU seconds of each worker process of the proxy (its parent's, tiny, not included).
    worker_cpu: list[float] = field(default_factory=list)
    upstream_cpu: float = 0.0
    client_cpu: float = 0.0

    @property
    def proxy_cpu(self) -> float:
        return sum(self.worker_cpu)


def _workers_of(pid: int) -> list[psutil.Process]:
    """The processes that serve: the workers, or the one process of ``--workers 1``."""
    parent = psutil.Process(pid)
    return parent.children() or [parent]


async def _stream_loop(
    client: httpx.AsyncClient, url: str, until: float, result: Throughput | None
) -> None:
    """Send a request as soon as the last one ended, until ``until`` (``None``: one, uncounted)."""
    while True:
        try:
            async with client.stream("POST", url, json=REQUEST) as response:
                body = await response.aread()
            if response.status_code != 200:
                error = f"HTTP {response.status_code}"
            elif b"[DONE]" not in body or b'"call_load"' not in body:
                error = "incomplete stream"
            else:
                error = None
        except Exception as failure:  # every failure is counted, none stops the round
            error = f"{type(failure).__name__}: {failure}"
        if result is None:
            return
        if error is None:
            result.requests += 1
            result.chunks += len(_STAMP.findall(body))
        else:
            result.errors.append(error)
        if time.perf_counter() >= until:
            return


async def run_throughput_round(
    workers: int, base: str, pid: int, upstream_pid: int, streams: int, duration: float
) -> Throughput:
    result = Throughput(workers)
    serving = _workers_of(pid)
    upstream, client_process = psutil.Process(upstream_pid), psutil.Process()
    url = f"{base}/chat/completions"
    limits = httpx.Limits(max_connections=streams, max_keepalive_connections=streams)
    async with httpx.AsyncClient(limits=limits, timeout=httpx.Timeout(60.0)) as client:
        # One request per client first, uncounted: every connection is open and kept alive
        # before the clock starts (how they spread over the workers is the kernel's doing).
        async with anyio.create_task_group() as group:
            for _ in range(streams):
                group.start_soon(_stream_loop, client, url, 0.0, None)
        cpu_before = [cpu_seconds(p) for p in (*serving, upstream, client_process)]
        started = time.perf_counter()
        async with anyio.create_task_group() as group:
            for _ in range(streams):
                group.start_soon(_stream_loop, client, url, started + duration, result)
        result.seconds = time.perf_counter() - started
        cpu = [
            cpu_seconds(p) - before
            for p, before in zip((*serving, upstream, client_process), cpu_before, strict=True)
        ]
    result.worker_cpu = cpu[: len(serving)]
    result.upstream_cpu, result.client_cpu = cpu[-2:]
    return result


def throughput_summary(rounds: list[Throughput], streams: int) -> dict[str, Any]:
    out: dict[str, Any] = {"streams": streams, "load_average": os.getloadavg()}
    for count in sorted({r.workers for r in rounds}):
        mine = [r for r in rounds if r.workers == count]
        seconds = sum(r.seconds for r in mine)
        requests = sum(r.requests for r in mine)
        out[f"workers_{count}"] = {
            "rounds": len(mine),
            "requests_per_s": [round(r.requests / r.seconds, 1) for r in mine],
            "chunks_per_s": [round(r.chunks / r.seconds) for r in mine],
            "requests_per_s_all": requests / seconds,
            "chunks_per_s_all": sum(r.chunks for r in mine) / seconds,
            # Cores busy on average over the rounds: each worker, the upstream, the client.
            "worker_cores": [
                round(sum(r.worker_cpu[i] for r in mine) / seconds, 2) for i in range(count)
            ],
            "upstream_cores": round(sum(r.upstream_cpu for r in mine) / seconds, 2),
            "client_cores": round(sum(r.client_cpu for r in mine) / seconds, 2),
            "proxy_cpu_ms_per_request": sum(r.proxy_cpu for r in mine) / max(requests, 1) * 1e3,
            "errors": sum(len(r.errors) for r in mine),
            "error_kinds": sorted({e for r in mine for e in r.errors})[:5],
        }
    counts = sorted({r.workers for r in rounds})
    first = out[f"workers_{counts[0]}"]
    for count in counts[1:]:
        mine = out[f"workers_{count}"]
        for metric in ("requests_per_s_all", "chunks_per_s_all"):
            if first[metric]:
                mine[f"{metric.removesuffix('_all')}_ratio"] = mine[metric] / first[metric]
    return out


def compare_workers(args: argparse.Namespace) -> int:
    """``--workers``: the same load on each worker count, rounds alternated in one run."""
    if args.load_cpus:
        os.sched_setaffinity(0, _cpu_list(args.load_cpus))  # the client
    upstream, upstream_url = start_upstream(cpus=args.load_cpus)
    heal = ["--no-heal"] if args.no_heal else []
    proxies = {
        count: start_proxy(upstream_url, *heal, "--workers", str(count), cpus=args.proxy_cpus)
        for count in args.workers
    }
    rounds: list[Throughput] = []
    try:
        for _ in range(args.rounds):
            for count, (process, url) in proxies.items():
                rounds.append(
                    anyio.run(
                        run_throughput_round,
                        count,
                        url,
                        process.pid,
                        upstream.pid,
                        args.streams,
                        args.duration,
                    )
                )
                time.sleep(0.5)
    finally:
        for process in (*(p for p, _ in proxies.values()), upstream):
            process.send_signal(signal.SIGTERM)
        for process in (*(p for p, _ in proxies.values()), upstream):
            try:
                process.wait(40)
            except subprocess.TimeoutExpired:
                process.kill()
    result = throughput_summary(rounds, args.streams)
    errors = sum(result[f"workers_{count}"]["errors"] for count in args.workers)
    if args.json:
        print(json.dumps(result, indent=2))
        return 0 if errors == 0 else 1
    print(
        f"{args.streams} clients back to back, {args.duration:.0f} s rounds, {args.rounds} per "
        f"worker count, streams of {args.chunks} text chunks {args.pause * 1e3:.0f} ms apart, "
        f"{'bare' if args.no_heal else 'healing'}, proxy cpus {args.proxy_cpus or 'any'}, "
        f"load cpus {args.load_cpus or 'any'}, load average {result['load_average']}"
    )
    print(
        f"{'workers':>7} {'req/s':>8} {'chunks/s':>9} {'ratio':>11} {'worker cores':>14} "
        f"{'upstream':>8} {'client':>7} {'CPU/req':>8} {'errors':>6}"
    )
    for count in args.workers:
        m = result[f"workers_{count}"]
        ratio = "/".join(
            f"{m[key]:.2f}" for key in ("requests_per_s_ratio", "chunks_per_s_ratio") if key in m
        )
        print(
            f"{count:7d} {m['requests_per_s_all']:8.1f} {m['chunks_per_s_all']:9.0f} "
            f"{ratio:>11} {' '.join(map(str, m['worker_cores'])):>14} "
            f"{m['upstream_cores']:8.2f} {m['client_cores']:7.2f} "
            f"{m['proxy_cpu_ms_per_request']:6.2f}ms {m['errors']:6d}"
        )
        print(f"{'':7} per round: {m['requests_per_s']} req/s, {m['chunks_per_s']} chunks/s")
        if m["errors"]:
            print(f"{'':7} errors: {m['error_kinds']}")
    return 0 if errors == 0 else 1


def _cpu_list(cpus: str) -> set[int]:
    """``taskset``'s list (``1``, ``0,1``, ``0-1``) as a set of CPU numbers."""
    chosen: set[int] = set()
    for part in cpus.split(","):
        first, _, last = part.partition("-")
        chosen.update(range(int(first), int(last or first) + 1))
    return chosen


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--streams", type=int, default=500)
    parser.add_argument("--rounds", type=int, default=2, help="rounds per proxy (alternating)")
    parser.add_argument(
        "--warmup", type=int, default=1, help="unmeasured rounds of 50 streams per proxy first"
    )
    parser.add_argument("--pause", type=float, default=0.05, help="seconds between chunks")
    parser.add_argument("--chunks", type=int, default=40, help="text chunks per stream")
    parser.add_argument("--json", action="store_true")
    parser.add_argument(
        "--workers",
        type=int,
        nargs="+",
        help="compare these worker counts' throughput (healing) instead of bare and healing",
    )
    parser.add_argument("--duration", type=float, default=10.0, help="seconds per --workers round")
    parser.add_argument("--no-heal", action="store_true", help="--workers: bare proxies")
    parser.add_argument("--load-cpus", help="taskset CPU list for the client and the upstream")
    parser.add_argument("--proxy-cpus", help="taskset CPU list for the proxies")
    args = parser.parse_args()
    os.environ["LOAD_PAUSE"] = str(args.pause)
    os.environ["LOAD_CHUNKS"] = str(args.chunks)
    if args.workers:
        return compare_workers(args)
    upstream, upstream_url = start_upstream()
    bare, bare_url = start_proxy(upstream_url, "--no-heal")
    heal, heal_url = start_proxy(upstream_url)
    rounds: list[Round] = []
    try:
        for mode, url, process in (("bare", bare_url, bare), ("heal", heal_url, heal)):
            # Not measured: the first requests import the modules the path needs (the healing
            # imports more) and compile the request's tools once; the rounds measure what every
            # stream costs after that.
            for _ in range(args.warmup):
                anyio.run(run_round, mode, url, process.pid, min(50, args.streams))
        for _ in range(args.rounds):
            for mode, url, process in (("bare", bare_url, bare), ("heal", heal_url, heal)):
                rounds.append(anyio.run(run_round, mode, url, process.pid, args.streams))
                time.sleep(0.5)
    finally:
        for process in (heal, bare, upstream):
            process.send_signal(signal.SIGTERM)
        for process in (heal, bare, upstream):
            try:
                process.wait(20)
            except subprocess.TimeoutExpired:
                process.kill()
    result = summary(rounds, args.streams)
    if args.json:
        print(json.dumps(result, indent=2))
        return 0 if result["heal"]["errors"] == result["bare"]["errors"] == 0 else 1
    print(
        f"{args.streams} concurrent streams of {args.chunks} chunks {args.pause * 1e3:.0f} ms "
        f"apart, {args.rounds} rounds per proxy, cpus={os.cpu_count()}"
    )
    print(
        f"{'':6} {'ttfb p50':>9} {'ttfb p99':>9} {'chunk p50':>10} {'chunk p99':>10} "
        f"{'KB/stream':>10} {'CPU/stream':>11} {'errors':>7}"
    )
    for mode in ("bare", "heal"):
        m = result[mode]
        print(
            f"{mode:6} {m['ttfb_ms']['p50']:8.1f}ms {m['ttfb_ms']['p99']:8.1f}ms "
            f"{m['chunk_ms']['p50']:9.2f}ms {m['chunk_ms']['p99']:9.2f}ms "
            f"{m['rss_per_stream_kb']:10.1f} {m['proxy_cpu_ms_per_stream']:9.2f}ms "
            f"{m['errors']:7d}"
        )
    added = result["added_ms"]
    print("healing adds: " + ", ".join(f"{k} {v:+.2f} ms" for k, v in added.items()))
    pairs = ", ".join(f"{ratio:.2f}" for ratio in result["cpu_ratio_per_round_pair"])
    print(
        f"healing CPU per stream: {result['cpu_ratio']:.3f}x the bare proxy's (round pairs {pairs})"
    )
    return 0 if result["heal"]["errors"] == result["bare"]["errors"] == 0 else 1


if __name__ == "__main__":
    raise SystemExit(main())
