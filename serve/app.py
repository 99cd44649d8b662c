"""Shell 2: the ``toolwire serve`` proxy, an ASGI app in front of any OpenAI-compatible server.

It speaks the upstream's own endpoints: every ``/v1/...`` request goes to ``upstream + /...``,
and Gemini's ``/v1beta/...`` and Ollama's ``/api/chat`` to the upstream's root (``upstream``
less its ``/v1``), through :class:`~toolwire.heal.transport.HealingTransport`, which heals Chat
Completions, Anthropic Messages, Responses, Gemini / Vertex and Ollama calls that offer tools
and passes everything else through (``/v1/models``, embeddings...). ``/healthz`` answers
without touching the upstream. Agents in any language point their base URL at it; nothing in
them changes.

Why plain ASGI, not a framework: the proxy has two routes, and what it must get exactly right
is what frameworks decide for you. A response streams piece by piece as the upstream (or the
healing) produces it; each ``send`` waits for the client (the server's flow control), so a slow
client slows the reading of the upstream (back-pressure) and a stream holds at most a piece or
two in memory. A client that disconnects cancels the upstream request at once, even while the
upstream is silent: a watcher on ``receive`` cancels the forwarding (Starlette's
``StreamingResponse`` does this only for servers below ASGI 2.4).

The app is stateless per request: its connection pool is all it keeps, so N replicas behind
any load balancer serve like one (``docs/serve.md``). Requests go to the transport itself, not
through ``httpx.AsyncClient.send``: the client's cookie jar kept what an upstream's
``Set-Cookie`` said to one client and sent it upstream with every other client's requests
(and reading each response into it cost ~40 us of every request); and they are built as
``httpx.Request`` itself, not by the client, whose default headers (``Accept``,
``Accept-Encoding: gzip, deflate``, ``User-Agent: python-httpx``) went upstream as if the client
had sent them (issue 29, L2): upstream goes what the client sent, less what
:func:`~.guard.forwarded_headers` keeps here. It runs on asyncio or trio (anyio): uvicorn, or
hypercorn with ``--worker-class trio``.

What a client controls has a deadline or a limit (issue 29; ``docs/serve.md``, "Deadlines and
limits"). Here, under any ASGI server: the head's size and count (431), a declared length over
the limit (413 at once), ``Content-Length`` beside ``Transfer-Encoding`` (400), the body's
minimum rate (408), the in-flight budget taken as the bytes arrive (503), the connection cap
that the server counts (503), and a whole response's time. Each of these answers closes the
connection: its body was not read, and what follows on it cannot be trusted. The head's
deadline and each write's are the connection's (:mod:`.connections`, on uvicorn).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any

import anyio
import httpx
import msgspec
from opentelemetry.metrics import MeterProvider
from opentelemetry.trace import TracerProvider

from ..heal.refusal import ToolLimits
from ..heal.transport import BODY_CHECKED, HealingTransport
from .connections import ClientConnections
from .guard import (
    HOP_BY_HOP,
    READ_AT_ONCE_UP_TO,
    Refusal,
    body_refusal,
    declared_length,
    forwarded_headers,
    framing_refusal,
    head_refusal,
    path_refusal,
)
from .settings import ServeSettings
from .upstream import CheckedUpstream

__all__ = ["ProxyApp", "create_app"]

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]

_encode = msgspec.json.Encoder().encode
#: Back, the server in front of the client writes its own ``server`` and ``date``.
_RESPONSE_DROPPED = HOP_BY_HOP | {b"server", b"date"}
#: Bodies longer than this are checked in a worker thread: reading 200,000 small objects for
#: duplicate keys on the loop stalled /healthz 130-250 ms (tests/serve/test_adversarial.py).
_CHECKED_IN_A_THREAD_ABOVE = READ_AT_ONCE_UP_TO
_API_PREFIX = "/v1"
#: APIs served beside ``/v1``, sent to the upstream's root (its URL less a final ``/v1``):
#: Gemini's ``/v1beta/...`` and Ollama's native chat. Only ``/api/chat`` of Ollama's ``/api``:
#: the rest of it pulls, pushes, copies and deletes models.
_ROOT_PREFIXES = ("/v1beta/",)
_ROOT_PATHS = frozenset({"/api/chat"})
_HEALTH_PATHS = frozenset({"/healthz", "/health"})
_READY_PATHS = frozenset({"/readyz", "/ready"})
#: What a refusal sent before the request's body was read says: close this connection.
_CLOSE = [(b"connection", b"close")]


class ProxyApp:
    """The ASGI app of ``toolwire serve`` (see the module docstring).

    ``upstream_transport`` sends the requests (by default ``httpx.AsyncHTTPTransport`` sized by
    the settings, with the check of :mod:`toolwire.serve.upstream`; the healing wraps it unless
    ``settings.heal`` is off).
    ``tracer_provider`` / ``meter_provider`` receive the healing's spans and metrics;
    ``on_shutdown`` runs (in a worker thread) when the server stops, after the last response
    and before the process exits: where telemetry is flushed. ``client_connections`` is the
    count of the server's open connections (:mod:`.connections`; ``toolwire serve`` gives it):
    past its cap a request is a 503 and ``/readyz`` fails; without it there is no cap here.
    """

    def __init__(
        self,
        settings: ServeSettings,
        *,
        upstream_transport: httpx.AsyncBaseTransport | None = None,
        tracer_provider: TracerProvider | None = None,
        meter_provider: MeterProvider | None = None,
        on_shutdown: Callable[[], None] | None = None,
        client_connections: ClientConnections | None = None,
    ) -> None:
        self.settings = settings
        self._on_shutdown = on_shutdown
        self._connections = client_connections
        #: Bytes of request bodies held by the requests in flight (issue 19, part 6).
        self._in_flight = 0
        #: Requests sent upstream whose response has not ended: each holds (or waits for) one
        #: of the pool's ``max_connections``.
        self._forwarding = 0
        transport = upstream_transport or CheckedUpstream.for_settings(settings)
        self._healing: HealingTransport | None = None
        if settings.heal:
            transport = self._healing = HealingTransport(
                wrapped=transport,
                provider=settings.provider,
                max_retries=settings.max_retries,
                max_tokens_ceiling=settings.max_tokens_ceiling,
                max_tokens_factor=settings.max_tokens_factor,
                constrain=settings.constrain,
                unconstrained_tools=settings.unconstrained_tools,
                truncated_calls=settings.truncated_calls,
                judge_budget=settings.judge_budget,
                tracer_provider=tracer_provider,
                meter_provider=meter_provider,
                capture_content=settings.capture_content,
                tool_limits=ToolLimits(
                    max_tools=settings.max_tools,
                    max_tool_schema_bytes=settings.max_tool_schema_bytes,
                    max_tools_bytes=settings.max_tools_bytes,
                ),
            )
        self._transport = transport
        #: Each request's timeouts (httpcore reads them from the request's extensions).
        self._timeouts = httpx.Timeout(
            connect=settings.connect_timeout,
            read=settings.read_timeout,
            write=settings.read_timeout,
            pool=settings.pool_timeout,
        ).as_dict()

    async def aclose(self) -> None:
        """Close the connections to the upstream."""
        await self._transport.aclose()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Serve one ASGI connection scope: ``lifespan`` or ``http``."""
        if scope["type"] == "lifespan":
            await self._lifespan(receive, send)
        elif scope["type"] == "http":
            await self._http(scope, receive, send)
        # websocket: not served; returning closes it.

    async def _lifespan(self, receive: Receive, send: Send) -> None:
        while True:
            message = await receive()
            if message["type"] == "lifespan.startup":
                await send({"type": "lifespan.startup.complete"})
            elif message["type"] == "lifespan.shutdown":
                await self.aclose()
                if self._on_shutdown is not None:
                    await anyio.to_thread.run_sync(self._on_shutdown)
                await send({"type": "lifespan.shutdown.complete"})
                return

    async def _http(self, scope: Scope, receive: Receive, send: Send) -> None:
        settings = self.settings
        headers: list[tuple[bytes, bytes]] = scope["headers"]
        path: str = scope["path"]
        head = head_refusal(headers, settings.max_headers, settings.max_header_bytes)
        if head is not None:
            await _send_refusal(send, head, close=True)
            return
        if path in _HEALTH_PATHS:
            body = {"status": "ok", "healing": settings.heal}
            await _send_json(send, 200, body)
            return
        if path in _READY_PATHS:
            saturated = self.saturated()
            await _send_json(
                send,
                503 if saturated else 200,
                {"status": "busy" if saturated else "ready", "saturated": saturated},
            )
            return
        if not _served(path):
            await _send_error(
                send,
                404,
                "not_found",
                f"toolwire serve proxies /v1/..., /v1beta/... and /api/chat; {path} is not one",
            )
            return
        refusal = path_refusal(path, scope.get("raw_path"))
        if refusal is None and scope["method"] in ("TRACE", "CONNECT"):
            refusal = Refusal(405, "method_not_allowed", f"{scope['method']} is not proxied")
        if refusal is not None:
            await _send_refusal(send, refusal)
            return
        refusal = self._before_the_body(headers)
        if refusal is not None:
            await _send_refusal(send, refusal, close=True)
            return
        taken = _Taken()
        try:
            if settings.response_timeout is None:
                await self._checked_and_forwarded(scope, receive, send, path, taken)
                return

            async def noted(message: Message) -> None:
                if message["type"] == "http.response.start":
                    taken.started = True
                await send(message)

            with anyio.move_on_after(settings.response_timeout) as limit:
                await self._checked_and_forwarded(scope, receive, noted, path, taken)
            if limit.cancelled_caught and not taken.started:
                await _send_error(
                    send,
                    504,
                    "response_timeout",
                    f"the response took longer than response_timeout ({settings.response_timeout}"
                    " s)",
                    close=True,
                )
            # Once started, a response cut here ends without its last piece: the server closes
            # the connection, which the client reads as a truncated response.
        finally:
            self._in_flight -= taken.bytes

    def saturated(self) -> list[str]:
        """What is saturated now (``/readyz`` fails while it is not empty): ``connections``
        (at ``max_client_connections``), ``upstream_pool`` (every one of ``max_connections``
        held), ``request_budget`` (the largest body would not fit in the in-flight budget)."""
        settings = self.settings
        full = []
        if self._connections is not None and self._connections.full:
            full.append("connections")
        if self._forwarding >= settings.max_connections:
            full.append("upstream_pool")
        if self._in_flight + settings.max_request_bytes > settings.max_request_bytes_in_flight:
            full.append("request_budget")
        return full

    def _before_the_body(self, headers: list[tuple[bytes, bytes]]) -> Refusal | None:
        """A refusal answered before a byte of the body is read (the connection is closed)."""
        connections = self._connections
        if connections is not None and connections.over:
            return Refusal(
                503,
                "server_busy",
                f"toolwire serve holds max_client_connections ({connections.cap}) connections; "
                "try again shortly",
            )
        refusal = framing_refusal(headers)
        if refusal is not None:
            return refusal
        declared = declared_length(headers)
        if declared is not None and declared > self.settings.max_request_bytes:
            return _too_large(self.settings.max_request_bytes)
        return None

    async def _checked_and_forwarded(
        self, scope: Scope, receive: Receive, send: Send, path: str, taken: _Taken
    ) -> None:
        content = await self._read_body(receive, taken)
        if content is None:
            return  # the client went away while sending its request
        if isinstance(content, Refusal):
            await _send_refusal(send, content, close=True)
            return
        request = httpx.Request(
            scope["method"],
            self._upstream_url(path, scope.get("query_string", b"")),
            headers=forwarded_headers(scope["headers"]),
            content=content,
            extensions={"timeout": self._timeouts},
        )
        del content  # the request holds it; nothing else here must
        if len(request.content) > _CHECKED_IN_A_THREAD_ABOVE:
            refusal = await anyio.to_thread.run_sync(self._request_refusal, request)
        else:
            refusal = self._request_refusal(request)
        if refusal is not None:
            await _send_refusal(send, refusal)
            return
        async with anyio.create_task_group() as group:
            group.start_soon(_cancel_on_disconnect, receive, group.cancel_scope)
            await self._forward(request, send)
            group.cancel_scope.cancel()

    async def _read_body(self, receive: Receive, taken: _Taken) -> bytes | Refusal | None:
        """The whole request body, its bytes counted in the in-flight budget as they arrive.

        A refusal, answered at once (the rest is never read: the connection is closed): over
        ``max_request_bytes`` (413); when the bodies of the requests in flight would pass
        ``max_request_bytes_in_flight`` (503, the SDKs retry it); when the body comes slower
        than ``min_body_rate`` after ``body_timeout`` (408). ``None`` when the client left.
        Only bytes received count: a declared ``Content-Length`` took its whole length from
        the budget when the head arrived, and ten heads declaring 16 MiB with no body behind
        them held the whole budget for ever (issue 29, H1).
        """
        settings = self.settings
        body = bytearray()
        # The body must keep up a minimum average rate after a grace: each byte received buys
        # 1 / min_body_rate seconds more. A client trickling below the rate falls behind its
        # deadline however it spaces its bytes.
        allowed = anyio.current_time() + settings.body_timeout
        with anyio.CancelScope(deadline=allowed) as late:
            while True:
                message = await receive()
                if message["type"] == "http.disconnect":
                    return None
                piece = message.get("body", b"")
                if piece:
                    refusal = self._take(len(piece), taken)
                    if refusal is not None:
                        return refusal
                    body += piece
                    late.deadline = allowed + len(body) / settings.min_body_rate
                if not message.get("more_body", False):
                    return bytes(body)
        return Refusal(
            408,
            "request_timeout",
            f"the request body came slower than {settings.min_body_rate} bytes a second "
            f"after the first {settings.body_timeout} s (min_body_rate, body_timeout)",
        )

    def _take(self, size: int, taken: _Taken) -> Refusal | None:
        """Take ``size`` more bytes of the in-flight budget for one request, or refuse."""
        settings = self.settings
        if taken.bytes + size > settings.max_request_bytes:
            return _too_large(settings.max_request_bytes)
        if self._in_flight + size > settings.max_request_bytes_in_flight:
            return Refusal(
                503,
                "server_busy",
                "the request bodies in flight are at max_request_bytes_in_flight "
                f"({settings.max_request_bytes_in_flight} bytes); try again shortly",
            )
        self._in_flight += size
        taken.bytes += size
        return None

    def _request_refusal(self, request: httpx.Request) -> Refusal | None:
        """Why a request the healing would read must not go upstream, or ``None``.

        Its tools are the healing's to check (``HealingTransport``: their count, their size,
        whether the judge can use them), in the same pass that compiles them for the judge.
        """
        wire = self._healing.format_for(request) if self._healing is not None else None
        if wire is None:
            return None
        refusal = body_refusal(request.content)
        if refusal is None:  # read whole here: the healing need not read it again
            request.extensions[BODY_CHECKED] = True
        return refusal

    def _upstream_url(self, path: str, query: bytes) -> str:
        upstream = self.settings.upstream
        if _under_v1(path):
            url = upstream + path[len(_API_PREFIX) :]
        else:
            url = upstream.removesuffix(_API_PREFIX) + path
        return f"{url}?{query.decode('latin-1')}" if query else url

    async def _forward(self, request: httpx.Request, send: Send) -> None:
        self._forwarding += 1
        try:
            await self._forwarded(request, send)
        finally:
            self._forwarding -= 1

    async def _forwarded(self, request: httpx.Request, send: Send) -> None:
        try:
            response = await self._transport.handle_async_request(request)
        except httpx.PoolTimeout:
            # Every connection of the proxy's own pool is held: the proxy is busy, the upstream
            # has not been asked (it was a 504 upstream_timeout, issue 29, M2).
            await _send_error(
                send,
                503,
                "server_busy",
                f"every one of the proxy's max_connections ({self.settings.max_connections}) "
                f"upstream connections stayed held for pool_timeout ({self.settings.pool_timeout}"
                " s); try again shortly",
            )
            return
        except httpx.TimeoutException as error:
            await _send_error(
                send, 504, "upstream_timeout", f"the upstream did not answer in time: {error!r}"
            )
            return
        except (httpx.ConnectError, httpx.UnsupportedProtocol) as error:
            await _send_error(
                send,
                502,
                "upstream_unreachable",
                f"toolwire serve could not reach the upstream: {type(error).__name__}: {error}",
            )
            return
        except httpx.HTTPError as error:
            # It answered, then its response broke (a reset after the headers, a bad body).
            await _send_error(
                send,
                502,
                "upstream_broken",
                f"the upstream's response broke off: {type(error).__name__}: {error}",
            )
            return
        if response.is_redirect:
            # A client's SDK would follow it, with its credentials, wherever it points.
            with anyio.CancelScope(shield=True):
                await response.aclose()
            await _send_error(
                send,
                502,
                "upstream_redirect",
                f"the upstream answered {response.status_code} (a redirect); toolwire serve "
                "does not pass redirects on",
            )
            return
        raw_headers = response.headers.raw
        # Content-Length beside Transfer-Encoding describes nothing the client receives (the
        # body goes out decoded from its chunks): RFC 9112 6.3 says to ignore it, so drop it.
        chunked = any(name.lower() == b"transfer-encoding" for name, _ in raw_headers)
        try:
            await send(
                {
                    "type": "http.response.start",
                    "status": response.status_code,
                    "headers": [
                        (name, value)
                        for name, value in raw_headers
                        if name.lower() not in _RESPONSE_DROPPED
                        and not (chunked and name.lower() == b"content-length")
                    ],
                }
            )
            try:
                async for piece in response.aiter_raw():
                    if piece:
                        await send({"type": "http.response.body", "body": piece, "more_body": True})
            except httpx.HTTPError:
                # The upstream (or its healing) dropped mid-body: the client's response drops
                # too. Returning without the last body message makes the server close the
                # connection, which a client reads as a truncated response, as it was.
                return
            await send({"type": "http.response.body", "body": b"", "more_body": False})
        finally:
            with anyio.CancelScope(shield=True):
                await response.aclose()


