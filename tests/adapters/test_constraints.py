"""The constrained re-ask's kit and each format's writer, without I/O (issue 31).

Which rejected call a constraint may fix (``constrained_reask``), which schemas each engine
keeps to whole (``unsupported_keyword``: read in each engine's source, see
``adapters/constraints.py``), and each format's request in its server's shape; the transport
tests (``tests/heal/test_constrained_reask*.py``) check the same shapes arrive at a server.
"""

from __future__ import annotations

from typing import Any

import pytest

from toolwire.adapters.anthropic.constrain import constrained_messages
from toolwire.adapters.constraints import (
    LLAMA_CPP,
    LLAMA_CPP_PYTHON,
    OPENAI_STRICT,
    ConstraintOptions,
    constrained_reask,
    unsupported_keyword,
)
from toolwire.adapters.gemini.constrain import constrained_gemini
from toolwire.adapters.openai_chat.healing import ChatWireFormat
from toolwire.adapters.openai_responses.constrain import constrained_responses
from toolwire.core.turn import CallRecord, Turn
from toolwire.core.verdict import Verdict
from toolwire.core.wire import Constraint

OBJECT = {
    "type": "object",
    "properties": {"path": {"type": "string"}},
    "required": ["path"],
    "additionalProperties": False,
}


@pytest.mark.parametrize(
    ("schema", "engine", "found"),
    [
        pytest.param(OBJECT, LLAMA_CPP, None, id="closed-object"),
        pytest.param(OBJECT, OPENAI_STRICT, None, id="strict-fits"),
        pytest.param(
            {**OBJECT, "description": "x", "title": "t"}, LLAMA_CPP, None, id="annotations"
        ),
        pytest.param(
            {"type": "object", "properties": {"n": {"type": "integer", "minimum": 1}}},
            LLAMA_CPP,
            "#/properties/n: minimum",
            id="minimum",
        ),
        pytest.param(
            {"type": "object", "properties": {"a": {"oneOf": [{"type": "string"}]}}},
            LLAMA_CPP,
            "#/properties/a: oneOf",
            id="oneOf-read-as-anyOf",
        ),
        pytest.param(
            {"type": "object", "$defs": {"p": {"not": {"type": "null"}}}},
            LLAMA_CPP,
            "#/$defs/p: not",
            id="nested-def",
        ),
        pytest.param(
            {"type": "object", "properties": {"a": {"type": ["string", "null"], "maxLength": 3}}},
            LLAMA_CPP_PYTHON,
            "#/properties/a: type list",
            id="type-list-drops-keywords",
        ),
        pytest.param(
            {"type": "object", "properties": {"a": {"type": ["string", "null"], "maxLength": 3}}},
            LLAMA_CPP,
            None,
            id="type-list-kept",
        ),
        pytest.param(
            {"type": "object", "properties": {"a": {"type": "string"}}, "required": []},
            OPENAI_STRICT,
            "#: additionalProperties not false",
            id="strict-open-object",
        ),
        pytest.param(
            {**OBJECT, "properties": {"path": {"type": "string"}, "x": {"type": "string"}}},
            OPENAI_STRICT,
            "#: optional property 'x'",
            id="strict-optional",
        ),
        pytest.param({"anyOf": [OBJECT]}, OPENAI_STRICT, "#: root not an object", id="strict-root"),
        pytest.param("not a schema", LLAMA_CPP, "#: not a schema", id="not-a-schema"),
    ],
)
def test_what_each_engine_keeps_to(schema: Any, engine: Any, found: str | None) -> None:
    assert unsupported_keyword(schema, engine) == found


def test_a_schema_nested_past_the_walk_is_not_taken() -> None:
    schema: dict[str, Any] = {"type": "string"}
    for _ in range(100):
        schema = {"type": "array", "items": schema}
    assert unsupported_keyword(schema, LLAMA_CPP) == ("#" + "/items" * 65 + ": nested past 64")


def _call(name: str, reason: str | None, *, truncated: bool = False, index: int = 0) -> CallRecord:
    verdict = (
        Verdict(outcome="ok", arguments={})
        if reason is None
        else Verdict(outcome="rejected", arguments=None, reason=reason, message="wrong")  # type: ignore[arg-type]
    )
    return CallRecord(
        call_id=f"c{index}",
        name=name,
        index=index,
        arguments_raw="{",
        verdict=verdict,
        truncated=truncated,
    )


def _asked(body: Any, tool: str) -> Constraint:
    return Constraint(tool=tool, body={**body, "forced": tool}, mechanism="test")


