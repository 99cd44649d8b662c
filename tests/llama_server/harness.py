"""The proxy in front of the real llama-server, in this process, with every upstream exchange kept.

:func:`serving_proxy` runs ``toolwire serve``'s app (:func:`toolwire.serve.create_app`, the app the
command runs) under uvicorn, in a thread of its own, on a free loopback port: the tests talk to
it over real sockets from either anyio backend, and it talks to the real server. Its upstream
transport is a :class:`RecordingUpstream` around the proxy's own (``CheckedUpstream``), which
keeps each request the proxy sent and the bytes the server answered, as the proxy read them:
what the tests compare the client's answer with (a valid call byte for byte, a retry after a
cut).

The upstream transport is the one ``toolwire serve`` builds for the same settings
(``CheckedUpstream.for_settings``), keep-alive included. llama-server closes its connection
after every streamed response although its headers say ``Keep-Alive: timeout=5, max=100``
(``test_server_facts.py`` holds that, and says why); the proxy lives with it
(``docs/serve.md``): named as ``llama-server``, the upstream's connection is not kept after a
streamed answer; named as anything else, a request that meets the close is sent again on a new
connection when it may run twice. These tests run on that, so a regression fails them (before,
2 of 10 back-to-back streamed requests got a 502 ``upstream_broken``). The tests' own clients
(``client_of``) still open a connection per request: they are not the proxy, and a client that
talks to llama-server directly meets its close as any plain client does.
"""

from __future__ import annotations

import json
import socket
import threading
import time
from collections.abc import AsyncIterator, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import httpx
import uvicorn

from toolwire.serve import ServeSettings, create_app
from toolwire.serve.upstream import CheckedUpstream


@dataclass
class Exchange:
    """One request the proxy sent upstream, and what came back (``body``: once fully read)."""

    path: str
    request: dict[str, Any]
    status: int = 0
    chunks: list[bytes] = field(default_factory=list)
    #: Set once the proxy read the body to its end or closed it.
    ended: threading.Event = field(default_factory=threading.Event)

    @property
    def body(self) -> bytes:
        return b"".join(self.chunks)


class _Tee(httpx.AsyncByteStream):
    """The upstream's body as the proxy reads it, each piece also kept in ``chunks``."""

    def __init__(self, inner: httpx.AsyncByteStream, exchange: Exchange) -> None:
        self._inner = inner
        self._exchange = exchange

    async def __aiter__(self) -> AsyncIterator[bytes]:
        async for chunk in self._inner:
            self._exchange.chunks.append(chunk)
            yield chunk
        self._exchange.ended.set()

    async def aclose(self) -> None:
        try:
            await self._inner.aclose()
        finally:
            self._exchange.ended.set()


class RecordingUpstream(httpx.AsyncBaseTransport):
    """The proxy's upstream transport, keeping every exchange (for one test: :meth:`reset`)."""

    def __init__(self, settings: ServeSettings) -> None:
        # The proxy's own upstream for these settings (the module docstring says why).
        self._inner = CheckedUpstream.for_settings(settings)
        self.exchanges: list[Exchange] = []

    def reset(self) -> None:
        self.exchanges = []

    def settled(self, timeout: float = 10.0) -> list[Exchange]:
        """The exchanges, once the proxy is done with each (its client may finish first)."""
        for exchange in self.exchanges:
            assert exchange.ended.wait(timeout), f"the proxy never finished {exchange.path}"
        return self.exchanges

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        content = await request.aread()
        exchange = Exchange(request.url.path, json.loads(content) if content else {})
        self.exchanges.append(exchange)
        try:
            response = await self._inner.handle_async_request(request)
        except BaseException:
            exchange.ended.set()
            raise
        exchange.status = response.status_code
        assert isinstance(response.stream, httpx.AsyncByteStream)
        return httpx.Response(
            response.status_code,
            headers=response.headers,
            stream=_Tee(response.stream, exchange),
            extensions=response.extensions,
        )

    async def aclose(self) -> None:
        await self._inner.aclose()


@dataclass
class RunningProxy:
    """A proxy serving on ``base_url`` (``.../v1``) in front of one server."""

    base_url: str
    upstream: RecordingUpstream


#: A connection per request, for the tests' own clients (the module docstring says why).
_NO_KEEP_ALIVE = httpx.Limits(max_keepalive_connections=0)


def client_of(base_url: str) -> httpx.Client:
    """A client of ``base_url`` that opens a connection per request."""
    return httpx.Client(base_url=base_url, timeout=60, limits=_NO_KEEP_ALIVE)


def async_client_of(base_url: str) -> httpx.AsyncClient:
    """The same, for a test on either anyio backend."""
    return httpx.AsyncClient(base_url=base_url, timeout=60, limits=_NO_KEEP_ALIVE)


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


@contextmanager
def serving_proxy(upstream_url: str, provider: str, **settings: Any) -> Iterator[RunningProxy]:
    """``toolwire serve --upstream upstream_url --provider provider`` in a thread, till the end."""
    serve_settings = ServeSettings(upstream=upstream_url, provider=provider, **settings)
    recorder = RecordingUpstream(serve_settings)
    app = create_app(serve_settings, upstream_transport=recorder)
    port = _free_port()
    config = uvicorn.Config(
        app, host="127.0.0.1", port=port, lifespan="on", access_log=False, log_level="warning"
    )
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, name="toolwire-serve", daemon=True)
    thread.start()
    deadline = time.monotonic() + 20
    while not server.started:
        assert thread.is_alive(), "the proxy's thread ended while starting"
        assert time.monotonic() < deadline, "the proxy did not start within 20 s"
        time.sleep(0.02)
    try:
        yield RunningProxy(f"http://127.0.0.1:{port}/v1", recorder)
    finally:
        server.should_exit = True
        thread.join(30)
        assert not thread.is_alive(), "the proxy did not stop within 30 s"
