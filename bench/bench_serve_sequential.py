"""Sequential client: what ``toolwire serve`` adds to one request at a time (issue 20).

Run: ``.venv/bin/python bench/bench_serve_sequential.py [--requests 50] [--tools 0] [--json]``

An agent sends its turns one at a time on one kept-alive connection, so what it feels is the
latency the proxy adds to each request, not its throughput. Three processes on loopback: a fake
upstream on uvicorn that answers at once (``sequential_upstream.py``), ``toolwire serve
--no-heal`` and ``toolwire serve`` in front of it. Two clients, each on one kept-alive
connection per target: httpx, and the openai SDK (which parses every answer). Targets are
taken in turn, request by request (direct, bare, healing), so all three see the same machine.

For each client and body (whole JSON, SSE stream) it reports p50 / p99 of the time from sending
a request to its last byte, what each proxy adds over direct at p50, and each proxy's CPU per
request (its process's CPU time over the series, both proxies measured in the same run) with
healing's as a multiple of the bare proxy's. Then one heal: a
request whose first answer is a call cut by the token limit, through the healing proxy; its
cost beyond the retry's own upstream time is ``healed - passed - direct`` (p50s), where
``passed`` is the same request answered well at once.

``--tools N`` offers N more tools (about 1.2 KB of JSON each, ``bench_heal_data_path.py``'s),
beside ``write``: an agent's request, whose body the healing reads and the bare proxy does not.
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from collections.abc import Callable
from typing import Any

import httpx
import openai
import psutil
from bench_heal_data_path import extra_tool
from bench_serve_load import TOOLS, percentile, start_proxy, start_upstream
from process_cpu import cpu_seconds

MESSAGES = [{"role": "user", "content": "write"}]
#: What every request offers (``--tools``).
OFFERED: list[dict[str, Any]] = list(TOOLS)


def _httpx_request(client: httpx.Client, base: str, model: str, stream: bool) -> None:
    body = {"model": model, "messages": MESSAGES, "tools": OFFERED, "stream": stream}
    with client.stream("POST", f"{base}/chat/completions", json=body) as response:
        content = response.read()
    if response.status_code != 200 or b"hello" not in content:
        raise RuntimeError(f"{response.status_code}: {content[:200]!r}")


def _openai_request(client: openai.OpenAI, model: str, stream: bool) -> None:
    if stream:
        arguments = ""
        for chunk in client.chat.completions.create(
            model=model,
            messages=MESSAGES,
            tools=OFFERED,
            stream=True,  # type: ignore[arg-type]
        ):
            for call in (chunk.choices[0].delta.tool_calls or []) if chunk.choices else []:
                arguments += call.function.arguments or "" if call.function else ""
    else:
        reply = client.chat.completions.create(model=model, messages=MESSAGES, tools=OFFERED)  # type: ignore[arg-type]
        arguments = (reply.choices[0].message.tool_calls or [])[0].function.arguments
    if "hello" not in arguments:
        raise RuntimeError(f"not the good call: {arguments!r}")


def _clients(
    kind: str, bases: dict[str, str]
) -> tuple[dict[str, Callable[[str, bool], None]], list[Any]]:
    """One request function per target, each on its own kept-alive connection."""
    senders: dict[str, Callable[[str, bool], None]] = {}
    opened: list[Any] = []
    for name, base in bases.items():
        if kind == "httpx":
            client = httpx.Client(timeout=20)
            senders[name] = lambda model, stream, c=client, b=base: _httpx_request(
                c, b, model, stream
            )
        else:
            sdk = openai.OpenAI(base_url=base, api_key="bench", max_retries=0, timeout=20)
            senders[name] = lambda model, stream, c=sdk: _openai_request(c, model, stream)
            client = sdk
        opened.append(client)
    return senders, opened


def _timed(runs: dict[str, Callable[[], None]], requests: int) -> dict[str, list[float]]:
    """Milliseconds per request of each run, taken in turn; two warm-up rounds left out."""
    samples: dict[str, list[float]] = {name: [] for name in runs}
    for round_ in range(requests + 2):
        for name, run in runs.items():
            start = time.perf_counter()
            run()
            if round_ >= 2:
                samples[name].append((time.perf_counter() - start) * 1000)
    return samples


def measure(
    bases: dict[str, str], requests: int, pids: dict[str, int] | None = None
) -> dict[str, Any]:
    results: dict[str, Any] = {}
    processes = {name: psutil.Process(pid) for name, pid in (pids or {}).items()}
    for kind in ("httpx", "openai"):
        senders, opened = _clients(kind, bases)
        try:
            for stream in (False, True):
                body = "stream" if stream else "whole"
                runs = {
                    name: (lambda s=send, st=stream: s("ok", st)) for name, send in senders.items()
                }
                cpu_before = {name: cpu_seconds(process) for name, process in processes.items()}
                samples = _timed(runs, requests)
                cpu_ms = {
                    name: (cpu_seconds(process) - cpu_before[name]) / (requests + 2) * 1e3
                    for name, process in processes.items()
                }
                p50 = {name: statistics.median(values) for name, values in samples.items()}
                row: dict[str, Any] = {
                    name: [round(p50[name], 2), round(percentile(values, 0.99), 2)]
                    for name, values in samples.items()
                }
                row["added p50"] = {
                    name: round(p50[name] - p50["direct"], 2) for name in ("bare", "healing")
                }
                if cpu_ms:
                    row["cpu ms per request"] = {name: round(ms, 3) for name, ms in cpu_ms.items()}
                    row["cpu ratio"] = round(cpu_ms["healing"] / cpu_ms["bare"], 3)
                results[f"{kind} {body}"] = row
                heal_runs = {
                    "direct": lambda st=stream, go=senders["direct"]: go("ok", st),
                    "passed": lambda st=stream, go=senders["healing"]: go("ok", st),
                    "healed": lambda st=stream, go=senders["healing"]: go("cut", st),
                }
                heal = {k: statistics.median(v) for k, v in _timed(heal_runs, requests).items()}
                results[f"{kind} {body}"]["one heal"] = {
                    **{k: round(v, 2) for k, v in heal.items()},
                    "beyond the retry": round(heal["healed"] - heal["passed"] - heal["direct"], 2),
                }
        finally:
            for client in opened:
                client.close()
    return results


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=50)
    parser.add_argument("--tools", type=int, default=0, help="more tools offered (~1.2 KB each)")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    OFFERED[1:] = map(extra_tool, range(args.tools))
    processes = []
    try:
        upstream, direct = start_upstream("sequential_upstream:app")
        processes.append(upstream)
        bare, bare_url = start_proxy(direct, "--no-heal")
        processes.append(bare)
        healing, healing_url = start_proxy(direct)
        processes.append(healing)
        results = measure(
            {"direct": direct, "bare": bare_url, "healing": healing_url},
            args.requests,
            {"bare": bare.pid, "healing": healing.pid},
        )
    finally:
        for process in processes:
            process.terminate()
            process.wait(15)
    if args.json:
        print(json.dumps(results, indent=2))
        return 0
    print(f"{args.requests} requests per target, one at a time; ms, p50 / p99")
    for case, row in results.items():
        cells = "  ".join(
            f"{name} {row[name][0]:.2f}/{row[name][1]:.2f}"
            for name in ("direct", "bare", "healing")
        )
        added = row["added p50"]
        heal = row["one heal"]
        cpu = row["cpu ms per request"]
        print(
            f"{case:14} {cells}  added p50: bare +{added['bare']:.2f} "
            f"healing +{added['healing']:.2f}  one heal: +{heal['beyond the retry']:.2f} "
            f"beyond its retry  CPU/request: bare {cpu['bare']:.3f} healing "
            f"{cpu['healing']:.3f} ms ({row['cpu ratio']:.2f}x)"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
