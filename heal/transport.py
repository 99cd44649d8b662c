"""Shell 1: an httpx transport that heals every tool-call request sent through it.

::

    transport = toolwire.HealingTransport(wrapped=httpx.AsyncHTTPTransport(), provider="llama-cpp")
    client = openai.AsyncOpenAI(base_url=..., http_client=httpx.AsyncClient(transport=transport))

Every ``POST .../chat/completions``, ``.../messages`` (Anthropic), ``.../responses``, Gemini's
and Vertex's ``...:generateContent`` / ``...:streamGenerateContent`` and Ollama's ``/api/chat``
that offers tools is healed in its own wire format (see :mod:`toolwire.heal` and each format's
``plan_request``); every other request, and one a format does not heal, goes to ``wrapped``
untouched.
The I/O contract:

- The request goes upstream as the client wrote it, headers (``Authorization`` included) and
  body, except ``stream_options.include_usage`` on a streamed request that did not ask for
  usage (the Chat format's ``plan_request``). Retries go to the same URL with the
  same headers. Nothing here logs a header or a body.
- An error status from upstream reaches the client unchanged: status, headers, body. (A
  retry's error status, on a streamed response whose 200 is already sent, becomes an in-band
  error; on a non-streamed one it is the response.)
- A streamed response starts as soon as the upstream's headers arrive; text and reasoning go
  out as they come; calls once judged. The body is produced while the client reads it, in the
  client's task: no task is started, nothing runs when the client is not reading, and a
  client that closes the response (or is cancelled) closes the upstream response at once.
- An upstream stream that dropped with nothing to heal drops for the client too
  (``httpx.RemoteProtocolError``; the openai SDK raises ``APIConnectionError``).
- A non-streamed healing that fails is HTTP 502 with ``x-should-retry: false`` and an
  ``{"error": {"type": "toolwire_heal_failed", ...}}`` body (the openai SDK raises
  ``InternalServerError`` and does not resend). A non-streamed body with nothing to change
  goes to the client byte for byte.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator, AsyncIterator
from typing import Any

import anyio
import httpx
import msgspec
from opentelemetry.metrics import MeterProvider
from opentelemetry.trace import TracerProvider

from ..adapters.registry import heal_formats
from ..adapters.registry import provider as provider_entry
from ..api import Pipeline, TruncatedCalls
from ..core.errors import ConfigurationError
from ..core.wire import HealPlan, HealSettings, WireFormat, WireItem
from ..judge import Policy
from ..stages.telemetry.observer import Redactor
from .session import HealSession
from .telemetry import HealTelemetry

__all__ = ["HealingTransport"]

_encode = msgspec.json.Encoder().encode
#: Headers that describe the upstream's bytes, not the body the client receives.
_BODY_HEADERS = frozenset({"content-length", "content-encoding", "transfer-encoding"})
#: How much of a retry's error body is read, to quote it.
_ERROR_BODY_CAP = 64 * 1024
#: The status of a non-streamed exchange whose healing failed: the upstream answered, but with
#: a call toolwire will not pass on (502 Bad Gateway), sent with ``x-should-retry: false`` so
#: that the openai SDK raises at once instead of sending the whole request again.
FAILED_STATUS = 502


class HealingTransport(httpx.AsyncBaseTransport):
    """An ``httpx.AsyncBaseTransport`` that heals the tool calls going through it.

    ``wrapped`` sends the requests (``httpx.AsyncHTTPTransport()`` by default); ``provider`` is
    the Chat Completions provider name for ``/chat/completions``: its server profile decides
    how history is replayed and which truncation evidence counts (``llama-cpp`` for
    llama-cpp-python); every other healed format is the registry's (Anthropic and Responses
    requests are read as ``anthropic`` and ``openai-responses``, see
    :func:`~toolwire.adapters.registry.heal_formats`). ``max_retries``
    caps the retries of one request (0: reject without asking again); ``max_tokens_ceiling``,
    when set, lets a retry after a token-limit cut double the request's limit up to it.
    ``policy`` and ``truncated_calls`` are the judge's (:class:`toolwire.Pipeline`);
    ``tracer_provider``, ``meter_provider``, ``capture_content`` and ``redact`` are where the
    spans and metrics of every response and of the healing go (``docs/healing.md``).
    ``reasoning_field`` is the delta key reasoning is sent under.
    """

    def __init__(
        self,
        wrapped: httpx.AsyncBaseTransport | None = None,
        provider: str = "openai-chat",
        *,
        max_retries: int = 2,
        max_tokens_ceiling: int | None = None,
        policy: Policy | None = None,
        truncated_calls: TruncatedCalls = "reject",
        tracer_provider: TracerProvider | None = None,
        meter_provider: MeterProvider | None = None,
        capture_content: bool | None = None,
        redact: Redactor | None = None,
        reasoning_field: str = "reasoning_content",
    ) -> None:
        formats = heal_formats(provider, HealSettings(reasoning_field=reasoning_field))
        if not isinstance(max_retries, int) or isinstance(max_retries, bool) or max_retries < 0:
            raise ConfigurationError(f"max_retries must be an int >= 0, got {max_retries!r}")
        if max_tokens_ceiling is not None and (
            not isinstance(max_tokens_ceiling, int)
            or isinstance(max_tokens_ceiling, bool)
            or max_tokens_ceiling < 1
        ):
            raise ConfigurationError(
                f"max_tokens_ceiling must be a positive int or None, got {max_tokens_ceiling!r}"
            )
        if reasoning_field not in ("reasoning_content", "reasoning"):
            raise ConfigurationError(
                f"reasoning_field must be 'reasoning_content' or 'reasoning', "
                f"got {reasoning_field!r}"
            )
        self._wrapped = wrapped if wrapped is not None else httpx.AsyncHTTPTransport()
        self._formats = formats
        chat = Pipeline(
            provider,
            policy=policy,
            truncated_calls=truncated_calls,
            tracer_provider=tracer_provider,
            meter_provider=meter_provider,
            capture_content=capture_content,
            redact=redact,
        )
        self._pipeline = chat
        self._pipelines = {
            wire.provider: chat if wire.provider == provider else chat.with_provider(wire.provider)
            for wire in self._formats
        }
        self._telemetry = HealTelemetry(
            tracer_provider=tracer_provider,
            meter_provider=meter_provider,
            capture_content=capture_content,
            redact=redact,
        )
        self._max_retries = max_retries
        self._ceiling = max_tokens_ceiling

    @property
    def pipeline(self) -> Pipeline:
        """The pipeline every upstream Chat Completions response is judged with."""
        return self._pipeline

    def pipeline_for(self, wire: WireFormat) -> Pipeline:
        """The pipeline the responses of ``wire`` are judged with."""
        return self._pipelines[wire.provider]

    def format_for(self, request: httpx.Request) -> WireFormat | None:
        """The wire format that heals ``request``, or ``None`` when it is not a call to heal."""
        if request.method != "POST":
            return None
        path = request.url.path.rstrip("/")
        query = request.url.query.decode("ascii", "replace")
        target = f"{path}?{query}" if query else path
        for wire in self._formats:
            where = wire.path
            if path.endswith(where) if isinstance(where, str) else where.search(target):
                return wire
        return None

    async def aclose(self) -> None:
        """Close the wrapped transport."""
        await self._wrapped.aclose()

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        """Send ``request``; heal the response when it is a Chat Completions call with tools."""
        wire = self.format_for(request)
        if wire is None:
            return await self._wrapped.handle_async_request(request)
        plan = wire.plan_request(await request.aread())
        if plan is None:
            return await self._wrapped.handle_async_request(request)
        if plan.query_params:
            # The retries go where the first request went: to the upstream's URL.
            url = request.url.copy_merge_params(dict(plan.query_params))
            request = _with_content(request, request.content, url=url)
        upstream = request if plan.content is None else _with_content(request, plan.content)
        response = await self._wrapped.handle_async_request(upstream)
        if not 200 <= response.status_code < 300:
            return response
        if plan.streaming:
            run = _HealedStream(self, request, wire, self._session(wire, plan), response)
            return httpx.Response(
                response.status_code,
                headers=[
                    *_passed_headers(response.headers, also=("content-type",)),
                    (b"content-type", plan.media_type.encode()),
                ],
                stream=run,
                extensions=_passed_extensions(response),
            )
        try:
            return await self._heal_completion(request, wire, plan, response)
        finally:
            await _close_quietly(response)

    def _session(self, wire: WireFormat, plan: HealPlan) -> HealSession:
        return HealSession(
            plan.body,
            self.pipeline_for(wire).next_messages,
            wire=wire,
            encoder=wire.encoder(plan),
            max_retries=self._max_retries,
            max_tokens_ceiling=self._ceiling,
            observer=self._telemetry.start(provider_entry(wire.provider).gen_ai_name),
        )

    async def send_retry(self, request: httpx.Request, body: dict[str, Any]) -> httpx.Response:
        """Send ``body`` to ``request``'s URL with its headers (the retry of a healed call)."""
        return await self._wrapped.handle_async_request(_with_content(request, _encode(body)))

    async def _heal_completion(
        self, request: httpx.Request, wire: WireFormat, plan: HealPlan, response: httpx.Response
    ) -> httpx.Response:
        content = await response.aread()
        first = wire.read_body(content)
        if first is None:  # an error in a 200, another shape: not toolwire's to change
            return _rebuilt(response, content)
        session = self._session(wire, plan)
        try:
            return await self._heal_read_completion(
                request, wire, session, response, content, first
            )
        finally:
            session.close()

    async def _heal_read_completion(
        self,
        request: httpx.Request,
        wire: WireFormat,
        session: HealSession,
        response: httpx.Response,
        content: bytes,
        first: dict[str, Any],
    ) -> httpx.Response:
        completion = first
        items: list[WireItem] = []
        while True:
            events = self.pipeline_for(wire).stream(
                wire.body_as_stream(completion), request=session.body
            )
            try:
                async for event in events:
                    items += session.feed(event)
            finally:
                await events.aclose()
            end = session.end_attempt()
            items += end.items
            if end.retry is None:
                break
            retry = await self.send_retry(request, end.retry.body)
            if not 200 <= retry.status_code < 300:
                # Nothing was sent to the client yet: the server's answer is the answer.
                session.retry_refused(retry.status_code, b"")
                return retry
            try:
                retry_content = await retry.aread()
            finally:
                await _close_quietly(retry)
            read = wire.read_body(retry_content)
            if read is None:
                items += session.retry_refused(retry.status_code, retry_content)
                break
            completion = read
        error = wire.error_body(items)
        if error is not None:
            return _whole(
                FAILED_STATUS,
                [(b"content-type", b"application/json"), (b"x-should-retry", b"false")],
                _encode(error),
            )
        if not session.rewritten:
            return _rebuilt(response, content)
        body = wire.healed_body(first, items)
        return _rebuilt(response, _encode(body))


