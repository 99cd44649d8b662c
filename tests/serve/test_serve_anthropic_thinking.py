"""``toolwire serve`` heals Anthropic Messages with thinking on: the real ``anthropic`` SDK, the
real proxy process, the scripted Messages server checking every request's thinking blocks as the
API does (prefix checks on). The agent is unchanged but for its base URL.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import anthropic
import pytest
from e2e.anthropic_server import (
    MAKE_FILE,
    Reply,
    ScriptedMessagesServer,
    messages_reply,
    running_server,
)

from .proxy import Proxy, running_proxy

pytestmark = [
    pytest.mark.anyio,
    pytest.mark.filterwarnings(
        "ignore:Async generator '(anthropic|httpx|httpx2|httpcore|httpcore2)[.]:ResourceWarning"
    ),
]

GOOD = {"filename": "taxes.txt", "lines_of_text": ["# TAX GUIDE"]}
USER: dict[str, Any] = {"role": "user", "content": "Write a tax guide to taxes.txt"}
BODY: dict[str, Any] = {
    "model": "claude-scripted",
    "max_tokens": 2048,
    "thinking": {"type": "enabled", "budget_tokens": 1024},
    "tools": [MAKE_FILE],
}


@pytest.fixture(scope="module")
def upstream() -> Iterator[ScriptedMessagesServer]:
    with running_server() as scripted:
        scripted.prefix_checks = True
        yield scripted


@pytest.fixture(scope="module")
def proxy(upstream: ScriptedMessagesServer) -> Iterator[Proxy]:
    with running_proxy("--upstream", f"{upstream.base_url}/v1") as running:
        yield running


@pytest.mark.parametrize("streamed", [True, False], ids=["streamed", "whole"])
async def test_a_cut_call_in_a_thinking_turn_is_healed_through_the_proxy(
    anyio_backend: str, upstream: ScriptedMessagesServer, proxy: Proxy, streamed: bool
) -> None:
    upstream.replies.clear()
    upstream.requests.clear()
    upstream.refused.clear()
    turn = f"{anyio_backend}-{streamed}"  # signatures are per reply: one set per test
    upstream.script(
        Reply(
            messages_reply(
                upstream,
                ("thinking", "Write the guide."),
                ("tool_use", "toolu_cut", "make_file", '{"filename": "taxes.txt", "lines'),
                stop_reason="max_tokens",
                msg_id=f"m1-{turn}",
            )
        ),
        Reply(
            messages_reply(
                upstream,
                ("tool_use", "toolu_fixed", "make_file", json.dumps(GOOD)),
                msg_id=f"m2-{turn}",
            )
        ),
        Reply(messages_reply(upstream, ("text", "Done."), stop_reason="end_turn", msg_id="m3")),
    )
    async with anthropic.AsyncAnthropic(
        base_url=proxy.root, api_key="sk-ant-test", max_retries=0, timeout=20
    ) as client:
        if streamed:
            async with client.messages.stream(**BODY, messages=[USER]) as stream:
                message = await stream.get_final_message()
        else:
            message = await client.messages.create(**BODY, messages=[USER])
        thinking, tool_use = message.content
        assert (thinking.type, thinking.thinking, thinking.signature) == (
            "thinking",
            "Write the guide.",
            f"sig-m1-{turn}-0",
        )
        assert (tool_use.type, tool_use.id, tool_use.input) == ("tool_use", "toolu_fixed", GOOD)
        history = [
            USER,
            {
                "role": "assistant",
                "content": [b.model_dump(exclude_none=True) for b in message.content],
            },
            {
                "role": "user",
                "content": [{"type": "tool_result", "tool_use_id": "toolu_fixed", "content": "ok"}],
            },
        ]
        async with client.messages.stream(**BODY, messages=history) as stream:
            done = await stream.get_final_message()
    assert [block.type for block in done.content] == ["text"]
    assert len(upstream.requests) == 3
    assert upstream.refused == []  # the retry and the agent's next turn
