"""Healing uses the history repair and the tool-parser errors (issue 17, part 4).

Through the real ``openai`` SDK over a :class:`~toolwire.HealingTransport`, against the loopback
upstream of ``tests/heal/upstream.py``, which refuses a history holding arguments that do not
parse, as llama-server does (HTTP 500 there, 400 here: the status does not matter, the refusal
does):

- a request whose history holds a broken call is repaired before it goes upstream, succeeds,
  and says so in ``x-toolwire-history-repaired``; an intact history goes up byte for byte;
- a tool-parser error body is healed like any rejected call: asked again with the true message.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import httpx
import openai
import pytest
from e2e.server import tool_calls_reply
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader

import toolwire
from toolwire.heal.transport import ADAPTED_HEADER, HISTORY_REPAIRED_HEADER

from .client import GOOD_WRITE, SDK_ON_TRIO_LEAK, TOOLS, read_stream
from .upstream import HealUpstream, Reply, completion, running_upstream

pytestmark = [pytest.mark.anyio, pytest.mark.filterwarnings(SDK_ON_TRIO_LEAK)]

#: A history whose first call was cut at the token limit, and whose second holds markup.
BROKEN_HISTORY: list[dict[str, Any]] = [
    {"role": "user", "content": "Write hello to notes.txt"},
    {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {
                "id": "c1",
                "type": "function",
                "function": {"name": "write", "arguments": '{"path": "notes.txt", "content": "hel'},
            }
        ],
    },
    {"role": "tool", "tool_call_id": "c1", "content": "error: bad arguments"},
    {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {
                "id": "c2",
                "type": "function",
                "function": {"name": "read", "arguments": '<tool_call>{"path": "notes.txt"}'},
            }
        ],
    },
    {"role": "tool", "tool_call_id": "c2", "content": "error: bad arguments"},
    {"role": "user", "content": "Try again."},
]
INTACT_HISTORY: list[dict[str, Any]] = [
    {"role": "user", "content": "Write hello to notes.txt"},
    {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {"id": "c1", "type": "function", "function": {"name": "write", "arguments": GOOD_WRITE}}
        ],
    },
    {"role": "tool", "tool_call_id": "c1", "content": "written"},
    {"role": "user", "content": "Now read it."},
]


@pytest.fixture
def upstream() -> Iterator[HealUpstream]:
    with running_upstream() as scripted:
        yield scripted


class _Sent:
    """The bytes of every request the client sent (an httpx request hook)."""

    def __init__(self) -> None:
        self.bodies: list[bytes] = []

    async def __call__(self, request: httpx.Request) -> None:
        self.bodies.append(request.content)


def _client(
    upstream: HealUpstream, transport: httpx.AsyncBaseTransport, sent: _Sent | None = None
) -> tuple[httpx.AsyncClient, openai.AsyncOpenAI]:
    hooks = {"request": [sent]} if sent is not None else {}
    http = httpx.AsyncClient(transport=transport, timeout=10, event_hooks=hooks)
    client = openai.AsyncOpenAI(
        base_url=upstream.base_url, api_key="sk-test", max_retries=0, http_client=http
    )
    return http, client


def _request(messages: list[dict[str, Any]], **extra: Any) -> dict[str, Any]:
    return {"model": "scripted-model", "messages": messages, "tools": TOOLS, **extra}


# -- a history a server refuses is repaired before it goes upstream ---------------------------


async def test_without_the_transport_the_broken_history_is_refused(
    anyio_backend: str, upstream: HealUpstream
) -> None:
    upstream.script(Reply(completion(content="Done.", finish_reason="stop")))
    http, client = _client(upstream, httpx.AsyncHTTPTransport())
    async with http, client:
        with pytest.raises(openai.BadRequestError, match="do not parse"):
            await client.chat.completions.create(**_request(BROKEN_HISTORY))


@pytest.mark.parametrize("provider", ["llama-server", "llama-cpp", "openai-chat"])
async def test_a_broken_history_is_repaired_and_the_response_says_so(
    anyio_backend: str, upstream: HealUpstream, provider: str
) -> None:
    upstream.script(Reply(completion(content="Done.", finish_reason="stop")))
    reader = InMemoryMetricReader()
    transport = toolwire.HealingTransport(
        httpx.AsyncHTTPTransport(),
        provider,
        meter_provider=MeterProvider(metric_readers=[reader]),
    )
    http, client = _client(upstream, transport)
    async with http, client:
        raw = await client.chat.completions.with_raw_response.create(**_request(BROKEN_HISTORY))
    assert raw.headers[HISTORY_REPAIRED_HEADER] == "arguments_markup=1, arguments_not_json=1"
    assert raw.parse().choices[0].message.content == "Done."
    assert upstream.refused == []
    (sent,) = [json.loads(body) for body in upstream.raw_bodies]
    replayed = [
        call["function"]["arguments"]
        for message in sent["messages"]
        if message["role"] == "assistant"
        for call in message["tool_calls"]
    ]
    assert replayed == ["{}", "{}"]
    results = [m["content"] for m in sent["messages"] if "tool_call_id" in m]
    assert len(results) == 2
    assert all("could not be sent back" in r and "error: bad arguments" in r for r in results)
    assert BROKEN_HISTORY[1]["tool_calls"][0]["function"]["arguments"].endswith('"hel')
    points = {
        point.attributes["toolwire.heal.history_problem"]: point.value
        for metric in reader.get_metrics_data().resource_metrics[0].scope_metrics[0].metrics
        if metric.name == "toolwire.heal.history_repaired"
        for point in metric.data.data_points
    }
    assert points == {"arguments_not_json": 1, "arguments_markup": 1}


async def test_a_streamed_request_with_a_broken_history_is_repaired_and_healed(
    anyio_backend: str, upstream: HealUpstream
) -> None:
    upstream.script(Reply(tool_calls_reply(("c3", "write", GOOD_WRITE))))
    transport = toolwire.HealingTransport(httpx.AsyncHTTPTransport(), "llama-server")
    http, client = _client(upstream, transport)
    async with http, client:
        raw = await client.chat.completions.with_raw_response.create(
            **_request(BROKEN_HISTORY, stream=True)
        )
        received = await read_stream(raw.parse())
    assert raw.headers[HISTORY_REPAIRED_HEADER] == "arguments_markup=1, arguments_not_json=1"
    assert [call["arguments"] for call in received.calls] == [GOOD_WRITE]
    assert upstream.refused == []


@pytest.mark.parametrize("tools", [True, False], ids=["healed", "not-healed"])
async def test_an_intact_history_goes_up_byte_for_byte(
    anyio_backend: str, upstream: HealUpstream, tools: bool
) -> None:
    upstream.script(Reply(completion(content="Done.", finish_reason="stop")))
    sent = _Sent()
    transport = toolwire.HealingTransport(httpx.AsyncHTTPTransport(), "llama-server")
    http, client = _client(upstream, transport, sent)
    body = _request(INTACT_HISTORY)
    if not tools:
        del body["tools"]
    async with http, client:
        raw = await client.chat.completions.with_raw_response.create(**body)
    assert HISTORY_REPAIRED_HEADER not in raw.headers
    assert ADAPTED_HEADER not in raw.headers
    assert upstream.raw_bodies == sent.bodies


async def test_a_request_without_tools_is_repaired_too(
    anyio_backend: str, upstream: HealUpstream
) -> None:
    upstream.script(Reply(completion(content="Done.", finish_reason="stop")))
    transport = toolwire.HealingTransport(httpx.AsyncHTTPTransport(), "llama-server")
    http, client = _client(upstream, transport)
    body = _request(BROKEN_HISTORY)
    del body["tools"]
    async with http, client:
        raw = await client.chat.completions.with_raw_response.create(**body)
    assert raw.headers[HISTORY_REPAIRED_HEADER] == "arguments_markup=1, arguments_not_json=1"
    assert raw.parse().choices[0].message.content == "Done."
