"""Ollama history: object arguments, ``tool_name`` results, ids only when Ollama gave them."""

from __future__ import annotations

import json
from typing import Any

import pytest
from _toolwire_testdata import load_stream
from test_ollama_fixtures import DERIVED, DOCS, done, line, ndjson, tool_call

import toolwire
from toolwire.adapters.ollama import OllamaHistory
from toolwire.core.errors import HistoryError
from toolwire.core.turn import CallRecord, Turn
from toolwire.core.verdict import Verdict
from toolwire.loop import ToolResult, answer_every_call, check_history, next_messages

pytestmark = pytest.mark.anyio

WEATHER = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "parameters": {
            "type": "object",
            "properties": {"city": {"type": "string"}},
            "required": ["city"],
        },
    },
}
USER = {"role": "user", "content": "Weather in Tokyo and Paris?"}


def results_for(turn: Turn) -> list[ToolResult]:
    return [
        ToolResult(call_id=c.id, name=c.name, content=f"sunny in {c.arguments}", status="ok")
        if c.may_run
        else ToolResult(
            call_id=c.id,
            name=c.name,
            content=c.verdict.message if c.verdict and c.verdict.message else "",
            status="rejected",
        )
        for c in turn.calls
    ]


async def test_a_turn_with_ollama_ids_and_a_cut_call() -> None:
    turn = await toolwire.collect(load_stream(DERIVED), "ollama", tools=[WEATHER])
    results = results_for(turn)
    assistant, first, second = next_messages(turn, results, "ollama")
    assert assistant == {
        "role": "assistant",
        "content": "",
        "tool_calls": [
            {
                "function": {"name": "get_weather", "arguments": {"city": "Tokyo"}},
                "id": "call_gfuxaa3e",
            },
            # Cut at the token limit: rejected, replayed as an empty OBJECT (never a string).
            {"function": {"name": "get_weather", "arguments": {}}, "id": "call_9r4kq2vx"},
        ],
    }
    assert first == {
        "role": "tool",
        "content": "sunny in {'city': 'Tokyo'}",
        "tool_name": "get_weather",
        "tool_call_id": "call_gfuxaa3e",
    }
    assert second["tool_call_id"] == "call_9r4kq2vx"
    assert second["tool_name"] == "get_weather"
    assert "output-token limit" in second["content"]
    assert check_history([USER, assistant, first, second], "ollama") == []


async def test_synthesized_ids_are_never_sent() -> None:
    # The docs example has no id: Ollama never saw one, so none is written back, on the call or
    # on its result (renderers print ids into the prompt).
    turn = await toolwire.collect(load_stream(DOCS), "ollama", tools=[WEATHER])
    (call,) = turn.calls
    assert call.id_synthesized
    messages = next_messages(turn, results_for(turn), "ollama")
    assert messages == [
        {
            "role": "assistant",
            "content": "",
            "tool_calls": [{"function": {"name": "get_weather", "arguments": {"city": "Tokyo"}}}],
        },
        {"role": "tool", "content": "sunny in {'city': 'Tokyo'}", "tool_name": "get_weather"},
    ]
    assert check_history([USER, *messages], "ollama") == []


async def test_text_and_thinking_are_replayed() -> None:
    body = ndjson(
        line(thinking="Need the tool."),
        line(content="Checking."),
        line(calls=[tool_call("get_weather", {"city": "Oslo"}, index=0, call_id="call_o")]),
        done(),
    )
    turn = await toolwire.collect(body, "ollama", tools=[WEATHER])
    assistant = OllamaHistory().assistant_message(turn)
    assert assistant == {
        "role": "assistant",
        "content": "Checking.",
        "thinking": "Need the tool.",
        "tool_calls": [
            {"function": {"name": "get_weather", "arguments": {"city": "Oslo"}}, "id": "call_o"}
        ],
    }


def test_a_valid_call_is_its_own_text_parsed_a_repaired_one_its_repair() -> None:
    ok_raw = '{"city":  "Oslo" , "days": 2}'
    ok = CallRecord(
        call_id="c0",
        name="get_weather",
        index=0,
        arguments_raw=ok_raw,
        verdict=Verdict(outcome="ok", arguments={"city": "Oslo", "days": 2}),
    )
    repaired = CallRecord(
        call_id="c1",
        name="get_weather",
        index=1,
        arguments_raw="{'city': 'Rome',}",
        verdict=Verdict(outcome="repaired", arguments={"city": "Rome"}, repairs=("quotes",)),
    )
    rejected = CallRecord(
        call_id="c2",
        name="get_weather",
        index=2,
        arguments_raw='{"city": "Li',
        verdict=Verdict(outcome="rejected", arguments=None, reason="truncated", message="cut"),
    )
    unjudged = CallRecord(call_id="c3", name="get_weather", index=3, arguments_raw='{"a": 1}')
    turn = Turn(calls=(ok, repaired, rejected, unjudged), stop_reason="tool_calls")
    sent = [
        c["function"]["arguments"] for c in OllamaHistory().assistant_message(turn)["tool_calls"]
    ]
    assert sent == [{"city": "Oslo", "days": 2}, {"city": "Rome"}, {}, {}]
    assert list(sent[0]) == ["city", "days"]  # the model's key order is kept