def _too_large(limit: int) -> Refusal:
    return Refusal(
        413, "request_too_large", f"the request body is over {limit} bytes (max_request_bytes)"
    )


def _under_v1(path: str) -> bool:
    return path == _API_PREFIX or path.startswith(_API_PREFIX + "/")


def _served(path: str) -> bool:
    """``/v1/...`` (to ``upstream + /...``), or an API beside it (to the upstream's root)."""
    return _under_v1(path) or path in _ROOT_PATHS or path.startswith(_ROOT_PREFIXES)


class _Taken:
    """The bytes of the in-flight budget one request holds (given back when it ends), and
    whether its response started (past it, a response cut short has no status of its own)."""

    __slots__ = ("bytes", "started")

    def __init__(self) -> None:
        self.bytes = 0
        self.started = False


async def _cancel_on_disconnect(receive: Receive, scope: anyio.CancelScope) -> None:
    """Cancel ``scope`` (the forwarding) as soon as the client disconnects."""
    while True:
        message = await receive()
        if message["type"] == "http.disconnect":
            scope.cancel()
            return


async def _send_json(send: Send, status: int, body: object, *, close: bool = False) -> None:
    content = _encode(body)
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [
                (b"content-type", b"application/json"),
                (b"content-length", str(len(content)).encode()),
                *(_CLOSE if close else ()),
            ],
        }
    )
    await send({"type": "http.response.body", "body": content, "more_body": False})


async def _send_refusal(send: Send, refusal: Refusal, *, close: bool = False) -> None:
    await _send_error(send, refusal.status, refusal.code, refusal.message, close=close)


async def _send_error(
    send: Send, status: int, code: str, message: str, *, close: bool = False
) -> None:
    """An error the proxy itself answers, in the shape OpenAI-compatible clients read
    (``close``: and the connection closes after it, its request not read whole)."""
    await _send_json(
        send,
        status,
        {"error": {"message": message, "type": f"toolwire_{code}", "param": None, "code": code}},
        close=close,
    )


def create_app(
    settings: ServeSettings,
    *,
    upstream_transport: httpx.AsyncBaseTransport | None = None,
    tracer_provider: TracerProvider | None = None,
    meter_provider: MeterProvider | None = None,
    on_shutdown: Callable[[], None] | None = None,
    client_connections: ClientConnections | None = None,
) -> ProxyApp:
    """The proxy for ``settings`` (see :class:`ProxyApp`)."""
    return ProxyApp(
        settings,
        upstream_transport=upstream_transport,
        tracer_provider=tracer_provider,
        meter_provider=meter_provider,
        on_shutdown=on_shutdown,
        client_connections=client_connections,
    )
