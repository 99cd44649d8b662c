"""The healing transport for clients built on ``httpx2`` (the anthropic and newer openai SDKs).

The anthropic SDK (1.x) takes only an ``httpx2.AsyncClient`` and refuses ``httpx`` objects; the
openai SDK takes either. :class:`Httpx2Bridge` is an ``httpx2`` transport around any ``httpx``
transport (:class:`~toolwire.heal.transport.HealingTransport`), so one healing implementation
serves both clients::

    healing = toolwire.HealingTransport()  # heals /messages, /chat/completions, /responses
    client = anthropic.AsyncAnthropic(
        http_client=httpx2.AsyncClient(transport=toolwire.heal.Httpx2Bridge(healing))
    )

What crosses the bridge is only what a transport sees: the method, URL, headers, body and
extensions (timeouts) of a request; the status, headers, extensions and a body stream of a
response, read as it is read; and errors, each raised as the ``httpx2`` error of the same name,
so the SDK maps them as it would its own (``APIConnectionError``, ``APITimeoutError``).
"""

from __future__ import annotations

from collections.abc import AsyncIterator

import httpx
import httpx2

__all__ = ["Httpx2Bridge"]


def _as_httpx2_error(error: httpx.HTTPError) -> httpx2.HTTPError:
    """The ``httpx2`` error with the same name (the same place in the same hierarchy)."""
    kind = getattr(httpx2, type(error).__name__, None)
    if isinstance(kind, type) and issubclass(kind, httpx2.TransportError):
        return kind(str(error))
    return httpx2.TransportError(str(error))


class _Body(httpx2.AsyncByteStream):
    """An ``httpx`` response's raw body, read as the ``httpx2`` client reads it."""

    def __init__(self, response: httpx.Response) -> None:
        self._response = response

    async def __aiter__(self) -> AsyncIterator[bytes]:
        try:
            async for piece in self._response.aiter_raw():
                yield piece
        except httpx.HTTPError as error:
            raise _as_httpx2_error(error) from error

    async def aclose(self) -> None:
        await self._response.aclose()


class Httpx2Bridge(httpx2.AsyncBaseTransport):
    """An ``httpx2`` transport that sends every request through an ``httpx`` transport."""

    def __init__(self, transport: httpx.AsyncBaseTransport) -> None:
        self.transport = transport

    async def handle_async_request(self, request: httpx2.Request) -> httpx2.Response:
        """Send ``request`` through the ``httpx`` transport; stream its response back."""
        content = await request.aread()
        sent = httpx.Request(
            request.method,
            str(request.url),
            headers=request.headers.raw,
            content=content,
            extensions=request.extensions,
        )
        try:
            response = await self.transport.handle_async_request(sent)
        except httpx.HTTPError as error:
            raise _as_httpx2_error(error) from error
        return httpx2.Response(
            response.status_code,
            headers=response.headers.raw,
            stream=_Body(response),
            extensions={
                key: value
                for key, value in response.extensions.items()
                if key in ("http_version", "reason_phrase")
            },
        )

    async def aclose(self) -> None:
        """Close the ``httpx`` transport."""
        await self.transport.aclose()
