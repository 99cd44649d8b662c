"""An agent loop over real loopback HTTP, through ``httpx`` and through the ``openai`` SDK.

The scripted server (``tests/e2e/server.py``) replays recorded and hand-built Chat Completions
streams and, like a real backend, refuses a history that is not well formed. Every scenario runs
on both clients and both anyio backends. The judge decides; these tests check what reaches the
tool and what the *next request* carries.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from typing import Any

import httpx
import openai
import pytest

import toolwire
from toolwire.core.turn import Turn
from toolwire.loop import check_history

from .loop_steps import WRITE_AND_READ_TOOLS, Chat, ToolSpy, step
from .server import (
    CUT_WRITE_CALL_ID,
    Reply,
    ScriptedChatServer,
    cut_write_reply,
    running_server,
    text_reply,
    tool_calls_reply,
)

#: The ``openai`` SDK (3.57) breaks out of its own SSE iterator at ``[DONE]`` without closing it
#: (``AsyncStream.__stream__`` keeps ``_iter_events()`` in a local), so on trio the garbage
#: collector finalizes that chain of async generators (the SDK's, then its ``httpx2`` /
#: ``httpcore2`` ones) with a ResourceWarning. toolwire closes the stream it is given
#: (``aclose``), but cannot reach a generator local to the SDK. Only that warning, and only in
#: the SDK variant of each test, is ignored; every other warning is still an error.
SDK_ON_TRIO_LEAK = pytest.mark.filterwarnings(
    "ignore:Async generator '(openai|httpx2|httpcore2)[.]:ResourceWarning"
)

pytestmark = pytest.mark.anyio

MAX_TOKENS = 24
PROVIDER = "llama-cpp"

TOOLS = WRITE_AND_READ_TOOLS

GOOD_WRITE = '{"path": "notes.txt", "content": "hello"}'
USER = [{"role": "user", "content": "Write hello to notes.txt"}]


def _request(messages: list[dict[str, Any]]) -> dict[str, Any]:
    return {
        "model": "scripted-model",
        "messages": messages,
        "tools": TOOLS,
        "max_tokens": MAX_TOKENS,
        "stream": True,
    }


class HttpxChat:
    """``response.aiter_bytes()`` straight into ``toolwire.collect``."""

    def __init__(self, client: httpx.AsyncClient) -> None:
        self.client = client

    async def turn(self, messages: list[dict[str, Any]]) -> Turn:
        async with self.client.stream(
            "POST", "/chat/completions", json=_request(messages)
        ) as response:
            response.raise_for_status()
            return await toolwire.collect(
                response.aiter_bytes(), PROVIDER, max_tokens=MAX_TOKENS, tools=TOOLS
            )


class SdkChat:
    """The SDK's ``AsyncStream`` of chunk objects straight into ``toolwire.collect``."""

    def __init__(self, client: openai.AsyncOpenAI) -> None:
        self.client = client

    async def turn(self, messages: list[dict[str, Any]]) -> Turn:
        stream = await self.client.chat.completions.create(**_request(messages))
        return await toolwire.collect(stream, PROVIDER, max_tokens=MAX_TOKENS, tools=TOOLS)


@pytest.fixture
def server() -> Iterator[ScriptedChatServer]:
    with running_server() as scripted:
        yield scripted


@pytest.fixture(params=["httpx", pytest.param("openai", marks=SDK_ON_TRIO_LEAK)])
def via(request: pytest.FixtureRequest) -> str:
    kind: str = request.param
    return kind


@asynccontextmanager
async def chat_client(via: str, server: ScriptedChatServer) -> AsyncIterator[Chat]:
    if via == "httpx":
        async with httpx.AsyncClient(base_url=server.base_url, timeout=10) as client:
            yield HttpxChat(client)
    else:
        async with openai.AsyncOpenAI(
            base_url=server.base_url, api_key="x", max_retries=0, timeout=10
        ) as sdk:
            yield SdkChat(sdk)


def result_messages(request: dict[str, Any]) -> list[dict[str, Any]]:
    """Every tool result of a recorded request, in order.

    The llama-cpp profile sends each result as a user message that keeps ``tool_call_id`` (its
    server drops ``role: tool`` messages from the prompt): never a ``role: tool`` message.
    """
    messages = request["messages"]
    assert not [m for m in messages if m["role"] == "tool"]
    return [m for m in messages if m["role"] == "user" and "tool_call_id" in m]


