"""LiteLLM's proxy, bare and with toolwire's guardrail, against ``toolwire serve`` (issue 20).

Run: ``.venv/bin/python bench/bench_litellm.py [--streams 50] [--rounds 2] [--requests 40]
[--json]`` (LiteLLM from ``.venv-litellm``, or the virtualenv ``TOOLWIRE_LITELLM_VENV`` names).

Four targets in front of one fake upstream, each its own process on loopback: LiteLLM's proxy
bare (one uvicorn worker, its defaults: uvloop, aiohttp; no database, so no spend logs), LiteLLM
with ``toolwire.gateway.litellm.ToolwireGuardrail`` in its ``config.yaml``, ``toolwire serve
--no-heal`` and ``toolwire serve``; and ``direct``, the upstream itself, for what each adds.

- Load (``load_upstream.py``: 40 text chunks 50 ms apart, each stamped, then one valid call):
  ``--streams`` concurrent streams per round, rounds alternating over the targets. Per target:
  CPU per stream, added first byte and per-chunk latency (p50 / p99, over direct), peak RSS.
- Sequential (``sequential_upstream.py``: a call at once, whole or streamed): one client, one
  kept-alive connection per target, ``--requests`` requests at a time per target in blocks that
  alternate over the targets. Per target: latency p50 (and what it adds over direct), and CPU
  per request (the target process's CPU time over the block, divided by its requests).

Nothing here is healed (every call is valid): it is the cost of judging and re-encoding every
response in each place. Every figure is from one run, side by side.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import anyio
import httpx
import psutil
from bench_serve_load import (
    TOOLS,
    Round,
    _free_port,
    _wait_http,
    percentile,
    run_round,
    start_proxy,
    start_upstream,
)
from process_cpu import cpu_seconds

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
MESSAGES = [{"role": "user", "content": "write"}]
GUARDRAIL = """guardrails:
  - guardrail_name: toolwire
    litellm_params:
      guardrail: toolwire.gateway.litellm.ToolwireGuardrail
      mode: [pre_call, post_call]
      default_on: true
"""
OFFLINE_ENV = {
    "LITELLM_LOCAL_MODEL_COST_MAP": "True",
    "LITELLM_TELEMETRY": "False",
    "LITELLM_LOG": "ERROR",
    "HF_HUB_OFFLINE": "1",
}
TARGETS = ("litellm", "litellm+toolwire", "serve --no-heal", "serve")


def litellm_command() -> Path:
    venv = os.environ.get("TOOLWIRE_LITELLM_VENV")
    command = (Path(venv) if venv else ROOT / ".venv-litellm") / "bin" / "litellm"
    if not command.exists():
        raise SystemExit(f"no LiteLLM at {command}: make .venv-litellm as .ci/run does")
    return command


def start_litellm(
    upstream: str,
    *,
    guardrail: bool,
    folder: Path,
    models: tuple[str, ...] = ("load", "ok", "cut"),
    options: str = "",
) -> tuple[psutil.Process, str]:
    """LiteLLM's proxy with ``models`` (``openai/<name>``) at ``upstream``; with toolwire's
    guardrail when ``guardrail`` (``options``: more of its ``litellm_params`` lines)."""
    entries = "".join(
        f"""  - model_name: {name}
    litellm_params:
      model: openai/{name}
      api_base: {upstream}
      api_key: sk-bench
"""
        for name in models
    )
    config = f"""model_list:
{entries}litellm_settings:
  telemetry: false
  num_retries: 0
