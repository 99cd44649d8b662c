"""Healing with calls the server left in the text (issue 17, part 4): the transport and the proxy.

The upstream (llama-cpp-python's profile, whose text calls are read by default) answers with
``<tool_call>...</tool_call>`` in the text, the way a server with no tool parser for the model
sends it. The client is the unchanged ``openai`` SDK: it must see a real structured call (with
``finish_reason: tool_calls``) and none of the markup; a cut or rejected call never reaches it
and is asked for again, like any rejected call; JSON in prose stays text, byte for byte.
Streamed and not, through :class:`toolwire.HealingTransport` and through ``toolwire serve``.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from typing import Any

import openai
import pytest
from e2e.server import text_reply, tool_calls_reply

from .client import (
    GOOD_WRITE,
    SDK_ON_TRIO_LEAK,
    Received,
    Tools,
    healed_client,
    read_stream,
    request,
)
from .upstream import HealUpstream, Reply, completion, running_upstream

pytestmark = [pytest.mark.anyio, pytest.mark.filterwarnings(SDK_ON_TRIO_LEAK)]

WRITTEN = json.loads(GOOD_WRITE)
#: SmolLM2's form (``tests/demo/recordings``): a list inside one hermes block.
WRITE_CALL = '<tool_call>[{"name": "write", "arguments": ' + GOOD_WRITE + "}]</tool_call>"
READ_CALL = '<tool_call>{"name": "read", "arguments": {"path": "notes.txt"}}</tool_call>'
#: Cut at the output limit in the middle of the content string.
CUT_CALL = '<tool_call>[{"name": "write", "arguments": {"path": "notes.txt", "content": "hel'
#: Issue 27: SmolLM2's form with the call object's ``}`` missing, its wrapper complete.
UNBALANCED_CALL = '<tool_call>[{"name": "write", "arguments": ' + GOOD_WRITE + "]</tool_call>"
#: Valid JSON, but ``content`` is required by the tool's schema.
INVALID_CALL = '<tool_call>{"name": "write", "arguments": {"path": "notes.txt"}}</tool_call>'
#: What stays text: a call object in prose, and a quoted block with prose after it.
PROSE = [
    'Here is the call as JSON: {"name": "write", "arguments": ' + GOOD_WRITE + "}, run it.",
    "A model writes " + READ_CALL + " and then stops; that is all.",
]


@pytest.fixture
def upstream() -> Iterator[HealUpstream]:
    with running_upstream() as scripted:
        yield scripted


@asynccontextmanager
async def _transport_client(upstream: HealUpstream) -> AsyncIterator[openai.AsyncOpenAI]:
    async with healed_client(upstream.base_url, "llama-cpp") as client:
        yield client


async def _streamed(upstream: HealUpstream, **extra: Any) -> Received:
    async with _transport_client(upstream) as client:
        return await read_stream(await client.chat.completions.create(**request(**extra)))


async def _whole(upstream: HealUpstream, **extra: Any) -> Received:
    async with _transport_client(upstream) as client:
        reply = await client.chat.completions.create(**request(stream=False, **extra))
    return _received(reply)


def _received(reply: Any) -> Received:
    """A non-streamed completion as the same :class:`Received` a stream gives."""
    (choice,) = reply.choices
    message = choice.message
    return Received(
        text=message.content or "",
        calls=[
            {"id": call.id, "name": call.function.name, "arguments": call.function.arguments}
            for call in message.tool_calls or ()
        ],
        finish_reason=choice.finish_reason,
    )


def _text(text: str, finish_reason: str = "stop", *, streamed: bool) -> Reply:
    """The upstream's answer ``text`` (in 5-character deltas when streamed)."""
    if streamed:
        return Reply(text_reply(text, finish_reason))
    return Reply(completion(content=text, finish_reason=finish_reason))


STREAMED = pytest.mark.parametrize("streamed", [True, False], ids=["streamed", "whole"])


@STREAMED
async def test_a_call_in_the_text_reaches_the_sdk_as_a_structured_call(
    anyio_backend: str, upstream: HealUpstream, streamed: bool
) -> None:
    upstream.script(_text("I'll write it.\n" + WRITE_CALL, streamed=streamed))
    received = await (_streamed if streamed else _whole)(upstream)
    tools = Tools()
    tools.run(received.calls)
    assert [(name, arguments) for name, _, arguments in tools.ran] == [("write", WRITTEN)]
    assert received.calls[0]["arguments"] == GOOD_WRITE  # as the model wrote it
    assert received.text == "I'll write it.\n"  # no markup reaches the client's text
    assert "<tool_call>" not in received.text
    assert received.finish_reason == "tool_calls"  # the server said stop: it saw no call
    assert len(upstream.requests) == 1


async def test_a_whole_reply_that_is_only_a_call_has_no_text_left(
    anyio_backend: str, upstream: HealUpstream
) -> None:
    upstream.script(_text(WRITE_CALL, streamed=False))
    async with _transport_client(upstream) as client:
        reply = await client.chat.completions.create(**request(stream=False))
    (choice,) = reply.choices
    assert choice.message.content is None  # the markup was all the text
    assert [call.function.name for call in choice.message.tool_calls or ()] == ["write"]
    assert choice.finish_reason == "tool_calls"


