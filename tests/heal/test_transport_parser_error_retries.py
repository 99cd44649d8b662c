"""A retry answered by the server's tool-parser failure is the model's broken call again.

Issue 27: llama-server b11434 answers HTTP 500 ``The model produced output that does not match
the expected peg-native format`` when its parser fails on the model's output
(``docs/local-servers.md``). The first such 500 was healed (asked again with the true message),
but a retry answered by the same 500 ended the healing there, retries left or not: the client
got the server's 500 (whole) or an in-band ``retry_http_status`` (streamed). Such a body is the
model's output, not an outage (``adapters/parser_wordings.py``), so a retry's is judged like
the first: asked again while retries are left; when they are spent, the client gets the typed
heal failure (``toolwire_heal_failed``, quoting what the server said), as for any rejected call.

On every format llama-server serves (Chat Completions, Messages, Responses), whole and
streamed, against a scripted upstream (``httpx.MockTransport``); the bodies are llama-server's
(``tests/e2e/llama_server_streams.py``). A retry's error that is no parser failure still ends
the exchange as before (``tests/heal/test_fault_table.py``, "5xx on the retry").
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import httpx
import pytest
from e2e.llama_server_streams import (
    PEG,
    SCHEMA,
    WHOLE,
    llama_server_500,
    messages_stream,
    responses_stream,
)
from e2e.server import tool_calls_reply

import toolwire

from .upstream import completion

pytestmark = pytest.mark.anyio

USER = "What is the weather in Paris?"
PARIS = {"city": "Paris"}


@dataclass(frozen=True)
class Format:
    """One endpoint llama-server serves: its request, a valid answer, and the client's calls."""

    name: str
    path: str
    request: Callable[[bool], dict[str, Any]]
    #: A valid answer, whole or streamed (``(body, content type)``).
    answer: Callable[[bool], tuple[bytes, str]]
    #: The calls the client received, ``(name, arguments as an object)``, whole or streamed.
    calls: Callable[[bytes, bool], list[tuple[str, Any]]]


def _sse(body: bytes) -> list[dict[str, Any]]:
    return [
        json.loads(line[6:])
        for line in body.decode().splitlines()
        if line.startswith("data: ") and line != "data: [DONE]"
    ]


def _chat_request(stream: bool) -> dict[str, Any]:
    tools = [{"type": "function", "function": {"name": "get_weather", "parameters": SCHEMA}}]
    return {
        "model": "m",
        "messages": [{"role": "user", "content": USER}],
        "tools": tools,
        "stream": stream,
    }


def _chat_answer(stream: bool) -> tuple[bytes, str]:
    if stream:
        return tool_calls_reply(("call_2", "get_weather", WHOLE)), "text/event-stream"
    return completion(("call_2", "get_weather", WHOLE)), "application/json"


def _chat_calls(body: bytes, stream: bool) -> list[tuple[str, Any]]:
    if not stream:
        message = json.loads(body)["choices"][0]["message"]
        return [
            (call["function"]["name"], json.loads(call["function"]["arguments"]))
            for call in message.get("tool_calls") or ()
        ]
    calls: dict[int, list[str]] = {}
    for chunk in _sse(body):
        for choice in chunk.get("choices", ()):
            for call in choice["delta"].get("tool_calls") or ():
                named = calls.setdefault(call["index"], ["", ""])
                named[0] += call.get("function", {}).get("name") or ""
                named[1] += call.get("function", {}).get("arguments") or ""
    return [(name, json.loads(arguments)) for name, arguments in calls.values()]


def _messages_request(stream: bool) -> dict[str, Any]:
    return {
        "model": "m",
        "max_tokens": 100,
        "messages": [{"role": "user", "content": USER}],
        "tools": [{"name": "get_weather", "input_schema": SCHEMA}],
        "stream": stream,
    }


def _messages_answer(stream: bool) -> tuple[bytes, str]:
    if stream:
        # llama-server streams the call, then fails its final parse in band: the call stands.
        return messages_stream(WHOLE), "text/event-stream"
    message = {
        "id": "msg_2",
        "type": "message",
        "role": "assistant",
        "model": "m",
        "content": [{"type": "tool_use", "id": "toolu_2", "name": "get_weather", "input": PARIS}],
        "stop_reason": "tool_use",
        "stop_sequence": None,
        "usage": {"input_tokens": 5, "output_tokens": 5},
    }
    return json.dumps(message).encode(), "application/json"


def _messages_calls(body: bytes, stream: bool) -> list[tuple[str, Any]]:
    if not stream:
        content = json.loads(body)["content"]
        return [(block["name"], block["input"]) for block in content if block["type"] == "tool_use"]
    blocks: dict[int, list[str]] = {}
    for event in _sse(body):
        if event["type"] == "content_block_start" and event["content_block"]["type"] == "tool_use":
            blocks[event["index"]] = [event["content_block"]["name"], ""]
        elif event["type"] == "content_block_delta" and event["index"] in blocks:
            blocks[event["index"]][1] += event["delta"].get("partial_json", "")
    return [(name, json.loads(arguments)) for name, arguments in blocks.values()]


