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
(and reading each response into it cost ~40 us of every request). It runs on asyncio or trio
(anyio): uvicorn, or hypercorn with ``--worker-class trio``.
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
from ..heal.transport import HealingTransport
from .guard import (
    HOP_BY_HOP,
    READ_AT_ONCE_UP_TO,
    Refusal,
    body_refusal,
    forwarded_headers,
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


class ProxyApp:
    """The ASGI app of ``toolwire serve`` (see the module docstring).

    ``upstream_transport`` sends the requests (by default ``httpx.AsyncHTTPTransport`` sized by
    the settings, with the check of :mod:`toolwire.serve.upstream`; the healing wraps it unless
    ``settings.heal`` is off).
    ``tracer_provider`` / ``meter_provider`` receive the healing's spans and metrics;
    ``on_shutdown`` runs (in a worker thread) when the server stops, after the last response
    and before the process exits: where telemetry is flushed.
    """

    def __init__(
        self,
        settings: ServeSettings,
        *,
        upstream_transport: httpx.AsyncBaseTransport | None = None,
        tracer_provider: TracerProvider | None = None,
        meter_provider: MeterProvider | None = None,
        on_shutdown: Callable[[], None] | None = None,
    ) -> None:
        self.settings = settings
        self._on_shutdown = on_shutdown
        #: Bytes of request bodies held by the requests in flight (issue 19, part 6).
        self._in_flight = 0
        limits = httpx.Limits(
            max_connections=settings.max_connections,
            max_keepalive_connections=min(settings.max_connections, 100),
        )
        transport = upstream_transport or CheckedUpstream(limits)
        self._healing: HealingTransport | None = None
        if settings.heal:
            transport = self._healing = HealingTransport(
                wrapped=transport,
                provider=settings.provider,
                max_retries=settings.max_retries,
                max_tokens_ceiling=settings.max_tokens_ceiling,
                truncated_calls=settings.truncated_calls,
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
        #: Builds each request (its default headers, its timeouts) and closes the transport;
        #: never sends one (the module docstring says why).
        self._client = httpx.AsyncClient(
            transport=transport,
            timeout=httpx.Timeout(
                connect=settings.connect_timeout,
                read=settings.read_timeout,
                write=settings.read_timeout,
                pool=settings.connect_timeout,
            ),
            limits=limits,
            follow_redirects=False,
            trust_env=False,
        )

    async def aclose(self) -> None:
        """Close the connections to the upstream."""
        await self._client.aclose()

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
        path: str = scope["path"]
        if path in _HEALTH_PATHS:
            body = {"status": "ok", "healing": self.settings.heal}
            await _send_json(send, 200, body)
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
        taken = _Taken()
        try:
            await self._checked_and_forwarded(scope, receive, send, path, taken)
        finally:
            self._in_flight -= taken.bytes

    async def _checked_and_forwarded(
        self, scope: Scope, receive: Receive, send: Send, path: str, taken: _Taken
    ) -> None:
        content = await self._read_body(receive, taken, _declared_length(scope["headers"]))
        if content is None:
            return  # the client went away while sending its request
        if isinstance(content, Refusal):
            await _send_refusal(send, content)
            return
        request = self._client.build_request(
            scope["method"],
            self._upstream_url(path, scope.get("query_string", b"")),
            headers=forwarded_headers(scope["headers"]),
            content=content,
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

    async def _read_body(
        self, receive: Receive, taken: _Taken, declared: int | None
    ) -> bytes | Refusal | None:
        """The whole request body, its bytes counted in the in-flight budget.

        A refusal over ``max_request_bytes`` (413) or when the bodies of the requests in flight
        would pass ``max_request_bytes_in_flight`` (503, the SDKs retry it); ``None`` when the
        client left. Nothing more is kept once refused: the rest is read and dropped. A body
        with a ``Content-Length`` takes its whole length at once, before a byte is kept (bodies
        arriving together would otherwise each hold part of the budget and all be refused).
        """
        settings = self.settings
        body = bytearray()
        refusal: Refusal | None = None
        if declared is not None:
            refusal = self._take(min(declared, settings.max_request_bytes + 1), taken)
        while True:
            message = await receive()
            if message["type"] == "http.disconnect":
                return None
            piece = message.get("body", b"")
            if refusal is None and piece:
                beyond = len(body) + len(piece) - taken.bytes
                if beyond > 0:  # past the declared length, or no length was declared
                    refusal = self._take(beyond, taken)
                if refusal is None:
                    body += piece
                else:
                    body.clear()
            if not message.get("more_body", False):
                return refusal if refusal is not None else bytes(body)

    def _take(self, size: int, taken: _Taken) -> Refusal | None:
        """Take ``size`` more bytes of the in-flight budget for one request, or refuse."""
        settings = self.settings
        if taken.bytes + size > settings.max_request_bytes:
            return Refusal(
                413,
                "request_too_large",
                f"the request body is over {settings.max_request_bytes} bytes (max_request_bytes)",
            )
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
        return body_refusal(request.content)

    def _upstream_url(self, path: str, query: bytes) -> str:
        upstream = self.settings.upstream
        if _under_v1(path):
            url = upstream + path[len(_API_PREFIX) :]
        else:
            url = upstream.removesuffix(_API_PREFIX) + path
        return f"{url}?{query.decode('latin-1')}" if query else url

    async def _forward(self, request: httpx.Request, send: Send) -> None:
        try:
            response = await self._transport.handle_async_request(request)
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


def _declared_length(headers: list[tuple[bytes, bytes]]) -> int | None:
    for name, value in headers:
        if name.lower() == b"content-length" and value.isdigit():
            return int(value)
    return None


def _under_v1(path: str) -> bool:
    return path == _API_PREFIX or path.startswith(_API_PREFIX + "/")


def _served(path: str) -> bool:
    """``/v1/...`` (to ``upstream + /...``), or an API beside it (to the upstream's root)."""
    return _under_v1(path) or path in _ROOT_PATHS or path.startswith(_ROOT_PREFIXES)


class _Taken:
    """The bytes of the in-flight budget one request holds (given back when it ends)."""

    __slots__ = ("bytes",)

    def __init__(self) -> None:
        self.bytes = 0


async def _cancel_on_disconnect(receive: Receive, scope: anyio.CancelScope) -> None:
    """Cancel ``scope`` (the forwarding) as soon as the client disconnects."""
    while True:
        message = await receive()
        if message["type"] == "http.disconnect":
            scope.cancel()
            return


async def _send_json(send: Send, status: int, body: object) -> None:
    content = _encode(body)
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [
                (b"content-type", b"application/json"),
                (b"content-length", str(len(content)).encode()),
            ],
        }
    )
    await send({"type": "http.response.body", "body": content, "more_body": False})


async def _send_refusal(send: Send, refusal: Refusal) -> None:
    await _send_error(send, refusal.status, refusal.code, refusal.message)


async def _send_error(send: Send, status: int, code: str, message: str) -> None:
    """An error the proxy itself answers, in the shape OpenAI-compatible clients read."""
    await _send_json(
        send,
        status,
        {"error": {"message": message, "type": f"toolwire_{code}", "param": None, "code": code}},
    )


def create_app(
    settings: ServeSettings,
    *,
    upstream_transport: httpx.AsyncBaseTransport | None = None,
    tracer_provider: TracerProvider | None = None,
    meter_provider: MeterProvider | None = None,
    on_shutdown: Callable[[], None] | None = None,
) -> ProxyApp:
    """The proxy for ``settings`` (see :class:`ProxyApp`)."""
    return ProxyApp(
        settings,
        upstream_transport=upstream_transport,
        tracer_provider=tracer_provider,
        meter_provider=meter_provider,
        on_shutdown=on_shutdown,
    )
