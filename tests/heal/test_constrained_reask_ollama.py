"""The constrained re-ask on Ollama, in its own shapes, against a scripted Ollama (issue 31).

Ollama forces no tool; it constrains the reply's text with a JSON Schema: ``format`` on
``/api/chat``, ``response_format: {"type": "json_schema"}`` on ``/v1`` (which its OpenAI layer
turns into ``format``: ollama/ollama ``openai/openai.go``, since v0.5.0). The re-ask asks for
the chosen tool's call written as the whole reply, ``{"name": T, "arguments": {...}}``, and
without ``tools``, so that no tool parser of Ollama reads that text
(``adapters/ollama/constrain.py`` says why). The reply is read as a call left in the text and
judged like any call: a server that ignores the constraint and breaks the call again is
rejected again.
"""

from __future__ import annotations

import json
from typing import Any

import httpx
import pytest

import toolwire

from .local_server import ENDPOINTS, LocalServer, Output, running_local_server

pytestmark = [pytest.mark.anyio]

SCHEMA = {
    "type": "object",
    "properties": {"path": {"type": "string"}, "content": {"type": "string"}},
    "required": ["path", "content"],
}
READ_SCHEMA = {"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]}
#: A schema with a keyword llama.cpp's converter does not keep to whole.
SEARCH_SCHEMA = {
    "type": "object",
    "properties": {"pattern": {"type": "string", "pattern": "^[a-z]+$"}},
    "required": ["pattern"],
}
TOOLS = [
    {"type": "function", "function": {"name": "write", "parameters": SCHEMA}},
    {"type": "function", "function": {"name": "read", "parameters": READ_SCHEMA}},
    {"type": "function", "function": {"name": "search", "parameters": SEARCH_SCHEMA}},
]
#: A Qwen-style call the server's parser missed, its ``path`` a number, ``content`` missing.
BROKEN_TEXT = '<tool_call>\n{"name": "write", "arguments": {"path": 3}}\n</tool_call>'
#: What the constraint makes the model write: the call as the whole reply.
GOOD_ARGUMENTS = '{"path": "a.txt", "content": "hi"}'
GOOD_REPLY = '{"name": "write", "arguments": ' + GOOD_ARGUMENTS + "}"
#: A server that ignores the constraint and writes the broken call again, in the same shape.
BROKEN_REPLY = '{"name": "write", "arguments": {"path": 3}}'
WRITE_AS_JSON = {
    "type": "object",
    "properties": {"name": {"const": "write"}, "arguments": SCHEMA},
    "required": ["name", "arguments"],
    "additionalProperties": False,
}


def _request(endpoint: str, **extra: Any) -> dict[str, Any]:
    return {
        "model": "local",
        "messages": [{"role": "user", "content": "Write hi to a.txt"}],
        "tools": TOOLS,
        "stream": False,
        **extra,
    }


async def _post(
    server: LocalServer, endpoint: str, provider: str, body: dict[str, Any]
) -> httpx.Response:
    transport = toolwire.HealingTransport(
        wrapped=httpx.AsyncHTTPTransport(), provider=provider, max_retries=1
    )
    async with httpx.AsyncClient(transport=transport, timeout=10) as client:
        response = await client.post(f"{server.base_url}{ENDPOINTS[endpoint]}", json=body)
        await response.aread()
        return response


def _calls(endpoint: str, response: httpx.Response) -> list[tuple[str, Any]]:
    """``(name, arguments)`` of every call of a whole healed answer."""
    body = response.json()
    if endpoint == "ollama":
        calls = body["message"].get("tool_calls") or []
        return [(c["function"]["name"], c["function"]["arguments"]) for c in calls]
    calls = body["choices"][0]["message"].get("tool_calls") or []
    return [(c["function"]["name"], c["function"]["arguments"]) for c in calls]


def _without(request: dict[str, Any], *keys: str) -> dict[str, Any]:
    return {key: value for key, value in request.items() if key not in keys}


# (endpoint, provider, the keys the constraint adds, the keys the retry goes without)
OLLAMA_WAYS = [
    pytest.param("ollama", "ollama", {"format": WRITE_AS_JSON}, id="api-chat"),
    pytest.param(
        "chat",
        "ollama-openai",
        {
            "response_format": {
                "type": "json_schema",
                "json_schema": {"name": "write", "schema": WRITE_AS_JSON},
            }
        },
        id="v1",
    ),
]


@pytest.mark.parametrize(("endpoint", "provider", "forced"), OLLAMA_WAYS)
async def test_ollama_is_asked_for_the_call_in_its_own_shape_without_tools(
    anyio_backend: str, endpoint: str, provider: str, forced: dict[str, Any]
) -> None:
    with running_local_server() as server:
        server.script(Output(BROKEN_TEXT), Output(GOOD_REPLY))
        response = await _post(server, endpoint, provider, _request(endpoint))
    assert server.refused == []
    first, retry = server.requests
    assert first["tools"] == TOOLS
    assert "tools" not in retry
    for key, value in forced.items():
        assert retry[key] == value
    # Only the forcing keys and the history (the true message of the rejection) change.
    assert _without(retry, "messages", *forced) == _without(first, "messages", "tools")
    assert len(retry["messages"]) > len(first["messages"])
    # The constrained reply, a call object as the whole text, is the call the client gets,
    # its arguments as the model wrote them.
    assert _calls(endpoint, response) == [
        ("write", json.loads(GOOD_ARGUMENTS) if endpoint == "ollama" else GOOD_ARGUMENTS)
    ]
    assert response.headers["x-toolwire-constrained"] == "write=1"


@pytest.mark.parametrize(("endpoint", "provider", "forced"), OLLAMA_WAYS)
async def test_a_reply_that_ignores_the_constraint_is_still_judged(
    anyio_backend: str, endpoint: str, provider: str, forced: dict[str, Any]
) -> None:
    """An Ollama that ignores ``format`` and breaks the call again: rejected again, the client
    never receives it, and the response does not say a constrained re-ask brought a call."""
    with running_local_server() as server:
        server.script(Output(BROKEN_TEXT), Output(BROKEN_REPLY))
        response = await _post(server, endpoint, provider, _request(endpoint))
    assert server.refused == []
    _, retry = server.requests
    for key, value in forced.items():
        assert retry[key] == value
    # Healing ends without a valid call: HTTP 502, toolwire's error, no call.
    assert response.status_code == 502
    error = response.json()["error"]  # Ollama's is a string, Chat's an object
    assert "tool_call_rejected" in json.dumps(error) if endpoint == "chat" else "write" in error
    assert "tool_calls" not in response.text
    assert "x-toolwire-constrained" not in response.headers


@pytest.mark.parametrize(
    ("endpoint", "provider", "own"),
    [
        pytest.param("ollama", "ollama", {"format": "json"}, id="api-chat-json"),
        pytest.param("ollama", "ollama", {"format": READ_SCHEMA}, id="api-chat-schema"),
        pytest.param(
            "chat", "ollama-openai", {"response_format": {"type": "json_object"}}, id="v1"
        ),
    ],
)
async def test_a_request_with_its_own_format_is_asked_again_as_before(
    anyio_backend: str, endpoint: str, provider: str, own: dict[str, Any]
) -> None:
    """The client's structured output is never replaced, and its tools stay."""
    with running_local_server() as server:
        server.script(Output(BROKEN_TEXT), Output(GOOD_REPLY))
        await _post(server, endpoint, provider, _request(endpoint, **own))
    first, retry = server.requests
    assert _without(retry, "messages") == _without(first, "messages")


@pytest.mark.parametrize(
    ("endpoint", "provider"), [("ollama", "ollama"), ("chat", "ollama-openai")]
)
async def test_a_schema_past_llama_cpp_s_converter_is_asked_again_as_before(
    anyio_backend: str, endpoint: str, provider: str
) -> None:
    broken = '<tool_call>\n{"name": "search", "arguments": {"pattern": 1}}\n</tool_call>'
    with running_local_server() as server:
        server.script(Output(broken), Output("I could not search."))
        await _post(server, endpoint, provider, _request(endpoint))
    first, retry = server.requests
    assert _without(retry, "messages") == _without(first, "messages")


async def test_a_call_object_with_a_key_more_is_not_read_as_a_call(anyio_backend: str) -> None:
    """Ollama v0.5.0 and v0.5.1 dropped the root's ``additionalProperties`` from ``format``: a
    key beside ``name`` and ``arguments`` could come. Such a reply is no call: nothing runs."""
    extra = '{"name": "write", "arguments": ' + GOOD_ARGUMENTS + ', "note": "done"}'
    with running_local_server() as server:
        server.script(Output(BROKEN_TEXT), Output(extra))
        response = await _post(server, "ollama", "ollama", _request("ollama"))
    assert _calls("ollama", response) == []
    assert "x-toolwire-constrained" not in response.headers
