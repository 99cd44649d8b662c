"""The proxy app is plain ASGI on anyio: hypercorn serves it on asyncio and on trio.

``toolwire serve`` runs it with uvicorn (asyncio); these tests run the same app, in process,
under hypercorn's asyncio and trio workers, and heal a real cut call through it.
"""

from __future__ import annotations

import json
import socket
from collections.abc import Iterator
from typing import Any

import anyio
import httpx
import pytest
from _toolwire_testdata import load_stream
from e2e.server import tool_calls_reply
from heal.client import GOOD_WRITE, request
from heal.upstream import HealUpstream, Reply, running_upstream

from toolwire.serve import ServeSettings, create_app

pytestmark = pytest.mark.anyio

CUT = "llama-cpp-python/write_max_tokens_24_cut_mid_string.real.sse"


@pytest.fixture
def upstream() -> Iterator[HealUpstream]:
    with running_upstream() as scripted:
        yield scripted


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


async def _serve(app: Any, port: int, stop: anyio.Event, backend: str) -> None:
    from hypercorn.config import Config

    config = Config()
    config.bind = [f"127.0.0.1:{port}"]
    config.accesslog = None
    config.errorlog = None
    if backend == "trio":
        from hypercorn.trio import serve as trio_serve

        await trio_serve(app, config, shutdown_trigger=stop.wait)
    else:
        from hypercorn.asyncio import serve as asyncio_serve

        await asyncio_serve(app, config, shutdown_trigger=stop.wait)


async def test_hypercorn_serves_the_proxy_and_a_cut_call_is_healed(
    anyio_backend: str, upstream: HealUpstream
) -> None:
    upstream.script(
        Reply(load_stream(CUT)), Reply(tool_calls_reply(("call_ok", "write", GOOD_WRITE)))
    )
    app = create_app(ServeSettings(upstream=upstream.base_url, provider="llama-cpp"))
    port = _free_port()
    stop = anyio.Event()
    received = b""
    async with anyio.create_task_group() as group:
        group.start_soon(_serve, app, port, stop, anyio_backend)
        async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{port}/v1", timeout=10) as http:
            for _ in range(200):  # until hypercorn listens
                try:
                    await http.get(f"http://127.0.0.1:{port}/healthz")
                    break
                except httpx.ConnectError:
                    await anyio.sleep(0.02)
            async with http.stream("POST", "/chat/completions", json=request()) as response:
                assert response.status_code == 200
                received = await response.aread()
        stop.set()
    await app.aclose()
    arguments = "".join(
        fragment["function"]["arguments"]
        for line in received.split(b"\n\n")
        if line.startswith(b"data: {")
        for choice in json.loads(line[6:])["choices"]
        for fragment in choice["delta"].get("tool_calls") or ()
    )
    assert arguments == GOOD_WRITE
    assert len(upstream.requests) == 2
