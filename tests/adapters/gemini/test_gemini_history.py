"""Gemini history (next_messages / check_history for ``gemini``) and the request reader."""

from __future__ import annotations

import json
from typing import Any

import msgspec
import pytest
from _toolwire_testdata import json_chunks, load_stream

import toolwire
import toolwire.lowlevel
from toolwire import ToolResult
from toolwire.adapters.gemini import read_gemini_request, replay
from toolwire.adapters.gemini.history import MALFORMED_CALL_NAME, SIGNATURE_SENTINEL
from toolwire.core.errors import ConfigurationError
from toolwire.core.turn import CallRecord, Turn
from toolwire.judge import Toolset
from toolwire.loop import answer_every_call, check_history, dispatch, next_messages

pytestmark = pytest.mark.anyio

USER = {"role": "user", "parts": [{"text": "What is the weather in Boston?"}]}
TWO_CALLS = "gemini/vertex_stream_function_call_arguments_two_calls.sse"


def signatures(name: str) -> list[str]:
    """The thoughtSignature values of a recording, in order, read with the standard library."""
    return [
        part["thoughtSignature"]
        for data in json_chunks(load_stream(name))
        for candidate in data.get("candidates", [])
        for part in candidate.get("content", {}).get("parts", [])
        if "thoughtSignature" in part
    ]


def ok(call: CallRecord, content: str) -> ToolResult:
    return ToolResult(call_id=call.call_id, name=call.name, content=content, status="ok")


async def test_a_signed_whole_call_keeps_its_signature() -> None:
    name = "gemini/function_call_thought_signature_gemini3.sse"
    turn = await toolwire.collect(load_stream(name), "gemini")
    (call,) = turn.calls
    model, results = next_messages(turn, [ok(call, "France")], "gemini")
    (signature,) = signatures(name)
    assert model == {
        "role": "model",
        "parts": [
            {"functionCall": {"name": "get_country", "args": {}}, "thoughtSignature": signature}
        ],
    }
    assert results == {
        "role": "user",
        "parts": [{"functionResponse": {"name": "get_country", "response": {"output": "France"}}}],
    }
    assert check_history([USER, model, results], "gemini") == []


async def test_streamed_calls_replay_as_objects_with_the_header_signature() -> None:
    turn = await toolwire.collect(load_stream(TWO_CALLS), "gemini")
    boston, san_francisco = turn.calls
    model, results = next_messages(
        turn, [ok(boston, "Sunny"), ok(san_francisco, "Foggy")], "gemini"
    )
    (signature,) = signatures(TWO_CALLS)  # on the first call's header only
    assert model["parts"] == [
        {
            "functionCall": {"name": "getWeather", "args": {"location": "Boston"}},
            "thoughtSignature": signature,
        },
        {"functionCall": {"name": "getWeather", "args": {"location": "San Francisco"}}},
    ]
    assert [p["functionResponse"]["response"] for p in results["parts"]] == [
        {"output": "Sunny"},
        {"output": "Foggy"},
    ]
    assert check_history([USER, model, results], "gemini") == []


async def test_a_rejected_call_is_replayed_with_empty_args_and_its_rejection() -> None:
    name = "gemini/max_tokens_mid_partial_args.derived.sse"
    turn = await toolwire.collect(load_stream(name), "gemini")
    (call,) = turn.calls
    assert call.outcome == "rejected"
    results = [result async for result in dispatch(turn, _never_run)]
    model, answers = next_messages(turn, results, "gemini")
    assert model["parts"] == [
        {
            "functionCall": {"name": "getWeather", "args": {}},
            "thoughtSignature": signatures(name)[0],
        }
    ]
    (part,) = answers["parts"]
    response = part["functionResponse"]
    assert response["name"] == "getWeather"
    assert "output-token limit" in response["response"]["error"]
    assert check_history([USER, model, answers], "gemini") == []


async def _never_run(call: CallRecord) -> Any:
    raise AssertionError(f"{call.name} must not run")


