"""Anthropic history: the assistant content blocks, one user message of tool results, the check."""

from __future__ import annotations

import json
from typing import Any

import msgspec
import pytest
from _toolwire_testdata import json_chunks, load_stream

import toolwire
from toolwire import ToolResult
from toolwire.core.turn import CallRecord, Turn

pytestmark = pytest.mark.anyio

USER = {"role": "user", "content": "Do it."}
#: Writes and checks the history in Anthropic's form (``next_messages``, ``check_history``).
ANTHROPIC = toolwire.Pipeline("anthropic")


def sse(*events: dict[str, Any]) -> bytes:
    return b"".join(
        f"event: {event['type']}\ndata: {json.dumps(event)}\n\n".encode() for event in events
    )


def tool_calls_body(*calls: tuple[str, str, str], text: str = "", msg_id: str = "msg_h") -> bytes:
    """A turn: optional text block, then one tool_use block per ``(id, name, raw input)``."""
    events: list[dict[str, Any]] = [
        {
            "type": "message_start",
            "message": {"id": msg_id, "model": "claude-test", "usage": {"input_tokens": 5}},
        }
    ]
    index = 0
    if text:
        events += [
            {
                "type": "content_block_start",
                "index": 0,
                "content_block": {"type": "text", "text": ""},
            },
            {
                "type": "content_block_delta",
                "index": 0,
                "delta": {"type": "text_delta", "text": text},
            },
            {"type": "content_block_stop", "index": 0},
        ]
        index = 1
    for offset, (call_id, name, raw) in enumerate(calls):
        block = {"type": "tool_use", "id": call_id, "name": name, "input": {}}
        delta = {"type": "input_json_delta", "partial_json": raw}
        events += [
            {"type": "content_block_start", "index": index + offset, "content_block": block},
            {"type": "content_block_delta", "index": index + offset, "delta": delta},
            {"type": "content_block_stop", "index": index + offset},
        ]
    events += [
        {
            "type": "message_delta",
            "delta": {"stop_reason": "tool_use"},
            "usage": {"output_tokens": 9},
        },
        {"type": "message_stop"},
    ]
    return sse(*events)


async def results_for(turn: Turn) -> list[ToolResult]:
    async def tool(call: CallRecord) -> str:
        return f"ran {call.name}"

    return [result async for result in toolwire.dispatch(turn, tool)]


async def test_valid_repaired_and_rejected_calls_replay_as_objects() -> None:
    body = tool_calls_body(
        ("toolu_ok", "read", '{"path": "caf\\u00e9.txt", "n": 1.50}'),
        ("toolu_fix", "read", '{"path": "b.txt",}'),
        ("toolu_bad", "read", '{"path": "c.txt" "n"}'),
        text="Reading three files.",
    )
    turn = await toolwire.collect(body, "anthropic")
    assert [call.outcome for call in turn.calls] == ["ok", "repaired", "rejected"]
    results = await results_for(turn)
    messages = ANTHROPIC.next_messages(turn, results)
    assistant, user = messages
    assert assistant == {
        "role": "assistant",
        "content": [
            {"type": "text", "text": "Reading three files."},
            # valid: the object the text encodes
            {
                "type": "tool_use",
                "id": "toolu_ok",
                "name": "read",
                "input": {"path": "café.txt", "n": 1.5},
            },
            # repaired: the repaired object
            {"type": "tool_use", "id": "toolu_fix", "name": "read", "input": {"path": "b.txt"}},
            # rejected: an empty object, never the text that does not parse
            {"type": "tool_use", "id": "toolu_bad", "name": "read", "input": {}},
        ],
    }
    rejected = turn.calls[2].verdict
    assert rejected is not None
    assert user == {
        "role": "user",
        "content": [
            {"type": "tool_result", "tool_use_id": "toolu_ok", "content": "ran read"},
            {"type": "tool_result", "tool_use_id": "toolu_fix", "content": "ran read"},
            {
                "type": "tool_result",
                "tool_use_id": "toolu_bad",
                "content": rejected.message,
                "is_error": True,
            },
        ],
    }
    assert ANTHROPIC.check_history([USER, *messages]) == []