def tool_messages(request: dict[str, Any]) -> dict[str, str]:
    """``tool_call_id -> result text`` of every tool result in a recorded request.

    The user message names the call on its first line, then quotes the result.
    """
    found = {}
    for message in result_messages(request):
        header, _, content = message["content"].partition("\n")
        assert header.startswith("Result of tool call `")
        assert header.endswith(f"(id {message['tool_call_id']}):")
        found[message["tool_call_id"]] = content
    return found


def replayed_arguments(request: dict[str, Any]) -> dict[str, str]:
    """``call id -> arguments text`` of every assistant call in a recorded request."""
    return {
        call["id"]: call["function"]["arguments"]
        for message in request["messages"]
        if message["role"] == "assistant"
        for call in message.get("tool_calls") or ()
    }


async def test_cut_write_never_runs_and_the_corrected_call_does(
    anyio_backend: str, via: str, server: ScriptedChatServer
) -> None:
    server.script(
        Reply(cut_write_reply()),
        Reply(tool_calls_reply(("call_fixed", "write", GOOD_WRITE))),
        Reply(text_reply("Wrote notes.txt.")),
    )
    tool = ToolSpy()
    messages = list(USER)
    async with chat_client(via, server) as chat:
        turn1, results1 = await step(chat, messages, tool, PROVIDER)
        assert tool.ran == []
        (cut,) = turn1.calls
        assert cut.id == CUT_WRITE_CALL_ID
        assert cut.truncated
        assert turn1.truncated
        assert turn1.stop_reason == "length"
        assert cut.verdict is not None
        assert cut.verdict.reason == "truncated"
        assert cut.arguments_raw.startswith('{ "path": "C:')  # the raw text stays on the record
        assert [r.status for r in results1] == ["rejected"]

        turn2, _ = await step(chat, messages, tool, PROVIDER)
        assert [c.outcome for c in turn2.calls] == ["ok"]
        assert tool.ran == [("write", "call_fixed", {"path": "notes.txt", "content": "hello"})]

        turn3, results3 = await step(chat, messages, tool, PROVIDER)
        assert turn3.text == "Wrote notes.txt."
        assert results3 == []

    assert server.refused == []
    second, third = server.requests[1], server.requests[2]
    assert tool_messages(second) == {CUT_WRITE_CALL_ID: cut.verdict.message}
    assert replayed_arguments(second) == {CUT_WRITE_CALL_ID: "{}"}
    assert check_history(second["messages"], PROVIDER) == []
    # A valid call goes back byte for byte.
    assert replayed_arguments(third)["call_fixed"] == GOOD_WRITE
    assert tool_messages(third)["call_fixed"] == "written"
    assert check_history(third["messages"], PROVIDER) == []


async def test_the_raw_cut_arguments_would_have_been_refused(
    anyio_backend: str, server: ScriptedChatServer
) -> None:
    """Why ``{}`` is replayed: a strict backend refuses arguments that do not parse."""
    server.script(Reply(cut_write_reply()), Reply(text_reply("never sent")))
    async with chat_client("httpx", server) as chat:
        turn = await chat.turn(list(USER))
        (cut,) = turn.calls
        raw_history: list[dict[str, Any]] = [
            *USER,
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {
                        "id": cut.id,
                        "type": "function",
                        "function": {"name": "write", "arguments": cut.arguments_raw},
                    }
                ],
            },
            {"role": "tool", "tool_call_id": cut.id, "content": "cut off"},
        ]
        assert check_history(raw_history, PROVIDER)[0].kind == "arguments_not_json"
        with pytest.raises(httpx.HTTPStatusError):
            await chat.turn(raw_history)
    assert server.refused


