"""Healing Anthropic Messages in process: the real ``anthropic`` SDK (it takes only ``httpx2``
clients) over ``Httpx2Bridge(HealingTransport())``, real loopback HTTP, the scripted Messages
server that refuses a history the real API would (``tests/e2e/anthropic_server.py``).
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from typing import Any

import anthropic
import httpx2
import pytest
from e2e.anthropic_server import (
    CUT_MAKE_FILE,
    CUT_MAKE_FILE_ID,
    Reply,
    ScriptedMessagesServer,
    messages_reply,
    running_server,
)

import toolwire
from toolwire.heal import Httpx2Bridge

pytestmark = [
    pytest.mark.anyio,
    pytest.mark.filterwarnings(
        "ignore:Async generator '(anthropic|httpx|httpx2|httpcore|httpcore2)[.]:ResourceWarning"
    ),
]

TOOLS: list[dict[str, Any]] = [
    {
        "name": "make_file",
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
GOOD = {"filename": "taxes.txt", "lines_of_text": ["# TAX GUIDE", "Keep it short."]}
BODY: dict[str, Any] = {
    "model": "claude-scripted",
    "max_tokens": 124,
    "messages": [{"role": "user", "content": "Write a tax guide to taxes.txt"}],
    "tools": TOOLS,
}


@pytest.fixture
def server() -> Iterator[ScriptedMessagesServer]:
    with running_server() as scripted:
        yield scripted


@asynccontextmanager
async def healed(base_url: str, **options: Any) -> AsyncIterator[anthropic.AsyncAnthropic]:
    bridge = Httpx2Bridge(toolwire.HealingTransport(**options))
    async with httpx2.AsyncClient(transport=bridge, timeout=10) as http:
        async with anthropic.AsyncAnthropic(
            base_url=base_url, api_key="sk-ant-test", max_retries=0, http_client=http
        ) as client:
            yield client


def _tool_uses(message: Any) -> list[tuple[str, str, Any]]:
    return [(b.id, b.name, b.input) for b in message.content if b.type == "tool_use"]


async def test_a_call_cut_at_max_tokens_is_asked_again_and_only_the_good_one_arrives(
    anyio_backend: str, server: ScriptedMessagesServer
) -> None:
    server.script(
        Reply(CUT_MAKE_FILE.read_bytes()),
        Reply(messages_reply(server, ("tool_use", "toolu_fixed", "make_file", json.dumps(GOOD)))),
    )
    async with healed(server.base_url) as client:
        async with client.messages.stream(**BODY) as stream:
            message = await stream.get_final_message()
    assert _tool_uses(message) == [("toolu_fixed", "make_file", GOOD)]
    assert message.stop_reason == "tool_use"
    assert server.refused == []  # the retry's history is one the API accepts
    first, retry = server.requests
    assert {k: v for k, v in retry.items() if k != "messages"} == {
        k: v for k, v in first.items() if k != "messages"
    }
    assistant, results = retry["messages"][-2:]
    (replayed,) = [b for b in assistant["content"] if b["type"] == "tool_use"]
    assert (replayed["id"], replayed["input"]) == (CUT_MAKE_FILE_ID, {})
    (result,) = results["content"]
    assert result["tool_use_id"] == CUT_MAKE_FILE_ID
    assert result["is_error"] is True
    assert "output-token limit" in json.dumps(result["content"])
    # Usage is what the exchange spent: both responses.
    assert message.usage.output_tokens > 50


async def test_past_the_retries_a_limit_cut_ends_max_tokens_with_no_call(
    anyio_backend: str, server: ScriptedMessagesServer
) -> None:
    server.script(Reply(CUT_MAKE_FILE.read_bytes()))
    async with healed(server.base_url, max_retries=0) as client:
        async with client.messages.stream(**BODY) as stream:
            message = await stream.get_final_message()
    assert _tool_uses(message) == []
    assert message.stop_reason == "max_tokens"  # the client's own limit handling fires
    assert len(server.requests) == 1
