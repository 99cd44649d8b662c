"""An agent loop over real loopback HTTP speaking the Anthropic Messages API.

Driven by the ``anthropic`` SDK (``AsyncAnthropic(...).messages.create(stream=True)``, its stream
object passed to ``toolwire.collect``) and by ``httpx`` (the response itself as the source). The
scripted server (``tests/e2e/anthropic_server.py``) validates each history like the real API:
``tool_result`` blocks first in the next user message, ids paired, inputs objects, thinking
signatures as issued. The judge decides; these tests check what reaches the tool and what the
*next request* carries.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from typing import Any

import anthropic
import httpx
import pytest

import toolwire
from toolwire.core.turn import Turn

from .anthropic_server import (
    CUT_MAKE_FILE,
    CUT_MAKE_FILE_ID,
    OVERLOADED,
    Reply,
    ScriptedMessagesServer,
    history_errors,
    messages_reply,
    running_server,
)
from .loop_steps import Chat, ToolSpy, step

pytestmark = pytest.mark.anyio

#: On ``event: error`` the ``anthropic`` SDK (1.17) raises from inside ``AsyncStream.__stream__``
#: without closing its own ``_iter_events()`` / ``SSEDecoder.aiter_bytes()`` generators (locals
#: of that frame), so on trio the garbage collector finalizes them with a ResourceWarning.
#: toolwire closes the stream it was given; it cannot reach generators local to the SDK. Only
#: that warning, and only in the SDK variant of the in-band error test, is ignored.
SDK_ERROR_LEAK = pytest.mark.filterwarnings(
    "ignore:Async generator 'anthropic[.]_streaming[.]:ResourceWarning"
)

PROVIDER = "anthropic"
MAX_TOKENS = 124
TOOLS: list[dict[str, Any]] = [
    {
        "name": "make_file",
        "description": "Write lines to a file.",
        "input_schema": {
            "type": "object",
            "properties": {
                "filename": {"type": "string"},
                "lines_of_text": {"type": "array", "items": {"type": "string"}},
            },
            "required": ["filename", "lines_of_text"],
        },
    }
]
USER = [{"role": "user", "content": "Write a tax guide to taxes.txt"}]
GOOD_INPUT = {"filename": "taxes.txt", "lines_of_text": ["# TAX GUIDE", "Keep it short."]}
FIXED_ID = "toolu_fixed"
THOUGHT = "The last call was cut at the limit; I will send a shorter file."


def _request(messages: list[dict[str, Any]]) -> dict[str, Any]:
    return {
        "model": "claude-scripted",
        "max_tokens": MAX_TOKENS,
        "messages": messages,
        "tools": TOOLS,
        "stream": True,
    }


class HttpxChat:
    """The ``httpx.Response`` itself into ``toolwire.collect``."""

    def __init__(self, client: httpx.AsyncClient) -> None:
        self.client = client

    async def turn(self, messages: list[dict[str, Any]]) -> Turn:
        body = _request(messages)
        async with self.client.stream("POST", "/v1/messages", json=body) as response:
            return await toolwire.collect(response, PROVIDER, request=body, tools=TOOLS)


class SdkChat:
    """The SDK's ``AsyncStream`` of raw ``MessageStreamEvent`` objects into ``collect``."""

    def __init__(self, client: anthropic.AsyncAnthropic) -> None:
        self.client = client

    async def turn(self, messages: list[dict[str, Any]]) -> Turn:
        body = _request(messages)
        stream = await self.client.messages.create(**body)
        return await toolwire.collect(stream, PROVIDER, request=body, tools=TOOLS)


@pytest.fixture
def server() -> Iterator[ScriptedMessagesServer]:
    with running_server() as scripted:
        yield scripted


@pytest.fixture(params=["httpx", "anthropic"])
def via(request: pytest.FixtureRequest) -> str:
    kind: str = request.param
    return kind


@asynccontextmanager
async def chat_client(via: str, server: ScriptedMessagesServer) -> AsyncIterator[Chat]:
    if via == "httpx":
        async with httpx.AsyncClient(base_url=server.base_url, timeout=10) as client:
            yield HttpxChat(client)
    else:
        async with anthropic.AsyncAnthropic(
            base_url=server.base_url, api_key="test", max_retries=0, timeout=10
        ) as sdk:
            yield SdkChat(sdk)


