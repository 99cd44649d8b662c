"""A server's tool-parser failure through the healing transport: every call it holds is judged.

issue 30: a whole (non-streamed) request whose upstream answered llama-server's 500 quoting a
complete, valid call (``Failed to parse input at pos 0: <tool_call>...``) crashed the transport
(``assert first is not None``): the call is now judged and delivered, a 200 in the format's own
shape, on Chat Completions (the ``openai`` SDK) and Messages (the ``anthropic`` SDK).
issue 27: llama-server b11434's words (``The model produced output that does not match the
expected peg-native format``) were passed through unhealed on a whole request; and on a stream
the call the server sent before its in-band error was withheld, the error alone passed on. The
upstreams are the scripted loopback servers (``tests/e2e``), the bodies llama-server's
(``tests/e2e/llama_server_streams.py``).
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from typing import Any

import anthropic
import httpx
import httpx2
import openai
import pytest
from e2e.anthropic_server import Reply as MessagesReply
from e2e.anthropic_server import ScriptedMessagesServer, messages_reply
from e2e.anthropic_server import running_server as running_messages_server
from e2e.llama_server_streams import (
    CHAT_TOOLS,
    CUT,
    MESSAGES_TOOLS,
    PEG,
    QUOTED_VALID,
    SCHEMA,
    USER,
    WHOLE,
    chat_stream,
    llama_server_500,
    messages_stream,
    responses_stream,
)
from e2e.server import tool_calls_reply

import toolwire
from toolwire.heal import Httpx2Bridge

from .client import SDK_ON_TRIO_LEAK, read_stream
from .upstream import HealUpstream, Reply, completion, running_upstream

pytestmark = [
    pytest.mark.anyio,
    pytest.mark.filterwarnings(SDK_ON_TRIO_LEAK),
    pytest.mark.filterwarnings(
        "ignore:Async generator '(anthropic|httpx|httpx2|httpcore|httpcore2)[.]:ResourceWarning"
    ),
]


@pytest.fixture
def upstream() -> Iterator[HealUpstream]:
    with running_upstream() as scripted:
        yield scripted


@pytest.fixture
def messages_upstream() -> Iterator[ScriptedMessagesServer]:
    with running_messages_server() as scripted:
        yield scripted


@asynccontextmanager
async def chat_client(base_url: str) -> AsyncIterator[openai.AsyncOpenAI]:
    transport = toolwire.HealingTransport(httpx.AsyncHTTPTransport(), "llama-server")
    async with httpx.AsyncClient(transport=transport, timeout=10) as http:
        async with openai.AsyncOpenAI(
            base_url=base_url, api_key="sk-test", max_retries=0, http_client=http
        ) as client:
            yield client


@asynccontextmanager
async def messages_client(base_url: str) -> AsyncIterator[anthropic.AsyncAnthropic]:
    bridge = Httpx2Bridge(toolwire.HealingTransport(provider="llama-server"))
    async with httpx2.AsyncClient(transport=bridge, timeout=10) as http:
        async with anthropic.AsyncAnthropic(
            base_url=base_url, api_key="sk-ant-test", max_retries=0, http_client=http
        ) as client:
            yield client


def _retry_results(body: bytes) -> list[str]:
    return [m["content"] for m in json.loads(body)["messages"] if "tool_call_id" in m]


# -- whole responses (issue 30, issue 27) ------------------------------------------------------


async def test_a_whole_500_quoting_a_valid_call_delivers_it_on_chat(
    anyio_backend: str, upstream: HealUpstream
) -> None:
    upstream.script(Reply(status=500, body=llama_server_500(QUOTED_VALID)))
    async with chat_client(upstream.base_url) as client:
        answer = await client.chat.completions.create(
            model="m",
            messages=USER,
            tools=CHAT_TOOLS,  # type: ignore[arg-type]
        )
    (call,) = answer.choices[0].message.tool_calls or ()
    assert call.function.name == "get_weather"
    assert json.loads(call.function.arguments) == {"city": "Paris"}
    assert answer.choices[0].finish_reason == "tool_calls"
    assert len(upstream.raw_bodies) == 1  # nothing to ask again


async def test_a_whole_500_quoting_a_valid_call_delivers_it_on_messages(
    anyio_backend: str, messages_upstream: ScriptedMessagesServer
) -> None:
    messages_upstream.script(MessagesReply(llama_server_500(QUOTED_VALID), status=500))
    async with messages_client(messages_upstream.base_url) as client:
        message = await client.messages.create(
            model="m",
            max_tokens=100,
            messages=USER,  # type: ignore[arg-type]
            tools=MESSAGES_TOOLS,  # type: ignore[arg-type]
        )
    (block,) = [b for b in message.content if b.type == "tool_use"]
    assert (block.name, block.input) == ("get_weather", {"city": "Paris"})
    assert message.stop_reason == "tool_use"
    assert len(messages_upstream.requests) == 1


async def test_a_whole_500_in_today_s_words_is_asked_again_on_chat(
    anyio_backend: str, upstream: HealUpstream
) -> None:
    upstream.script(
        Reply(status=500, body=llama_server_500()),
        Reply(completion(("c2", "get_weather", WHOLE))),
    )
    async with chat_client(upstream.base_url) as client:
        answer = await client.chat.completions.create(
            model="m",
            messages=USER,
            tools=CHAT_TOOLS,  # type: ignore[arg-type]
        )
    (call,) = answer.choices[0].message.tool_calls or ()
    assert (call.function.name, call.function.arguments) == ("get_weather", WHOLE)
    _, retry = upstream.raw_bodies
    (result,) = _retry_results(retry)
    # The truth: what the server said, and that it quoted nothing.
    assert result.startswith("The server (llama.cpp) could not parse your output")
    assert PEG in result
    assert "quoted none of your output" in result


async def test_a_whole_500_in_today_s_words_is_asked_again_on_messages(
    anyio_backend: str, messages_upstream: ScriptedMessagesServer
) -> None:
    messages_upstream.script(
        MessagesReply(llama_server_500(), status=500),
        MessagesReply(
            messages_reply(messages_upstream, ("tool_use", "toolu_2", "get_weather", WHOLE))
        ),
    )
    async with messages_client(messages_upstream.base_url) as client:
        message = await client.messages.create(
            model="m",
            max_tokens=100,
            messages=USER,  # type: ignore[arg-type]
            tools=MESSAGES_TOOLS,  # type: ignore[arg-type]
        )
    (block,) = [b for b in message.content if b.type == "tool_use"]
    assert (block.name, block.input) == ("get_weather", {"city": "Paris"})
    assert len(messages_upstream.requests) == 2
    assert messages_upstream.refused == []


# -- streams: the call sent before the in-band error (issue 27) --------------------------------


async def test_a_streamed_call_before_the_error_is_delivered_on_chat(
    anyio_backend: str, upstream: HealUpstream
) -> None:
    upstream.script(Reply(chat_stream(WHOLE)))
    async with chat_client(upstream.base_url) as client:
        received = await read_stream(
            await client.chat.completions.create(
                model="m",
                messages=USER,
                tools=CHAT_TOOLS,
                stream=True,  # type: ignore[arg-type]
            )
        )
    assert [(c["name"], c["arguments"]) for c in received.calls] == [("get_weather", WHOLE)]
    assert received.finish_reason == "tool_calls"
    assert len(upstream.raw_bodies) == 1


async def test_a_streamed_call_cut_before_the_error_is_asked_again_on_chat(
    anyio_backend: str, upstream: HealUpstream
) -> None:
    upstream.script(
        Reply(chat_stream(CUT)), Reply(tool_calls_reply(("call_2", "get_weather", WHOLE)))
    )
    async with chat_client(upstream.base_url) as client:
        received = await read_stream(
            await client.chat.completions.create(
                model="m",
                messages=USER,
                tools=CHAT_TOOLS,
                stream=True,  # type: ignore[arg-type]
            )
        )
    assert [(c["name"], c["arguments"]) for c in received.calls] == [("get_weather", WHOLE)]
    assert len(upstream.raw_bodies) == 2
    (result,) = _retry_results(upstream.raw_bodies[1])
    assert "why it stopped is not known" in result  # not the token limit: nothing said so
    assert "limit" not in result


async def test_a_streamed_call_before_the_error_is_delivered_on_messages(
    anyio_backend: str, messages_upstream: ScriptedMessagesServer
) -> None:
    messages_upstream.script(MessagesReply(messages_stream(WHOLE)))
    async with messages_client(messages_upstream.base_url) as client:
        async with client.messages.stream(
            model="m",
            max_tokens=100,
            messages=USER,  # type: ignore[arg-type]
            tools=MESSAGES_TOOLS,  # type: ignore[arg-type]
        ) as stream:
            message = await stream.get_final_message()
    (block,) = [b for b in message.content if b.type == "tool_use"]
    assert (block.name, block.input) == ("get_weather", {"city": "Paris"})
    assert message.stop_reason == "tool_use"
    assert len(messages_upstream.requests) == 1


@pytest.mark.parametrize(("arguments", "sent"), [(WHOLE, 1), (CUT, 2)], ids=["whole", "cut"])
async def test_a_streamed_call_before_the_error_is_judged_on_responses(
    anyio_backend: str, arguments: str, sent: int
) -> None:
    # llama-server's /v1/responses: its error in the Chat shape, with no event name.
    answers = [responses_stream(arguments), responses_stream(WHOLE)]
    requests: list[bytes] = []

    def handler(request: httpx.Request) -> httpx.Response:
        requests.append(request.content)
        body = answers[len(requests) - 1]
        return httpx.Response(200, content=body, headers={"content-type": "text/event-stream"})

    transport = toolwire.HealingTransport(httpx.MockTransport(handler), "llama-server")
    body = {
        "model": "m",
        "input": "What is the weather in Paris?",
        "tools": [{"type": "function", "name": "get_weather", "parameters": SCHEMA}],
        "stream": True,
    }
    async with httpx.AsyncClient(transport=transport, base_url="http://upstream/v1") as http:
        response = await http.post("/responses", json=body)
    done = [
        json.loads(line[6:])["item"]
        for line in response.text.splitlines()
        if line.startswith("data: ") and '"response.output_item.done"' in line
    ]
    calls = [(item["name"], item["arguments"]) for item in done if item["type"] == "function_call"]
    assert calls == [("get_weather", WHOLE)]
    assert len(requests) == sent


# -- Ollama's native /api/chat -----------------------------------------------------------------


def _ollama_answer(call: dict[str, Any] | None) -> bytes:
    message: dict[str, Any] = {"role": "assistant", "content": ""}
    if call is not None:
        message["tool_calls"] = [{"function": call}]
    line = {
        "model": "gpt-oss",
        "created_at": "2026-01-01T00:00:00Z",
        "message": message,
        "done": True,
        "done_reason": "stop",
    }
    return json.dumps(line).encode()


@pytest.mark.parametrize(
    ("error", "sent"),
    [
        # harmony quoting arguments with one reading (a trailing comma), one tool offered:
        # the repaired call is the answer (ollama/ollama#17638's shape).
        (
            "error parsing tool call: raw='{\"city\": \"Paris\",}', err=invalid character '}' "
            "looking for beginning of object key string",
            1,
        ),
        # Go's own JSON error (qwen3-vl, ministral), quoting nothing: asked again.
        ("invalid character ']' after object key:value pair", 2),
    ],
    ids=["quoted-one-reading", "go-json"],
)
async def test_ollama_s_500_on_a_whole_request_is_judged(
    anyio_backend: str, error: str, sent: int
) -> None:
    requests: list[dict[str, Any]] = []

    def handler(request: httpx.Request) -> httpx.Response:
        requests.append(json.loads(request.content))
        if len(requests) == 1:
            return httpx.Response(500, json={"error": error})
        answer = _ollama_answer({"name": "get_weather", "arguments": {"city": "Paris"}})
        return httpx.Response(200, content=answer, headers={"content-type": "application/json"})

    transport = toolwire.HealingTransport(httpx.MockTransport(handler), "ollama")
    body = {"model": "gpt-oss", "messages": USER, "tools": CHAT_TOOLS, "stream": False}
    async with httpx.AsyncClient(transport=transport, base_url="http://ollama") as http:
        response = await http.post("/api/chat", json=body)
    assert response.status_code == 200
    answer = response.json()
    assert answer["done"] is True
    (call,) = answer["message"]["tool_calls"]
    assert call["function"]["name"] == "get_weather"
    assert call["function"]["arguments"] == {"city": "Paris"}
    assert len(requests) == sent
