"""A kept-alive upstream connection closed before answering: the request is sent once more.

Issue 27: llama-server closes its connection after every streamed answer although its headers
say ``Keep-Alive``; the proxy's pool sent the next request on that connection before the close
arrived, and the client got 502 ``upstream_broken`` (2 of 10 back-to-back streamed requests).
The proxy now (``serve/upstream.py``, ``docs/serve.md``):

- sends a request once more, on a new connection, when its connection had carried an earlier
  exchange and ended (closed or reset) before one byte of the answer came, and the request may
  reach the upstream twice: a healed request, an idempotent method, an ``Idempotency-Key``;
  never a request on a new connection, nor one whose answer had begun, nor any other POST;
- keeps no connection after a streamed answer from an upstream of a kind known to close it
  (``--provider llama-server``), so that no request meets the close.

The upstream (``closing_upstream.py``) makes each race certain: it closes a connection only
once the next request has arrived on it.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import httpx
import pytest

from toolwire.serve import ServeSettings, create_app

from .closing_upstream import Closing, Counts, closing_upstream

pytestmark = pytest.mark.anyio

TOOLS = [
    {
        "type": "function",
        "function": {"name": "get_time", "parameters": {"type": "object", "properties": {}}},
    }
]


def _body(stream: bool, *, tools: bool = True) -> dict[str, Any]:
    body: dict[str, Any] = {
        "model": "m",
        "messages": [{"role": "user", "content": "hi"}],
        "stream": stream,
    }
    if tools:
        body["tools"] = TOOLS
    return body


@asynccontextmanager
async def _proxy(
    closing: Closing, provider: str, *, unread: bool = True
) -> AsyncIterator[tuple[httpx.AsyncClient, Counts]]:
    with closing_upstream(closing, unread=unread) as (upstream, counts):
        app = create_app(ServeSettings(upstream=upstream, provider=provider))
        try:
            transport = httpx.ASGITransport(app=app)
            async with httpx.AsyncClient(transport=transport, base_url="http://proxy") as client:
                yield client, counts
        finally:
            await app.aclose()


async def _statuses(
    client: httpx.AsyncClient, *bodies: dict[str, Any], **headers: str
) -> list[int]:
    return [
        (await client.post("/v1/chat/completions", json=body, headers=headers)).status_code
        for body in bodies
    ]


@pytest.mark.parametrize("unread", [True, False], ids=["reset", "closed"])
async def test_a_healed_request_is_sent_again_on_a_new_connection(
    anyio_backend: str, unread: bool
) -> None:
    # The upstream's kind is not named: the generic rule alone.
    async with _proxy("after_stream", "openai-compatible", unread=unread) as (client, counts):
        statuses = await _statuses(client, _body(True), _body(True))
    assert statuses == [200, 200]
    assert counts.stale == 1  # the second request met the close...
    assert counts.answered == 2  # ...and was answered once, on a new connection
    assert counts.connections == 2


async def test_a_request_with_an_idempotency_key_is_sent_again(anyio_backend: str) -> None:
    async with _proxy("after_stream", "openai-compatible") as (client, counts):
        plain = _body(True, tools=False)
        statuses = await _statuses(client, plain, plain, **{"Idempotency-Key": "k-1"})
    assert statuses == [200, 200]
    assert (counts.stale, counts.answered) == (1, 2)


async def test_a_request_that_may_not_reach_the_upstream_twice_is_not_sent_again(
    anyio_backend: str,
) -> None:
    # No tools (not healed: toolwire cannot tell whether it keeps state upstream), no key.
    async with _proxy("after_stream", "openai-compatible") as (client, counts):
        plain = _body(True, tools=False)
        response = await client.post("/v1/chat/completions", json=plain)
        assert response.status_code == 200
        response = await client.post("/v1/chat/completions", json=plain)
    assert response.status_code == 502
    assert response.json()["error"]["code"] == "upstream_broken"
    assert (counts.stale, counts.answered) == (1, 1)


async def test_a_new_connection_closed_before_answering_is_not_sent_again(
    anyio_backend: str,
) -> None:
    # Not a keep-alive race: the upstream hung up on this request. Sending it again could
    # repeat whatever made it hang up.
    async with _proxy("first_request", "openai-compatible") as (client, counts):
        response = await client.post("/v1/chat/completions", json=_body(False))
    assert response.status_code == 502
    assert (counts.connections, counts.answered) == (1, 0)


async def test_an_answer_that_began_is_never_sent_again(anyio_backend: str) -> None:
    # The reused connection's answer broke off after its first bytes: the upstream read it.
    async with _proxy("cut_second", "openai-compatible") as (client, counts):
        statuses = await _statuses(client, _body(False), _body(False))
    assert statuses == [200, 502]
    assert (counts.connections, counts.answered) == (1, 1)


@pytest.mark.parametrize("tools", [True, False], ids=["healed", "not-healed"])
async def test_an_upstream_that_closes_after_streams_keeps_no_streamed_connection(
    anyio_backend: str, tools: bool
) -> None:
    # --provider llama-server: its connection is not reused after a streamed answer, so no
    # request meets its close, whatever the request; a whole answer's connection is kept.
    async with _proxy("after_stream", "llama-server") as (client, counts):
        streamed, whole = _body(True, tools=tools), _body(False, tools=tools)
        statuses = await _statuses(client, streamed, streamed, whole, whole, streamed)
    assert statuses == [200] * 5
    assert counts.stale == 0
    assert counts.answered == 5
    # A connection per streamed answer; the two whole answers shared the third.
    assert counts.connections == 3
