"""An agent loop over real loopback HTTP speaking ``/v1/responses``, through the ``openai`` SDK
(``AsyncOpenAI(base_url=...).responses.create(stream=True)``) and through ``httpx`` bytes.

The scripted server (``tests/e2e/openai_responses_server.py``) refuses, like the API, an
``input`` that is not well formed: a call without its output, arguments that do not parse, a
reasoning item with nothing after it or not sent back whole, a call replayed without its
reasoning item. Turn 1 is cut at ``max_output_tokens`` in the middle of a ``write`` call: it
must never run; turn 2's request carries the assistant turn (its reasoning item, the call with
``{}``) and the rejection; the corrected call then runs exactly once.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from typing import Any, Protocol

import httpx
import openai
import pytest

import toolwire
from toolwire.adapters.openai_responses import OpenAIResponsesHistory, output_items
from toolwire.core.events import Event
from toolwire.core.turn import Turn, TurnBuilder
from toolwire.loop import ToolResult, check_history, dispatch, next_messages

from .loop_steps import ToolSpy
from .openai_responses_server import ReplyBuilder, ScriptedResponsesServer, running_server

pytestmark = pytest.mark.anyio

PROVIDER = "openai-responses"
MAX_OUTPUT_TOKENS = 64
HISTORY = OpenAIResponsesHistory()
#: One pipeline for the whole loop; each turn passes the request it sent, from which toolwire
#: reads ``max_output_tokens`` and the function tools (the hosted ``web_search`` is left out).
PIPELINE = toolwire.Pipeline(PROVIDER)

WRITE_TOOL = {
    "type": "function",
    "name": "write",
    "description": "Write a file.",
    "parameters": {
        "type": "object",
        "properties": {"path": {"type": "string"}, "content": {"type": "string"}},
        "required": ["path", "content"],
        "additionalProperties": False,
    },
    "strict": True,
}
TOOLS: list[dict[str, Any]] = [WRITE_TOOL, {"type": "web_search"}]
GOOD_WRITE = '{"path":"notes.txt","content":"hello"}'
CUT_WRITE = '{"path":"notes.txt","content":"hel'
USER: dict[str, Any] = {"role": "user", "content": "Write hello to notes.txt"}


def request_body(items: list[dict[str, Any]]) -> dict[str, Any]:
    return {
        "model": "gpt-scripted",
        "input": items,
        "tools": TOOLS,
        "max_output_tokens": MAX_OUTPUT_TOKENS,
        "store": False,
        "include": ["reasoning.encrypted_content"],
        "stream": True,
    }


class Client(Protocol):
    async def events(self, items: list[dict[str, Any]]) -> list[Event]: ...


class SdkClient:
    """The SDK's ``AsyncStream`` of Responses events straight into ``Pipeline.stream``."""

    def __init__(self, client: openai.AsyncOpenAI) -> None:
        self.client = client

    async def events(self, items: list[dict[str, Any]]) -> list[Event]:
        body = request_body(items)
        stream = await self.client.responses.create(**body)
        return [e async for e in PIPELINE.stream(stream, request=body)]


class HttpxClient:
    """``response.aiter_bytes()`` straight into ``Pipeline.stream``."""

    def __init__(self, client: httpx.AsyncClient) -> None:
        self.client = client

    async def events(self, items: list[dict[str, Any]]) -> list[Event]:
        body = request_body(items)
        async with self.client.stream("POST", "/responses", json=body) as response:
            response.raise_for_status()
            return [e async for e in PIPELINE.stream(response.aiter_bytes(), request=body)]


@pytest.fixture
def server() -> Iterator[ScriptedResponsesServer]:
    with running_server() as scripted:
        yield scripted


@pytest.fixture(params=["openai", "httpx"])
def via(request: pytest.FixtureRequest) -> str:
    kind: str = request.param
    return kind


@asynccontextmanager
async def client_for(via: str, server: ScriptedResponsesServer) -> AsyncIterator[Client]:
    if via == "httpx":
        async with httpx.AsyncClient(base_url=server.base_url, timeout=10) as client:
            yield HttpxClient(client)
    else:
        async with openai.AsyncOpenAI(
            base_url=server.base_url, api_key="x", max_retries=0, timeout=10
        ) as sdk:
            yield SdkClient(sdk)


def turn_of(events: list[Event]) -> Turn:
    builder = TurnBuilder(provider="openai")
    for event in events:
        builder.add(event)
    return builder.build()


async def step(
    client: Client, items: list[dict[str, Any]], tool: ToolSpy
) -> tuple[Turn, list[ToolResult]]:
    """One turn: stream, dispatch, append the assistant items (reasoning too) and every result."""
    events = await client.events(items)
    turn = turn_of(events)
    results = [result async for result in dispatch(turn, tool)]
    items.extend(HISTORY.assistant_messages(turn, output_items(events)))
    items.extend(HISTORY.tool_result_messages(results))
    assert check_history(items, PROVIDER) == []
    return turn, results


def cut_turn() -> Any:
    return (
        ReplyBuilder("resp_1")
        .reasoning("rs_1", "gAAAA-secret-one")
        .call("fc_1", "call_cut", "write", CUT_WRITE, status="incomplete")
        .cut_at_max_output_tokens(MAX_OUTPUT_TOKENS)
    )


def fixed_turn() -> Any:
    return (
        ReplyBuilder("resp_2")
        .reasoning("rs_2", "gAAAA-secret-two")
        .message("msg_2", "Writing it again, smaller.")
        .call("fc_2", "call_fixed", "write", GOOD_WRITE)
        .completed()
    )


