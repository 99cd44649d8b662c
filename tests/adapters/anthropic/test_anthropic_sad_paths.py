"""Anthropic streams that go wrong, and every stop reason: a bad call never runs, the cause is true.

Streams are built event by event in the recorded wire format (``event:`` line, ``data:`` JSON).
"""

from __future__ import annotations

import json
from typing import Any

import httpx
import pytest

import toolwire
import toolwire.events
from toolwire.adapters.anthropic import (
    STOP_REASONS,
    AnthropicMapper,
    finish_reason_from_anthropic,
    is_retryable,
    read_anthropic_request,
    recorded_content,
)
from toolwire.core.errors import ConfigurationError
from toolwire.core.events import Event, ProviderError, ToolCallComplete
from toolwire.core.turn import CallRecord

pytestmark = pytest.mark.anyio

RM_TOOL = {
    "name": "rm",
    "description": "Remove a path.",
    "input_schema": {
        "type": "object",
        "required": ["path"],
        "properties": {"path": {"type": "string"}},
    },
}


def sse(*events: dict[str, Any] | bytes) -> bytes:
    """Frame payloads as the API does; ``bytes`` are sent verbatim as one event's data."""
    parts = []
    for event in events:
        if isinstance(event, bytes):
            parts.append(b"event: content_block_delta\ndata: " + event + b"\n\n")
        else:
            parts.append(f"event: {event['type']}\ndata: {json.dumps(event)}\n\n".encode())
    return b"".join(parts)


def message_start(input_tokens: int = 12) -> dict[str, Any]:
    return {
        "type": "message_start",
        "message": {
            "id": "msg_test",
            "type": "message",
            "role": "assistant",
            "model": "claude-test",
            "content": [],
            "stop_reason": None,
            "stop_sequence": None,
            "usage": {"input_tokens": input_tokens, "output_tokens": 1},
        },
    }


def block_start(index: int, block: dict[str, Any]) -> dict[str, Any]:
    return {"type": "content_block_start", "index": index, "content_block": block}


def tool_start(index: int, call_id: str = "toolu_1", name: str = "rm") -> dict[str, Any]:
    return block_start(index, {"type": "tool_use", "id": call_id, "name": name, "input": {}})


def piece(index: int, text: str) -> dict[str, Any]:
    delta = {"type": "input_json_delta", "partial_json": text}
    return {"type": "content_block_delta", "index": index, "delta": delta}


def text(index: int, value: str) -> dict[str, Any]:
    delta = {"type": "text_delta", "text": value}
    return {"type": "content_block_delta", "index": index, "delta": delta}


def block_stop(index: int) -> dict[str, Any]:
    return {"type": "content_block_stop", "index": index}


def message_delta(stop_reason: str | None, output_tokens: int = 40) -> dict[str, Any]:
    return {
        "type": "message_delta",
        "delta": {"stop_reason": stop_reason, "stop_sequence": None},
        "usage": {"output_tokens": output_tokens},
    }


MESSAGE_STOP = {"type": "message_stop"}


def tool_turn(*middle: dict[str, Any] | bytes, stop_reason: str = "tool_use") -> bytes:
    return sse(message_start(), *middle, message_delta(stop_reason), MESSAGE_STOP)


async def never_run(turn: toolwire.Turn) -> None:
    ran: list[str] = []

    async def tool(call: CallRecord) -> str:
        ran.append(call.call_id)
        return "done"

    results = [result async for result in toolwire.dispatch(turn, tool)]
    assert ran == []
    assert all(result.status == "rejected" for result in results)


# -- a piece that cannot be read costs the open call its right to run ---------------------------


async def test_unreadable_event_mid_call_is_lost_in_transit() -> None:
    broken = json.dumps(piece(0, "old-backups/")).encode()[:-1]  # its last } is missing
    body = tool_turn(
        tool_start(0),
        piece(0, ""),
        piece(0, '{"path": "/home/me/'),
        broken,
        piece(0, '"}'),
        block_stop(0),
    )
    turn = await toolwire.collect(body, "anthropic", tools=[RM_TOOL])
    (call,) = turn.calls
    # The text left parses ({"path": "/home/me/"}): it must still never run.
    assert call.arguments_raw == '{"path": "/home/me/"}'
    assert call.verdict is not None
    assert (call.outcome, call.verdict.reason) == ("rejected", "lost_in_transit")
    (error,) = turn.errors
    assert error.kind == "not_json"
    await never_run(turn)