async def test_thinking_signature_and_server_blocks_replay_in_order() -> None:
    name = "anthropic/thinking_text_server_tool_use_text.sse"
    turn = await toolwire.collect(load_stream(name), "anthropic")
    (assistant,) = ANTHROPIC.next_messages(turn, [])
    chunks = json_chunks(load_stream(name))
    signature = next(
        c["delta"]["signature"]
        for c in chunks
        if c["type"] == "content_block_delta" and c["delta"]["type"] == "signature_delta"
    )
    content = assistant["content"]
    assert [block["type"] for block in content] == [
        "thinking",
        "text",
        "server_tool_use",
        "bash_code_execution_tool_result",
        "text",
    ]
    assert content[0]["signature"] == signature
    assert content[0]["thinking"] == turn.reasoning
    assert content[1]["text"] + content[4]["text"] == turn.text
    assert content[2]["input"] == {"command": 'echo "65465-6544 * 65464-6+1.02255" | bc -l'}
    assert ANTHROPIC.check_history([USER, assistant]) == []


async def test_thinking_comes_before_the_tool_use_it_explains() -> None:
    name = "anthropic/thinking_then_tool_use_no_args_padded.sse"
    turn = await toolwire.collect(load_stream(name), "anthropic")
    messages = ANTHROPIC.next_messages(turn, await results_for(turn))
    thinking, tool_use = messages[0]["content"]
    assert thinking["type"] == "thinking"
    assert thinking["signature"].startswith("EoQDCm0IDhgCKkCDzGs2")
    # The no-argument tool: input {}; the recorded ``caller`` is kept.
    assert tool_use == {
        "type": "tool_use",
        "id": "toolu_01825dXWLSoJwCst1qTsiWdb",
        "name": "fixed_version",
        "input": {},
        "caller": {"type": "direct"},
    }
    assert ANTHROPIC.check_history([USER, *messages]) == []


async def test_a_cut_call_is_replayed_with_an_empty_input_and_an_error_result() -> None:
    name = "anthropic/max_tokens_mid_tool_input_no_block_stop.sse"
    turn = await toolwire.collect(load_stream(name), "anthropic")
    messages = ANTHROPIC.next_messages(turn, await results_for(turn))
    assistant, user = messages
    assert assistant["content"][1] == {
        "type": "tool_use",
        "id": "toolu_01EKqbqmZrGRXy18eN7m9kvY",
        "name": "make_file",
        "input": {},
    }
    (result,) = user["content"]
    assert result["is_error"] is True
    assert "cut off at the output-token limit" in result["content"]
    assert ANTHROPIC.check_history([USER, *messages]) == []


async def test_without_the_recorded_stream_the_turn_alone_is_written() -> None:
    # A turn built by hand, or decoded without its provider content: no thinking block can be
    # written without its signature, so the text and the calls are written from the Turn.
    name = "anthropic/thinking_then_tool_use_no_args_padded.sse"
    turn = await toolwire.collect(load_stream(name), "anthropic")
    assert turn.provider_content  # the stream's blocks travel with the Turn itself
    elsewhere = msgspec.structs.replace(turn, provider_content=())
    (assistant, _) = ANTHROPIC.next_messages(elsewhere, await results_for(turn))
    assert assistant["content"] == [
        {
            "type": "tool_use",
            "id": "toolu_01825dXWLSoJwCst1qTsiWdb",
            "name": "fixed_version",
            "input": {},
        }
    ]


async def test_text_rewritten_by_a_stage_replaces_the_recorded_text() -> None:
    body = tool_calls_body(
        ("toolu_1", "read", '{"path": "a"}'), text="secret: 1234", msg_id="msg_r"
    )
    turn = await toolwire.collect(body, "anthropic")
    redacted = msgspec.structs.replace(turn, text="secret: ****")
    (assistant, _) = ANTHROPIC.next_messages(redacted, await results_for(turn))
    assert assistant["content"][0] == {"type": "text", "text": "secret: ****"}
    assert [block["type"] for block in assistant["content"]] == ["text", "tool_use"]