class _HealedStream(httpx.AsyncByteStream):
    """The body of a healed streamed response, produced while the client reads it.

    Closing it (``httpx.Response.aclose``: the client stopped, or was cancelled) closes the
    generator and the upstream response being read, whether or not reading had started.
    """

    def __init__(
        self,
        transport: HealingTransport,
        request: httpx.Request,
        wire: WireFormat,
        session: HealSession,
        response: httpx.Response,
    ) -> None:
        self._transport = transport
        self._request = request
        self._wire = wire
        self._session = session
        self._current = response
        self._pieces = self._run()

    def __aiter__(self) -> AsyncIterator[bytes]:
        return self._pieces

    async def aclose(self) -> None:
        try:
            await self._pieces.aclose()
        finally:
            self._session.close()
            await _close_quietly(self._current)

    async def _run(self) -> AsyncGenerator[bytes]:
        session = self._session
        pipeline = self._transport.pipeline_for(self._wire)
        frame = self._wire.frame
        try:
            while True:
                # The response itself: the runner reads it and closes it on every path.
                source: Any = self._current
                events = pipeline.stream(source, request=session.body)
                try:
                    async for event in events:
                        items = session.feed(event)
                        if items:
                            yield frame(items)
                finally:
                    await events.aclose()
                end = session.end_attempt()
                if end.items:
                    yield frame(end.items)
                if end.dropped:
                    raise httpx.RemoteProtocolError(
                        "the upstream stream ended before its finish; toolwire ends this one "
                        "the same way"
                    )
                if end.retry is None:
                    return
                self._current = await self._transport.send_retry(self._request, end.retry.body)
                status = self._current.status_code
                if not 200 <= status < 300:
                    body = await _read_capped(self._current)
                    yield frame(session.retry_refused(status, body))
                    return
        finally:
            session.close()
            await _close_quietly(self._current)