async def test_repairable_call_runs_with_the_repaired_object(
    anyio_backend: str, via: str, server: ScriptedChatServer
) -> None:
    raw = '{"path": "notes.txt", "content": "hello",}'
    server.script(
        Reply(tool_calls_reply(("call_comma", "write", raw))), Reply(text_reply("Done."))
    )
    tool = ToolSpy()
    messages = list(USER)
    async with chat_client(via, server) as chat:
        turn, results = await step(chat, messages, tool, PROVIDER)
        await step(chat, messages, tool, PROVIDER)
    (call,) = turn.calls
    assert call.outcome == "repaired"
    assert call.verdict is not None
    assert "trailing_commas" in call.verdict.repairs
    assert call.arguments_raw == raw
    assert tool.ran == [("write", "call_comma", {"path": "notes.txt", "content": "hello"})]
    assert [r.status for r in results] == ["ok"]
    replayed = replayed_arguments(server.requests[1])["call_comma"]
    assert replayed != raw
    assert json.loads(replayed) == {"path": "notes.txt", "content": "hello"}
    assert server.refused == []


@pytest.mark.parametrize(
    ("name", "raw", "reason"),
    [
        pytest.param("write", '{"path": "notes.txt"}', "schema", id="schema-invalid"),
        pytest.param("delete_everything", '{"path": "/"}', "unknown_tool", id="unknown-tool"),
    ],
)
async def test_rejected_call_never_runs_and_the_model_reads_why(
    anyio_backend: str, via: str, server: ScriptedChatServer, name: str, raw: str, reason: str
) -> None:
    server.script(
        Reply(tool_calls_reply(("call_bad", name, raw))),
        Reply(tool_calls_reply(("call_good", "write", GOOD_WRITE))),
        Reply(text_reply("Done.")),
    )
    tool = ToolSpy()
    messages = list(USER)
    async with chat_client(via, server) as chat:
        turn1, results1 = await step(chat, messages, tool, PROVIDER)
        assert tool.ran == []
        await step(chat, messages, tool, PROVIDER)
        await step(chat, messages, tool, PROVIDER)
    (bad,) = turn1.calls
    assert bad.outcome == "rejected"
    assert bad.verdict is not None
    assert bad.verdict.reason == reason
    assert bad.verdict.message
    assert [r.status for r in results1] == ["rejected"]
    assert tool_messages(server.requests[1]) == {"call_bad": bad.verdict.message}
    assert replayed_arguments(server.requests[1]) == {"call_bad": "{}"}
    assert [ran[1] for ran in tool.ran] == ["call_good"]
    assert server.refused == []


async def test_two_parallel_calls_one_bad(
    anyio_backend: str, via: str, server: ScriptedChatServer
) -> None:
    server.script(
        Reply(
            tool_calls_reply(
                ("call_read", "read", '{"path": "notes.txt"}'),
                ("call_write", "write", '{"path": "notes.txt", "content": 42}'),
            )
        ),
        Reply(text_reply("Done.")),
    )
    tool = ToolSpy()
    messages = list(USER)
    async with chat_client(via, server) as chat:
        turn, results = await step(chat, messages, tool, PROVIDER)
        await step(chat, messages, tool, PROVIDER)
    assert [c.outcome for c in turn.calls] == ["ok", "rejected"]
    assert tool.ran == [("read", "call_read", {"path": "notes.txt"})]
    assert [(r.call_id, r.status) for r in results] == [
        ("call_read", "ok"),
        ("call_write", "rejected"),
    ]
    tool_results = result_messages(server.requests[1])
    assert [m["tool_call_id"] for m in tool_results] == ["call_read", "call_write"]
    assert json.loads(tool_messages(server.requests[1])["call_read"]) == {"content": "file text"}
    assert replayed_arguments(server.requests[1]) == {
        "call_read": '{"path": "notes.txt"}',
        "call_write": "{}",
    }
    assert server.refused == []


def _cut_mid_call() -> bytes:
    return tool_calls_reply(("call_cut", "write", GOOD_WRITE), piece=4)


