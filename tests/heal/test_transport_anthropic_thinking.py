"""Healing Anthropic Messages with thinking on, in process: the real ``anthropic`` SDK over
``Httpx2Bridge(HealingTransport())``, real loopback HTTP, and the scripted Messages server that
checks every request's thinking blocks as the API does (signed as sent, starting the tool cycle,
and, as for models with preserved thinking, nothing before them changed since they were made).

A cut call in a thinking turn is healed, streamed and not: the SDK's accumulated message has the
signed thinking before the ``tool_use``, and the agent's next request, which sends it back, is
accepted. With interleaved thinking (the beta header, which every retry carries too), the
retry's own thinking does not reach the client (``docs/healing.md``).
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
    MAKE_FILE,
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

GOOD = {"filename": "taxes.txt", "lines_of_text": ["# TAX GUIDE", "Keep it short."]}
OTHER = {"filename": "notes.txt", "lines_of_text": ["notes"]}
CUT = '{"filename": "taxes.txt", "lines_of_text": ["# TAX GUIDE", "Keep'
USER: dict[str, Any] = {"role": "user", "content": "Write a tax guide to taxes.txt"}
BODY: dict[str, Any] = {
    "model": "claude-scripted",
    "max_tokens": 2048,
    "thinking": {"type": "enabled", "budget_tokens": 1024},
    "tools": [MAKE_FILE],
}
INTERLEAVED = "interleaved-thinking-2025-05-14"


@pytest.fixture
def server() -> Iterator[ScriptedMessagesServer]:
    with running_server() as scripted:
        scripted.prefix_checks = True
        yield scripted


@asynccontextmanager
async def healed(base_url: str, **options: Any) -> AsyncIterator[anthropic.AsyncAnthropic]:
    bridge = Httpx2Bridge(toolwire.HealingTransport(**options))
    async with httpx2.AsyncClient(transport=bridge, timeout=10) as http:
        async with anthropic.AsyncAnthropic(
            base_url=base_url, api_key="sk-ant-test", max_retries=0, http_client=http
        ) as client:
            yield client


def _use(call_id: str, value: dict[str, Any] | str) -> tuple[str, ...]:
    return (
        "tool_use",
        call_id,
        "make_file",
        value if isinstance(value, str) else json.dumps(value),
    )


def _shape(message: Any) -> list[tuple[str, Any]]:
    out: list[tuple[str, Any]] = []
    for block in message.content:
        if block.type == "thinking":
            out.append(("thinking", block.thinking, block.signature))
        elif block.type == "tool_use":
            out.append(("tool_use", block.id, block.input))
        else:
            out.append((block.type, block.model_dump(exclude_none=True)))
    return out


async def _ask(client: anthropic.AsyncAnthropic, streamed: bool, **request: Any) -> Any:
    if streamed:
        async with client.messages.stream(**request) as stream:
            return await stream.get_final_message()
    return await client.messages.create(**request)


async def _next_turn(
    client: anthropic.AsyncAnthropic, server: ScriptedMessagesServer, message: Any, **extra: Any
) -> Any:
    """The agent runs each call and sends the turn back, as received, with the results."""
    results = [
        {"type": "tool_result", "tool_use_id": block.id, "content": "written"}
        for block in message.content
        if block.type == "tool_use"
    ]
    server.script(
        Reply(messages_reply(server, ("text", "Done."), stop_reason="end_turn", msg_id="m_next"))
    )
    messages = [
        USER,
        {
            "role": "assistant",
            "content": [b.model_dump(exclude_none=True) for b in message.content],
        },
        {"role": "user", "content": results},
    ]
    async with client.messages.stream(**BODY, messages=messages, **extra) as stream:
        return await stream.get_final_message()


@pytest.mark.parametrize("streamed", [True, False], ids=["streamed", "whole"])
async def test_a_cut_call_in_a_thinking_turn_is_healed(
    anyio_backend: str, server: ScriptedMessagesServer, streamed: bool
) -> None:
    server.script(
        Reply(
            messages_reply(
                server,
                ("thinking", "The guide goes to taxes.txt."),
                _use("toolu_cut", CUT),
                stop_reason="max_tokens",
                msg_id="m1",
            )
        ),
        Reply(messages_reply(server, _use("toolu_fixed", GOOD), msg_id="m2")),
    )
    async with healed(server.base_url, max_tokens_ceiling=4096) as client:
        message = await _ask(client, streamed, **BODY, messages=[USER])
        assert _shape(message) == [
            ("thinking", "The guide goes to taxes.txt.", "sig-m1-0"),
            ("tool_use", "toolu_fixed", GOOD),
        ]
        assert message.stop_reason == "tool_use"
        first, retry = server.requests
        assert (first.get("stream") is True, retry.get("stream") is True) == (streamed, streamed)
        # Streamed, the cut is seen and the limit raised; a whole body holds an object input.
        assert retry["max_tokens"] == (4096 if streamed else 2048)
        assistant = retry["messages"][1]
        assert assistant["content"][0] == {
            "type": "thinking",
            "thinking": "The guide goes to taxes.txt.",
            "signature": "sig-m1-0",
        }
        done = await _next_turn(client, server, message)
    assert [block.type for block in done.content] == ["text"]
    assert server.refused == []  # the retry and the agent's next turn, checked as the API does


async def test_interleaved_thinking_the_retry_s_thinking_stays_upstream(
    anyio_backend: str, server: ScriptedMessagesServer
) -> None:
    beta = {"extra_headers": {"anthropic-beta": INTERLEAVED}}
    server.script(
        Reply(
            messages_reply(
                server,
                ("thinking", "Two files."),
                _use("toolu_a", GOOD),
                ("redacted_thinking", "opaque-data"),
                ("thinking", "Now the notes."),
                _use("toolu_b", '{"filename": "notes.txt"}'),
                msg_id="m1",
            )
        ),
        Reply(
            messages_reply(
                server,
                ("thinking", "The notes call lacked its lines."),
                _use("toolu_b2", OTHER),
                msg_id="m2",
            )
        ),
    )
    async with healed(server.base_url) as client:
        message = await _ask(client, True, **BODY, messages=[USER], **beta)
        assert _shape(message) == [
            ("thinking", "Two files.", "sig-m1-0"),
            ("tool_use", "toolu_a", GOOD),
            ("redacted_thinking", {"type": "redacted_thinking", "data": "opaque-data"}),
            ("thinking", "Now the notes.", "sig-m1-3"),
            ("tool_use", "toolu_b2", OTHER),
        ]
        await _next_turn(client, server, message, **beta)
    assert server.refused == []
    assert server.betas == [INTERLEAVED] * 3  # the retry carries the client's headers
