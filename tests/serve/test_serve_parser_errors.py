"""``toolwire serve --provider llama-server`` and llama-server's tool-parser failures.

The real command between the real SDKs and the scripted upstreams (``tests/e2e``), answering as
llama-server b11434 does (``tests/e2e/llama_server_streams.py``):

- a whole 500 that quotes a complete, valid call (issue 30): the proxy answered a bare
  ``text/plain`` 500 (the transport's ``assert first is not None``) and the SDKs retried it;
  now the call is the answer, on Chat Completions and on Messages;
- a stream that sends the call, then the in-band error (issue 27): the proxy withheld the call
  and passed on the error alone; now the call, judged valid, is delivered.
"""

from __future__ import annotations

import json
from collections.abc import Iterator

import anthropic
import openai
import pytest
from e2e.anthropic_server import Reply as MessagesReply
from e2e.anthropic_server import ScriptedMessagesServer
from e2e.anthropic_server import running_server as running_messages_server
from e2e.llama_server_streams import (
    CHAT_TOOLS,
    MESSAGES_TOOLS,
    QUOTED_VALID,
    USER,
    WHOLE,
    chat_stream,
    llama_server_500,
    messages_stream,
)
from heal.client import SDK_ON_TRIO_LEAK, read_stream
from heal.upstream import HealUpstream, Reply, running_upstream

from .proxy import Proxy, running_proxy

pytestmark = [
    pytest.mark.anyio,
    pytest.mark.filterwarnings(SDK_ON_TRIO_LEAK),
    pytest.mark.filterwarnings(
        "ignore:Async generator '(anthropic|httpx|httpx2|httpcore|httpcore2)[.]:ResourceWarning"
    ),
]


@pytest.fixture(scope="module")
def chat_upstream() -> Iterator[HealUpstream]:
    with running_upstream() as scripted:
        yield scripted


@pytest.fixture(scope="module")
def chat_proxy(chat_upstream: HealUpstream) -> Iterator[Proxy]:
    with running_proxy(
        "--upstream", chat_upstream.base_url, "--provider", "llama-server"
    ) as running:
        yield running


@pytest.fixture(scope="module")
def messages_upstream() -> Iterator[ScriptedMessagesServer]:
    with running_messages_server() as scripted:
        yield scripted


@pytest.fixture(scope="module")
def messages_proxy(messages_upstream: ScriptedMessagesServer) -> Iterator[Proxy]:
    upstream = f"{messages_upstream.base_url}/v1"
    with running_proxy("--upstream", upstream, "--provider", "llama-server") as running:
        yield running


@pytest.fixture(autouse=True)
def _fresh_scripts(request: pytest.FixtureRequest) -> None:
    if "chat_upstream" in request.fixturenames:
        request.getfixturevalue("chat_upstream").reset()
    if "messages_upstream" in request.fixturenames:
        upstream = request.getfixturevalue("messages_upstream")
        upstream.replies.clear()
        upstream.requests.clear()
        upstream.refused.clear()


async def test_a_whole_500_quoting_a_valid_call_is_answered_with_the_call(
    anyio_backend: str, chat_upstream: HealUpstream, chat_proxy: Proxy
) -> None:
    chat_upstream.script(Reply(status=500, body=llama_server_500(QUOTED_VALID)))
    async with openai.AsyncOpenAI(
        base_url=chat_proxy.base_url, api_key="sk-test", max_retries=0, timeout=20
    ) as client:
        raw = await client.chat.completions.with_raw_response.create(
            model="m",
            messages=USER,
            tools=CHAT_TOOLS,  # type: ignore[arg-type]
        )
    assert raw.status_code == 200
    assert raw.headers["content-type"].startswith("application/json")
    answer = raw.parse()
    (call,) = answer.choices[0].message.tool_calls or ()
    assert call.function.name == "get_weather"
    assert json.loads(call.function.arguments) == {"city": "Paris"}
    assert answer.choices[0].finish_reason == "tool_calls"
    assert len(chat_upstream.raw_bodies) == 1


async def test_a_whole_500_quoting_a_valid_call_is_answered_with_the_call_on_messages(
    anyio_backend: str, messages_upstream: ScriptedMessagesServer, messages_proxy: Proxy
) -> None:
    messages_upstream.script(MessagesReply(llama_server_500(QUOTED_VALID), status=500))
    async with anthropic.AsyncAnthropic(
        base_url=messages_proxy.root, api_key="sk-ant-test", max_retries=0, timeout=20
    ) as client:
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


async def test_a_call_streamed_before_the_in_band_error_is_delivered(
    anyio_backend: str, chat_upstream: HealUpstream, chat_proxy: Proxy
) -> None:
    chat_upstream.script(Reply(chat_stream(WHOLE)))
    async with openai.AsyncOpenAI(
        base_url=chat_proxy.base_url, api_key="sk-test", max_retries=0, timeout=20
    ) as client:
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
    assert len(chat_upstream.raw_bodies) == 1


async def test_a_call_streamed_before_the_in_band_error_is_delivered_on_messages(
    anyio_backend: str, messages_upstream: ScriptedMessagesServer, messages_proxy: Proxy
) -> None:
    messages_upstream.script(MessagesReply(messages_stream(WHOLE)))
    async with anthropic.AsyncAnthropic(
        base_url=messages_proxy.root, api_key="sk-ant-test", max_retries=0, timeout=20
    ) as client:
        async with client.messages.stream(
            model="m",
            max_tokens=100,
            messages=USER,  # type: ignore[arg-type]
            tools=MESSAGES_TOOLS,  # type: ignore[arg-type]
        ) as stream:
            message = await stream.get_final_message()
    (block,) = [b for b in message.content if b.type == "tool_use"]
    assert (block.name, block.input) == ("get_weather", {"city": "Paris"})
    assert len(messages_upstream.requests) == 1
