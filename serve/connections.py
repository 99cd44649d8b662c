"""The deadlines only a connection can see, on uvicorn's own h11 protocol (issue 29).

uvicorn enforces one deadline of a client's: ``timeout_keep_alive``, the idle time between two
requests of a kept-alive connection (its ``H11Protocol`` arms a timer when a response ends). It
arms nothing when a connection opens, nor while a request head arrives, nor while a client
leaves what is written to it unread: a connection that never sends a byte, a head sent a byte
a minute, or a client that stops reading a stream each held a descriptor (and the last one an
upstream connection) for ever. 1,100 idle connections at 1,024 descriptors stopped every other
client (issue 29, H3). Hypercorn's ``read_timeout`` bounds each read but not a head that keeps
trickling, and neither server counts a connection against a cap that leaves ``/healthz``
answering; so the deadlines are added to uvicorn's protocol, where its own timers are:

- **the head**: from the connection's opening, and from the first byte of each later request,
  the whole head must arrive within ``head_timeout``. Then a 408 and the connection is closed.
  A byte that arrives does not extend it (the slow-head attack sends one byte at a time).
- **each write**: once the transport's buffer is over its high-water mark (asyncio pauses the
  protocol: the kernel's buffers are full and the client reads nothing), the connection is
  aborted if it is not drained within ``write_timeout``. ``close()`` would wait for the client
  to read the buffer, which it never does; ``abort()`` frees it, and the app sees the client
  leave (its forwarding, and the upstream connection, end at once).
- **a lingering close**: an answer sent before the request's body was read (413 for a declared
  length over the limit, 408, 431, 503 past the cap: the app marks them ``connection: close``)
  half-closes the connection and reads and drops what the client still sends for up to
  :data:`_LINGER_SECONDS`, then closes it, as nginx's ``lingering_close`` does. Closed at once,
  the kernel answers the bytes still coming with a reset, and a client that writes its whole
  body before reading (httpx, the SDKs) got a connection error instead of the 413.
- **the count**: every open connection is counted in :class:`ClientConnections`, which the app
  reads to answer 503 ``server_busy`` past ``max_client_connections`` (``/healthz`` still
  answers; ``/readyz`` fails). A connection opened past the cap has one second, not
  ``head_timeout``, to send its request, so a flood of idle connections frees its descriptors
  fast.

The body's deadline (a minimum rate) and the whole response's are the app's (:mod:`.app`),
so that they hold under any ASGI server; these three need the connection.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # the protocol is uvicorn's, on asyncio; nothing here starts a loop
    import asyncio

__all__ = ["ClientConnections", "guarded_h11_protocol"]

#: The head deadline of a connection opened past the cap: its request is answered 503 at once.
_OVER_CAP_HEAD_TIMEOUT = 1.0
#: How long a connection closed with its request's body unread keeps dropping what arrives
#: (nginx's ``lingering_timeout``).
_LINGER_SECONDS = 5.0


def _timeout_response() -> bytes:
    body = b"the request head did not arrive in time"
    return (
        b"HTTP/1.1 408 Request Timeout\r\ncontent-type: text/plain; charset=utf-8\r\n"
        b"content-length: %d\r\nconnection: close\r\n\r\n%s" % (len(body), body)
    )


_HEAD_TIMED_OUT = _timeout_response()


class ClientConnections:
    """The connections a server holds open now, against the cap the app answers 503 past."""

    __slots__ = ("cap", "open")

    def __init__(self, cap: int) -> None:
        self.cap = cap
        self.open = 0

    @property
    def full(self) -> bool:
        """Whether one more connection would pass the cap."""
        return self.open >= self.cap

    @property
    def over(self) -> bool:
        """Whether the connections open now pass the cap (the newest one is past it)."""
        return self.open > self.cap


def guarded_h11_protocol(
    connections: ClientConnections,
    *,
    head_timeout: float,
    write_timeout: float,
    keep_alive_timeout: float,
) -> type[asyncio.Protocol]:
    """uvicorn's ``H11Protocol`` with the deadlines of the module docstring, for ``http=``.

    ``keep_alive_timeout`` is uvicorn's own ``timeout_keep_alive`` (set here because its
    ``Config`` takes whole seconds).
    """
    import h11
    from uvicorn.protocols.http.h11_impl import H11Protocol

    class GuardedH11Protocol(H11Protocol):
        def __init__(self, *args: Any, **kwargs: Any) -> None:
            super().__init__(*args, **kwargs)
            self.timeout_keep_alive = keep_alive_timeout  # type: ignore[assignment]
            self._head_timer: asyncio.TimerHandle | None = None
            self._write_timer: asyncio.TimerHandle | None = None
            self._linger_timer: asyncio.TimerHandle | None = None
            self._lingering = False

        def connection_made(self, transport: asyncio.BaseTransport) -> None:
            super().connection_made(transport)  # type: ignore[arg-type]
            # What uvicorn closes from now on lingers when the request's body is unread.
            self.transport = _LingeringTransport(self.transport, self)  # type: ignore[assignment]
            connections.open += 1
            over = connections.over
            self._arm_head(min(head_timeout, _OVER_CAP_HEAD_TIMEOUT) if over else head_timeout)

        def connection_lost(self, exc: Exception | None) -> None:
            connections.open -= 1
            self._head_timer = _cancelled(self._head_timer)
            self._write_timer = _cancelled(self._write_timer)
            self._linger_timer = _cancelled(self._linger_timer)
            super().connection_lost(exc)

        def data_received(self, data: bytes) -> None:
            if self._lingering:
                return  # the rest of a refused request: dropped
            if self._head_timer is None and self.conn.their_state is h11.IDLE:
                self._arm_head(head_timeout)  # the first byte of a new request's head
            super().data_received(data)
            if self.conn.their_state is not h11.IDLE:
                self._head_timer = _cancelled(self._head_timer)  # the head is in

        def pause_writing(self) -> None:
            super().pause_writing()
            if self._write_timer is None:
                self._write_timer = self.loop.call_later(write_timeout, self._write_stalled)

        def resume_writing(self) -> None:
            super().resume_writing()
            self._write_timer = _cancelled(self._write_timer)

        def _arm_head(self, seconds: float) -> None:
            self._head_timer = _cancelled(self._head_timer)
            self._head_timer = self.loop.call_later(seconds, self._head_late)

        def _head_late(self) -> None:
            self._head_timer = None
            transport = self.transport
            if transport.is_closing() or self.conn.their_state is not h11.IDLE:
                return
            if self.conn.our_state is h11.IDLE:  # no response of ours has begun
                transport.write(_HEAD_TIMED_OUT)
            transport.close()

        def _write_stalled(self) -> None:
            self._write_timer = None
            self.transport.abort()

        def close_or_linger(self, transport: asyncio.Transport) -> None:
            """Close ``transport`` (the real one), lingering while the client still sends."""
            if self._lingering:
                return
            if self.conn.their_state is not h11.SEND_BODY or not transport.can_write_eof():
                transport.close()
                return
            self._lingering = True
            self._head_timer = _cancelled(self._head_timer)
            transport.write_eof()  # our FIN, once the answer is written
            transport.resume_reading()
            self._linger_timer = self.loop.call_later(_LINGER_SECONDS, transport.abort)

        @property
        def lingering(self) -> bool:
            return self._lingering

    return GuardedH11Protocol


class _LingeringTransport:
    """A connection's transport whose ``close`` lingers (see the module docstring)."""

    def __init__(self, transport: asyncio.Transport, protocol: Any) -> None:
        self._transport = transport
        self._protocol = protocol

    def close(self) -> None:
        self._protocol.close_or_linger(self._transport)

    def is_closing(self) -> bool:
        return bool(self._protocol.lingering) or self._transport.is_closing()

    def __getattr__(self, name: str) -> Any:
        return getattr(self._transport, name)


def _cancelled(timer: asyncio.TimerHandle | None) -> asyncio.TimerHandle | None:
    """Cancel ``timer`` (if any); ``None``, what the attribute that held it holds now."""
    if timer is not None:
        timer.cancel()
    return None
