"""``constrained_ollama``: the re-ask's body on ``/api/chat``, and every reason it is not one.

The shapes come from Ollama's own source (ollama/ollama ``api/types.go``: ``format`` is raw
JSON, ``"json"`` or a JSON Schema object, since v0.5.0); the through-the-wire tests are in
``tests/heal/test_constrained_reask_ollama.py``.
"""

from __future__ import annotations

from typing import Any

import pytest

from toolwire.adapters.ollama.constrain import MECHANISM, constrained_ollama

WRITE_SCHEMA = {
    "type": "object",
    "properties": {"path": {"type": "string"}},
    "required": ["path"],
}


def _tool(name: str, parameters: Any = None) -> dict[str, Any]:
    function: dict[str, Any] = {"name": name}
    if parameters is not None:
        function["parameters"] = parameters
    return {"type": "function", "function": function}


def _body(*tools: dict[str, Any], **extra: Any) -> dict[str, Any]:
    return {
        "model": "qwen3",
        "messages": [{"role": "user", "content": "hi"}],
        "tools": list(tools),
        "options": {"num_predict": 64},
        **extra,
    }


def test_the_call_is_asked_for_in_format_and_the_tools_are_left_out() -> None:
    body = _body(_tool("write", WRITE_SCHEMA), _tool("read"))
    constraint = constrained_ollama(body, "write")
    assert constraint.applied
    assert constraint.mechanism == MECHANISM == "format=call"
    assert constraint.enforces_schema
    assert constraint.body == {
        "model": "qwen3",
        "messages": body["messages"],
        "options": {"num_predict": 64},
        "format": {
            "type": "object",
            "properties": {"name": {"const": "write"}, "arguments": WRITE_SCHEMA},
            "required": ["name", "arguments"],
            "additionalProperties": False,
        },
    }
    assert body["tools"] == [_tool("write", WRITE_SCHEMA), _tool("read")]  # not mutated


def test_a_tool_without_parameters_is_asked_for_with_an_empty_object() -> None:
    constraint = constrained_ollama(_body(_tool("now")), "now")
    assert constraint.body is not None
    assert constraint.body["format"]["properties"]["arguments"] == {
        "type": "object",
        "properties": {},
    }


@pytest.mark.parametrize(
    ("body", "why", "detail"),
    [
        pytest.param(_body(_tool("read")), "tool_not_offered", "", id="not-offered"),
        pytest.param(
            _body(_tool("write", WRITE_SCHEMA), _tool("write")),
            "tool_not_offered",
            "",
            id="offered-twice",
        ),
        pytest.param({"model": "m", "messages": []}, "tool_not_offered", "", id="no-tools"),
        pytest.param(
            _body(_tool("write", WRITE_SCHEMA), format="json"), "client_format", "format", id="json"
        ),
        pytest.param(
            _body(_tool("write", WRITE_SCHEMA), format=WRITE_SCHEMA),
            "client_format",
            "format",
            id="schema",
        ),
        pytest.param(
            _body(_tool("write", {"type": "object", "not": {"required": ["path"]}})),
            "schema_unsupported",
            "#: not",
            id="past-the-converter",
        ),
        pytest.param(
            _body(_tool("write", "not a schema")),
            "schema_unsupported",
            "#: not a schema",
            id="not-a-schema",
        ),
    ],
)
def test_what_is_not_constrained_says_why(body: dict[str, Any], why: str, detail: str) -> None:
    constraint = constrained_ollama(body, "write")
    assert not constraint.applied
    assert constraint.body is None
    assert (constraint.tool, constraint.skipped, constraint.detail) == ("write", why, detail)