def _with_content(
    request: httpx.Request, content: bytes, *, url: httpx.URL | None = None
) -> httpx.Request:
    """``request`` with another body (and maybe ``url``): same method, URL, headers (less the
    length), extensions."""
    headers = [
        (name, value)
        for name, value in request.headers.raw
        if name.lower() not in (b"content-length", b"transfer-encoding")
    ]
    return httpx.Request(
        request.method,
        url or request.url,
        headers=headers,
        content=content,
        extensions=request.extensions,
    )


def _passed_headers(
    headers: httpx.Headers, *, also: tuple[str, ...] = ()
) -> list[tuple[bytes, bytes]]:
    """The upstream's response headers, less those that describe its bytes (length, encoding).

    ``also`` names more headers to leave out (a healed stream is always an event stream, even
    when the upstream's 200 was not).
    """
    left_out = _BODY_HEADERS.union(also)
    return [
        (name, value)
        for name, value in headers.raw
        if name.decode("latin-1").lower() not in left_out
    ]


def _passed_extensions(response: httpx.Response) -> dict[str, Any]:
    return {
        key: value
        for key, value in response.extensions.items()
        if key in ("http_version", "reason_phrase")
    }


def _rebuilt(response: httpx.Response, content: bytes) -> httpx.Response:
    """A response with ``response``'s status and headers and ``content`` (already decoded)."""
    return _whole(
        response.status_code,
        _passed_headers(response.headers),
        content,
        _passed_extensions(response),
    )


