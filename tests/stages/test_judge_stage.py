"""The judge stage inside collect: every way to declare tools, and what reaches the Turn."""

from __future__ import annotations

import json
from typing import Any

import pytest
from _toolwire_testdata import chat_chunk, sse_body
from pydantic import BaseModel

import toolwire
import toolwire.lowlevel

pytestmark = pytest.mark.anyio

PARAMETERS = {
    "type": "object",
    "properties": {"path": {"type": "string"}, "mode": {"enum": ["r", "w"]}},
    "required": ["path"],
    "additionalProperties": False,
}


class Read(BaseModel):
    path: str
    mode: str = "r"


TOOL_STYLES: dict[str, Any] = {
    "openai-chat": {"type": "function", "function": {"name": "Read", "parameters": PARAMETERS}},
    "openai-responses": {"type": "function", "name": "Read", "parameters": PARAMETERS},
    "anthropic": {"name": "Read", "input_schema": PARAMETERS},
    "json-schema": {"title": "Read", **PARAMETERS},
    "pydantic": Read,
}


def one_call(arguments: str, name: str = "Read", finish: str = "tool_calls") -> bytes:
    return sse_body(
        [
            chat_chunk(
                {
                    "tool_calls": [
                        {"index": 0, "id": "c1", "function": {"name": name, "arguments": arguments}}
                    ]
                }
            ),
            chat_chunk({}, finish),
        ]
    )


@pytest.mark.parametrize("style", sorted(TOOL_STYLES))
async def test_every_tool_style_validates_the_arguments(style: str) -> None:
    tools = [TOOL_STYLES[style]]
    good = await toolwire.collect(one_call('{"path": "a.py"}'), tools=tools)
    assert good.calls[0].outcome == "ok"
    assert good.calls[0].arguments == {"path": "a.py"}

    missing = await toolwire.collect(one_call('{"mode": "r"}'), tools=tools)
    (call,) = missing.calls
    assert call.outcome == "rejected"
    assert call.verdict is not None
    assert call.verdict.reason == "schema"
    assert "path" in (call.verdict.message or "")
    assert call.arguments is None

    unknown = await toolwire.collect(one_call('{"path": "a"}', name="Write"), tools=tools)
    assert unknown.calls[0].verdict is not None
    assert unknown.calls[0].verdict.reason == "unknown_tool"
    assert "Read" in (unknown.calls[0].verdict.message or "")


async def test_schema_errors_name_their_json_path() -> None:
    turn = await toolwire.collect(
        one_call('{"path": 3, "mode": "x", "extra": 1}'), tools=[TOOL_STYLES["anthropic"]]
    )
    verdict = turn.calls[0].verdict
    assert verdict is not None
    message = verdict.message or ""
    assert "$.path" in message
    assert "$.mode" in message
    assert "extra" in message


async def test_an_envelope_is_unwrapped_only_when_the_schema_says_so() -> None:
    turn = await toolwire.collect(
        one_call('{"arguments": {"path": "a"}}'), tools=[TOOL_STYLES["openai-chat"]]
    )
    verdict = turn.calls[0].verdict
    assert verdict is not None
    assert (verdict.outcome, verdict.repairs) == ("repaired", ("envelope",))
    assert verdict.arguments == {"path": "a"}
    # Without a schema there is nothing to tell an envelope from a real "arguments" parameter.
    plain = await toolwire.collect(one_call('{"arguments": {"path": "a"}}'))
    assert plain.calls[0].arguments == {"arguments": {"path": "a"}}


async def test_a_valid_call_keeps_its_text_byte_for_byte() -> None:
    raw = '{ "path" :"a.py",\n  "mode":"r" }'
    turn = await toolwire.collect(one_call(raw), tools=[TOOL_STYLES["anthropic"]])
    (call,) = turn.calls
    assert call.outcome == "ok"
    assert call.arguments_raw == raw
    assert (
        toolwire.lowlevel.history_format("openai-chat").assistant_message(turn)["tool_calls"][0]["function"][
            "arguments"
        ]
        == raw
    )


async def test_a_cut_call_that_parses_is_rejected_unless_allowed() -> None:
    body = one_call('{"path": "a.py"}', finish="length")
    rejected = await toolwire.collect(body, tools=[Read])
    (call,) = rejected.calls
    assert (call.outcome, call.truncated) == ("rejected", True)
    assert call.verdict is not None
    assert call.verdict.reason == "truncated"
    assert "output-token limit" in (call.verdict.message or "")
    allowed = await toolwire.collect(body, tools=[Read], truncated_calls="allow")
    (call,) = allowed.calls
    assert (call.outcome, call.truncated, call.arguments) == ("ok", True, {"path": "a.py"})


async def test_the_strict_policy_rejects_what_the_default_repairs() -> None:
    body = one_call("```json\n" + json.dumps({"path": "a"}) + "\n```")
    default = await toolwire.collect(body)
    assert default.calls[0].verdict is not None
    assert default.calls[0].verdict.repairs == ("fence",)
    strict = await toolwire.collect(body, policy=toolwire.STRICT_POLICY)
    assert strict.calls[0].outcome == "rejected"


async def test_a_bad_policy_or_tool_is_a_configuration_error() -> None:
    with pytest.raises(toolwire.ConfigurationError):
        await toolwire.collect(one_call("{}"), policy="strict")
    with pytest.raises(toolwire.ConfigurationError):
        await toolwire.collect(one_call("{}"), tools=[{"nothing": "here"}])
    with pytest.raises(toolwire.ConfigurationError):
        await toolwire.collect(one_call("{}"), truncated_calls="maybe")  # type: ignore[arg-type]
