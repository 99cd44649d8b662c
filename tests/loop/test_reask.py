"""``Pipeline.constrained_request``: an agent loop asks the re-ask the healing asks (issue 31).

A turn whose call was rejected is answered (``dispatch``: the rejected call gets toolwire's true
message), the history continued (``next_messages``), and the next request is written with the
server's own forcing for the tool the model chose; collected with ``request=`` the constraint,
the turn says ``constrained_to``, and its calls are judged as any call is.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from _toolwire_testdata import chat_chunk, sse_body

import toolwire
from toolwire.core.wire import Constraint

pytestmark = pytest.mark.anyio

SCHEMA = {
    "type": "object",
    "properties": {"path": {"type": "string"}, "content": {"type": "string"}},
    "required": ["path", "content"],
}
TOOLS = [
    {"type": "function", "function": {"name": "write", "parameters": SCHEMA}},
    {"type": "function", "function": {"name": "read", "parameters": SCHEMA}},
]
REQUEST: dict[str, Any] = {
    "model": "local",
    "messages": [{"role": "user", "content": "Write hi to a.txt"}],
    "tools": TOOLS,
    "tool_choice": "auto",
    "stream": True,
}


def _stream(arguments: str) -> bytes:
    call = {"index": 0, "id": "call_1", "type": "function"}
    return sse_body(
        [
            chat_chunk({"role": "assistant", "content": None}),
            chat_chunk(
                {"tool_calls": [{**call, "function": {"name": "write", "arguments": arguments}}]}
            ),
            chat_chunk(finish_reason="tool_calls"),
        ]
    )


async def _re_ask(pipeline: toolwire.Pipeline, arguments: str) -> tuple[dict[str, Any], Constraint]:
    turn = await pipeline.collect(_stream(arguments), request=REQUEST)

    async def run(call: Any) -> str:
        return "done"

    results = [result async for result in toolwire.dispatch(turn, run)]
    request = {
        **REQUEST,
        "messages": [*REQUEST["messages"], *pipeline.next_messages(turn, results)],
    }
    return request, pipeline.constrained_request(request, turn)


async def test_the_loop_re_asks_llama_server_for_the_chosen_tool(anyio_backend: str) -> None:
    pipeline = toolwire.Pipeline("llama-server")
    request, reask = await _re_ask(pipeline, '{"path": 3}')
    assert reask.applied
    assert reask.tool == "write"
    assert reask.body is not None
    assert reask.body["json_schema"]["properties"]["arguments"] == SCHEMA
    assert reask.body["tools"] == TOOLS
    assert reask.body["messages"] == request["messages"]  # the same true message
    assert "expected string, got integer" in json.dumps(request["messages"][-1])

    good = await pipeline.collect(_stream('{"path": "a.txt", "content": "hi"}'), request=reask)
    assert good.constrained_to == "write"
    assert [call.outcome for call in good.calls] == ["ok"]
    # What a constrained re-ask brings is judged as ever.
    bad = await pipeline.collect(_stream('{"path": "a.txt"}'), request=reask)
    assert bad.constrained_to == "write"
    assert [call.outcome for call in bad.calls] == ["rejected"]


async def test_a_server_with_no_way_gets_the_request_unchanged(anyio_backend: str) -> None:
    pipeline = toolwire.Pipeline("openai-compatible")
    request, reask = await _re_ask(pipeline, '{"path": 3}')
    assert not reask.applied
    assert reask.skipped == "no_mechanism"
    assert reask.body == request
    turn = await pipeline.collect(_stream('{"path": "a.txt", "content": "hi"}'), request=reask)
    assert turn.constrained_to is None


async def test_a_valid_turn_has_nothing_to_re_ask(anyio_backend: str) -> None:
    pipeline = toolwire.Pipeline("llama-server")
    request, reask = await _re_ask(pipeline, '{"path": "a.txt", "content": "hi"}')
    assert reask.skipped == "nothing_rejected"
    assert reask.body == request


async def test_a_tool_the_loop_keeps_free_is_not_constrained(anyio_backend: str) -> None:
    pipeline = toolwire.Pipeline("vllm")
    turn = await pipeline.collect(_stream('{"path": 3}'), request=REQUEST)
    reask = pipeline.constrained_request(REQUEST, turn, unconstrained_tools=["write"])
    assert (reask.skipped, reask.detail) == ("off", "tool")


async def test_a_constraint_without_a_body_is_no_request(anyio_backend: str) -> None:
    with pytest.raises(toolwire.ConfigurationError, match="no body"):
        await toolwire.Pipeline("llama-server").collect(
            _stream("{}"), request=Constraint(tool="write", skipped="off")
        )