@pytest.mark.parametrize(
    ("cut", "limit"),
    [
        pytest.param('<tool_call>[{"name": "write", "arguments', 16, id="in-the-key"),
        pytest.param('<tool_call>{"name": "write"', 12, id="after-the-name"),
    ],
)
async def test_a_call_cut_before_its_arguments_is_healed_too(
    anyio_backend: str, upstream: HealUpstream, cut: str, limit: int
) -> None:
    """SmolLM2 on the real server at ``max_tokens=16`` stops inside ``"arguments``."""
    upstream.script(_text(cut, "length", streamed=True), _text(READ_CALL, streamed=True))
    received = await _streamed(upstream, max_tokens=limit)
    assert [call["name"] for call in received.calls] == ["read"]
    assert received.text == ""
    assert len(upstream.requests) == 2


@STREAMED
async def test_two_calls_in_the_text_go_out_as_two_calls(
    anyio_backend: str, upstream: HealUpstream, streamed: bool
) -> None:
    upstream.script(_text(WRITE_CALL + "\n" + READ_CALL, streamed=streamed))
    received = await (_streamed if streamed else _whole)(upstream)
    tools = Tools()
    tools.run(received.calls)
    assert [(name, arguments) for name, _, arguments in tools.ran] == [
        ("write", WRITTEN),
        ("read", {"path": "notes.txt"}),
    ]
    assert len({call["id"] for call in received.calls}) == 2
    assert received.text.strip() == ""
    assert received.finish_reason == "tool_calls"


@STREAMED
@pytest.mark.parametrize(
    ("broken", "finish", "cause"),
    [
        pytest.param(CUT_CALL, "length", "token limit", id="cut-at-the-limit"),
        pytest.param(INVALID_CALL, "stop", "content", id="invalid-against-the-schema"),
        pytest.param(UNBALANCED_CALL, "stop", "a closing bracket is missing", id="a-brace-missing"),
    ],
)
async def test_a_broken_call_in_the_text_never_runs_and_is_asked_for_again(
    anyio_backend: str,
    upstream: HealUpstream,
    streamed: bool,
    broken: str,
    finish: str,
    cause: str,
) -> None:
    retry = (
        Reply(tool_calls_reply(("call_ok", "write", GOOD_WRITE)))
        if streamed
        else Reply(completion(("call_ok", "write", GOOD_WRITE)))
    )
    upstream.script(_text("Writing.\n" + broken, finish, streamed=streamed), retry)
    received = await (_streamed if streamed else _whole)(upstream)
    tools = Tools()
    tools.run(received.calls)
    assert tools.ran == [("write", "call_ok", WRITTEN)]  # only the retry's call ran
    assert "<tool_call>" not in received.text
    assert received.finish_reason == "tool_calls"

    first, asked = upstream.requests
    # The broken call is replayed safely, with toolwire's message as its result.
    (assistant,) = [
        m for m in asked["messages"][len(first["messages"]) :] if m["role"] == "assistant"
    ]
    (replayed,) = assistant["tool_calls"]
    assert (replayed["function"]["name"], replayed["function"]["arguments"]) == ("write", "{}")
    # llama-cpp-python's plain chatml renders only ``content``: the call is replayed there as
    # the text the model wrote (the profile's ``text_calls_in_history``).
    assert assistant["content"] == "Writing.\n" + broken
    results = [m for m in asked["messages"] if m.get("tool_call_id") == replayed["id"]]
    assert len(results) == 1
    assert cause in results[0]["content"]


@STREAMED
@pytest.mark.parametrize("prose", PROSE, ids=["json-in-prose", "quoted-block"])
async def test_json_and_markup_in_prose_stay_text_byte_for_byte(
    anyio_backend: str, upstream: HealUpstream, streamed: bool, prose: str
) -> None:
    upstream.script(_text(prose, streamed=streamed))
    received = await (_streamed if streamed else _whole)(upstream)
    assert received.calls == []
    assert received.text == prose
    assert received.finish_reason == "stop"


async def test_a_whole_body_with_prose_goes_to_the_client_byte_for_byte(
    anyio_backend: str, upstream: HealUpstream
) -> None:
    body = completion(content=PROSE[0], finish_reason="stop")
    upstream.script(Reply(body))
    async with _transport_client(upstream) as client:
        raw = await client.chat.completions.with_raw_response.create(**request(stream=False))
    assert raw.http_response.content == body


# -- through ``toolwire serve`` ----------------------------------------------------------------


async def test_the_proxy_heals_calls_in_the_text_streamed_and_not(
    anyio_backend: str, chat_upstream: HealUpstream, chat_proxy: Any
) -> None:
    # ``toolwire serve --provider llama-cpp`` and its upstream, shared (tests/conftest.py).
    upstream, proxied = chat_upstream, chat_proxy.base_url
    upstream.reset()
    upstream.script(
        _text("I'll write it.\n" + WRITE_CALL, streamed=True),
        _text(CUT_CALL, "length", streamed=True),
        _text(READ_CALL, streamed=True),
        _text(PROSE[1], streamed=False),
    )
    async with openai.AsyncOpenAI(base_url=proxied, api_key="sk-test", max_retries=0) as client:
        first = await read_stream(await client.chat.completions.create(**request()))
        healed = await read_stream(await client.chat.completions.create(**request()))
        prose = _received(await client.chat.completions.create(**request(stream=False)))
    assert (first.text, first.finish_reason) == ("I'll write it.\n", "tool_calls")
    assert [(c["name"], c["arguments"]) for c in first.calls] == [("write", GOOD_WRITE)]
    # The cut call never reached the client: the retry's call did.
    assert [(c["name"], json.loads(c["arguments"])) for c in healed.calls] == [
        ("read", {"path": "notes.txt"})
    ]
    assert healed.text == ""
    assert healed.finish_reason == "tool_calls"
    assert (prose.text, prose.calls, prose.finish_reason) == (PROSE[1], [], "stop")
    assert len(upstream.requests) == 4
