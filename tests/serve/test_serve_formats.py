"""``toolwire serve`` heals the other wire formats too: the real command and uvicorn between
the real ``anthropic`` SDK (Messages) or the real ``openai`` SDK (Responses) and the scripted
servers that refuse, as the real APIs do, a history that is not well formed
(``tests/e2e/anthropic_server.py``, ``tests/e2e/openai_responses_server.py``).

Each agent is unchanged but for its base URL: the anthropic SDK takes the proxy's root (it
appends ``/v1/messages``), the openai SDK the proxy's ``/v1``. Each runs every call it
receives once, after the checks a tool makes, then sends the tool's result in its next turn.
One proxy per upstream, started once for the module.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import anthropic
import jsonschema
import openai
import pytest
from e2e.anthropic_server import (
    CUT_MAKE_FILE,
    CUT_MAKE_FILE_ID,
    ScriptedMessagesServer,
    messages_reply,
)
from e2e.anthropic_server import Reply as MessagesReply
from e2e.anthropic_server import running_server as running_messages_server
from e2e.openai_responses_server import MODEL, ReplyBuilder, ScriptedResponsesServer
from e2e.openai_responses_server import running_server as running_responses_server
from heal.broken_histories import ANTHROPIC, RESPONSES, assert_repaired_through_proxy
from heal.client import SDK_ON_TRIO_LEAK

from .proxy import Proxy, running_proxy

pytestmark = [
    pytest.mark.anyio,
    pytest.mark.filterwarnings(SDK_ON_TRIO_LEAK),
    pytest.mark.filterwarnings(
        "ignore:Async generator '(anthropic|httpx|httpx2|httpcore|httpcore2)[.]:ResourceWarning"
    ),
]

SECRET = "sk-test-secret-never-logged"


@pytest.fixture(scope="module")
def messages_upstream() -> Iterator[ScriptedMessagesServer]:
    with running_messages_server() as scripted:
        yield scripted


@pytest.fixture(scope="module")
def responses_upstream() -> Iterator[ScriptedResponsesServer]:
    with running_responses_server() as scripted:
        yield scripted


@pytest.fixture(scope="module")
def messages_proxy(messages_upstream: ScriptedMessagesServer) -> Iterator[Proxy]:
    # The Messages server serves /v1/messages at its root; the proxy's upstream includes /v1.
    with running_proxy("--upstream", f"{messages_upstream.base_url}/v1") as running:
        yield running


@pytest.fixture(scope="module")
def responses_proxy(responses_upstream: ScriptedResponsesServer) -> Iterator[Proxy]:
    with running_proxy("--upstream", responses_upstream.base_url) as running:
        yield running


@pytest.fixture(autouse=True)
def _fresh_scripts(request: pytest.FixtureRequest) -> None:
    for name in ("messages_upstream", "responses_upstream"):
        if name in request.fixturenames:
            upstream = request.getfixturevalue(name)
            upstream.replies.clear()
            upstream.requests.clear()
            upstream.refused.clear()


def _tools_ran(schemas: dict[str, Any], calls: list[tuple[str, str, Any]]) -> list[Any]:
    """Each call run once, as an agent would, after checking its input against the schema."""
    ran = []
    for name, call_id, arguments in calls:
        jsonschema.validate(arguments, schemas[name])  # a broken call fails the test here
        ran.append((name, call_id, arguments))
    return ran


# -- Anthropic Messages through the proxy --------------------------------------------------------

MAKE_FILE = {
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
GOOD_FILE = {"filename": "taxes.txt", "lines_of_text": ["# TAX GUIDE", "Keep it short."]}


def _tool_uses(message: Any) -> list[tuple[str, str, Any]]:
    return [(b.id, b.name, b.input) for b in message.content if b.type == "tool_use"]


async def test_anthropic_a_cut_call_is_healed_through_the_proxy(
    anyio_backend: str, messages_upstream: ScriptedMessagesServer, messages_proxy: Proxy
) -> None:
    messages_upstream.script(
        MessagesReply(CUT_MAKE_FILE.read_bytes()),
        MessagesReply(
            messages_reply(
                messages_upstream,
                ("tool_use", "toolu_fixed", "make_file", json.dumps(GOOD_FILE)),
                msg_id="msg_fixed",
            )
        ),
        MessagesReply(
            messages_reply(messages_upstream, ("text", "Wrote taxes.txt."), stop_reason="end_turn")
        ),
    )
    messages: list[dict[str, Any]] = [{"role": "user", "content": "Write a tax guide to taxes.txt"}]
    body = {"model": "claude-scripted", "max_tokens": 124, "tools": [MAKE_FILE]}
    async with anthropic.AsyncAnthropic(
        base_url=messages_proxy.root, api_key=SECRET, max_retries=0, timeout=20
    ) as client:
        async with client.messages.stream(**body, messages=messages) as stream:
            message = await stream.get_final_message()
        uses = [(name, call_id, arguments) for call_id, name, arguments in _tool_uses(message)]
        ran = _tools_ran({"make_file": MAKE_FILE["input_schema"]}, uses)
        assert ran == [("make_file", "toolu_fixed", GOOD_FILE)]  # only the good call arrived
        assert message.stop_reason == "tool_use"
        # The agent's next turn: what it received, and the tool's result.
        messages.append({"role": "assistant", "content": [b.model_dump() for b in message.content]})
        messages.append(
            {
                "role": "user",
                "content": [{"type": "tool_result", "tool_use_id": "toolu_fixed", "content": "ok"}],
            }
        )
        async with client.messages.stream(**body, messages=messages) as stream:
            done = await stream.get_final_message()
    assert [b.text for b in done.content if b.type == "text"] == ["Wrote taxes.txt."]

    assert messages_upstream.refused == []  # the retry's and the next turn's histories
    first, retry, _ = messages_upstream.requests
    assistant, results = retry["messages"][-2:]
    (replayed,) = [b for b in assistant["content"] if b["type"] == "tool_use"]
    assert (replayed["id"], replayed["input"]) == (CUT_MAKE_FILE_ID, {})
    (result,) = results["content"]
    assert (result["tool_use_id"], result["is_error"]) == (CUT_MAKE_FILE_ID, True)
    assert "output-token limit" in json.dumps(result["content"])
    assert retry["max_tokens"] == first["max_tokens"]
    assert SECRET not in messages_proxy.log


# -- OpenAI Responses through the proxy ----------------------------------------------------------

WRITE_TOOL = {
    "type": "function",
    "name": "write",
    "parameters": {
        "type": "object",
        "properties": {"path": {"type": "string"}, "content": {"type": "string"}},
        "required": ["path", "content"],
        "additionalProperties": False,
    },
    "strict": True,
}
GOOD_WRITE = '{"path":"notes.txt","content":"hello"}'


async def test_responses_a_cut_call_is_healed_through_the_proxy(
    anyio_backend: str, responses_upstream: ScriptedResponsesServer, responses_proxy: Proxy
) -> None:
    responses_upstream.script(
        ReplyBuilder("resp_1")
        .reasoning("rs_1", "gAAAA-secret-one")
        .call(
            "fc_1", "call_cut", "write", '{"path":"notes.txt","content":"hel', status="incomplete"
        )
        .cut_at_max_output_tokens(64),
        ReplyBuilder("resp_2")
        .reasoning("rs_2", "gAAAA-secret-two")
        .call("fc_2", "call_fixed", "write", GOOD_WRITE)
        .completed(),
        ReplyBuilder("resp_3").message("msg_3", "Wrote notes.txt.").completed(),
    )
    items: list[dict[str, Any]] = [{"role": "user", "content": "Write hello to notes.txt"}]
    body = {"model": MODEL, "tools": [WRITE_TOOL], "max_output_tokens": 64}
    async with openai.AsyncOpenAI(
        base_url=responses_proxy.base_url, api_key=SECRET, max_retries=0, timeout=20
    ) as client:
        stream = await client.responses.create(**body, input=items, stream=True)
        events = [event async for event in stream]
        assert events[-1].type == "response.completed"
        final = events[-1].response
        calls = [
            (item.name, item.call_id, json.loads(item.arguments))
            for item in final.output
            if item.type == "function_call"
        ]
        ran = _tools_ran({"write": WRITE_TOOL["parameters"]}, calls)
        assert ran == [("write", "call_fixed", json.loads(GOOD_WRITE))]
        # The agent's next turn: what it received, and the tool's result.
        items += [item.model_dump(exclude_none=True) for item in final.output]
        items.append({"type": "function_call_output", "call_id": "call_fixed", "output": "ok"})
        async with client.responses.stream(**body, input=items) as answer:
            done = await answer.get_final_response()
    assert done.output_text == "Wrote notes.txt."
    assert "call_cut" not in json.dumps([event.model_dump() for event in events])

    assert responses_upstream.refused == []  # the retry's and the next turn's inputs
    first, retry, _ = responses_upstream.requests
    replayed = retry["input"][len(first["input"]) :]
    assert [item["type"] for item in replayed] == [
        "reasoning",
        "function_call",
        "function_call_output",
    ]
    assert (replayed[1]["call_id"], replayed[1]["arguments"]) == ("call_cut", "{}")
    assert "output-token limit" in replayed[2]["output"]
    assert SECRET not in responses_proxy.log


# -- a history the server refuses is repaired before it goes upstream -----------------------------


async def test_anthropic_a_broken_history_is_repaired_through_the_proxy(
    anyio_backend: str, messages_upstream: ScriptedMessagesServer, messages_proxy: Proxy
) -> None:
    await assert_repaired_through_proxy(messages_proxy.root, ANTHROPIC, messages_upstream)


async def test_responses_a_broken_history_is_repaired_through_the_proxy(
    anyio_backend: str, responses_upstream: ScriptedResponsesServer, responses_proxy: Proxy
) -> None:
    await assert_repaired_through_proxy(responses_proxy.root, RESPONSES, responses_upstream)