@pytest.mark.parametrize(
    "unreadable",
    [
        # A delta type toolwire does not know, on the call's block.
        {"type": "content_block_delta", "index": 0, "delta": {"type": "new_delta", "x": "1"}},
        # An event type toolwire does not know (the API may add some).
        {"type": "content_block_frobnicate", "index": 0},
        # A delta for a block that never started.
        piece(7, "x"),
        # A well-formed JSON payload of the wrong shape.
        {"type": "content_block_delta", "index": "zero", "delta": 5},
    ],
    ids=["unknown_delta", "unknown_event", "unknown_block", "wrong_shape"],
)
async def test_any_unreadable_piece_marks_the_open_call(unreadable: dict[str, Any]) -> None:
    body = tool_turn(
        tool_start(0, "toolu_a"),
        piece(0, '{"path": "a"}'),
        block_stop(0),
        tool_start(1, "toolu_b"),
        piece(1, '{"path": '),
        unreadable,
        piece(1, '"b"}'),
        block_stop(1),
    )
    turn = await toolwire.collect(body, "anthropic", tools=[RM_TOOL])
    first, second = turn.calls
    # "toolu_a" was closed by its content_block_stop before the loss: whole, it runs.
    assert first.outcome == "ok"
    assert second.verdict is not None
    assert (second.outcome, second.verdict.reason) == ("rejected", "lost_in_transit")
    assert len(turn.errors) == 1
    assert turn.errors[0].kind in ("unknown_shape", "protocol")


async def test_an_unknown_event_with_no_call_open_costs_nothing_but_is_reported() -> None:
    body = tool_turn(
        {"type": "some_future_event", "detail": "x"},
        tool_start(0),
        piece(0, '{"path": "a"}'),
        block_stop(0),
    )
    turn = await toolwire.collect(body, "anthropic", tools=[RM_TOOL])
    assert [call.outcome for call in turn.calls] == ["ok"]
    (error,) = turn.errors
    assert (error.kind, error.fatal) == ("unknown_shape", False)
    assert "some_future_event" in error.raw


async def test_input_after_the_block_stopped_is_reported_not_added() -> None:
    body = tool_turn(tool_start(0), piece(0, '{"path": "a"}'), block_stop(0), piece(0, "junk"))
    turn = await toolwire.collect(body, "anthropic")
    (call,) = turn.calls
    assert (call.arguments_raw, call.outcome) == ('{"path": "a"}', "ok")
    (error,) = turn.errors
    assert error.kind == "protocol"
    assert "junk" in error.raw


# -- in-band errors ----------------------------------------------------------------------------

OVERLOADED = b'event: error\ndata: {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}\n\n'  # noqa: E501


async def test_in_band_error_mid_call_ends_the_turn_and_the_call_never_runs() -> None:
    body = (
        sse(message_start(), tool_start(0), piece(0, '{"path": "/tmp"}'))
        + OVERLOADED
        + sse(block_stop(0), message_delta("tool_use"), MESSAGE_STOP)  # never read
    )
    turn = await toolwire.collect(body, "anthropic", tools=[RM_TOOL])
    assert turn.stop_reason == "error"
    assert turn.finish_raw is None
    (call,) = turn.calls
    assert call.truncated
    assert call.verdict is not None
    assert call.verdict.reason == "truncated"
    assert "the provider failed" in (call.verdict.message or "")
    (error,) = turn.errors
    assert (error.kind, error.code, error.message, error.fatal) == (
        "error_payload",
        "overloaded_error",
        "Overloaded",
        True,
    )
    assert is_retryable(error)
    await never_run(turn)


