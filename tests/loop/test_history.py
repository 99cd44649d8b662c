"""History replay (OpenAI Chat) and the well-formedness check."""

from __future__ import annotations

import json
from typing import Any

import pytest

from toolwire.adapters.history import replay_arguments
from toolwire.adapters.registry import history_format
from toolwire.api import collect
from toolwire.core.errors import ConfigurationError, HistoryError
from toolwire.core.turn import CallRecord, Turn
from toolwire.loop import (
    ToolResult,
    answer_every_call,
    check_history,
    dispatch,
    ensure_well_formed,
    next_messages,
)

from ._turns import ScriptedJudge, calls_body, ok, rejected, repaired, turn_of

OK_RAW = '{"path":  "a.txt" ,"content":"caf\\u00e9 \\"quoted\\""}'
REPAIRED_RAW = "{'path': 'b.txt', 'content': 'x',}"
REJECTED_RAW = '{"path": "c.txt", "content": "cut'


def judged_turn() -> Turn:
    return turn_of(
        ok("c0", "write", OK_RAW, 0),
        repaired("c1", "write", REPAIRED_RAW, {"path": "b.txt", "content": "x"}, 1),
        rejected("c2", "write", REJECTED_RAW, 2, reason="truncated", message="cut off at limit"),
        text="Writing three files.",
    )


def results_for(turn: Turn) -> list[ToolResult]:
    return [
        ToolResult(call_id=call.id, name=call.name, content=f"ran {call.id}", status="ok")
        if call.may_run
        else ToolResult(
            call_id=call.id, name=call.name, content=call.verdict.message or "", status="rejected"
        )
        if call.verdict is not None
        else ToolResult(call_id=call.id, name=call.name, content="", status="rejected")
        for call in turn.calls
    ]


def arguments_sent(message: dict[str, Any]) -> list[str]:
    return [call["function"]["arguments"] for call in message["tool_calls"]]


def test_valid_arguments_are_replayed_byte_for_byte() -> None:
    message = history_format("openai-chat").assistant_message(judged_turn())
    assert arguments_sent(message)[0] == OK_RAW


def test_repaired_arguments_are_the_repaired_object_serialized() -> None:
    sent = arguments_sent(history_format("openai-chat").assistant_message(judged_turn()))[1]
    assert sent != REPAIRED_RAW
    assert json.loads(sent) == {"path": "b.txt", "content": "x"}


def test_rejected_arguments_are_an_empty_object() -> None:
    sent = arguments_sent(history_format("openai-chat").assistant_message(judged_turn()))[2]
    assert sent == "{}"


def test_unjudged_arguments_are_an_empty_object() -> None:
    call = CallRecord(call_id="c", name="t", index=0, arguments_raw='{"a": 1}')
    assert replay_arguments(call) == "{}"


def test_the_raw_text_stays_on_the_record_and_is_never_sent() -> None:
    turn = judged_turn()
    messages = next_messages(turn, results_for(turn))
    assert [call.arguments_raw for call in turn.calls] == [OK_RAW, REPAIRED_RAW, REJECTED_RAW]
    wire = json.dumps(messages)
    assert json.dumps(REPAIRED_RAW)[1:-1] not in wire
    assert json.dumps(REJECTED_RAW)[1:-1] not in wire


def test_assistant_message_shape() -> None:
    message = history_format("openai-chat").assistant_message(judged_turn())
    assert message["role"] == "assistant"
    assert message["content"] == "Writing three files."
    assert [call["id"] for call in message["tool_calls"]] == ["c0", "c1", "c2"]
    assert all(call["type"] == "function" for call in message["tool_calls"])
    assert [call["function"]["name"] for call in message["tool_calls"]] == ["write"] * 3


def test_a_text_turn_has_no_tool_calls_key() -> None:
    message = history_format("openai-chat").assistant_message(turn_of(text="Hi."))
    assert message == {"role": "assistant", "content": "Hi."}


def test_tool_results_are_role_tool_with_the_call_id() -> None:
    turn = judged_turn()
    messages = next_messages(turn, results_for(turn))
    assert messages[1:] == [
        {"role": "tool", "tool_call_id": "c0", "content": "ran c0"},
        {"role": "tool", "tool_call_id": "c1", "content": "ran c1"},
        {"role": "tool", "tool_call_id": "c2", "content": "cut off at limit"},
    ]
    assert check_history([{"role": "user", "content": "go"}, *messages]) == []


@pytest.mark.parametrize(
    "pick",
    [lambda r: r[:-1], lambda r: r[::-1], lambda r: [*r, r[0]]],
    ids=["missing", "order", "extra"],
)
def test_next_messages_wants_one_result_per_call_in_order(pick: Any) -> None:
    turn = judged_turn()
    with pytest.raises(HistoryError):
        next_messages(turn, pick(results_for(turn)))


def test_unknown_provider_is_a_configuration_error() -> None:
    with pytest.raises(ConfigurationError):
        history_format("no-such-provider")
    with pytest.raises(ConfigurationError):
        check_history([], "no-such-provider")


