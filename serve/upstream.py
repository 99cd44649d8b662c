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

The same order of reads and writes shows a kept-alive connection that the upstream closed
before answering: it had carried an earlier exchange, the request was written, and the
connection ended (closed, or reset) before one byte of an answer came. That is the race of
every pool with keep-alive (the upstream closes an idle connection just as a request is sent
on it), and llama-server makes it likely: it closes its connection after every streamed answer
although its headers say ``Keep-Alive`` (``tests/llama_server/test_server_facts.py``; through
the proxy, 2 of 10 back-to-back streamed requests failed with 502 ``upstream_broken``). Such a
request is sent once more, on a new connection, when it may be sent twice
(:func:`may_send_twice`): what browsers and Go's ``net/http`` do for a reused connection. A
request on a new connection, or one that got any byte back, is never sent again here.

And where the kind of upstream is known to close after every streamed answer
(``closes_after_stream``: llama-server), the connection of a streamed (chunked) answer is not
kept at all: it reports itself closed to the pool, which then closes it instead of reusing it
(httpcore reads an idle connection whose socket is readable as one the server closed).
"""

# The timeout parameters are httpcore's network interface, implemented here as it is declared.
# ruff: noqa: ASYNC109

from __future__ import annotations

import ssl
import typing

import httpcore
import httpx

from ..adapters.registry import closes_after_stream
from ..heal.transport import RESENDABLE
from .pool import NEW_CONNECTION, UpstreamPool
from .settings import ServeSettings

__all__ = ["CheckedUpstream", "may_send_twice"]

#: Methods a request of which may be sent twice (RFC 9110, section 9.2.2: idempotent).
_IDEMPOTENT = frozenset({"GET", "HEAD", "OPTIONS", "TRACE", "PUT", "DELETE"})
#: Headers by which a client says that its request may be sent twice (the Idempotency-Key
#: draft, draft-ietf-httpapi-idempotency-key-header; Go's ``net/http`` reads both names).
_IDEMPOTENCY_KEYS = ("idempotency-key", "x-idempotency-key")


def may_send_twice(request: httpx.Request) -> bool:
    """Whether ``request`` may reach the upstream twice: an idempotent method, a client's
    ``Idempotency-Key``, or a request the healing marked :data:`~toolwire.heal.transport
    .RESENDABLE` (a generation that keeps no state on the server); its body in memory."""
    if not isinstance(request.stream, httpx.ByteStream):
        return False  # a body read as it is sent cannot be sent again
    return (
        request.method in _IDEMPOTENT
        or any(name in request.headers for name in _IDEMPOTENCY_KEYS)
        or request.extensions.get(RESENDABLE) is True
    )


class _Unanswered(Exception):
    """Marks a failure of a kept-alive connection before one byte of its answer came."""


class _ClosedUnanswered(httpcore.RemoteProtocolError, _Unanswered):
    """The upstream closed a kept-alive connection after the request, before answering."""


class _ResetUnanswered(httpcore.ReadError, _Unanswered):
    """The upstream reset a kept-alive connection after the request, before answering."""


class _CheckedStream(httpcore.AsyncNetworkStream):
    """A network stream that knows whether a byte came in since the last write, and whether it
    carried an exchange before the current one."""

    def __init__(self, stream: httpcore.AsyncNetworkStream) -> None:
        self._stream = stream
        self.read_since_write = True
        #: Requests written on this connection (a write after a read begins the next one).
        self._requests = 0
        #: The upstream closes this connection after the current answer: it must not be
        #: reused (reported as closed to the pool, see the module docstring).
        self.closing = False

    def _unanswered_again(self) -> bool:
        """A kept-alive connection that got nothing back since the request was written."""
        return self._requests > 1 and not self.read_since_write

    async def read(self, max_bytes: int, timeout: float | None = None) -> bytes:
        try:
            data = await self._stream.read(max_bytes, timeout)
        except httpcore.ReadError as error:
            if self._unanswered_again():
                raise _ResetUnanswered(str(error)) from error
            raise
        if data:
            self.read_since_write = True
        elif self._unanswered_again():
            raise _ClosedUnanswered(
                "Server disconnected without sending a response (a kept-alive connection "
                "closed before answering)."
            )
        return data

    async def write(self, buffer: bytes, timeout: float | None = None) -> None:
        if self.read_since_write:
            self._requests += 1
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
        if info == "is_readable" and self.closing:
            return True  # what httpcore reads as "the server closed it"
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
    """``httpx.AsyncHTTPTransport(limits=limits)`` that never passes on a smuggled response,
    and sends a request once more when its kept-alive connection closed before answering.

    ``closes_after_stream``: the upstream closes its connection after every streamed answer
    (:func:`toolwire.adapters.registry.closes_after_stream` of its kind), so none is kept.
    """

    def __init__(self, limits: httpx.Limits, *, closes_after_stream: bool = False) -> None:
        self._closes_after_stream = closes_after_stream
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

    @classmethod
    def for_settings(cls, settings: ServeSettings) -> CheckedUpstream:
        """The proxy's upstream for ``settings``: ``max_connections`` (as many kept alive, up
        to 100), and whether the kind of upstream ``provider`` names closes after streams."""
        limits = httpx.Limits(
            max_connections=settings.max_connections,
            max_keepalive_connections=min(settings.max_connections, 100),
        )
        return cls(limits, closes_after_stream=closes_after_stream(settings.provider))

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        """Send ``request`` (once more, on a new connection, when its kept-alive connection
        closed before answering and it may be sent twice); refuse a response that came from a
        previous one's extra bytes."""
        try:
            response = await self._transport.handle_async_request(request)
        except httpx.TransportError as error:
            if not (isinstance(error.__cause__, _Unanswered) and may_send_twice(request)):
                raise
            # The kept-alive connection closed under the request, which the upstream then most
            # likely never read: sent again, once, on a new connection (a new connection that
            # fails so is not "kept-alive": never sent again).
            again = httpx.Request(
                request.method,
                request.url,
                headers=request.headers.raw,
                stream=request.stream,
                extensions={**request.extensions, NEW_CONNECTION: True},
            )
            response = await self._transport.handle_async_request(again)
        stream = response.extensions.get("network_stream")
        if isinstance(stream, _CheckedStream) and not stream.read_since_write:
            await stream.aclose()  # the connection is never used again
            await response.aclose()
            raise httpx.RemoteProtocolError(
                "the upstream's previous response on this connection ran past its "
                "Content-Length; its extra bytes are not this request's answer",
                request=request,
            )
        if (
            self._closes_after_stream
            and isinstance(stream, _CheckedStream)
            and "chunked" in response.headers.get("transfer-encoding", "").lower()
        ):
            stream.closing = True  # the upstream closes it after this answer: never reused
        return response

    async def aclose(self) -> None:
        """Close every connection."""
        await self._transport.aclose()
