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

from .client import GOOD_WRITE, SDK_ON_TRIO_LEAK, TOOLS, USER, read_stream
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


# -- a tool-parser error is the model's broken call: asked again with the true message --------

#: Ollama's ``/v1`` answer when it could not parse the model's call (ollama/ollama#17638 shape).
OLLAMA_500 = {
    "error": {
        "message": 'error parsing tool call: raw=\'{"path": "notes.txt", "content": "hel\', '
        "err=unexpected end of JSON input",
        "type": "api_error",
        "param": None,
        "code": None,
    }
}
#: llama-server's body for a tail it could not parse (ggml-org/llama.cpp#20761).
LLAMA_SERVER_500 = {
    "error": {
        "code": 500,
        "message": "Failed to parse input at pos 12: </tool_call>",
        "type": "server_error",
    }
}
PARSER_ERRORS = [
    pytest.param("ollama-openai", OLLAMA_500, id="ollama"),
    pytest.param("llama-server", LLAMA_SERVER_500, id="llama-server"),
]


def _rejected_results(sent: dict[str, Any]) -> list[str]:
    return [m["content"] for m in sent["messages"] if "tool_call_id" in m]


@pytest.mark.parametrize(("provider", "error"), PARSER_ERRORS)
async def test_a_tool_parser_500_is_asked_again_and_the_client_gets_the_healed_answer(
    anyio_backend: str, upstream: HealUpstream, provider: str, error: dict[str, Any]
) -> None:
    upstream.script(
        Reply(status=500, body=json.dumps(error).encode()),
        Reply(completion(("c9", "write", GOOD_WRITE))),
    )
    transport = toolwire.HealingTransport(httpx.AsyncHTTPTransport(), provider)
    http, client = _client(upstream, transport)
    async with http, client:
        answer = await client.chat.completions.create(**_request(list(USER)))
    (call,) = answer.choices[0].message.tool_calls or ()
    assert (call.function.name, call.function.arguments) == ("write", GOOD_WRITE)
    assert answer.choices[0].finish_reason == "tool_calls"
    assert upstream.refused == []
    first, retry = (json.loads(body) for body in upstream.raw_bodies)
    (result,) = _rejected_results(retry)
    assert "could not parse" in result  # the true message: the server could not parse it
    assert len(retry["messages"]) == len(first["messages"]) + 2


@pytest.mark.parametrize(("provider", "error"), PARSER_ERRORS)
async def test_a_tool_parser_500_on_a_stream_is_healed_and_streamed(
    anyio_backend: str, upstream: HealUpstream, provider: str, error: dict[str, Any]
) -> None:
    upstream.script(
        Reply(status=500, body=json.dumps(error).encode()),
        Reply(tool_calls_reply(("c9", "write", GOOD_WRITE))),
    )
    transport = toolwire.HealingTransport(httpx.AsyncHTTPTransport(), provider)
    http, client = _client(upstream, transport)
    async with http, client:
        received = await read_stream(
            await client.chat.completions.create(**_request(list(USER), stream=True))
        )
    assert [(c["name"], c["arguments"]) for c in received.calls] == [("write", GOOD_WRITE)]
    assert received.finish_reason == "tool_calls"
    assert len(upstream.raw_bodies) == 2


@pytest.mark.parametrize("stream", [False, True], ids=["whole", "streamed"])
async def test_when_the_retries_are_spent_the_client_gets_the_typed_heal_failure(
    anyio_backend: str, upstream: HealUpstream, stream: bool
) -> None:
    upstream.script(Reply(status=500, body=json.dumps(OLLAMA_500).encode()))
    transport = toolwire.HealingTransport(
        httpx.AsyncHTTPTransport(), "ollama-openai", max_retries=0
    )
    http, client = _client(upstream, transport)
    async with http, client:
        if stream:
            with pytest.raises(openai.APIError) as raised:
                await read_stream(
                    await client.chat.completions.create(**_request(list(USER), stream=True))
                )
        else:
            with pytest.raises(openai.InternalServerError) as raised:
                await client.chat.completions.create(**_request(list(USER)))
            assert raised.value.status_code == 502
    assert "toolwire" in str(raised.value.body)
    assert len(upstream.raw_bodies) == 1


@pytest.mark.parametrize("stream", [False, True], ids=["whole", "streamed"])
async def test_an_unknown_error_body_passes_unchanged(
    anyio_backend: str, upstream: HealUpstream, stream: bool
) -> None:
    body = b'{"error": {"message": "model is loading", "type": "unavailable"}}'
    upstream.script(Reply(status=500, body=body))
    transport = toolwire.HealingTransport(httpx.AsyncHTTPTransport(), "ollama-openai")
    async with httpx.AsyncClient(transport=transport, base_url=upstream.base_url) as http:
        response = await http.post("/chat/completions", json=_request(list(USER), stream=stream))
    assert response.status_code == 500
    assert response.content == body
    assert len(upstream.raw_bodies) == 1


async def test_a_long_error_body_with_no_length_passes_whole_and_read_once(
    anyio_backend: str,
) -> None:
    # A chunked error body past the cap is none of the parser errors: it reaches the client
    # whole, though the transport read its first pieces to know.
    pieces = [b'{"error": {"message": "' + b"x" * 40_000, b"y" * 40_000, b'"}}']
    read: list[int] = []

    async def body() -> Any:
        for number, piece in enumerate(pieces):
            read.append(number)
            yield piece

    def handler(request: httpx.Request) -> httpx.Response:
        return httpx.Response(500, content=body())

    transport = toolwire.HealingTransport(httpx.MockTransport(handler), "ollama-openai")
    async with httpx.AsyncClient(transport=transport, base_url="http://upstream/v1") as http:
        response = await http.post("/chat/completions", json=_request(list(USER)))
    assert response.status_code == 500
    assert "content-length" not in {name.lower() for name in response.headers}
    assert response.content == b"".join(pieces)
    assert read == [0, 1, 2]
