"""A fault soak of ``toolwire serve`` (issue 19): many streams under faults, one hostile client.

All on loopback: a fake upstream that fails on request (``fault_upstream.py``), one healing
``toolwire serve`` process, and this client. Each round opens ``--streams`` concurrent streams,
each given one fault in turn: ``ok`` and ``stall`` (a 2 s silence mid-stream) are the healthy
clients; ``reset`` (the upstream drops), ``garbage`` (an event that is not JSON), ``oversize``
(an event of 17 MiB, one stream in 25) and ``disconnect`` (the client leaves after three
pieces) are the faults. Meanwhile one hostile client at a time sends what the proxy must refuse
(10,000 tools, a schema of 1 MiB, an unusable schema, duplicate keys after 200,000 objects,
nesting 100,000 deep, a path out of ``/v1``), and a thread polls ``/healthz`` on a new
connection every 20 ms.

Printed, as JSON: errors seen by healthy clients (must be 0; a healthy stream must end with
its call and ``[DONE]``), how each fault ended for its client, refusals that were not 4xx
(must be 0), the proxy's open fds and RSS before and after (before: after one warm-up round;
after: a 2 s settle), and the worst ``/healthz`` latency.

    python bench/bench_fault_soak.py --streams 100 --rounds 3
"""

from __future__ import annotations

import argparse
import collections
import json
import socket
import threading
import time
from typing import Any

import anyio
import httpx
import psutil
from bench_serve_load import TOOLS, start_proxy, start_upstream

KINDS = ["ok", "stall", "reset", "garbage", "ok", "disconnect"]
HEALTHY = frozenset({"ok", "stall"})


def _request(**extra: Any) -> dict[str, Any]:
    return {
        "model": "soak",
        "messages": [{"role": "user", "content": "write"}],
        "tools": TOOLS,
        "stream": True,
        **extra,
    }


def _tool(name: str, description: str = "") -> dict[str, Any]:
    schema = {"type": "object", "description": description}
    return {"type": "function", "function": {"name": name, "parameters": schema}}


def hostile_requests() -> list[tuple[str, str, bytes]]:
    """(name, path, body) of each attack: every one must be a 4xx."""
    many = _request(tools=[_tool(f"t{i}") for i in range(10_000)])
    huge = _request(tools=[_tool("huge", "d" * 1024 * 1024)])
    broken = _request(
        tools=[{"type": "function", "function": {"name": "b", "parameters": {"type": 3}}}]
    )
    duplicates = b'{"model": "m", "messages": [' + b'{"a": 1},' * 200_000 + b'{"b": 1, "b": 2}]}'
    nested = b'{"model": "m", "messages": [], "tools": [' + b"[" * 100_000 + b"]" * 100_000 + b"]}"
    chat = "/chat/completions"
    return [
        ("10,000 tools", chat, json.dumps(many).encode()),
        ("a 1 MiB schema", chat, json.dumps(huge).encode()),
        ("an unusable schema", chat, json.dumps(broken).encode()),
        ("duplicate keys", chat, duplicates),
        ("nested 100k deep", chat, nested),
        ("a path out of /v1", "/%2e%2e/api/delete", b"{}"),
    ]


class HealthWatch:
    """Polls ``/healthz`` on a new connection every 20 ms; the slowest answer."""

    def __init__(self, port: int) -> None:
        self.port = port
        self.worst = 0.0
        self.answers = 0
        self.failures = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._poll, daemon=True)

    def _poll(self) -> None:
        while not self._stop.is_set():
            start = time.perf_counter()
            try:
                with socket.create_connection(("127.0.0.1", self.port), timeout=10) as raw:
                    raw.sendall(b"GET /healthz HTTP/1.1\r\nhost: x\r\nconnection: close\r\n\r\n")
                    answer = b""
                    while chunk := raw.recv(4096):
                        answer += chunk
                if not answer.startswith(b"HTTP/1.1 200 "):
                    self.failures += 1
            except OSError:
                self.failures += 1
            self.worst = max(self.worst, time.perf_counter() - start)
            self.answers += 1
            time.sleep(0.02)

    def __enter__(self) -> HealthWatch:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(30)