def test_the_mapper_is_done_at_the_error() -> None:
    mapper = AnthropicMapper()
    events = mapper.feed_bytes(sse(message_start(), tool_start(0)) + OVERLOADED)
    assert mapper.done
    assert mapper.feed_bytes(sse(piece(0, '{"a": 1}'))) == []
    assert mapper.finish() == []
    assert sum(isinstance(e, ToolCallComplete) for e in events) == 1


async def test_an_error_event_whose_data_is_not_json_is_still_the_providers_error() -> None:
    body = sse(message_start()) + b"event: error\ndata: upstream connect error\n\n"
    turn = await toolwire.collect(body, "anthropic")
    assert turn.stop_reason == "error"
    (error,) = turn.errors
    assert (error.kind, error.fatal, error.message) == (
        "error_payload",
        True,
        "upstream connect error",
    )
    assert not is_retryable(error)


def test_retryable_error_types() -> None:
    invalid = toolwire.events.ProviderError(message="bad", code="invalid_request_error")
    assert not is_retryable(invalid)
    for code in ("overloaded_error", "api_error", "rate_limit_error", "timeout_error"):
        assert is_retryable(toolwire.events.ProviderError(message="x", code=code))


# -- bodies that are no stream, HTTP errors ----------------------------------------------------


@pytest.mark.parametrize(
    ("body", "kind"),
    [
        (
            b'{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}',
            "not_a_stream",
        ),
        (b"<html><body>502 Bad Gateway</body></html>", "not_a_stream"),
        (b"", "empty_response"),
    ],
    ids=["json_error_body", "html", "empty"],
)
async def test_a_body_that_is_not_a_stream(body: bytes, kind: str) -> None:
    turn = await toolwire.collect(body, "anthropic")
    assert (turn.stop_reason, turn.truncated) == ("error", False)
    (error,) = turn.errors
    assert (error.kind, error.fatal) == (kind, True)
    if body:
        assert body[:20].decode() in error.message


async def test_an_http_error_status_is_never_read_as_a_stream() -> None:
    overloaded = {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}

    def handler(request: httpx.Request) -> httpx.Response:
        return httpx.Response(529, json=overloaded)

    async with httpx.AsyncClient(transport=httpx.MockTransport(handler)) as client:
        async with client.stream("POST", "https://api.anthropic.test/v1/messages") as response:
            turn = await toolwire.collect(response, "anthropic")
    assert (turn.stop_reason, turn.truncated, turn.calls) == ("error", False, ())
    (error,) = turn.errors
    assert (error.kind, error.code, error.fatal) == ("http_status", "529", True)
    assert "overloaded_error" in error.raw


# -- the finish vocabulary, value by value -----------------------------------------------------


@pytest.mark.parametrize(
    ("raw", "stop", "evidence"),
    [
        ("end_turn", "end_turn", ()),
        ("stop_sequence", "end_turn", ()),
        ("max_tokens", "length", ("finish_reason",)),
        ("model_context_window_exceeded", "length", ("finish_reason",)),
        ("refusal", "content_filter", ()),
        ("pause_turn", "unknown", ()),
        ("a_reason_from_the_future", "unknown", ()),
    ],
)
async def test_every_stop_reason_of_a_text_turn(
    raw: str, stop: str, evidence: tuple[str, ...]
) -> None:
    body = tool_turn(
        block_start(0, {"type": "text", "text": ""}), text(0, "Hi"), block_stop(0), stop_reason=raw
    )
    turn = await toolwire.collect(body, "anthropic")
    assert (turn.stop_reason, turn.finish_raw, turn.truncation_evidence) == (stop, raw, evidence)
    assert turn.truncated is bool(evidence)
    assert turn.cut_by == ("token_limit" if evidence else None)
    assert finish_reason_from_anthropic(raw) == STOP_REASONS.get(raw, "unknown")


def test_the_stop_reason_table_is_complete() -> None:
    documented = {
        "end_turn",
        "stop_sequence",
        "tool_use",
        "max_tokens",
        "model_context_window_exceeded",
        "refusal",
        "pause_turn",
    }
    assert set(STOP_REASONS) == documented