general_settings:
  dangerously_permit_weak_or_unset_master_key: true
  disable_spend_logs: true
{GUARDRAIL + options if guardrail else ""}"""
    path = folder / f"litellm-{_free_port()}.yaml"
    path.write_text(config)
    port = _free_port()
    process = subprocess.Popen(
        [
            *(str(litellm_command()), "--config", str(path)),
            *("--host", "127.0.0.1", "--port", str(port), "--num_workers", "1"),
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        env={**os.environ, **OFFLINE_ENV},
        cwd=folder,
    )
    _wait_http(f"http://127.0.0.1:{port}/health/liveliness", time.monotonic() + 180)
    return _worker(process.pid), f"http://127.0.0.1:{port}/v1"


def _worker(pid: int) -> psutil.Process:
    """The process that serves: ``pid``, or its one child when it forked a worker."""
    process = psutil.Process(pid)
    children = process.children(recursive=True)
    return children[-1] if len(children) == 1 else process


def start_targets(upstream: str, folder: Path) -> tuple[dict[str, psutil.Process], dict[str, str]]:
    processes: dict[str, psutil.Process] = {}
    bases: dict[str, str] = {}
    for name, guardrail in (("litellm", False), ("litellm+toolwire", True)):
        processes[name], bases[name] = start_litellm(upstream, guardrail=guardrail, folder=folder)
    for name, extra in (("serve --no-heal", ("--no-heal",)), ("serve", ())):
        served, bases[name] = start_proxy(upstream, *extra)
        processes[name] = psutil.Process(served.pid)
    return processes, bases


def stop(processes: list[psutil.Process | subprocess.Popen[bytes]]) -> None:
    for process in processes:
        try:
            process.send_signal(signal.SIGTERM)
        except (psutil.NoSuchProcess, ProcessLookupError):
            pass
    for process in processes:
        try:
            process.wait(20)
        except (psutil.TimeoutExpired, subprocess.TimeoutExpired):
            process.kill()
        except psutil.NoSuchProcess:
            pass


# -- load ----------------------------------------------------------------------------------------


def load_phase(args: argparse.Namespace, folder: Path) -> dict[str, Any]:
    os.environ["LOAD_PAUSE"] = str(args.pause)
    os.environ["LOAD_CHUNKS"] = str(args.chunks)
    upstream, direct = start_upstream()
    processes, bases = start_targets(direct, folder)
    bases = {"direct": direct, **bases}
    pids = {"direct": upstream.pid, **{name: p.pid for name, p in processes.items()}}
    rounds: dict[str, list[Round]] = {name: [] for name in bases}
    rss: dict[str, int] = {}
    try:
        for name, base in bases.items():  # warm-up, not counted: connections, the first imports
            anyio.run(run_round, name, base, pids[name], min(args.streams, 10))
        for _ in range(args.rounds):
            for name, base in bases.items():
                rounds[name].append(anyio.run(run_round, name, base, pids[name], args.streams))
                time.sleep(0.5)
        rss = {name: psutil.Process(pid).memory_info().rss for name, pid in pids.items()}
    finally:
        stop([*processes.values(), upstream])
    out: dict[str, Any] = {}
    direct_ttfb = [v for r in rounds["direct"] for v in r.ttfb]
    direct_chunk = [v for r in rounds["direct"] for v in r.chunk]
    for name, mine in rounds.items():
        ttfb = [v for r in mine for v in r.ttfb]
        chunk = [v for r in mine for v in r.chunk]
        out[name] = {
            "cpu_ms_per_stream": statistics.mean(r.cpu_seconds for r in mine) / args.streams * 1e3,
            "ttfb_ms": [percentile(ttfb, q) * 1e3 for q in (0.5, 0.99)],
            "added_ttfb_ms": [
                (percentile(ttfb, q) - percentile(direct_ttfb, q)) * 1e3 for q in (0.5, 0.99)
            ],
            "chunk_ms": [percentile(chunk, q) * 1e3 for q in (0.5, 0.99)],
            "added_chunk_ms": [
                (percentile(chunk, q) - percentile(direct_chunk, q)) * 1e3 for q in (0.5, 0.99)
            ],
            "rss_mb_after": rss.get(name, 0) / 2**20,
            "peak_rss_growth_mb": max(r.peak_rss_growth for r in mine) / 2**20,
            "errors": sum(len(r.errors) for r in mine),
            "error_kinds": sorted({e for r in mine for e in r.errors})[:3],
        }
    return out


# -- sequential ----------------------------------------------------------------------------------


def _request(client: httpx.Client, base: str, stream: bool) -> None:
    body = {"model": "ok", "messages": MESSAGES, "tools": TOOLS, "stream": stream}
    with client.stream("POST", f"{base}/chat/completions", json=body) as response:
        content = response.read()
    if response.status_code != 200 or b"hello" not in content:
        raise RuntimeError(f"{base}: {response.status_code}: {content[:300]!r}")


def _block(send: Callable[[], None], count: int, errors: list[str]) -> list[float]:
    """Milliseconds of each of ``count`` requests; a failed one is noted in ``errors``."""
    times: list[float] = []
    for _ in range(count):
        started = time.perf_counter()
        try:
            send()
        except Exception as error:  # counted, not fatal: the other targets go on
            errors.append(f"{type(error).__name__}: {error}"[:200])
            continue
        times.append((time.perf_counter() - started) * 1e3)
    return times


def sequential_phase(args: argparse.Namespace, folder: Path) -> dict[str, Any]:
    upstream, direct = start_upstream("sequential_upstream:app")
    processes, bases = start_targets(direct, folder)
    bases = {"direct": direct, **bases}
    watched = {"direct": psutil.Process(upstream.pid), **processes}
    clients = {name: httpx.Client(timeout=30) for name in bases}
    out: dict[str, Any] = {}
    try:
        for stream in (False, True):
            body = "stream" if stream else "whole"
            latency: dict[str, list[float]] = {name: [] for name in bases}
            errors: dict[str, list[str]] = {name: [] for name in bases}
            cpu: dict[str, float] = dict.fromkeys(bases, 0.0)
            for name, base in bases.items():  # warm-up: connections, tool lists compiled
                _block(lambda c=clients[name], b=base, s=stream: _request(c, b, s), 5, [])
            for _ in range(args.rounds):
                for name, base in bases.items():
                    before = cpu_seconds(watched[name])
                    latency[name] += _block(
                        lambda c=clients[name], b=base, s=stream: _request(c, b, s),
                        args.requests,
                        errors[name],
                    )
                    time.sleep(0.2)  # what the target does after answering counts too
                    cpu[name] += cpu_seconds(watched[name]) - before
            direct_p50 = statistics.median(latency["direct"])
            for name in bases:
                p50 = statistics.median(latency[name])
                out.setdefault(name, {})[body] = {
                    "p50_ms": p50,
                    "p99_ms": percentile(latency[name], 0.99),
                    "added_p50_ms": p50 - direct_p50,
                    "cpu_ms_per_request": cpu[name] / max(1, len(latency[name])) * 1e3,
                    "errors": len(errors[name]),
                    "error_kinds": sorted(set(errors[name]))[:3],
                }
    finally:
        for client in clients.values():
            client.close()
        stop([*processes.values(), upstream])
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--streams", type=int, default=50, help="concurrent streams per round")
    parser.add_argument("--rounds", type=int, default=2, help="rounds (blocks) per target")
    parser.add_argument("--pause", type=float, default=0.05, help="seconds between chunks")
    parser.add_argument("--chunks", type=int, default=40, help="text chunks per stream")
    parser.add_argument("--requests", type=int, default=40, help="sequential requests per block")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        load = load_phase(args, Path(folder))
        print(json.dumps({"load": load}), file=sys.stderr)  # kept if the next phase fails
        sequential = sequential_phase(args, Path(folder))
    result = {
        "settings": vars(args),
        "cpus": os.cpu_count(),
        "load": load,
        "sequential": sequential,
    }
    if args.json:
        print(json.dumps(result, indent=2))
        return 0
    print(
        f"load: {args.streams} concurrent streams of {args.chunks} chunks "
        f"{args.pause * 1e3:.0f} ms apart; sequential: {args.requests} requests per block; "
        f"{args.rounds} rounds per target, alternated; cpus={os.cpu_count()}"
    )
    print(
        f"{'target':17} {'CPU/stream':>10} {'CPU/req whole':>13} {'CPU/req stream':>14} "
        f"{'+1st byte p50/p99':>18} {'+chunk p50/p99':>15} {'+seq whole':>10} "
        f"{'+seq stream':>11} {'RSS MB':>7} {'errors':>6}"
    )
    for name in TARGETS:
        row, seq = load[name], sequential[name]
        print(
            f"{name:17} {row['cpu_ms_per_stream']:8.2f}ms "
            f"{seq['whole']['cpu_ms_per_request']:11.2f}ms "
            f"{seq['stream']['cpu_ms_per_request']:12.2f}ms "
            f"{row['added_ttfb_ms'][0]:8.1f}/{row['added_ttfb_ms'][1]:.1f}ms "
            f"{row['added_chunk_ms'][0]:6.2f}/{row['added_chunk_ms'][1]:.2f}ms "
            f"{seq['whole']['added_p50_ms']:8.2f}ms {seq['stream']['added_p50_ms']:9.2f}ms "
            f"{row['rss_mb_after']:7.0f} {row['errors']:6d}"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
