"""The proxy's pool of upstream connections: httpcore's, with a pass that does not grow with it.

httpcore 1.0's ``AsyncConnectionPool`` runs one assignment pass each time a request arrives
and each time a response ends. That pass walks every connection; for every idle one it counts
the connections again (O(N²): with 500 streams open, 5 million ``is_idle`` calls a round) and
probes its socket (``has_expired``: a poll and a ``getpeername``); and it hands one idle
connection to every request queued in the same tick, so all but one fail with
``ConnectionNotAvailable`` and run the pass again (2.6 passes per request with healing on,
1 without). Under a burst of 500 streams that was 30-40% of the proxy's CPU, and the requests'
first bytes waited behind it (issue 20). Its keep-alive cap also counted every connection, not
the idle ones, so past ``max_keepalive_connections`` streams each connection that ended was
closed and the next request opened a new one.

:class:`UpstreamPool` keeps what the pass needs from one pass to the next instead of finding it
again: the connections that requests hold (a set, rebuilt from the requests: linear in them),
and the free idle ones in the order they were freed (a dict). A connection changes state by
itself only while a request holds it, so the pass looks at a connection only when its request
lets it go: closed, it leaves the pool; idle, it is free. A free connection is given to one
request (it is held from then on), checked first (``has_expired``: its keep-alive ran out, or
the server closed it, as httpcore checks); the oldest free one is checked on every pass, so
that stale ones are closed while traffic goes on; free ones past ``max_keepalive_connections``
are closed, oldest first. HTTP/1.1 only, as the proxy builds it (no connection is shared).
"""

from __future__ import annotations

from typing import Any

from httpcore import AsyncConnectionInterface, AsyncConnectionPool, Origin

__all__ = ["NEW_CONNECTION", "UpstreamPool"]

#: The request extension that asks for a new connection, never a kept-alive one: the resend of
#: a request whose kept-alive connection closed before answering (:mod:`.upstream`).
NEW_CONNECTION = "toolwire.new_connection"


class UpstreamPool(AsyncConnectionPool):
    """``httpcore.AsyncConnectionPool`` (HTTP/1.1) whose assignment pass is linear in the
    requests and the connections that changed (see the module docstring)."""

    def __init__(self, *args: Any, **options: Any) -> None:
        super().__init__(*args, **options)
        #: The connections the requests held at the end of the last pass, by identity.
        self._held: dict[int, AsyncConnectionInterface] = {}
        #: Idle connections no request holds, oldest freed first.
        self._free: dict[int, AsyncConnectionInterface] = {}

    def _assign_requests_to_connections(self) -> list[AsyncConnectionInterface]:
        closing: list[AsyncConnectionInterface] = []
        held = {
            id(request.connection): request.connection
            for request in self._requests
            if request.connection is not None
        }
        for key, let_go in self._held.items():
            if key in held:
                continue
            # Let go since the last pass: its state is final until a request takes it again.
            if let_go.is_closed():
                self._drop(let_go)
            elif let_go.is_idle():
                self._free[key] = let_go
        self._held = held
        self._close_stale(closing)
        while len(self._free) > self._max_keepalive_connections:
            self._close_free(next(iter(self._free)), closing)
        for request in self._requests:
            if not request.is_queued():
                continue
            given = self._connection_for(
                request.request.url.origin,
                closing,
                reuse=NEW_CONNECTION not in request.request.extensions,
            )
            if given is None:
                break  # none free and no room: the rest wait for the next pass
            request.assign_to_connection(given)
            held[id(given)] = given
        return closing

    def _connection_for(
        self, origin: Origin, closing: list[AsyncConnectionInterface], *, reuse: bool = True
    ) -> AsyncConnectionInterface | None:
        """A free connection to ``origin`` that has not expired (unless not ``reuse``), or a new
        one if there is room (closing a free connection to make it), or ``None``."""
        for key, connection in list(self._free.items()) if reuse else ():
            if not connection.can_handle_request(origin):
                continue
            if connection.has_expired():
                self._close_free(key, closing)
                continue
            del self._free[key]
            return connection
        if len(self._connections) >= self._max_connections and self._free:
            self._close_free(next(iter(self._free)), closing)
        if len(self._connections) >= self._max_connections:
            return None
        connection = self.create_connection(origin)
        self._connections.append(connection)
        return connection

    def _close_stale(self, closing: list[AsyncConnectionInterface]) -> None:
        """Close the oldest free connections while they have expired (one check a pass, when
        the oldest is still good)."""
        for key, connection in list(self._free.items()):
            if not connection.has_expired():
                return
            self._close_free(key, closing)

    def _close_free(self, key: int, closing: list[AsyncConnectionInterface]) -> None:
        connection = self._free.pop(key)
        self._drop(connection)
        closing.append(connection)

    def _drop(self, connection: AsyncConnectionInterface) -> None:
        try:
            self._connections.remove(connection)
        except ValueError:
            pass  # the pool was closed (aclose empties the list)