async def test_the_malformed_call_is_answered_like_any_call() -> None:
    turn = await toolwire.collect(
        load_stream("gemini/malformed_function_call.derived.sse"), "gemini"
    )
    results = [result async for result in dispatch(turn, _never_run)]
    model, answers = next_messages(turn, results, "gemini")
    # No name came from the server: the same stand-in on both sides, Google's documented
    # sentinel in place of the signature the server never sent (the model is unknown here).
    assert model == {
        "role": "model",
        "parts": [
            {
                "functionCall": {"name": MALFORMED_CALL_NAME, "args": {}},
                "thoughtSignature": SIGNATURE_SENTINEL,
            }
        ],
    }
    (part,) = answers["parts"]
    assert part["functionResponse"]["name"] == MALFORMED_CALL_NAME
    assert "id" not in part["functionResponse"]
    assert "MALFORMED_FUNCTION_CALL" in part["functionResponse"]["response"]["error"]
    assert check_history([USER, model, answers], "gemini") == []


async def test_provider_ids_are_replayed_on_both_sides() -> None:
    stream = (
        b'data: {"candidates": [{"content": {"role": "model", "parts": [{"functionCall": '
        b'{"id": "call-7", "name": "ls", "args": {"path": "/"}}}]}, "finishReason": "STOP"}],'
        b' "modelVersion": "gemini-2.5-pro"}\r\n\r\n'
    )
    turn = await toolwire.collect(stream, "gemini")
    (call,) = turn.calls
    assert (call.call_id, call.id_synthesized) == ("call-7", False)
    model, answers = next_messages(turn, [ok(call, "a b")], "gemini")
    # Gemini 2.x never required a signature: no sentinel is added for it.
    assert model["parts"] == [
        {"functionCall": {"name": "ls", "args": {"path": "/"}, "id": "call-7"}}
    ]
    assert answers["parts"][0]["functionResponse"]["id"] == "call-7"


async def test_text_thoughts_and_signatures_keep_their_parts() -> None:
    # Vercel ai's issue-18073 recording: the signature comes on an empty text part at the end.
    chunks = [
        {
            "candidates": [{"content": {"parts": [{"text": "Let me ", "thought": True}]}}],
            "responseId": "r-18073",
            "modelVersion": "gemini-3-flash-preview",
        },
        {"candidates": [{"content": {"parts": [{"text": "think.", "thought": True}]}}]},
        {"candidates": [{"content": {"parts": [{"text": "4"}]}}]},
        {
            "candidates": [
                {
                    "content": {"parts": [{"text": "", "thoughtSignature": "c2ln"}]},
                    "finishReason": "STOP",
                }
            ]
        },
    ]
    stream = b"".join(b"data: " + json.dumps(c).encode() + b"\r\n\r\n" for c in chunks)
    turn = await toolwire.collect(stream, "gemini")
    assert (turn.text, turn.reasoning) == ("4", "Let me think.")
    model, *answers = next_messages(turn, [], "gemini")
    assert answers == []
    assert model["parts"] == [
        {"text": "Let me think.", "thought": True},
        {"text": "4"},
        {"text": "", "thoughtSignature": "c2ln"},
    ]


def test_a_turn_that_was_not_remembered_is_replayed_from_its_fields() -> None:
    call = CallRecord(call_id="toolwire-0123456789abcdef-0", name="f", index=0, arguments_raw="{}")
    for model_name, signed in (("gemini-3-pro-preview", True), ("gemini-2.5-flash", False)):
        turn = Turn(text="Calling f.", calls=(call,), model=model_name, response_id="unknown")
        message = toolwire.lowlevel.history_format("gemini").assistant_message(turn)
        expected: dict[str, Any] = {"functionCall": {"name": "f", "args": {}}}
        if signed:
            expected["thoughtSignature"] = SIGNATURE_SENTINEL
        assert message == {"role": "model", "parts": [{"text": "Calling f."}, expected]}


