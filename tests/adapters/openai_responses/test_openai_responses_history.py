"""Responses history (``input`` items) and the request reader."""

from __future__ import annotations

import json
from typing import Any

import msgspec
import pytest
from _toolwire_testdata import load_stream
from test_openai_responses_builders import (
    RM_TOOL,
    arguments_delta,
    call_added,
    call_done,
    created,
    sse,
    terminal,
    whole_call,
    whole_message,
)

import toolwire
from toolwire import ToolResult
from toolwire.adapters.openai_responses import (
    OpenAIResponsesHistory,
    output_items,
    read_responses_request,
)
from toolwire.adapters.registry import read_request
from toolwire.core.errors import ConfigurationError, HistoryError
from toolwire.core.turn import Turn, TurnBuilder
from toolwire.loop import answer_every_call, check_history, next_messages

pytestmark = pytest.mark.anyio

PROVIDER = "openai-responses"
HISTORY = OpenAIResponsesHistory()
USER = {"role": "user", "content": "Clean up my backups."}


async def turn_and_items(body: bytes, **options: Any) -> tuple[Turn, tuple[Any, ...]]:
    """The judged turn and its output items, from one ``toolwire.stream`` run."""
    events = [e async for e in toolwire.stream(body, PROVIDER, **options)]
    builder = TurnBuilder(provider="openai")
    for event in events:
        builder.add(event)
    return builder.build(), output_items(events)


def results_for(turn: Turn) -> list[ToolResult]:
    ok = [
        ToolResult(call_id=c.call_id, name=c.name, content="done", status="ok")
        for c in turn.calls
        if c.may_run
    ]
    return answer_every_call(turn, ok)


# -- through toolwire.next_messages / check_history -------------------------------------------


async def test_a_one_call_turn_through_next_messages() -> None:
    turn = await toolwire.collect(
        load_stream("openai-responses/function_call_azure_gpt51.sse"), PROVIDER
    )
    messages = [USER, *next_messages(turn, results_for(turn), PROVIDER)]
    assert messages[1:] == [
        {
            "type": "function_call",
            "id": "fc_04041325ab8ae30400698c51c5468c8197a395f18875a5339f",
            "call_id": "call_H5DxLSFnsGhiROnUiDHmgyc8",
            "name": "weather",
            "arguments": '{"location":"San Francisco"}',  # byte for byte
        },
        {
            "type": "function_call_output",
            "call_id": "call_H5DxLSFnsGhiROnUiDHmgyc8",
            "output": "done",
        },
    ]
    assert check_history(messages, PROVIDER) == []


async def test_a_rejected_call_is_replayed_with_an_empty_object() -> None:
    body = sse(
        [
            created(),
            call_added(0, "fc_1", "call_cut", "rm"),
            arguments_delta(0, "fc_1", '{"path": "/home/me/old-'),
            call_done(0, "fc_1", "call_cut", "rm", '{"path": "/home/me/old-', status="incomplete"),
            terminal("response.incomplete", incomplete_details={"reason": "max_output_tokens"}),
        ]
    )
    turn = await toolwire.collect(body, PROVIDER, tools=[RM_TOOL])
    (call,) = turn.calls
    assert call.outcome == "rejected"
    results = results_for(turn)
    messages = [USER, *next_messages(turn, results, PROVIDER)]
    assert messages[1]["arguments"] == "{}"
    assert messages[2] == {
        "type": "function_call_output",
        "call_id": "call_cut",
        "output": call.verdict.message,
    }  # type: ignore[union-attr]
    assert check_history(messages, PROVIDER) == []
    # The raw text would have been refused.
    raw = [USER, {**messages[1], "arguments": call.arguments_raw}, messages[2]]
    assert [p.kind for p in check_history(raw, PROVIDER)] == ["arguments_not_json"]


async def test_a_repaired_call_is_replayed_as_the_repaired_object() -> None:
    raw = '{"path": "notes.txt",}'
    body = sse([created(), *whole_call(0, "fc_1", "call_1", "rm", raw), terminal()])
    turn = await toolwire.collect(body, PROVIDER, tools=[RM_TOOL])
    assert turn.calls[0].outcome == "repaired"
    (item,) = HISTORY.assistant_messages(turn)
    assert item["arguments"] != raw
    assert json.loads(item["arguments"]) == {"path": "notes.txt"}


async def test_a_text_only_turn_is_its_message_item() -> None:
    turn = await toolwire.collect(
        sse([created(), *whole_message(0, "msg_1", "All clean."), terminal()]), PROVIDER
    )
    assert next_messages(turn, [], PROVIDER) == [
        {
            "type": "message",
            "id": "msg_1",
            "role": "assistant",
            "status": "completed",
            "content": [{"type": "output_text", "text": "All clean.", "annotations": []}],
        }
    ]
    # A Turn built by hand (no recorded items) is written from its fields.
    bare = msgspec.structs.replace(turn, provider_content=())
    assert next_messages(bare, [], PROVIDER) == [
        {"type": "message", "role": "assistant", "content": "All clean."}
    ]