@pytest.mark.parametrize(
    ("calls", "options", "skipped", "detail"),
    [
        pytest.param([_call("write", "schema")], ConstraintOptions(), None, "", id="schema"),
        pytest.param([_call("write", "not_json")], ConstraintOptions(), None, "", id="not-json"),
        pytest.param(
            [_call("write", "server_could_not_parse")], ConstraintOptions(), None, "", id="markup"
        ),
        pytest.param(
            [_call("read", None), _call("write", "wrong_type", index=1)],
            ConstraintOptions(),
            None,
            "",
            id="beside-an-accepted-call",
        ),
        pytest.param(
            [_call("write", "truncated", truncated=True)],
            ConstraintOptions(),
            "truncated",
            "",
            id="cut",
        ),
        pytest.param(
            [_call("nope", "unknown_tool")],
            ConstraintOptions(),
            "reason",
            "unknown_tool",
            id="unknown-tool",
        ),
        pytest.param(
            [_call("write", "schema"), _call("write", "schema", index=1)],
            ConstraintOptions(),
            "several_calls",
            "2",
            id="two-calls",
        ),
        pytest.param(
            [_call("", "server_could_not_parse")],
            ConstraintOptions(),
            "no_tool_named",
            "",
            id="no-name",
        ),
        pytest.param(
            [_call("write", "schema")], ConstraintOptions(enabled=False), "off", "", id="off"
        ),
        pytest.param(
            [_call("write", "schema")],
            ConstraintOptions(off_tools=frozenset({"write"})),
            "off",
            "tool",
            id="off-for-the-tool",
        ),
    ],
)
def test_which_re_ask_is_constrained(
    calls: list[CallRecord], options: ConstraintOptions, skipped: str | None, detail: str
) -> None:
    found = constrained_reask({"messages": []}, Turn(calls=tuple(calls)), _asked, options)
    assert found is not None
    assert found.skipped == skipped
    assert found.detail == detail
    if skipped is None:
        assert found.body == {"messages": [], "forced": "write"}


def test_a_turn_with_no_rejected_call_is_not_asked_again() -> None:
    turn = Turn(text="Done.", calls=(_call("read", None),))
    assert constrained_reask({}, turn, _asked) is None


# -- each format's request -----------------------------------------------------------------------

CHAT_TOOLS = [
    {"type": "function", "function": {"name": "write", "parameters": OBJECT}},
    {"type": "function", "function": {"name": "read", "parameters": OBJECT}},
]


def test_openai_marks_only_the_chosen_tool_strict() -> None:
    body = {"messages": [], "tools": CHAT_TOOLS}
    found = ChatWireFormat("openai-chat").constrained(body, "read")
    assert found.mechanism == "tool_choice=function+strict"
    assert found.enforces_schema
    assert found.body is not None
    assert found.body["tools"] == [
        CHAT_TOOLS[0],
        {"type": "function", "function": {"name": "read", "parameters": OBJECT, "strict": True}},
    ]
    assert body["tools"] is CHAT_TOOLS  # the follow-up itself is not changed


@pytest.mark.parametrize(
    ("provider", "tools", "skipped"),
    [
        pytest.param("openrouter", CHAT_TOOLS, "no_mechanism", id="no-mechanism"),
        pytest.param("llama-server", [*CHAT_TOOLS, CHAT_TOOLS[1]], "tool_not_offered", id="twice"),
        pytest.param("llama-server", CHAT_TOOLS[:1], "tool_not_offered", id="absent"),
    ],
)
def test_a_chat_re_ask_that_cannot_be_constrained(
    provider: str, tools: list[Any], skipped: str
) -> None:
    found = ChatWireFormat(provider).constrained({"messages": [], "tools": tools}, "read")
    assert found.skipped == skipped
    assert found.body is None
    assert not found.applied


def test_gemini_keeps_the_request_s_own_spelling() -> None:
    body = {
        "tools": [{"function_declarations": [{"name": "read", "parameters": OBJECT}]}],
        "tool_config": {"function_calling_config": {"mode": "AUTO"}},
    }
    found = constrained_gemini(body, "read")
    assert found.body is not None
    assert found.body["tool_config"] == {
        "function_calling_config": {"mode": "ANY", "allowed_function_names": ["read"]}
    }
    assert not found.enforces_schema


def test_anthropic_elsewhere_than_llama_server_has_no_way() -> None:
    body = {"tools": [{"name": "read", "input_schema": OBJECT}]}
    found = constrained_messages(body, "read", upstream="vllm", local=True)
    assert found.skipped == "no_mechanism"


@pytest.mark.parametrize(("strict", "enforced"), [(None, True), (True, True), (False, False)])
def test_a_responses_tool_is_strict_unless_it_says_not(strict: bool | None, enforced: bool) -> None:
    tool: dict[str, Any] = {"type": "function", "name": "read", "parameters": OBJECT}
    if strict is not None:
        tool["strict"] = strict
    found = constrained_responses(
        {"input": [], "tools": [tool]}, "read", upstream="openai-chat", local=False
    )
    assert found.enforces_schema is enforced
