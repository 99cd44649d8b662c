"""What healing costs per request, in process: the proxy's ASGI app driven directly, side by side.

Run: ``.venv/bin/python bench/bench_heal_in_process.py [--requests 300] [--concurrent 200]``

The bench process drives ``toolwire serve``'s ASGI app (``create_app``) itself, once with
healing and once bare (``--no-heal``), with no client sockets: what it measures is the app's
own CPU (``time.process_time``), without uvicorn, the client or the kernel's share of theirs.
The upstream is real: ``load_upstream.py`` on uvicorn in another process (``--chunks`` text
chunks, no pause, then one valid call in fragments, the finish, the usage), reached through
the proxy's own upstream transport and pool. Each round sends ``--requests`` requests one after
another, then ``--concurrent`` at once, to each app, alternated; the best round of each counts.
It prints healing's CPU per request beyond the bare proxy's, and the ratio.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import time
from collections.abc import Awaitable, Callable
from typing import Any

import anyio
from bench_serve_load import REQUEST, start_upstream

from toolwire.serve.app import ProxyApp, create_app
from toolwire.serve.settings import ServeSettings

BODY = json.dumps(REQUEST).encode()
SCOPE = {
    "type": "http",
    "method": "POST",
    "path": "/v1/chat/completions",
    "raw_path": b"/v1/chat/completions",
    "query_string": b"",
    "headers": [
        (b"content-type", b"application/json"),
        (b"content-length", str(len(BODY)).encode()),
    ],
}


async def one_request(app: ProxyApp) -> int:
    """One request through ``app``; the status it answered (the body is read and dropped)."""
    messages = [{"type": "http.request", "body": BODY, "more_body": False}]
    status = 0

    async def receive() -> dict[str, Any]:
        if messages:
            return messages.pop()
        await anyio.sleep_forever()
        raise AssertionError("unreachable")

    async def send(message: dict[str, Any]) -> None:
        nonlocal status
        if message["type"] == "http.response.start":
            status = message["status"]

    await app(dict(SCOPE), receive, send)
    return status


async def sequential(app: ProxyApp, count: int) -> None:
    for _ in range(count):
        assert await one_request(app) == 200


async def concurrent(app: ProxyApp, count: int) -> None:
    async with anyio.create_task_group() as group:
        for _ in range(count):
            group.start_soon(one_request, app)


async def best_of(
    rounds: int, count: int, run: Callable[[ProxyApp, int], Awaitable[None]], apps: dict[str, Any]
) -> dict[str, float]:
    """Microseconds of CPU per request, the best round of each app, rounds alternated."""
    spent: dict[str, list[float]] = {name: [] for name in apps}
    for _ in range(rounds):
        for name, app in apps.items():
            gc.collect()
            start = time.process_time()
            await run(app, count)
            spent[name].append((time.process_time() - start) / count * 1e6)
    return {name: min(times) for name, times in spent.items()}


async def main(upstream: str, args: argparse.Namespace) -> dict[str, Any]:
    apps = {
        "bare": create_app(ServeSettings(upstream=upstream, heal=False)),
        "heal": create_app(ServeSettings(upstream=upstream, heal=True)),
    }
    for app in apps.values():
        await sequential(app, 20)  # imports, the tools' compiling, the pool's connections
    results: dict[str, Any] = {}
    for name, run, count in (
        ("one_at_a_time", sequential, args.requests),
        ("at_once", concurrent, args.concurrent),
    ):
        best = await best_of(args.rounds, count, run, apps)
        results[name] = {
            "bare_us": round(best["bare"], 1),
            "heal_us": round(best["heal"], 1),
            "added_us": round(best["heal"] - best["bare"], 1),
            "ratio": round(best["heal"] / best["bare"], 3),
        }
    for app in apps.values():
        await app.aclose()
    return results


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=300)
    parser.add_argument("--concurrent", type=int, default=200)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--chunks", type=int, default=15)
    arguments = parser.parse_args()
    os.environ["LOAD_PAUSE"] = "0"
    os.environ["LOAD_CHUNKS"] = str(arguments.chunks)
    process, url = start_upstream()
    try:
        print(json.dumps(anyio.run(main, url, arguments), indent=2))
    finally:
        process.terminate()
        process.wait(20)