async def test_a_turn_of_several_items_replays_every_item_in_output_order() -> None:
    # A Responses turn is several input items: reasoning (exactly as received, required before
    # the call it was generated with), the message, the call; next_messages gives them all.
    name = "openai-responses/reasoning_text_function_call_gpt5.sse"
    turn = await toolwire.collect(load_stream(name), PROVIDER)
    items = next_messages(turn, results_for(turn), PROVIDER)
    assert [i["type"] for i in items] == [
        "reasoning", "message", "function_call", "function_call_output",
    ]
    assert check_history([USER, *items], PROVIDER) == []
    with pytest.raises(HistoryError, match="assistant_messages"):
        HISTORY.assistant_message(turn)


def test_an_empty_turn_is_an_empty_message() -> None:
    assert HISTORY.assistant_message(Turn()) == {
        "type": "message",
        "role": "assistant",
        "content": "",
    }
    assert HISTORY.assistant_messages(Turn()) == []


# -- with the output items of the run (reasoning replay) ---------------------------------------


async def test_reasoning_message_and_call_are_replayed_in_output_order() -> None:
    name = "openai-responses/reasoning_text_function_call_gpt5.sse"
    body = load_stream(name)
    turn, items = await turn_and_items(body)
    replay = HISTORY.assistant_messages(turn, items)
    reasoning_done = next(
        json.loads(line[5:])["item"]
        for line in body.decode().splitlines()
        if line.startswith("data:") and '"type":"reasoning"' in line and "output_item.done" in line
    )
    assert replay == [
        reasoning_done,  # id and encrypted_content exactly as received
        {
            "type": "message",
            "id": "msg_0fabc13af1ee0049006a691dfebdc881a1ae18d027c313d8ce",
            "role": "assistant",
            "status": "completed",
            "content": [{"type": "output_text", "text": turn.text, "annotations": []}],
            "phase": "commentary",
        },
        {
            "type": "function_call",
            "id": "fc_0fabc13af1ee0049006a691dff0c1481a1b4a0eec7e3c753bb",
            "call_id": "call_LabG58Uhrq9kZvR52BYKjToD",
            "name": "get_capital",
            "arguments": '{"country":"PotatoLand"}',
        },
    ]
    assert "encrypted_content" in replay[0]


async def test_a_cut_call_after_reasoning_is_replayed_with_its_reasoning_and_an_empty_object() -> (
    None
):
    turn, items = await turn_and_items(
        load_stream("openai-responses/incomplete_max_output_tokens_mid_function_call.derived.sse")
    )
    replay = HISTORY.assistant_messages(turn, items)
    assert [i["type"] for i in replay] == ["reasoning", "message", "function_call"]
    assert replay[2]["arguments"] == "{}"
    history = [USER, *replay, *HISTORY.tool_result_messages(results_for(turn))]
    assert check_history(history, PROVIDER) == []


async def test_reasoning_with_nothing_after_it_is_not_replayed() -> None:
    turn, items = await turn_and_items(
        load_stream("openai-responses/incomplete_max_output_tokens_during_reasoning.derived.sse")
    )
    assert [i.item_type for i in items] == ["reasoning"]
    assert HISTORY.assistant_messages(turn, items) == []


async def test_lmstudio_reasoning_text_is_replayed_as_received() -> None:
    turn, items = await turn_and_items(
        load_stream("openai-responses/lmstudio_local_reasoning_text_call_no_arg_deltas.sse")
    )
    reasoning = HISTORY.assistant_messages(turn, items)[0]
    assert reasoning["content"] == [{"type": "reasoning_text", "text": turn.reasoning}]


async def test_two_message_items_keep_their_own_text_and_phase() -> None:
    first = whole_message(0, "msg_a", "Looking. ")
    second = whole_message(1, "msg_b", "Found it.")
    first[-1]["item"]["phase"] = "commentary"
    second[-1]["item"]["phase"] = "final_answer"
    turn, items = await turn_and_items(sse([created(), *first, *second, terminal()]))
    replay = HISTORY.assistant_messages(turn, items)
    assert [(m["id"], m["phase"], m["content"][0]["text"]) for m in replay] == [
        ("msg_a", "commentary", "Looking. "),
        ("msg_b", "final_answer", "Found it."),
    ]


async def test_text_of_a_message_that_never_finished_is_replayed_before_the_calls() -> None:
    base = {"item_id": "msg_1", "output_index": 0, "content_index": 0}
    body = sse(
        [
            created(),
            {"type": "response.output_text.delta", **base, "delta": "Deleting."},
            *whole_call(1, "fc_1", "call_1", "rm", '{"path": "a"}'),
            terminal(),
        ]
    )
    turn, items = await turn_and_items(body, tools=[RM_TOOL])
    replay = HISTORY.assistant_messages(turn, items)
    assert replay == [
        {"type": "message", "role": "assistant", "content": "Deleting."},
        {
            "type": "function_call",
            "id": "fc_1",
            "call_id": "call_1",
            "name": "rm",
            "arguments": '{"path": "a"}',
        },
    ]