async def test_error_results_are_error_responses() -> None:
    turn = await toolwire.collect(load_stream(TWO_CALLS), "gemini")
    boston, san_francisco = turn.calls
    results = [
        ToolResult(call_id=boston.call_id, name="getWeather", content="boom", status="error"),
        ToolResult(call_id=san_francisco.call_id, name="getWeather", content="no", status="denied"),
    ]
    _, answers = next_messages(turn, results, "gemini")
    assert [p["functionResponse"]["response"] for p in answers["parts"]] == [
        {"error": "boom"},
        {"error": "no"},
    ]


async def test_answer_every_call_fills_in_what_was_not_run() -> None:
    turn = await toolwire.collect(load_stream(TWO_CALLS), "gemini")
    results = answer_every_call(turn, [])
    messages = [USER, *next_messages(turn, results, "gemini")]
    assert check_history(messages, "gemini") == []


# -- problems() --------------------------------------------------------------------------------


def call_part(name: str, call_id: str | None = None, args: Any = None) -> dict[str, Any]:
    function: dict[str, Any] = {"name": name, "args": {} if args is None else args}
    if call_id is not None:
        function["id"] = call_id
    return {"functionCall": function}


def response_part(name: str, call_id: str | None = None) -> dict[str, Any]:
    response: dict[str, Any] = {"name": name, "response": {"output": "x"}}
    if call_id is not None:
        response["id"] = call_id
    return {"functionResponse": response}


def model(*parts: dict[str, Any]) -> dict[str, Any]:
    return {"role": "model", "parts": list(parts)}


def user(*parts: dict[str, Any]) -> dict[str, Any]:
    return {"role": "user", "parts": list(parts)}


def kinds(messages: list[dict[str, Any]]) -> list[tuple[str, int, str | None]]:
    return [(p.kind, p.index, p.call_id) for p in check_history(messages, "gemini")]


def test_a_call_without_an_answer() -> None:
    assert kinds([USER, model(call_part("a"), call_part("b")), user(response_part("a"))]) == [
        ("unanswered_call", 1, None)
    ]
    assert kinds([USER, model(call_part("a", "1"))]) == [("unanswered_call", 1, "1")]
    assert kinds([USER, model(call_part("a")), model({"text": "x"})]) == [
        ("unanswered_call", 1, None)
    ]


def test_answers_out_of_order_or_misnamed() -> None:
    messages = [
        USER,
        model(call_part("a"), call_part("b")),
        user(response_part("b"), response_part("a")),
    ]
    assert [k for k, _, _ in kinds(messages)] == ["orphan_result", "orphan_result"]
    messages = [USER, model(call_part("a", "1")), user(response_part("a", "2"))]
    assert kinds(messages) == [("orphan_result", 2, "2")]


def test_stray_duplicate_and_late_answers() -> None:
    assert kinds([USER, user(response_part("a"))]) == [("orphan_result", 1, None)]
    messages = [
        USER,
        model(call_part("a", "1")),
        user(response_part("a", "1"), response_part("a", "1")),
    ]
    assert kinds(messages) == [("duplicate_result", 2, "1")]
    messages = [
        USER,
        model(call_part("a", "1")),
        user({"text": "wait"}),
        user(response_part("a", "1")),
    ]
    assert kinds(messages) == [("unanswered_call", 1, "1"), ("result_out_of_place", 3, "1")]


def test_arguments_and_ids() -> None:
    messages = [
        USER,
        model(call_part("a", "1", args='{"x": 1}')),
        user(response_part("a", "1")),
        model(call_part("b", "1")),
        user(response_part("b", "1")),
    ]
    assert kinds(messages) == [("arguments_not_object", 1, "1"), ("duplicate_call_id", 3, "1")]


# -- the request reader -------------------------------------------------------------------------