async def test_tool_use_stop_reason() -> None:
    body = tool_turn(tool_start(0), piece(0, '{"path": "a"}'), block_stop(0))
    turn = await toolwire.collect(body, "anthropic")
    assert (turn.stop_reason, turn.finish_raw, turn.truncated) == ("tool_calls", "tool_use", False)


async def test_a_call_cut_by_a_stop_sequence_is_cut_for_an_unknown_cause() -> None:
    # The block is never stopped and its text stops inside a value; the request had a stop
    # sequence and usage is far below the limit: not the token limit, and the message says so.
    body = tool_turn(tool_start(0), piece(0, '{"path": "/var/'), stop_reason="stop_sequence")
    request = {"model": "claude-test", "max_tokens": 1024, "stop_sequences": ["###"]}
    turn = await toolwire.collect(body, "anthropic", request=request)
    assert turn.finish_raw == "stop_sequence"
    assert turn.stop_reason != "length"
    assert (turn.truncated, turn.cut_by) == (True, "unknown")
    assert turn.truncation_evidence == ("arguments_unterminated",)
    (call,) = turn.calls
    assert call.verdict is not None
    message = call.verdict.message or ""
    assert "stop_sequence" in message
    assert '"###"' in message
    assert "output-token limit after" not in message


async def test_usage_at_the_requests_max_tokens_is_evidence_of_the_limit() -> None:
    body = tool_turn(tool_start(0), piece(0, '{"path": "a"}'), stop_reason="tool_use")
    turn = await toolwire.collect(body, "anthropic", request={"max_tokens": 40})
    assert turn.stop_reason == "length"
    # The block never got its content_block_stop either: unfinished by structure.
    assert turn.truncation_evidence == ("usage_at_max_tokens", "call_unfinished")
    (call,) = turn.calls
    assert call.truncated
    assert call.outcome == "rejected"


async def test_a_no_argument_tool_cut_before_its_stop_never_runs_as_empty() -> None:
    body = tool_turn(tool_start(0, name="fixed_version"), piece(0, ""), stop_reason="max_tokens")
    turn = await toolwire.collect(body, "anthropic")
    (call,) = turn.calls
    assert (call.arguments_raw, call.truncated, call.outcome) == ("", True, "rejected")


async def test_a_start_block_with_a_complete_input_and_no_deltas() -> None:
    # The protocol's input is the start block's input when no JSON pieces come.
    start = block_start(
        0, {"type": "tool_use", "id": "toolu_1", "name": "rm", "input": {"path": "x"}}
    )
    turn = await toolwire.collect(tool_turn(start, block_stop(0)), "anthropic")
    (call,) = turn.calls
    assert (call.arguments_raw, call.outcome, call.arguments) == (
        '{"path":"x"}',
        "ok",
        {"path": "x"},
    )


# -- ids, blocks and the rest of the protocol --------------------------------------------------


async def test_a_repeated_tool_use_id_becomes_a_second_call() -> None:
    body = tool_turn(
        tool_start(0, "toolu_same"),
        piece(0, '{"path": "a"}'),
        block_stop(0),
        tool_start(1, "toolu_same"),
        piece(1, '{"path": "b"}'),
        block_stop(1),
    )
    turn = await toolwire.collect(body, "anthropic")
    assert [(c.call_id, c.provider_id) for c in turn.calls] == [
        ("toolu_same", None),
        ("toolu_same~2", "toolu_same"),
    ]


async def test_redacted_thinking_and_citations_are_kept_opaque() -> None:
    redacted = {"type": "redacted_thinking", "data": "EmwKAhgBEgy3va3pzix/LafPsn4aDFIT"}
    citation = {"type": "char_location", "cited_text": "x", "document_index": 0}
    body = tool_turn(
        block_start(0, redacted),
        block_stop(0),
        block_start(1, {"type": "thinking", "thinking": "Plan: ", "signature": ""}),
        {
            "type": "content_block_delta",
            "index": 1,
            "delta": {"type": "thinking_delta", "thinking": "look"},
        },
        {
            "type": "content_block_delta",
            "index": 1,
            "delta": {"type": "signature_delta", "signature": "c2ln"},
        },
        block_stop(1),
        block_start(2, {"type": "text", "text": "", "citations": None}),
        text(2, "Cited."),
        {
            "type": "content_block_delta",
            "index": 2,
            "delta": {"type": "citations_delta", "citation": citation},
        },
        block_stop(2),
        stop_reason="end_turn",
    )
    turn = await toolwire.collect(body, "anthropic")
    assert (turn.reasoning, turn.text, turn.errors) == ("Plan: look", "Cited.", ())
    assert recorded_content(turn) == (
        redacted,
        {"type": "thinking", "thinking": "Plan: look", "signature": "c2ln"},
        {"type": "text", "text": "Cited.", "citations": [citation]},
    )