def _whole(
    status: int,
    headers: list[tuple[bytes, bytes]],
    content: bytes,
    extensions: dict[str, Any] | None = None,
) -> httpx.Response:
    """A response whose body is ``content``, as a stream not yet read.

    ``httpx.Response(content=...)`` counts as read: a caller that streams what a transport
    returns (``aiter_raw``, as the ``toolwire serve`` proxy does) would get ``StreamConsumed``.
    """
    return httpx.Response(
        status,
        headers=[*headers, (b"content-length", str(len(content)).encode())],
        stream=httpx.ByteStream(content),
        extensions=extensions or {},
    )


async def _read_capped(response: httpx.Response) -> bytes:
    """Up to :data:`_ERROR_BODY_CAP` bytes of ``response``'s body, then close it."""
    body = bytearray()
    try:
        async for piece in response.aiter_bytes():
            body += piece
            if len(body) >= _ERROR_BODY_CAP:
                break
    except httpx.HTTPError:
        pass  # what was read is quoted; the status says the rest
    finally:
        await _close_quietly(response)
    return bytes(body[:_ERROR_BODY_CAP])


async def _close_quietly(response: httpx.Response) -> None:
    """Close ``response`` at once, even in a cancelled scope; a failing close changes nothing."""
    with anyio.CancelScope(shield=True):
        try:
            await response.aclose()
        except Exception:  # the connection is gone either way
            pass