async def test_a_repeated_id_is_written_as_an_id_the_api_accepts() -> None:
    body = tool_calls_body(
        ("toolu_same", "read", '{"path": "a"}'), ("toolu_same", "read", '{"path": "b"}')
    )
    turn = await toolwire.collect(body, "anthropic")
    assert [call.call_id for call in turn.calls] == ["toolu_same", "toolu_same~2"]
    messages = ANTHROPIC.next_messages(turn, await results_for(turn))
    assistant, user = messages
    assert [block["id"] for block in assistant["content"]] == ["toolu_same", "toolu_same_2"]
    assert [block["tool_use_id"] for block in user["content"]] == ["toolu_same", "toolu_same_2"]
    assert ANTHROPIC.check_history([USER, *messages]) == []


async def test_a_turn_without_calls_has_no_result_message() -> None:
    name = "anthropic/thinking_text_server_tool_use_text.sse"
    turn = await toolwire.collect(load_stream(name), "anthropic")
    assert len(ANTHROPIC.next_messages(turn, [])) == 1


# -- the check ---------------------------------------------------------------------------------


def assistant(*blocks: dict[str, Any]) -> dict[str, Any]:
    return {"role": "assistant", "content": list(blocks)}


def tool_use(call_id: str, tool_input: Any = None) -> dict[str, Any]:
    return {"type": "tool_use", "id": call_id, "name": "read", "input": tool_input or {}}


def user(*blocks: dict[str, Any]) -> dict[str, Any]:
    return {"role": "user", "content": list(blocks)}


def result(call_id: str) -> dict[str, Any]:
    return {"type": "tool_result", "tool_use_id": call_id, "content": "x"}


TEXT = {"type": "text", "text": "go on"}


@pytest.mark.parametrize(
    ("messages", "expected"),
    [
        ([USER, assistant(tool_use("a")), user(result("a"), TEXT)], []),
        ([USER, assistant(tool_use("a")), user(TEXT)], [("unanswered_call", 1, "a")]),
        ([USER, assistant(tool_use("a"))], [("unanswered_call", 1, "a")]),
        ([USER, assistant(tool_use("a")), USER], [("unanswered_call", 1, "a")]),
        (
            [USER, assistant(tool_use("a")), user(TEXT, result("a"))],
            [("result_out_of_place", 2, "a")],
        ),
        (
            [USER, assistant(tool_use("a")), user(result("a"), result("b"))],
            [("orphan_result", 2, "b")],
        ),
        (
            [USER, assistant(tool_use("a")), user(result("a"), result("a"))],
            [("duplicate_result", 2, "a")],
        ),
        (
            [USER, assistant(tool_use("a")), user(result("a")), assistant(TEXT), user(result("a"))],
            [("duplicate_result", 4, "a")],
        ),
        (
            [USER, assistant(tool_use("a")), assistant(TEXT), user(result("a"))],
            [("unanswered_call", 1, "a"), ("result_out_of_place", 3, "a")],
        ),
        (
            [
                USER,
                assistant(tool_use("a")),
                user(result("a")),
                assistant(tool_use("a")),
                user(result("a")),
            ],
            [("duplicate_call_id", 3, "a")],
        ),
        (
            [USER, assistant(tool_use("a", '{"path": "x"}')), user(result("a"))],
            [("arguments_not_object", 1, "a")],
        ),
        ([USER, user(result("z"))], [("orphan_result", 1, "z")]),
    ],
    ids=[
        "well_formed",
        "no_result",
        "history_ends_at_the_call",
        "string_content_next",
        "text_before_result",
        "orphan",
        "duplicate_in_one_message",
        "answered_twice",
        "result_one_message_late",
        "duplicate_call_id",
        "input_as_text",
        "result_with_no_call",
    ],
)
def test_problems(messages: list[dict[str, Any]], expected: list[tuple[str, int, str]]) -> None:
    found = ANTHROPIC.check_history(messages)
    assert [(p.kind, p.index, p.call_id) for p in found] == expected