async def test_server_side_tool_items_are_replayed_as_received() -> None:
    search = {
        "id": "ws_1",
        "type": "web_search_call",
        "status": "completed",
        "action": {"type": "search"},
    }
    body = sse(
        [
            created(),
            {"type": "response.output_item.done", "output_index": 0, "item": search},
            *whole_message(1, "msg_1", "Sunny."),
            terminal(),
        ]
    )
    turn, items = await turn_and_items(body)
    replay = HISTORY.assistant_messages(turn, items)
    assert replay[0] == search
    assert replay[1]["content"][0]["text"] == "Sunny."


# -- the check --------------------------------------------------------------------------------


def call(call_id: str, arguments: Any = "{}") -> dict[str, Any]:
    return {"type": "function_call", "call_id": call_id, "name": "rm", "arguments": arguments}


def output(call_id: Any) -> dict[str, Any]:
    return {"type": "function_call_output", "call_id": call_id, "output": "ok"}


@pytest.mark.parametrize(
    ("messages", "problems"),
    [
        ([USER, call("a"), output("a")], []),
        (
            [
                USER,
                {"type": "reasoning", "id": "rs_1", "summary": []},
                call("a"),
                USER,
                output("a"),
            ],
            [],
        ),
        ([USER, call("a")], [("unanswered_call", 1, "a")]),
        ([USER, output("a")], [("orphan_result", 1, "a")]),
        ([USER, output("a"), call("a")], [("orphan_result", 1, "a"), ("unanswered_call", 2, "a")]),
        ([USER, call("a"), output("a"), output("a")], [("duplicate_result", 3, "a")]),
        ([USER, call("a"), output("a"), call("a"), output("a")], [("duplicate_call_id", 3, "a")]),
        ([USER, call("a", '{"path": "x'), output("a")], [("arguments_not_json", 1, "a")]),
        ([USER, call("a", "[1]"), output("a")], [("arguments_not_object", 1, "a")]),
        ([USER, call("a", {"path": "x"}), output("a")], [("arguments_not_json", 1, "a")]),
        (
            [USER, {"type": "function_call", "name": "rm", "arguments": "{}"}],
            [("unanswered_call", 1, None)],
        ),
        ([USER, output(None)], [("orphan_result", 1, None)]),
    ],
)
def test_problems(
    messages: list[dict[str, Any]], problems: list[tuple[str, int, str | None]]
) -> None:
    found = check_history(messages, PROVIDER)
    assert [(p.kind, p.index, p.call_id) for p in found] == problems


def test_tool_results_are_function_call_outputs() -> None:
    results = [
        ToolResult(call_id="a", name="rm", content="deleted", status="ok"),
        ToolResult(
            call_id="b", name="rm", content="Tool call `rm` was cut off.", status="rejected"
        ),
    ]
    assert HISTORY.tool_result_messages(results) == [
        {"type": "function_call_output", "call_id": "a", "output": "deleted"},
        {"type": "function_call_output", "call_id": "b", "output": "Tool call `rm` was cut off."},
    ]


# -- the request reader -----------------------------------------------------------------------


def test_the_request_facts() -> None:
    hosted = {"type": "web_search"}
    body = {
        "model": "gpt-5.1",
        "input": "hi",
        "max_output_tokens": 256,
        "tools": [RM_TOOL, hosted],
        "tool_choice": "required",
        "stream": True,
    }
    facts = read_responses_request(body)
    assert facts.max_tokens == 256
    assert facts.stop_sequences == ()
    assert facts.tools == (RM_TOOL,)  # hosted tools are never judged
    assert facts.tool_choice == "required"
    assert facts.model == "gpt-5.1"
    assert read_request(PROVIDER, json.dumps(body).encode()) == facts


def test_a_request_without_tools_or_limit() -> None:
    facts = read_responses_request({"model": "m", "input": "hi"})
    assert (facts.max_tokens, facts.tools, facts.stop_sequences) == (None, None, ())


@pytest.mark.parametrize(
    "body",
    [{"max_output_tokens": 0}, {"max_output_tokens": "64"}, {"tools": {"type": "function"}}],
)
def test_a_bad_request_is_a_configuration_error(body: dict[str, Any]) -> None:
    with pytest.raises(ConfigurationError):
        read_responses_request(body)


async def test_the_request_tools_judge_the_calls() -> None:
    body = sse([created(), *whole_call(0, "fc_1", "call_1", "rm", '{"path": 5}'), terminal()])
    request = {
        "model": "m",
        "input": "x",
        "tools": [RM_TOOL, {"type": "file_search"}],
        "max_output_tokens": 512,
    }
    turn = await toolwire.Pipeline(PROVIDER).collect(body, request=request)
    (rejected,) = turn.calls
    assert rejected.verdict is not None
    assert rejected.verdict.reason == "schema"