async def one_stream(client: httpx.AsyncClient, base: str, kind: str, tally: Any) -> None:
    fault = "ok" if kind == "disconnect" else kind
    text = b""
    try:
        async with client.stream(
            "POST", f"{base}/chat/completions", json=_request(), headers={"x-fault": fault}
        ) as response:
            pieces = 0
            async for piece in response.aiter_bytes():
                text += piece
                pieces += 1
                if kind == "disconnect" and pieces == 3:
                    tally[kind]["left early"] += 1
                    return
            status = response.status_code
    except httpx.HTTPError as error:
        outcome = f"dropped ({type(error).__name__})"
    else:
        if status != 200:
            outcome = f"HTTP {status}"
        elif b"toolwire_upstream_error" in text:
            outcome = "in-band error"
        elif b'"name":"write"' in text and text.endswith(b"data: [DONE]\n\n"):
            outcome = "complete"
        else:
            outcome = "incomplete"
    tally[kind][outcome] += 1
    if kind in HEALTHY and outcome != "complete":
        tally["healthy errors"][f"{kind}: {outcome}"] += 1


async def hostile(base: str, stop: anyio.Event, tally: Any) -> None:
    attacks = hostile_requests()
    async with httpx.AsyncClient(timeout=60) as client:
        while not stop.is_set():
            for name, path, body in attacks:
                if path.startswith("/%"):
                    status = _raw_status(base, path)
                else:
                    response = await client.post(
                        f"{base}{path}", content=body, headers={"content-type": "application/json"}
                    )
                    status = response.status_code
                tally["hostile"][name if 400 <= status < 500 else f"{name}: HTTP {status}"] += 1


def _raw_status(base: str, path: str) -> int:
    host, port = base.removeprefix("http://").split("/")[0].split(":")
    with socket.create_connection((host, int(port)), timeout=10) as raw:
        raw.sendall(f"GET /v1{path} HTTP/1.1\r\nhost: x\r\nconnection: close\r\n\r\n".encode())
        answer = raw.recv(4096)
    return int(answer.split(b" ", 2)[1])


async def soak(
    base: str, streams: int, rounds: int, attack: bool = True, oversize: bool = True
) -> dict[str, Any]:
    tally: dict[str, collections.Counter[str]] = collections.defaultdict(collections.Counter)
    limits = httpx.Limits(max_connections=streams + 10, max_keepalive_connections=streams)
    async with httpx.AsyncClient(timeout=60, limits=limits) as client:
        for _ in range(rounds):
            stop = anyio.Event()
            async with anyio.create_task_group() as group:
                if attack:
                    group.start_soon(hostile, base, stop, tally)
                async with anyio.create_task_group() as streaming:
                    for number in range(streams):
                        kind = KINDS[number % len(KINDS)]
                        if oversize and number % 25 == 24:
                            kind = "oversize"
                        streaming.start_soon(one_stream, client, base, kind, tally)
                stop.set()
    return {kind: dict(counts) for kind, counts in tally.items()}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--streams", type=int, default=100)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--no-hostile", action="store_true", help="no hostile client")
    parser.add_argument("--no-oversize", action="store_true", help="no 17 MiB events")
    args = parser.parse_args()
    upstream, upstream_url = start_upstream("fault_upstream:app")
    proxy, base = start_proxy(upstream_url)
    try:
        process = psutil.Process(proxy.pid)
        # Warm-up, one round: lazy imports, the compiles, the pools of kept-alive connections
        # at their steady size (what grows after it is what the soak left behind).
        anyio.run(soak, base, args.streams, 1)
        time.sleep(2)
        fds_before, rss_before = process.num_fds(), process.memory_info().rss
        port = int(base.removesuffix("/v1").rsplit(":", 1)[1])
        started = time.perf_counter()
        with HealthWatch(port) as watch:
            outcomes = anyio.run(
                soak, base, args.streams, args.rounds, not args.no_hostile, not args.no_oversize
            )
        took = time.perf_counter() - started
        time.sleep(2)
        report = {
            "streams": args.streams,
            "rounds": args.rounds,
            "seconds": round(took, 1),
            "healthy_errors": sum(outcomes.pop("healthy errors", {}).values()),
            "hostile_not_4xx": sum(
                count for name, count in outcomes.get("hostile", {}).items() if "HTTP" in name
            ),
            "outcomes": outcomes,
            "fds_before_after": [fds_before, process.num_fds()],
            "rss_mb_before_after": [
                round(rss_before / 1e6, 1),
                round(process.memory_info().rss / 1e6, 1),
            ],
            "healthz_worst_ms": round(watch.worst * 1000, 1),
            "healthz_answers": watch.answers,
            "healthz_failures": watch.failures,
        }
        print(json.dumps(report, indent=1))
    finally:
        for process_ in (proxy, upstream):
            process_.terminate()
            process_.wait(10)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