def test_results_name_their_tool_in_order() -> None:
    results = [
        ToolResult(call_id="call_1", name="a", content="1", status="ok"),
        ToolResult(call_id="toolwire-0123456789abcdef-4", name="b", content="2", status="error"),
    ]
    assert OllamaHistory().tool_result_messages(results) == [
        {"role": "tool", "content": "1", "tool_name": "a", "tool_call_id": "call_1"},
        {"role": "tool", "content": "2", "tool_name": "b"},
    ]


async def test_next_messages_needs_every_call_answered() -> None:
    turn = await toolwire.collect(load_stream(DERIVED), "ollama", tools=[WEATHER])
    with pytest.raises(HistoryError):
        next_messages(turn, results_for(turn)[:1], "ollama")
    filled = answer_every_call(turn, results_for(turn)[:1])
    assert [r.call_id for r in filled] == ["call_gfuxaa3e", "call_9r4kq2vx"]
    messages = [USER, *next_messages(turn, filled, "ollama")]
    assert check_history(messages, "ollama") == []


# -- the check ----------------------------------------------------------------------------------


def assistant(*calls: dict[str, Any]) -> dict[str, Any]:
    return {"role": "assistant", "content": "", "tool_calls": list(calls)}


def call(name: str, arguments: Any = None, call_id: str | None = None) -> dict[str, Any]:
    written: dict[str, Any] = {"function": {"name": name, "arguments": arguments or {}}}
    if call_id is not None:
        written["id"] = call_id
    return written


def result(name: str | None, call_id: str | None = None) -> dict[str, Any]:
    message: dict[str, Any] = {"role": "tool", "content": "x"}
    if name is not None:
        message["tool_name"] = name
    if call_id is not None:
        message["tool_call_id"] = call_id
    return message


def kinds(messages: list[dict[str, Any]]) -> list[tuple[str, int, str | None]]:
    return [(p.kind, p.index, p.call_id) for p in check_history(messages, "ollama")]


def test_well_formed_histories() -> None:
    assert kinds([USER, assistant(call("a"), call("b")), result("a"), result("b")]) == []
    assert kinds([USER, assistant(call("a", call_id="x")), result("a", "x"), USER]) == []
    # Results with neither name nor id are paired by order (older clients wrote only content).
    assert kinds([USER, assistant(call("a")), result(None)]) == []


def test_string_arguments_are_refused() -> None:
    # Chat Completions style: Ollama answers HTTP 400 (it decodes arguments into a map).
    messages = [USER, assistant(call("a", '{"city": "Oslo"}', "x")), result("a", "x")]
    assert kinds(messages) == [("arguments_not_object", 1, "x")]
    no_function = [USER, assistant({"id": "y"}), result(None, "y")]
    assert kinds(no_function) == [("arguments_not_object", 1, "y")]


def test_unanswered_and_orphan_results() -> None:
    assert kinds([USER, assistant(call("a"), call("b")), result("a")]) == [
        ("unanswered_call", 1, None)
    ]
    assert kinds([USER, assistant(call("a", call_id="x")), USER, result("a", "x")]) == [
        ("unanswered_call", 1, "x"),
        ("orphan_result", 3, "x"),
    ]
    assert kinds([USER, result("a")]) == [("orphan_result", 1, None)]


def test_results_out_of_order_or_twice() -> None:
    swapped = [USER, assistant(call("a"), call("b")), result("b"), result("a")]
    assert kinds(swapped) == [("result_out_of_place", 2, None), ("result_out_of_place", 3, None)]
    by_id = [
        USER,
        assistant(call("a", call_id="x"), call("a", call_id="y")),
        result("a", "y"),
        result("a", "x"),
    ]
    assert kinds(by_id) == [("result_out_of_place", 2, "y")]
    unknown = [USER, assistant(call("a", call_id="x")), result("a", "zzz"), result("a", "x")]
    assert kinds(unknown) == [("orphan_result", 2, "zzz")]
    wrong_name = [USER, assistant(call("a", call_id="x")), result("b", "x")]
    assert kinds(wrong_name) == [("result_out_of_place", 2, "x")]
    twice = [
        USER,
        assistant(call("a", call_id="x"), call("b", call_id="y")),
        result("a", "x"),
        result("a", "x"),
        result("b", "y"),
    ]
    assert kinds(twice) == [("duplicate_result", 3, "x")]


def test_a_reused_call_id() -> None:
    messages = [
        USER,
        assistant(call("a", call_id="x")),
        result("a", "x"),
        assistant(call("a", call_id="x")),
        result("a", "x"),
    ]
    assert kinds(messages) == [("duplicate_call_id", 3, "x")]


def test_every_problem_of_a_real_round_trip_is_json() -> None:
    # What next_messages writes is plain JSON (the SDK and httpx both serialize it).
    turn = Turn(
        calls=(
            CallRecord(
                call_id="c",
                name="a",
                index=0,
                arguments_raw="{}",
                verdict=Verdict(outcome="ok", arguments={}),
            ),
        ),
        stop_reason="tool_calls",
    )
    messages = next_messages(
        turn, [ToolResult(call_id="c", name="a", content="done", status="ok")], "ollama"
    )
    assert json.loads(json.dumps(messages)) == messages