async def test_cut_call_never_runs_and_the_corrected_call_does(
    anyio_backend: str, via: str, server: ScriptedMessagesServer
) -> None:
    server.script(
        Reply(CUT_MAKE_FILE.read_bytes()),
        Reply(
            messages_reply(
                server,
                ("thinking", THOUGHT),
                ("tool_use", FIXED_ID, "make_file", json.dumps(GOOD_INPUT)),
                msg_id="msg_turn2",
            )
        ),
        Reply(messages_reply(server, ("text", "Saved taxes.txt."), stop_reason="end_turn")),
    )
    tool = ToolSpy()
    messages = list(USER)
    async with chat_client(via, server) as chat:
        turn1, results1 = await step(chat, messages, tool, PROVIDER)
        assert tool.ran == []
        (cut,) = turn1.calls
        assert (cut.id, cut.truncated, cut.outcome) == (CUT_MAKE_FILE_ID, True, "rejected")
        assert (turn1.stop_reason, turn1.finish_raw) == ("length", "max_tokens")
        assert [r.status for r in results1] == ["rejected"]

        turn2, results2 = await step(chat, messages, tool, PROVIDER)
        assert tool.ran == [("make_file", FIXED_ID, GOOD_INPUT)]
        assert turn2.reasoning == THOUGHT
        assert [r.status for r in results2] == ["ok"]

        turn3, results3 = await step(chat, messages, tool, PROVIDER)
        assert (turn3.text, turn3.calls, results3) == ("Saved taxes.txt.", (), [])
    assert tool.ran == [("make_file", FIXED_ID, GOOD_INPUT)]  # exactly once
    assert server.refused == []

    # Turn 2's request carried turn 1 and its rejection in the form the API validates.
    _, assistant1, results_message = server.requests[1]["messages"]
    assert assistant1["role"] == "assistant"
    assert [b["type"] for b in assistant1["content"]] == ["text", "tool_use"]
    assert assistant1["content"][1] == {
        "type": "tool_use",
        "id": CUT_MAKE_FILE_ID,
        "name": "make_file",
        "input": {},
    }
    (rejection,) = results_message["content"]
    assert (rejection["tool_use_id"], rejection["is_error"]) == (CUT_MAKE_FILE_ID, True)
    assert "cut off at the output-token limit" in rejection["content"]

    # Turn 3's request carried turn 2's thinking with the signature exactly as issued.
    assistant2, results2_message = server.requests[2]["messages"][3:]
    thinking, tool_use = assistant2["content"]
    assert thinking == {
        "type": "thinking",
        "thinking": THOUGHT,
        "signature": "sig-msg_turn2-0",
    }
    assert tool_use == {
        "type": "tool_use",
        "id": FIXED_ID,
        "name": "make_file",
        "input": GOOD_INPUT,
    }
    assert results2_message["content"] == [
        {"type": "tool_result", "tool_use_id": FIXED_ID, "content": "written"}
    ]


@pytest.mark.parametrize("via", ["httpx", pytest.param("anthropic", marks=SDK_ERROR_LEAK)])
async def test_in_band_error_runs_nothing(
    anyio_backend: str, via: str, server: ScriptedMessagesServer
) -> None:
    server.script(Reply(OVERLOADED.read_bytes()))
    async with chat_client(via, server) as chat:
        turn = await chat.turn(list(USER))
    assert turn.calls == ()
    (error,) = turn.errors
    if via == "httpx":
        assert (turn.stop_reason, error.kind, error.code) == (
            "error",
            "error_payload",
            "overloaded_error",
        )
    else:
        # The SDK raises APIStatusError on ``event: error`` while toolwire reads it: a failed
        # read, so the turn ends as a dropped stream (the error's type is in the message).
        assert (turn.stop_reason, error.kind, error.code) == (
            "disconnected",
            "transport",
            "APIStatusError",
        )
        assert "overloaded_error" in error.message
    assert error.fatal


async def test_http_error_status_ends_in_error(
    anyio_backend: str, server: ScriptedMessagesServer
) -> None:
    body = b'{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}'
    server.script(Reply(body, status=529))
    async with httpx.AsyncClient(base_url=server.base_url, timeout=10) as client:
        turn = await HttpxChat(client).turn(list(USER))
    assert (turn.stop_reason, turn.truncated) == ("error", False)
    (error,) = turn.errors
    assert (error.kind, error.code) == ("http_status", "529")


@pytest.mark.parametrize(
    ("messages", "refusal"),
    [
        (
            [
                *USER,
                {
                    "role": "assistant",
                    "content": [{"type": "tool_use", "id": "a", "name": "x", "input": {}}],
                },
                {
                    "role": "user",
                    "content": [
                        {"type": "text", "text": "hi"},
                        {"type": "tool_result", "tool_use_id": "a", "content": "x"},
                    ],
                },
            ],
            "must come first",
        ),
        (
            [
                *USER,
                {
                    "role": "assistant",
                    "content": [{"type": "tool_use", "id": "a~2", "name": "x", "input": "{}"}],
                },
                {
                    "role": "user",
                    "content": [{"type": "tool_result", "tool_use_id": "a~2", "content": "x"}],
                },
            ],
            "should match",
        ),
        (
            [
                *USER,
                {
                    "role": "assistant",
                    "content": [{"type": "thinking", "thinking": "t", "signature": "forged"}],
                },
            ],
            "signature",
        ),
    ],
    ids=["result_after_text", "bad_id_and_text_input", "forged_signature"],
)
def test_the_server_refuses_what_the_api_refuses(messages: list[Any], refusal: str) -> None:
    # The server's check must be able to fail for the loop test to mean anything.
    errors = history_errors(messages, {})
    assert any(refusal in error for error in errors), errors