async def test_content_in_message_start_is_reported() -> None:
    start = message_start()
    start["message"]["content"] = [{"type": "text", "text": "prefilled"}]
    turn = await toolwire.collect(sse(start, message_delta("end_turn"), MESSAGE_STOP), "anthropic")
    (error,) = turn.errors
    assert (error.kind, error.fatal) == ("protocol", False)
    assert "prefilled" in error.raw


def test_the_sdk_path_reads_plain_mappings_and_reports_bad_ones() -> None:
    mapper = AnthropicMapper()
    events: list[Event] = []
    events += mapper.feed_object(message_start())
    events += mapper.feed_object({"type": "content_block_delta", "index": [], "delta": 3})
    events += mapper.feed_object(MESSAGE_STOP)
    assert mapper.done
    kinds = [e.kind for e in events if isinstance(e, ProviderError)]
    assert kinds == ["unknown_shape"]


# -- the request body --------------------------------------------------------------------------


def test_read_anthropic_request() -> None:
    bash = {"type": "bash_20250124", "name": "bash"}
    facts = read_anthropic_request(
        {
            "model": "claude-sonnet-4-5",
            "max_tokens": 1024,
            "stop_sequences": ["###", "END"],
            "tools": [RM_TOOL, bash],
            "tool_choice": {"type": "any"},
            "messages": [],
        }
    )
    assert facts.max_tokens == 1024
    assert facts.stop_sequences == ("###", "END")
    assert facts.tools == (RM_TOOL, {"name": "bash", "input_schema": {"type": "object"}})
    assert facts.tool_choice == {"type": "any"}
    assert facts.model == "claude-sonnet-4-5"
    bare = read_anthropic_request({"messages": []})
    assert (bare.max_tokens, bare.stop_sequences, bare.tools) == (None, (), None)
    with pytest.raises(ConfigurationError):
        read_anthropic_request({"max_tokens": 0})
    with pytest.raises(ConfigurationError):
        read_anthropic_request({"tools": {"name": "rm"}})
    with pytest.raises(ConfigurationError):
        read_anthropic_request({"stop_sequences": [1]})


async def test_the_request_tools_judge_the_calls_and_built_ins_are_known() -> None:
    body = tool_turn(
        tool_start(0, "toolu_1", "rm"),
        piece(0, '{"path": 5}'),
        block_stop(0),
        tool_start(1, "toolu_2", "bash"),
        piece(1, '{"command": "ls"}'),
        block_stop(1),
    )
    request = {"max_tokens": 1024, "tools": [RM_TOOL, {"type": "bash_20250124", "name": "bash"}]}
    turn = await toolwire.Pipeline("anthropic").collect(body, request=request)
    rm, bash = turn.calls
    assert rm.verdict is not None
    assert (rm.outcome, rm.verdict.reason) == ("rejected", "schema")
    assert bash.outcome == "ok"


async def test_a_tool_use_block_without_its_stop_never_runs_even_if_its_text_parses() -> None:
    # No content_block_stop: the block is unfinished by structure, whatever its text looks like,
    # and nothing shows the token limit, so the cause is unknown.
    body = tool_turn(tool_start(0), piece(0, '{"path": "a"}'), stop_reason="end_turn")
    turn = await toolwire.collect(body, "anthropic")
    assert turn.truncation_evidence == ("call_unfinished",)
    assert turn.cut_by == "unknown"
    (call,) = turn.calls
    assert call.truncated
    assert call.outcome == "rejected"
    await never_run(turn)