async def test_connection_dropped_mid_call_is_a_cut_call_that_never_runs(
    anyio_backend: str, via: str, server: ScriptedChatServer
) -> None:
    """The connection breaks inside the chunked body (no terminating chunk).

    httpx raises ``RemoteProtocolError`` (the SDK wraps it in ``APIConnectionError``); toolwire
    records it as a fatal ``transport`` error on the turn and finishes with what it has: the open
    call is cut, rejected, never run, and the history continues with the judge's message.
    """
    server.script(
        Reply(_cut_mid_call(), cut="drop", events=5),
        Reply(tool_calls_reply(("call_retry", "write", GOOD_WRITE))),
        Reply(text_reply("Done.")),
    )
    tool = ToolSpy()
    messages = list(USER)
    async with chat_client(via, server) as chat:
        turn, results = await step(chat, messages, tool, PROVIDER)
        assert tool.ran == []
        await step(chat, messages, tool, PROVIDER)
        await step(chat, messages, tool, PROVIDER)
    assert [error.kind for error in turn.errors] == ["transport"]
    assert turn.errors[0].fatal
    (cut,) = turn.calls
    assert cut.truncated
    assert cut.outcome == "rejected"
    assert [r.status for r in results] == ["rejected"]
    assert replayed_arguments(server.requests[1]) == {"call_cut": "{}"}
    assert [ran[1] for ran in tool.ran] == ["call_retry"]
    assert server.refused == []


async def test_connection_dropped_after_the_arguments_closed_still_cuts_the_last_call(
    anyio_backend: str, via: str, server: ScriptedChatServer
) -> None:
    """Dropped before the finish, after the call's text happens to close: same on both clients.

    A dropped stream cuts the call being generated last (``close_calls_and_finish``); the
    outcome must not depend on whether the bytes came through httpx or the SDK.
    """
    body = tool_calls_reply(("call_cut", "write", GOOD_WRITE), piece=len(GOOD_WRITE))
    server.script(Reply(body, cut="drop", events=3))
    tool = ToolSpy()
    async with chat_client(via, server) as chat:
        turn, _ = await step(chat, list(USER), tool, PROVIDER)
    assert [error.kind for error in turn.errors] == ["transport"]
    assert turn.calls[0].arguments_raw == GOOD_WRITE
    assert turn.calls[0].truncated
    assert tool.ran == []


async def test_stream_ended_mid_call_without_done_is_a_cut_call(
    anyio_backend: str, via: str, server: ScriptedChatServer
) -> None:
    """The body ends cleanly but mid-call, with no finish reason and no ``[DONE]``.

    Over httpx toolwire sees that no end marker came (``disconnected``, ``no_finish``). The SDK
    consumes ``[DONE]`` itself, but without a finish reason or a usage report its clean end is
    not taken for one: the same verdict either way, and the call never runs.
    """
    server.script(
        Reply(_cut_mid_call(), cut="eof", events=5),
        Reply(tool_calls_reply(("call_retry", "write", GOOD_WRITE))),
        Reply(text_reply("Done.")),
    )
    tool = ToolSpy()
    messages = list(USER)
    async with chat_client(via, server) as chat:
        turn, results = await step(chat, messages, tool, PROVIDER)
        assert tool.ran == []
        await step(chat, messages, tool, PROVIDER)
        await step(chat, messages, tool, PROVIDER)
    assert turn.stop_reason == "disconnected"
    assert "no_finish" in turn.truncation_evidence
    (cut,) = turn.calls
    assert cut.truncated
    assert cut.outcome == "rejected"
    assert [r.status for r in results] == ["rejected"]
    assert replayed_arguments(server.requests[1]) == {"call_cut": "{}"}
    assert [ran[1] for ran in tool.ran] == ["call_retry"]
    assert server.refused == []


async def test_every_request_of_a_long_loop_is_well_formed(
    anyio_backend: str, via: str, server: ScriptedChatServer
) -> None:
    """All the scenarios in one history: what a real run accumulates."""
    server.script(
        Reply(cut_write_reply()),
        Reply(tool_calls_reply(("c2", "write", '{"path": "a", "content": "b",}'))),
        Reply(tool_calls_reply(("c3", "nope", "{}"), ("c4", "read", '{"path": "a"}'))),
        Reply(tool_calls_reply(("c5", "write", '{"path": "a"}'))),
        Reply(text_reply("All done.")),
    )
    tool = ToolSpy()
    messages = list(USER)
    async with chat_client(via, server) as chat:
        for _ in range(5):
            await step(chat, messages, tool, PROVIDER)
    assert [ran[1] for ran in tool.ran] == ["c2", "c4"]
    assert len(server.requests) == 5
    for request in server.requests:
        assert check_history(request["messages"], PROVIDER) == []
    assert server.refused == []
