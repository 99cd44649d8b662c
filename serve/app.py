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

The app is stateless per request: one ``httpx.AsyncClient`` (its connection pool) is all it
keeps, so N replicas behind any load balancer serve like one (``docs/serve.md``). It runs on
asyncio or trio (anyio): uvicorn, or hypercorn with ``--worker-class trio``.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any

import anyio
import httpx
import msgspec
from opentelemetry.metrics import MeterProvider
from opentelemetry.trace import TracerProvider

from ..adapters.registry import read_request
from ..core.errors import ConfigurationError
from ..heal.transport import HealingTransport
from ..stages.judge_cache import JudgeStageCache
from .guard import (
    HOP_BY_HOP,
    Refusal,
    body_refusal,
    forwarded_headers,
    path_refusal,
    tools_refusal,
)
from .settings import ServeSettings

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
_CHECKED_IN_A_THREAD_ABOVE = 64 * 1024
_API_PREFIX = "/v1"
#: APIs served beside ``/v1``, sent to the upstream's root (its URL less a final ``/v1``):
#: Gemini's ``/v1beta/...`` and Ollama's native chat. Only ``/api/chat`` of Ollama's ``/api``:
#: the rest of it pulls, pushes, copies and deletes models.
_ROOT_PREFIXES = ("/v1beta/",)
_ROOT_PATHS = frozenset({"/api/chat"})
_HEALTH_PATHS = frozenset({"/healthz", "/health"})


class ProxyApp:
    """The ASGI app of ``toolwire serve`` (see the module docstring).

    ``upstream_transport`` sends the requests (``httpx.AsyncHTTPTransport`` sized by the
    settings by default; the healing wraps it unless ``settings.heal`` is off).
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
        limits = httpx.Limits(
            max_connections=settings.max_connections,
            max_keepalive_connections=min(settings.max_connections, 100),
        )
        transport = upstream_transport or httpx.AsyncHTTPTransport(limits=limits)
        self._healing: HealingTransport | None = None
        #: The tool lists already checked before forwarding (issue 19, part 5).
        self._checked_tools = JudgeStageCache(None, settings.truncated_calls)
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
            )
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
        content = await _read_body(receive, self.settings.max_request_bytes)
        if content is None:
            return  # the client went away while sending its request
        if isinstance(content, _TooLarge):
            await _send_error(
                send,
                413,
                "request_too_large",
                f"the request body is over {self.settings.max_request_bytes} bytes "
                "(max_request_bytes)",
            )
            return
        request = self._client.build_request(
            scope["method"],
            self._upstream_url(path, scope.get("query_string", b"")),
            headers=forwarded_headers(scope["headers"]),
            content=content,
        )
        if len(content) > _CHECKED_IN_A_THREAD_ABOVE:
            refusal = await anyio.to_thread.run_sync(self._request_refusal, request, content)
        else:
            refusal = self._request_refusal(request, content)
        if refusal is not None:
            await _send_refusal(send, refusal)
            return
        async with anyio.create_task_group() as group:
            group.start_soon(_cancel_on_disconnect, receive, group.cancel_scope)
            await self._forward(request, send)
            group.cancel_scope.cancel()

    def _request_refusal(self, request: httpx.Request, content: bytes) -> Refusal | None:
        """Why a request the healing would read must not go upstream, or ``None``."""
        wire = self._healing.format_for(request) if self._healing is not None else None
        if wire is None:
            return None
        refusal, body = body_refusal(content)
        if refusal is not None or body is None:
            return refusal
        plan = wire.plan_request(content)
        if plan is None:
            return None
        try:
            tools = read_request(wire.provider, plan.body).tools
        except ConfigurationError as error:
            return Refusal(400, "invalid_request", f"toolwire cannot read this request: {error}")
        return tools_refusal(self._checked_tools, tools)

    def _upstream_url(self, path: str, query: bytes) -> str:
        upstream = self.settings.upstream
        if _under_v1(path):
            url = upstream + path[len(_API_PREFIX) :]
        else:
            url = upstream.removesuffix(_API_PREFIX) + path
        return f"{url}?{query.decode('latin-1')}" if query else url

    async def _forward(self, request: httpx.Request, send: Send) -> None:
        try:
            response = await self._client.send(request, stream=True)
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


def _under_v1(path: str) -> bool:
    return path == _API_PREFIX or path.startswith(_API_PREFIX + "/")


def _served(path: str) -> bool:
    """``/v1/...`` (to ``upstream + /...``), or an API beside it (to the upstream's root)."""
    return _under_v1(path) or path in _ROOT_PATHS or path.startswith(_ROOT_PREFIXES)


class _TooLarge:
    """A request body over the limit (its bytes are not kept)."""


async def _read_body(receive: Receive, limit: int) -> bytes | _TooLarge | None:
    """The whole request body; ``_TooLarge`` over ``limit``; ``None`` when the client left."""
    body = bytearray()
    too_large = False
    while True:
        message = await receive()
        if message["type"] == "http.disconnect":
            return None
        if not too_large:
            body += message.get("body", b"")
            if len(body) > limit:
                too_large = True
                body.clear()
        if not message.get("more_body", False):
            return _TooLarge() if too_large else bytes(body)


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