def outputs_of(request: dict[str, Any]) -> dict[str, str]:
    return {
        i["call_id"]: i["output"]
        for i in request["input"]
        if i.get("type") == "function_call_output"
    }


def calls_of(request: dict[str, Any]) -> dict[str, str]:
    return {
        i["call_id"]: i["arguments"] for i in request["input"] if i.get("type") == "function_call"
    }


async def test_a_call_cut_at_the_limit_never_runs_and_the_corrected_call_runs_once(
    anyio_backend: str, via: str, server: ScriptedResponsesServer
) -> None:
    server.script(
        cut_turn(), fixed_turn(), ReplyBuilder("resp_3").message("msg_3", "Done.").completed()
    )
    tool = ToolSpy()
    items: list[dict[str, Any]] = [USER]
    async with client_for(via, server) as client:
        turn1, results1 = await step(client, items, tool)
        assert tool.ran == []
        (cut,) = turn1.calls
        assert (cut.id, cut.truncated, cut.outcome) == ("call_cut", True, "rejected")
        assert cut.arguments_raw == CUT_WRITE
        assert (turn1.stop_reason, turn1.finish_raw) == ("length", "max_output_tokens")
        assert turn1.truncation_evidence == (
            "finish_reason",
            "usage_at_max_tokens",
            "arguments_unterminated",
        )
        assert cut.verdict is not None
        assert cut.verdict.message is not None
        assert "output-token limit" in cut.verdict.message
        assert [r.status for r in results1] == ["rejected"]

        turn2, results2 = await step(client, items, tool)
        assert [c.outcome for c in turn2.calls] == ["ok"]
        assert tool.ran == [("write", "call_fixed", {"path": "notes.txt", "content": "hello"})]
        assert [r.status for r in results2] == ["ok"]

        turn3, results3 = await step(client, items, tool)
        assert (turn3.text, turn3.stop_reason, results3) == ("Done.", "end_turn", [])

    assert server.refused == []
    second, third = server.requests[1], server.requests[2]
    assert [i.get("type", "message") for i in second["input"]] == [
        "message",
        "reasoning",
        "function_call",
        "function_call_output",
    ]
    assert second["input"][1]["encrypted_content"] == "gAAAA-secret-one"
    assert second["input"][2]["id"] == "fc_1"
    assert calls_of(second) == {"call_cut": "{}"}
    assert outputs_of(second) == {"call_cut": cut.verdict.message}
    # A valid call goes back byte for byte, after its reasoning and the commentary message.
    assert calls_of(third)["call_fixed"] == GOOD_WRITE
    assert outputs_of(third)["call_fixed"] == "written"
    assert [i.get("type", "message") for i in third["input"]][4:] == [
        "reasoning",
        "message",
        "function_call",
        "function_call_output",
    ]
    assert tool.ran == [("write", "call_fixed", {"path": "notes.txt", "content": "hello"})]


async def test_a_malformed_call_through_next_messages(
    anyio_backend: str, via: str, server: ScriptedResponsesServer
) -> None:
    """A one-item turn (no reasoning) goes through ``toolwire.next_messages`` as it is today."""
    server.script(
        ReplyBuilder("resp_1")
        .call("fc_1", "call_bad", "write", '{"path": "notes.txt"}')
        .completed(),
        ReplyBuilder("resp_2").call("fc_2", "call_good", "write", GOOD_WRITE).completed(),
        ReplyBuilder("resp_3").message("msg_3", "Done.").completed(),
    )
    tool = ToolSpy()
    items: list[dict[str, Any]] = [USER]
    async with client_for(via, server) as client:
        for _ in range(3):
            turn = turn_of(await client.events(items))
            results = [result async for result in dispatch(turn, tool)]
            items.extend(next_messages(turn, results, PROVIDER))
            assert check_history(items, PROVIDER) == []
    assert server.refused == []
    assert calls_of(server.requests[1]) == {"call_bad": "{}"}
    assert "content" in outputs_of(server.requests[1])["call_bad"]  # the schema message
    assert tool.ran == [("write", "call_good", {"path": "notes.txt", "content": "hello"})]


async def test_what_the_api_would_refuse(
    anyio_backend: str, server: ScriptedResponsesServer
) -> None:
    """Why the history is written this way: the raw cut text, or the call without its reasoning."""
    server.script(cut_turn())
    async with client_for("openai", server) as client:
        events = await client.events([USER])
    turn = turn_of(events)
    replay = HISTORY.assistant_messages(turn, output_items(events))
    result = {"type": "function_call_output", "call_id": "call_cut", "output": "cut off"}
    raw = [USER, replay[0], {**replay[1], "arguments": CUT_WRITE}, result]
    no_reasoning = [USER, replay[1], result]
    assert server.input_errors([USER, *replay, result]) == []
    assert server.input_errors(raw) == [
        f"Invalid 'arguments' for function call call_cut: {CUT_WRITE!r}"
    ]
    assert server.input_errors(no_reasoning) == [
        "Item 'fc_1' of type 'function_call' was provided without its required 'reasoning' item: "
        "'rs_1'."
    ]
    assert check_history(raw, PROVIDER)[0].kind == "arguments_not_json"
    # The SDK path refuses it for real.
    server.script(cut_turn())
    async with client_for("openai", server) as client:
        with pytest.raises(openai.BadRequestError, match="without its required 'reasoning' item"):
            await client.events(no_reasoning)
    assert json.loads(json.dumps(server.requests[-1]["input"])) == no_reasoning
