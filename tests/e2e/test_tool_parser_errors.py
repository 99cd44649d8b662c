"""A server that answers the model's broken call with a 500, and a history a server refuses.

Loopback servers (``server.py`` for Chat Completions, ``ollama_server.py`` for Ollama's native
API) answer with the bodies real servers send (``tests/adapters/parser_errors/``); the response
goes to ``Pipeline.collect`` as it came, an ``httpx.Response``. Then the other half of a
poisoned conversation: a history holding a broken earlier call is refused, and the same history
after ``Pipeline.repair_history`` is accepted.
"""

from __future__ import annotations

import json
from typing import Any

import httpx
import pytest

import toolwire

from .loopback import Reply
from .ollama_server import running_ollama
from .server import running_server, text_reply

TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "get_metrics",
            "parameters": {
                "type": "object",
                "properties": {"service": {"type": "string"}, "window": {"type": "string"}},
            },
        },
    }
]

#: llama-server's body for a tail it could not parse (ggml-org/llama.cpp#20761).
LLAMA_SERVER_500 = {
    "error": {
        "code": 500,
        "message": "Failed to parse input at pos 12: </tool_call>",
        "type": "server_error",
    }
}
#: Ollama's qwen3 parser on a call cut at num_predict (ollama/ollama#14492, #14570).
OLLAMA_500 = {"error": "failed to parse JSON: unexpected end of JSON input"}
#: The history of noonghunna/club-3090#665: turn 1 was cut at max_tokens, turn 2 replays it.
BROKEN_HISTORY: list[dict[str, Any]] = [
    {"role": "user", "content": "How is checkout doing?"},
    {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {
                "id": "c1",
                "type": "function",
                "function": {
                    "name": "get_metrics",
                    "arguments": '{"service":"checkout","window":"24h"',
                },
            }
        ],
    },
    {"role": "tool", "tool_call_id": "c1", "content": "error: bad arguments"},
    {"role": "user", "content": "Try again."},
]


async def _post(client: httpx.AsyncClient, url: str, body: dict[str, Any], pipeline: Any) -> Any:
    async with client.stream("POST", url, json=body) as response:
        return await pipeline.collect(response, request=body)


@pytest.mark.anyio
async def test_a_llama_server_500_is_the_models_call() -> None:
    pipeline = toolwire.Pipeline("llama-server", tools=TOOLS)
    with running_server() as server:
        server.script(Reply(status=500, body=json.dumps(LLAMA_SERVER_500).encode()))
        request = {"model": "m", "messages": [{"role": "user", "content": "hi"}], "tools": TOOLS}
        async with httpx.AsyncClient() as client:
            turn = await _post(client, f"{server.base_url}/chat/completions", request, pipeline)
    assert turn.stop_reason == "tool_calls"
    (error,) = turn.errors
    assert error.kind == "tool_parser"
    assert error.code == "500"
    assert "pos 12" in error.raw
    (call,) = turn.calls
    assert not call.may_run
    assert call.verdict is not None
    assert call.verdict.reason == "server_could_not_parse"
    # The agent loop answers it like any rejected call, and the history is well formed.
    results = [result async for result in toolwire.dispatch(turn, _never_run)]
    history = [*request["messages"], *pipeline.next_messages(turn, results)]
    assert pipeline.check_history(history) == []


@pytest.mark.anyio
async def test_an_ollama_500_on_a_cut_call_is_a_truncated_call() -> None:
    pipeline = toolwire.Pipeline("ollama", tools=TOOLS)
    with running_ollama() as server:
        server.script(Reply(status=500, body=json.dumps(OLLAMA_500).encode()))
        request = {"model": "m", "messages": [{"role": "user", "content": "hi"}], "tools": TOOLS}
        async with httpx.AsyncClient() as client:
            turn = await _post(client, f"{server.base_url}/api/chat", request, pipeline)
    (call,) = turn.calls
    assert call.name == "get_metrics"  # the one tool offered
    assert call.truncated
    assert call.verdict is not None
    assert call.verdict.reason == "truncated"
    assert turn.truncated
    assert turn.truncation_evidence == ("server_parser",)
    assert turn.cut_by == "unknown"  # the parser said the text ended; not why
    results = [result async for result in toolwire.dispatch(turn, _never_run)]
    assert pipeline.check_history(pipeline.next_messages(turn, results)) == []


@pytest.mark.anyio
async def test_a_repaired_history_is_accepted_where_the_broken_one_was_refused() -> None:
    pipeline = toolwire.Pipeline("openai-chat", tools=TOOLS)
    problems = pipeline.check_history(BROKEN_HISTORY)
    assert [(p.kind, p.call_id) for p in problems] == [("arguments_not_json", "c1")]
    repair = pipeline.repair_history(BROKEN_HISTORY)
    assert [(c.kind, c.index, c.call_id) for c in repair.changes] == [
        ("arguments_not_json", 1, "c1")
    ]
    assert BROKEN_HISTORY[1]["tool_calls"][0]["function"]["arguments"].endswith('"24h"')
    with running_server() as server:
        server.script(Reply(body=text_reply("All good.")), Reply(body=text_reply("All good.")))
        async with httpx.AsyncClient() as client:
            url = f"{server.base_url}/chat/completions"
            refused = await _post(client, url, {"model": "m", "messages": BROKEN_HISTORY}, pipeline)
            accepted = await _post(
                client, url, {"model": "m", "messages": repair.messages}, pipeline
            )
    assert refused.stop_reason == "error"
    assert accepted.stop_reason == "end_turn"
    assert accepted.text == "All good."
    result = repair.messages[2]
    assert result["tool_call_id"] == "c1"
    assert "error: bad arguments" in result["content"]


async def _never_run(call: toolwire.CallRecord) -> str:
    raise AssertionError(f"{call.name} must not run")
