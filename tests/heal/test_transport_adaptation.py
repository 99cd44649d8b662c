"""The transport adapts a client's request to the server's profile and says so; where the server
cannot stream a request, it asks whole and streams the judged answer (``llama-cpp``)."""

from __future__ import annotations

import json
from typing import Any

import httpx
import pytest
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader

from toolwire.heal.transport import ADAPTED_HEADER, HealingTransport

from .client import GOOD_WRITE
from .upstream import completion

pytestmark = pytest.mark.anyio

TOOLS = [{"type": "function", "function": {"name": "write", "parameters": {"type": "object"}}}]
HISTORY = [
    {"role": "user", "content": "Write hello to notes.txt"},
    {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {"id": "c0", "type": "function", "function": {"name": "read", "arguments": "{}"}}
        ],
    },
    {"role": "tool", "tool_call_id": "c0", "content": "empty"},
]


def _body(**changes: Any) -> dict[str, Any]:
    return {"model": "m", "messages": HISTORY, "tools": TOOLS, "tool_choice": "auto", **changes}


class Upstream:
    """A server that answers whole ``chat.completion`` bodies, in order, and keeps requests."""

    def __init__(self, *replies: bytes) -> None:
        self.replies = list(replies)
        self.seen: list[dict[str, Any]] = []

    def __call__(self, request: httpx.Request) -> httpx.Response:
        self.seen.append(json.loads(request.content))
        return httpx.Response(
            200, headers={"content-type": "application/json"}, content=self.replies.pop(0)
        )


def _deltas(body: bytes) -> list[dict[str, Any]]:
    return [
        choice["delta"] | {"finish": choice["finish_reason"]}
        for line in body.split(b"\n\n")
        if line.startswith(b"data: {")
        for choice in json.loads(line[6:]).get("choices", ())
    ]


async def test_a_streamed_auto_request_is_asked_whole_healed_and_streamed(
    anyio_backend: str,
) -> None:
    upstream = Upstream(
        completion(
            ("c1", "write", '{"path": "notes.txt", "content": "hel'), finish_reason="length"
        ),
        completion(("c2", "write", GOOD_WRITE)),
    )
    reader = InMemoryMetricReader()
    transport = HealingTransport(
        wrapped=httpx.MockTransport(upstream),
        provider="llama-cpp",
        meter_provider=MeterProvider(metric_readers=[reader]),
    )
    async with httpx.AsyncClient(transport=transport, base_url="http://up/v1") as client:
        response = await client.post("/chat/completions", json=_body(stream=True))
    assert response.status_code == 200
    assert response.headers["content-type"].startswith("text/event-stream")
    assert response.headers[ADAPTED_HEADER] == "assistant_content=1, stream=1, tool_result_role=1"
    deltas = _deltas(response.content)
    (call,) = [fragment for d in deltas for fragment in d.get("tool_calls", ())]
    assert call["function"]["arguments"] == GOOD_WRITE  # the cut call never reached the client
    assert deltas[-1]["finish"] == "tool_calls"
    assert response.content.endswith(b"data: [DONE]\n\n")
    first, retry = upstream.seen
    for sent in (first, retry):  # both asked whole, in the form llama-cpp-python takes
        assert sent["stream"] is False
        assert "stream_options" not in sent
        assert sent["messages"][1]["content"] == ""
        assert sent["messages"][2]["role"] == "user"
    points = [
        (dict(point.attributes or {}).get("toolwire.heal.adaptation"), point.value)
        for metric in reader.get_metrics_data().resource_metrics[0].scope_metrics[0].metrics
        if metric.name == "toolwire.heal.adapted"
        for point in metric.data.data_points
    ]
    assert sorted(points) == [("assistant_content", 1), ("stream", 1), ("tool_result_role", 1)]


async def test_a_whole_request_is_adapted_and_its_body_passes(anyio_backend: str) -> None:
    body = completion(("c1", "write", GOOD_WRITE))
    upstream = Upstream(body)
    transport = HealingTransport(wrapped=httpx.MockTransport(upstream), provider="llama-cpp")
    async with httpx.AsyncClient(transport=transport, base_url="http://up/v1") as client:
        response = await client.post("/chat/completions", json=_body())
    assert response.content == body
    assert response.headers[ADAPTED_HEADER] == "assistant_content=1, tool_result_role=1"
    assert (
        upstream.seen[0]["messages"][2]["content"] == "Result of tool call `read` (id c0):\nempty"
    )


async def test_openai_chat_sends_the_clients_bytes_and_no_header(anyio_backend: str) -> None:
    seen: list[bytes] = []
    body = completion(("c1", "write", GOOD_WRITE))

    def reply(request: httpx.Request) -> httpx.Response:
        seen.append(request.content)
        return httpx.Response(200, content=body)

    content = json.dumps(_body()).encode()
    transport = HealingTransport(wrapped=httpx.MockTransport(reply), provider="openai-chat")
    async with httpx.AsyncClient(transport=transport, base_url="http://up/v1") as client:
        response = await client.post("/chat/completions", content=content)
    assert seen == [content]
    assert ADAPTED_HEADER not in response.headers