SDK_DECLARATION = {  # what google-genai 2.x sends for a FunctionDeclaration (upper-case types)
    "name": "getWeather",
    "description": "The weather in a city.",
    "parameters": {
        "type": "OBJECT",
        "properties": {
            "location": {"type": "STRING"},
            "days": {"type": "INTEGER", "nullable": True},
            "tags": {"type": "ARRAY", "items": {"type": "STRING"}, "maxItems": "3"},
        },
        "required": ["location"],
        "propertyOrdering": ["location", "days", "tags"],
    },
}
REQUEST = {
    "contents": [USER],
    "tools": [
        {"functionDeclarations": [SDK_DECLARATION, {"name": "now"}]},
        {"googleSearch": {}},
        {
            "functionDeclarations": [
                {"name": "ls", "parametersJsonSchema": {"type": "object", "properties": {}}}
            ]
        },
    ],
    "toolConfig": {"functionCallingConfig": {"mode": "AUTO"}},
    "generationConfig": {"maxOutputTokens": 256, "stopSequences": ["END"]},
}


def test_the_request_reader() -> None:
    facts = read_gemini_request(REQUEST)
    assert facts.max_tokens == 256
    assert facts.stop_sequences == ("END",)
    assert facts.tool_choice == {"functionCallingConfig": {"mode": "AUTO"}}
    assert facts.model is None  # it is in the URL
    assert facts.tools is not None
    assert [tool["name"] for tool in facts.tools] == ["getWeather", "now", "ls"]
    assert facts.tools[0]["parameters"]["properties"] == {
        "location": {"type": "string"},
        "days": {"type": ["integer", "null"]},
        "tags": {"type": "array", "items": {"type": "string"}, "maxItems": 3},
    }
    # The judge's Toolset reads every normalized declaration (it refuses the raw ones).
    assert Toolset(facts.tools).names() == ("getWeather", "ls", "now")
    with pytest.raises(ConfigurationError):
        Toolset([SDK_DECLARATION])
    with pytest.raises(ConfigurationError):
        Toolset([{"name": "now"}])


def test_the_request_reader_without_tools_or_config() -> None:
    facts = read_gemini_request({"contents": []})
    assert (facts.max_tokens, facts.stop_sequences, facts.tools) == (None, (), None)
    snake = read_gemini_request({"generation_config": {"max_output_tokens": 9}})
    assert snake.max_tokens == 9
    with pytest.raises(ConfigurationError):
        read_gemini_request({"generationConfig": {"maxOutputTokens": 0}})
    with pytest.raises(ConfigurationError):
        read_gemini_request({"tools": {"functionDeclarations": []}})


async def test_the_request_tools_judge_the_calls() -> None:
    stream = (
        b'data: {"candidates": [{"content": {"parts": ['
        b'{"functionCall": {"name": "getWeather", "args": {"location": 3}}},'
        b'{"functionCall": {"name": "getWeather", "args": {"location": "Oslo", "days": null}}},'
        b'{"functionCall": {"name": "rm", "args": {}}}]}, "finishReason": "STOP"}]}\r\n\r\n'
    )
    # Per turn on a Pipeline: the request's tools judge the calls. (``toolwire.collect(...,
    # request=REQUEST)`` reads the limit and stop sequences but not the tools: see the report.)
    turn = await toolwire.Pipeline("gemini").collect(stream, request=REQUEST)
    wrong, right, unknown = turn.calls
    assert wrong.verdict is not None
    assert wrong.verdict.reason == "schema"
    assert right.may_run
    assert right.arguments == {"location": "Oslo", "days": None}
    assert unknown.verdict is not None
    assert unknown.verdict.reason == "unknown_tool"


def test_the_replay_parts_travel_with_the_turn_and_survive_encoding() -> None:
    part = replay.ReplayPart(kind="text", text="x", signature="c2ln")
    turn = Turn(provider_content=(msgspec.to_builtins(part),))
    assert replay.recall(turn) == (part,)
    # A Turn sent through JSON (a log, another process) keeps them.
    again = msgspec.json.decode(msgspec.json.encode(turn), type=Turn)
    assert replay.recall(again) == (part,)
    assert replay.recall(Turn()) is None
    # Another provider's content is not mistaken for Gemini parts.
    assert replay.recall(Turn(provider_content=({"type": "thinking", "signature": "x"},))) is None