def _responses_request(stream: bool) -> dict[str, Any]:
    return {
        "model": "m",
        "input": USER,
        "tools": [{"type": "function", "name": "get_weather", "parameters": SCHEMA}],
        "stream": stream,
    }


def _responses_answer(stream: bool) -> tuple[bytes, str]:
    if stream:
        return responses_stream(WHOLE), "text/event-stream"
    item = {
        "type": "function_call",
        "id": "fc_2",
        "call_id": "call_2",
        "name": "get_weather",
        "arguments": WHOLE,
        "status": "completed",
    }
    response = {"id": "resp_2", "object": "response", "status": "completed", "model": "m"}
    return json.dumps({**response, "output": [item]}).encode(), "application/json"


def _responses_calls(body: bytes, stream: bool) -> list[tuple[str, Any]]:
    if stream:
        items = [
            event["item"] for event in _sse(body) if event["type"] == "response.output_item.done"
        ]
    else:
        items = json.loads(body)["output"]
    return [
        (item["name"], json.loads(item["arguments"]))
        for item in items
        if item["type"] == "function_call"
    ]


FORMATS = [
    Format("chat", "/chat/completions", _chat_request, _chat_answer, _chat_calls),
    Format("messages", "/messages", _messages_request, _messages_answer, _messages_calls),
    Format("responses", "/responses", _responses_request, _responses_answer, _responses_calls),
]
every_format = pytest.mark.parametrize("wire", FORMATS, ids=lambda wire: wire.name)
whole_and_streamed = pytest.mark.parametrize("stream", [False, True], ids=["whole", "streamed"])


class Upstream:
    """Answers each request with the next scripted answer; keeps every request body."""

    def __init__(self, answers: list[tuple[int, bytes, str]]) -> None:
        self._answers = answers
        self.requests: list[bytes] = []

    def __call__(self, request: httpx.Request) -> httpx.Response:
        self.requests.append(request.content)
        status, body, kind = self._answers[len(self.requests) - 1]
        return httpx.Response(status, content=body, headers={"content-type": kind})


PARSER_FAILURE = (500, llama_server_500(), "application/json")


async def _ask(wire: Format, stream: bool, upstream: Upstream, **options: Any) -> httpx.Response:
    transport = toolwire.HealingTransport(httpx.MockTransport(upstream), "llama-server", **options)
    async with httpx.AsyncClient(transport=transport, base_url="http://llama/v1") as http:
        response = await http.post(wire.path, json=wire.request(stream))
        await response.aread()
    return response


@every_format
@whole_and_streamed
async def test_a_retry_answered_by_a_parse_failure_is_asked_again(
    anyio_backend: str, wire: Format, stream: bool
) -> None:
    upstream = Upstream([PARSER_FAILURE, PARSER_FAILURE, (200, *wire.answer(stream))])
    response = await _ask(wire, stream, upstream, max_retries=2)
    assert response.status_code == 200
    assert b"retry_http_status" not in response.content
    assert wire.calls(response.content, stream) == [("get_weather", PARIS)]
    first, second, third = upstream.requests
    # Each retry told the model what the server said about its output, once per failure.
    assert PEG.encode() not in first
    assert second.count(PEG.encode()) == 1
    assert third.count(PEG.encode()) == 2


@every_format
@whole_and_streamed
async def test_when_the_retries_run_out_the_client_gets_the_heal_failure(
    anyio_backend: str, wire: Format, stream: bool
) -> None:
    upstream = Upstream([PARSER_FAILURE] * 4)
    response = await _ask(wire, stream, upstream, max_retries=2)
    assert len(upstream.requests) == 3  # the first request and its two retries
    assert b"toolwire_heal_failed" in response.content
    assert b"retry_http_status" not in response.content
    assert PEG.encode() in response.content  # what the server said, quoted
    if stream:
        assert response.status_code == 200  # sent before the first answer was read
    else:
        assert response.status_code == 502
        assert response.headers["x-should-retry"] == "false"


@pytest.mark.parametrize("stream", [False, True], ids=["whole", "streamed"])
async def test_a_retry_answered_by_another_500_still_ends_the_exchange(
    anyio_backend: str, stream: bool
) -> None:
    # A 500 that is no parser failure is the server's, not the model's: never asked again.
    outage = (500, b'{"error": {"message": "out of memory", "type": "server_error"}}', "")
    upstream = Upstream([PARSER_FAILURE, outage, PARSER_FAILURE])
    response = await _ask(FORMATS[0], stream, upstream, max_retries=2)
    assert len(upstream.requests) == 2
    assert b"out of memory" in response.content
    if stream:
        assert b"retry_http_status" in response.content
    else:
        assert response.status_code == 500
        assert response.headers["x-should-retry"] == "false"