# -- the well-formedness check ----------------------------------------------------------------


def assistant(*calls: tuple[str, str]) -> dict[str, Any]:
    return {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {"id": call_id, "type": "function", "function": {"name": "t", "arguments": args}}
            for call_id, args in calls
        ],
    }


def tool(call_id: str) -> dict[str, Any]:
    return {"role": "tool", "tool_call_id": call_id, "content": "r"}


USER = {"role": "user", "content": "go"}


@pytest.mark.parametrize(
    ("messages", "kind"),
    [
        pytest.param([USER, assistant(("a", "{}"))], "unanswered_call", id="unanswered-at-end"),
        pytest.param(
            [USER, assistant(("a", "{}"), ("b", "{}")), tool("a"), USER],
            "unanswered_call",
            id="unanswered-before-user",
        ),
        pytest.param([USER, tool("zz")], "orphan_result", id="orphan"),
        pytest.param(
            [USER, assistant(("a", "{}")), tool("a"), tool("a")],
            "duplicate_result",
            id="duplicate-result",
        ),
        pytest.param(
            [USER, assistant(("a", "{}")), tool("a"), assistant(("a", "{}")), tool("a")],
            "duplicate_call_id",
            id="duplicate-call-id",
        ),
        pytest.param(
            [USER, assistant(("a", '{"x": ')), tool("a")], "arguments_not_json", id="not-json"
        ),
        pytest.param(
            [USER, assistant(("a", "[1, 2]")), tool("a")], "arguments_not_object", id="not-object"
        ),
        pytest.param(
            [USER, assistant(("a", "{}")), USER, tool("a")],
            "result_out_of_place",
            id="out-of-place",
        ),
    ],
)
def test_the_check_catches_each_problem_kind(messages: list[dict[str, Any]], kind: str) -> None:
    problems = check_history(messages)
    assert kind in {problem.kind for problem in problems}
    with pytest.raises(HistoryError, match=kind):
        ensure_well_formed(messages)


def test_arguments_that_are_not_a_string_are_caught() -> None:
    message = assistant(("a", "{}"))
    message["tool_calls"][0]["function"]["arguments"] = {"x": 1}
    assert [p.kind for p in check_history([USER, message, tool("a")])] == ["arguments_not_json"]


def test_a_well_formed_history_has_no_problems() -> None:
    messages = [
        {"role": "system", "content": "be brief"},
        USER,
        assistant(("a", '{"x": 1}'), ("b", "{}")),
        tool("a"),
        tool("b"),
        {"role": "assistant", "content": "done"},
        USER,
        assistant(("c", "{}")),
        tool("c"),
    ]
    assert check_history(messages) == []
    ensure_well_formed(messages)


def test_problem_positions_point_at_the_message() -> None:
    (problem,) = check_history([USER, assistant(("a", "nope")), tool("a")])
    assert problem.index == 1
    assert problem.call_id == "a"


# -- from a stream to a history ---------------------------------------------------------------


@pytest.mark.anyio
async def test_a_collected_turn_replays_into_a_well_formed_history(anyio_backend: str) -> None:
    body = calls_body(
        ("call_a", "read", '{"path": "x"}'),
        ("call_b", "write", '{"path": "y", "content": "cu'),
        finish_reason="length",
    )
    turn = await collect(body, judge=False, stages=[ScriptedJudge()])
    assert [c.outcome for c in turn.calls] == ["ok", "rejected"]

    async def run_tool(call: CallRecord) -> str:
        return "text of x"

    results = [result async for result in dispatch(turn, run_tool)]
    messages = [USER, *next_messages(turn, results)]
    assert check_history(messages) == []
    assert arguments_sent(messages[1]) == ['{"path": "x"}', "{}"]


@pytest.mark.anyio
async def test_a_cancelled_turn_still_gives_a_well_formed_history(anyio_backend: str) -> None:
    body = calls_body(("call_a", "read", '{"path": "x"}'), ("call_b", "read", '{"path": "y"}'))
    turn = await collect(body, judge=False, stages=[ScriptedJudge()])
    messages = [USER, *next_messages(turn, answer_every_call(turn, []))]
    assert check_history(messages) == []
    assert [m["content"] for m in messages[2:]] == [
        "Tool call call_a to `read` was not run: the turn was cancelled.",
        "Tool call call_b to `read` was not run: the turn was cancelled.",
    ]


@pytest.mark.anyio
async def test_synthesized_call_ids_stay_unique_across_turns(anyio_backend: str) -> None:
    """Servers that send no call id get one from toolwire; two turns must not share it.

    A repeated id would make the history check (rightly) report a duplicate call id and a
    duplicate result, and a loop over such a server could not continue.
    """
    messages: list[dict[str, Any]] = [USER]
    for number in range(2):
        body = calls_body((None, "read", '{"path": "x"}'), response_id=f"chatcmpl-{number}")
        turn = await collect(body, judge=False, stages=[ScriptedJudge()])
        assert turn.calls[0].id_synthesized
        messages += next_messages(turn, answer_every_call(turn, []))
    assert check_history(messages) == []
