"""The constrained re-ask on every other healed endpoint, in each server's own shape (issue 31).

Through ``HealingTransport``, against the scripted loopback servers of each format, each of
which records the requests it received: the Messages API (``tool_choice: {"type": "tool"}``,
not with thinking on, which the API refuses), the Responses API (``tool_choice`` naming the
function), the Gemini API (``functionCallingConfig`` mode ``ANY`` with the one name allowed),
llama-server's ``/v1/responses`` (the call as a JSON object in its ``json_schema`` field, which
its conversion passes on), and the endpoint with no way to force a tool, asked again as
before: llama-server's ``/v1/messages`` (its conversion keeps no structured-output field).
Ollama's ``/api/chat`` and ``/v1``: ``test_constrained_reask_ollama.py``.
"""

from __future__ import annotations

import json
from typing import Any

import httpx
import pytest
from e2e import anthropic_server, gemini_server, openai_responses_server
from e2e.openai_responses_server import ReplyBuilder

import toolwire

from .local_server import ENDPOINTS, LocalServer, Output, running_local_server

pytestmark = [pytest.mark.anyio]

SCHEMA = {
    "type": "object",
    "properties": {"path": {"type": "string"}, "content": {"type": "string"}},
    "required": ["path", "content"],
}
READ_SCHEMA = {"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]}
BROKEN = '{"path": 3}'
GOOD = '{"path": "a.txt", "content": "hi"}'


async def post(
    provider: str, url: str, body: dict[str, Any], headers: dict[str, str] | None = None
) -> httpx.Response:
    transport = toolwire.HealingTransport(wrapped=httpx.AsyncHTTPTransport(), provider=provider)
    async with httpx.AsyncClient(transport=transport, timeout=10) as client:
        response = await client.post(url, json=body, headers=headers or {})
        await response.aread()
        return response


# -- the Messages API ----------------------------------------------------------------------------

MESSAGES_TOOLS = [
    {"name": "write", "input_schema": SCHEMA},
    {"name": "read", "input_schema": READ_SCHEMA},
]


def _messages_body(**extra: Any) -> dict[str, Any]:
    return {
        "model": "claude-scripted",
        "max_tokens": 1024,
        "messages": [{"role": "user", "content": "Write hi to a.txt"}],
        "tools": MESSAGES_TOOLS,
        "stream": True,
        **extra,
    }


async def test_the_messages_api_is_asked_for_the_tool_it_chose(anyio_backend: str) -> None:
    with anthropic_server.running_server() as server:
        server.script(
            anthropic_server.Reply(
                anthropic_server.messages_reply(server, ("tool_use", "toolu_1", "write", BROKEN))
            ),
            anthropic_server.Reply(
                anthropic_server.messages_reply(server, ("tool_use", "toolu_2", "write", GOOD))
            ),
        )
        tool_choice = {"type": "auto", "disable_parallel_tool_use": True}
        await post(
            "openai-chat",
            f"{server.base_url}/v1/messages",
            _messages_body(tool_choice=tool_choice),
            {"x-api-key": "sk-test"},
        )
    assert server.refused == []
    first, retry = server.requests
    assert retry["tool_choice"] == {
        "type": "tool",
        "name": "write",
        "disable_parallel_tool_use": True,
    }
    assert retry["tools"] == first["tools"] == MESSAGES_TOOLS


async def test_the_messages_api_with_thinking_is_asked_again_as_before(anyio_backend: str) -> None:
    """The API refuses a forced tool with thinking on: the re-ask stays free."""
    thinking = {"type": "enabled", "budget_tokens": 1024}
    with anthropic_server.running_server() as server:
        server.script(
            anthropic_server.Reply(
                anthropic_server.messages_reply(
                    server,
                    ("thinking", "write it"),
                    ("tool_use", "toolu_1", "write", BROKEN),
                    msg_id="msg_1",
                )
            ),
            anthropic_server.Reply(
                anthropic_server.messages_reply(
                    server,
                    ("thinking", "again"),
                    ("tool_use", "toolu_2", "write", GOOD),
                    msg_id="msg_2",
                )
            ),
        )
        await post(
            "openai-chat",
            f"{server.base_url}/v1/messages",
            _messages_body(thinking=thinking),
            {"x-api-key": "sk-test"},
        )
    assert server.refused == []
    _, retry = server.requests
    assert "tool_choice" not in retry


# -- the Responses API ---------------------------------------------------------------------------

RESPONSES_TOOLS = [
    {"type": "function", "name": "write", "parameters": SCHEMA, "strict": False},
    {"type": "function", "name": "read", "parameters": READ_SCHEMA},
]


async def test_the_responses_api_is_asked_for_the_function_it_chose(anyio_backend: str) -> None:
    with openai_responses_server.running_server() as server:
        server.script(
            ReplyBuilder("resp_1").call("fc_1", "call_1", "write", BROKEN).completed(),
            ReplyBuilder("resp_2").call("fc_2", "call_2", "write", GOOD).completed(),
        )
        await post(
            "openai-chat",
            f"{server.base_url}/responses",
            {
                "model": "gpt-scripted",
                "input": "Write hi to a.txt",
                "tools": RESPONSES_TOOLS,
                "stream": True,
                "store": False,
            },
            {"authorization": "Bearer sk-test"},
        )
    assert server.refused == []
    first, retry = server.requests
    assert retry["tool_choice"] == {"type": "function", "name": "write"}
    assert retry["tools"] == first["tools"]


# -- the Gemini API ------------------------------------------------------------------------------


async def test_gemini_is_asked_for_the_function_it_chose(anyio_backend: str) -> None:
    with gemini_server.running_gemini_server() as server:
        server.script(
            gemini_server.whole_call_reply(1, "write", {"path": 3}),
            gemini_server.whole_call_reply(2, "write", json.loads(GOOD)),
        )
        await post(
            "openai-chat",
            f"{server.base_url}/v1beta/models/gemini-scripted:streamGenerateContent?alt=sse",
            {
                "contents": [{"role": "user", "parts": [{"text": "Write hi to a.txt"}]}],
                "tools": [
                    {
                        "functionDeclarations": [
                            {"name": "write", "parameters": SCHEMA},
                            {"name": "read", "parameters": READ_SCHEMA},
                        ]
                    }
                ],
                "toolConfig": {"retrievalConfig": {"languageCode": "en"}},
            },
            {"x-goog-api-key": "test-key"},
        )
    assert server.refused == []
    first, retry = server.requests
    assert retry["toolConfig"] == {
        "retrievalConfig": {"languageCode": "en"},
        "functionCallingConfig": {"mode": "ANY", "allowedFunctionNames": ["write"]},
    }
    assert first["toolConfig"] == {"retrievalConfig": {"languageCode": "en"}}
    assert retry["tools"] == first["tools"]


# -- a local server's endpoints ------------------------------------------------------------------

#: A Qwen-style call the server's parser missed, its ``path`` a number.
BROKEN_TEXT = '<tool_call>\n{"name": "write", "arguments": {"path": 3}}\n</tool_call>'
GOOD_TEXT = (
    '<tool_call>\n{"name": "write", "arguments": {"path": "a.txt", "content": "hi"}}\n</tool_call>'
)


def _local_request(endpoint: str) -> dict[str, Any]:
    if endpoint == "messages":
        return {
            "model": "local",
            "max_tokens": 256,
            "messages": [{"role": "user", "content": "Write hi to a.txt"}],
            "tools": MESSAGES_TOOLS,
            "stream": True,
        }
    if endpoint == "responses":
        return {
            "model": "local",
            "input": "Write hi to a.txt",
            "tools": [
                {"type": "function", "name": "write", "parameters": SCHEMA},
                {"type": "function", "name": "read", "parameters": READ_SCHEMA},
            ],
            "stream": True,
        }
    return {
        "model": "local",
        "messages": [{"role": "user", "content": "Write hi to a.txt"}],
        "tools": [
            {"type": "function", "function": {"name": "write", "parameters": SCHEMA}},
            {"type": "function", "function": {"name": "read", "parameters": READ_SCHEMA}},
        ],
    }


@pytest.mark.parametrize(
    ("endpoint", "provider", "schema"),
    [
        pytest.param("messages", "llama-server", None, id="messages"),
        pytest.param(
            "responses",
            "llama-server",
            {
                "type": "object",
                "properties": {"name": {"const": "write"}, "arguments": SCHEMA},
                "required": ["name", "arguments"],
                "additionalProperties": False,
            },
            id="responses",
        ),
    ],
)
async def test_a_local_server_is_asked_in_the_way_it_reads_its_endpoint(
    anyio_backend: str, endpoint: Any, provider: str, schema: Any
) -> None:
    with running_local_server() as server:
        server.script(Output(BROKEN_TEXT), Output(GOOD_TEXT))
        await post(provider, f"{server.base_url}{ENDPOINTS[endpoint]}", _local_request(endpoint))
    _assert_local(server, schema)


def _assert_local(server: LocalServer, schema: Any) -> None:
    assert server.refused == []
    first, retry = server.requests
    history = "input" if "input" in first else "messages"
    if schema is None:  # no way to force a tool: asked again as before
        assert {k: v for k, v in retry.items() if k != history} == {
            k: v for k, v in first.items() if k != history
        }
        return
    assert retry["json_schema"] == schema
    assert {k: v for k, v in retry.items() if k not in (history, "json_schema")} == {
        k: v for k, v in first.items() if k != history
    }
