"""The proxy's connections to the upstream: httpx's pool, with one check httpx does not make.

An upstream body longer than its ``Content-Length`` leaves its extra bytes in the pooled
connection's parse buffer (h11's); the next request sent on that connection, another client's,
is "answered" from those bytes at once: a response the upstream forged for a client it never
saw (response smuggling, issue 19, part 7). httpcore checks an idle connection's socket before
reusing it (bytes waiting there retire it) but not that buffer, and neither exposes it.

What is visible from outside is the order of reads and writes on the connection. httpcore
writes the whole request, then reads the response; a response read with no byte received
since the request was written can only have come from bytes left over by the previous one.
:class:`CheckedUpstream` sees that through the ``network_stream`` extension (the stream its
network backend handed httpcore): such a response is closed with its connection, and the
request fails as a broken response (``httpx.RemoteProtocolError``; the proxy answers 502
``upstream_broken``). The request did reach the upstream, so it is not sent again.
"""

# The timeout parameters are httpcore's network interface, implemented here as it is declared.
# ruff: noqa: ASYNC109

from __future__ import annotations

import ssl
import typing

import httpcore
import httpx

from .pool import UpstreamPool

__all__ = ["CheckedUpstream"]


class _CheckedStream(httpcore.AsyncNetworkStream):
    """A network stream that knows whether a byte came in since the last write."""

    def __init__(self, stream: httpcore.AsyncNetworkStream) -> None:
        self._stream = stream
        self.read_since_write = True

    async def read(self, max_bytes: int, timeout: float | None = None) -> bytes:
        data = await self._stream.read(max_bytes, timeout)
        if data:
            self.read_since_write = True
        return data

    async def write(self, buffer: bytes, timeout: float | None = None) -> None:
        self.read_since_write = False
        await self._stream.write(buffer, timeout)

    async def aclose(self) -> None:
        await self._stream.aclose()

    async def start_tls(
        self,
        ssl_context: ssl.SSLContext,
        server_hostname: str | None = None,
        timeout: float | None = None,
    ) -> httpcore.AsyncNetworkStream:
        return _CheckedStream(await self._stream.start_tls(ssl_context, server_hostname, timeout))

    def get_extra_info(self, info: str) -> typing.Any:
        return self._stream.get_extra_info(info)


class _CheckedBackend(httpcore.AsyncNetworkBackend):
    """httpcore's default backend, its streams wrapped in :class:`_CheckedStream`."""

    def __init__(self) -> None:
        self._backend = httpcore.AnyIOBackend()

    async def connect_tcp(
        self,
        host: str,
        port: int,
        timeout: float | None = None,
        local_address: str | None = None,
        socket_options: typing.Iterable[httpcore.SOCKET_OPTION] | None = None,
    ) -> httpcore.AsyncNetworkStream:
        stream = await self._backend.connect_tcp(host, port, timeout, local_address, socket_options)
        return _CheckedStream(stream)

    async def connect_unix_socket(
        self,
        path: str,
        timeout: float | None = None,
        socket_options: typing.Iterable[httpcore.SOCKET_OPTION] | None = None,
    ) -> httpcore.AsyncNetworkStream:
        stream = await self._backend.connect_unix_socket(path, timeout, socket_options)
        return _CheckedStream(stream)

    async def sleep(self, seconds: float) -> None:
        await self._backend.sleep(seconds)


class CheckedUpstream(httpx.AsyncBaseTransport):
    """``httpx.AsyncHTTPTransport(limits=limits)`` that never passes on a smuggled response."""

    def __init__(self, limits: httpx.Limits) -> None:
        transport = httpx.AsyncHTTPTransport(limits=limits)
        # httpx builds its pool with no way to name a network backend: the same pool, with one
        # (and an assignment pass that does not grow with the pool: serve/pool.py).
        transport._pool = UpstreamPool(
            ssl_context=httpx.create_ssl_context(),
            max_connections=limits.max_connections,
            max_keepalive_connections=limits.max_keepalive_connections,
            keepalive_expiry=limits.keepalive_expiry,
            network_backend=_CheckedBackend(),
        )
        self._transport = transport

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        """Send ``request``; refuse a response that came from a previous one's extra bytes."""
        response = await self._transport.handle_async_request(request)
        stream = response.extensions.get("network_stream")
        if isinstance(stream, _CheckedStream) and not stream.read_since_write:
            await stream.aclose()  # the connection is never used again
            await response.aclose()
            raise httpx.RemoteProtocolError(
                "the upstream's previous response on this connection ran past its "
                "Content-Length; its extra bytes are not this request's answer",
                request=request,
            )
        return response

    async def aclose(self) -> None:
        """Close every connection."""
        await self._transport.aclose()
