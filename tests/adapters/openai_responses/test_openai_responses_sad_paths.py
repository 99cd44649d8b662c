"""Responses streams that go wrong: a bad call never runs, and the turn says what happened."""

from __future__ import annotations

import json
from typing import Any

import httpx
import msgspec
import pytest
from _toolwire_testdata import load_stream
from test_openai_responses_builders import (
    RM_TOOL,
    arguments_delta,
    arguments_done,
    call_added,
    call_done,
    call_item,
    created,
    message_item,
    sse,
    terminal,
    whole_call,
    whole_message,
)

import toolwire
from toolwire.adapters.openai_responses import OpenAIResponsesMapper, output_items
from toolwire.core.events import Finish, ProviderError, StreamEnd, TextDelta, ToolCallComplete
from toolwire.core.mapper import MapperSettings
from toolwire.core.turn import Turn

pytestmark = pytest.mark.anyio

PROVIDER = "openai-responses"
GOOD = '{"path": "/home/me/old-backups/"}'


async def collect(body: bytes | list[Any], **options: Any) -> Turn:
    return await toolwire.collect(body, PROVIDER, tools=[RM_TOOL], **options)


def assert_lost(turn: Turn) -> None:
    (call,) = turn.calls
    assert call.outcome == "rejected"
    assert call.may_run is False
    assert call.verdict is not None
    assert call.verdict.reason == "lost_in_transit"
    assert "again" in (call.verdict.message or "")


# -- a piece that cannot be read ----------------------------------------------------------------


@pytest.mark.parametrize(
    "unreadable",
    [
        pytest.param(
            '{"type": "response.function_call_arguments.delta", "delta": "old-', id="cut-json"
        ),
        pytest.param("this is { not json", id="not-json"),
        pytest.param(
            '{"type": "response.function_call_arguments.delta", "delta": 5}', id="delta-not-text"
        ),
        pytest.param('{"type": "response.output_item.done", "item": "x"}', id="item-not-object"),
        pytest.param("[1, 2]", id="not-an-object"),
        pytest.param("{}", id="no-type"),
    ],
)
async def test_an_unreadable_event_mid_call_rejects_the_call_as_lost(unreadable: str) -> None:
    # The rm reproducer: without the lost middle, {"path": "/home/me/"} parses and would run.
    body = sse(
        [
            created(),
            call_added(0, "fc_1", "call_rm", "rm"),
            arguments_delta(0, "fc_1", '{"path": "/home/me/'),
            unreadable,
            arguments_delta(0, "fc_1", '"}'),
            call_done(0, "fc_1", "call_rm", "rm", '{"path": "/home/me/"}'),
            terminal(),
        ]
    )
    turn = await collect(body)
    assert_lost(turn)
    assert turn.calls[0].arguments_raw == '{"path": "/home/me/"}'
    assert [e.kind for e in turn.errors][:1] in (["not_json"], ["unknown_shape"])
    assert len(turn.errors) == 1  # the sequence number the bad event took is not a second error


async def test_a_lost_event_is_seen_by_its_sequence_number() -> None:
    # No .done and no finished item to compare with: only the numbering shows the hole.
    events = [
        created(),
        call_added(0, "fc_1", "call_rm", "rm"),
        arguments_delta(0, "fc_1", '{"path": "/home/me/'),
        arguments_delta(0, "fc_1", "old-backups/"),
        arguments_delta(0, "fc_1", '"}'),
        terminal(),
    ]
    body = sse(events)
    whole = await collect(body)
    assert [c.outcome for c in whole.calls] == ["ok"]
    numbered = body.split(b"\n\n")
    del numbered[3]  # the middle delta never arrives
    turn = await collect(b"\n\n".join(numbered))
    assert turn.calls[0].arguments_raw == '{"path": "/home/me/"}'
    assert_lost(turn)
    (error,) = turn.errors
    assert (error.kind, error.message) == ("protocol", "events 3 to 3 of the stream never arrived")


async def test_a_repeated_event_is_not_applied_twice() -> None:
    body = sse(
        [created(), call_added(0, "fc_1", "c", "rm"), arguments_delta(0, "fc_1", '{"path": "a"}')]
    )
    pieces = body.split(b"\n\n")
    body = b"\n\n".join([*pieces[:3], pieces[2], b""]) + sse([terminal()], numbered=False)
    turn = await collect(body)
    assert turn.calls[0].arguments_raw == '{"path": "a"}'
    assert_lost(turn)
    assert "came again" in turn.errors[0].message


async def test_a_lost_sdk_event_marks_the_open_call_too() -> None:
    class NotJson:
        def model_dump(self, **_: Any) -> dict[str, Any]:
            return {"type": "response.function_call_arguments.delta", "delta": object()}

    events: list[Any] = [
        created(),
        call_added(0, "fc_1", "call_rm", "rm"),
        arguments_delta(0, "fc_1", '{"path": "/home/me/'),
        NotJson(),
        arguments_delta(0, "fc_1", '"}'),
        call_done(0, "fc_1", "call_rm", "rm", '{"path": "/home/me/"}'),
        terminal(),
    ]
    turn = await collect(events)
    assert_lost(turn)
    assert turn.errors[0].kind == "unknown_shape"


# -- the whole value against the deltas ---------------------------------------------------------


@pytest.mark.parametrize("where", ["arguments_done", "item_done"])
async def test_a_whole_value_that_disagrees_with_the_deltas_is_an_error_and_never_runs(
    where: str,
) -> None:
    streamed, other = '{"path": "/tmp/x"}', '{"path": "/"}'
    body = sse(
        [
            created(),
            call_added(0, "fc_1", "call_rm", "rm"),
            arguments_delta(0, "fc_1", streamed),
            arguments_done(0, "fc_1", other if where == "arguments_done" else streamed),
            call_done(0, "fc_1", "call_rm", "rm", other if where == "item_done" else streamed),
            terminal(),
        ]
    )
    turn = await collect(body)
    assert_lost(turn)
    assert turn.calls[0].arguments_raw == streamed  # neither value was picked silently
    (error,) = turn.errors
    assert error.kind == "protocol"
    assert "differ from the" in error.message
    assert error.raw == other


async def test_the_whole_value_wins_when_no_delta_came() -> None:
    # LM Studio sends no argument deltas; here not even a .done: the finished item only.
    body = sse(
        [
            created(),
            call_added(0, "fc_1", "call_rm", "rm"),
            call_done(0, "fc_1", "call_rm", "rm", GOOD),
            terminal(),
        ]
    )
    turn = await collect(body)
    (call,) = turn.calls
    assert (call.arguments_raw, call.outcome) == (GOOD, "ok")
    assert turn.errors == ()


async def test_a_call_only_in_the_final_output_is_not_dropped() -> None:
    item = call_item("fc_1", "call_rm", "rm", GOOD, "completed")
    turn = await collect(sse([created(), terminal(output=[item])]))
    (call,) = turn.calls
    assert (call.call_id, call.arguments_raw, call.outcome) == ("call_rm", GOOD, "ok")
    assert turn.stop_reason == "tool_calls"


async def test_the_final_output_must_agree_with_a_call_left_open() -> None:
    item = call_item("fc_1", "call_rm", "rm", '{"path": "/"}', "completed")
    body = sse(
        [
            created(),
            call_added(0, "fc_1", "call_rm", "rm"),
            arguments_delta(0, "fc_1", '{"path": "/tmp"}'),
            terminal(output=[item]),
        ]
    )
    assert_lost(await collect(body))


def test_a_too_large_call_is_still_checked_against_its_whole_value() -> None:
    # Past the size limit only the head is kept: the whole value is compared by its head and its
    # length (a difference beyond the head cannot be seen; such a call never runs anyway).
    text = '{"path": "' + "x" * 300 + '"}'
    for whole, errors in ((text, 0), (text + " ", 1), ("{" + text[1:], 0), ("[" + text[1:], 1)):
        mapper = OpenAIResponsesMapper(MapperSettings(max_argument_chars=100))
        body = sse([created(), *whole_call(0, "fc_1", "c", "rm", text, piece=50)[:-2]])
        body += sse(
            [arguments_done(0, "fc_1", whole), call_done(0, "fc_1", "c", "rm", text)],
            numbered=False,
        )
        events = mapper.feed_bytes(body) + mapper.finish()
        (complete,) = [e for e in events if isinstance(e, ToolCallComplete)]
        assert (complete.damage, complete.arguments_length) == ("too_large", len(text))
        assert sum(isinstance(e, ProviderError) for e in events) == errors


async def test_deltas_are_addressed_by_item_id_even_when_interleaved() -> None:
    body = sse(
        [
            created(),
            call_added(0, "fc_a", "call_a", "rm"),
            call_added(1, "fc_b", "call_b", "rm"),
            arguments_delta(1, "fc_b", '{"path": '),
            arguments_delta(0, "fc_a", '{"path": '),
            arguments_delta(0, "fc_a", '"a"}'),
            arguments_delta(1, "fc_b", '"b"}'),
            call_done(1, "fc_b", "call_b", "rm", '{"path": "b"}'),
            call_done(0, "fc_a", "call_a", "rm", '{"path": "a"}'),
            terminal(),
        ]
    )
    turn = await collect(body)
    assert [(c.call_id, c.index, c.arguments) for c in turn.calls] == [
        ("call_a", 0, {"path": "a"}),
        ("call_b", 1, {"path": "b"}),
    ]
    assert turn.errors == ()


async def test_deltas_without_an_item_id_follow_the_output_index() -> None:
    body = sse(
        [
            created(),
            call_added(3, "fc_1", "call_rm", "rm"),
            arguments_delta(3, None, GOOD),
            call_done(3, "fc_1", "call_rm", "rm", GOOD),
            terminal(),
        ]
    )
    turn = await collect(body)
    assert [(c.arguments_raw, c.outcome) for c in turn.calls] == [(GOOD, "ok")]


async def test_an_event_naming_another_item_never_lands_in_a_call_at_the_same_position() -> None:
    body = sse(
        [
            created(),
            call_added(0, "fc_1", "call_1", "rm"),
            arguments_delta(0, "fc_other", '{"path": "/"}'),
            arguments_delta(0, "fc_1", GOOD),
            call_done(0, "fc_1", "call_1", "rm", GOOD),
            terminal(),
        ]
    )
    turn = await collect(body)
    assert [(c.arguments_raw, c.outcome) for c in turn.calls] == [(GOOD, "ok")]
    (error,) = turn.errors
    assert (error.kind, error.raw) == ("protocol", '{"path": "/"}')


async def test_arguments_for_an_item_that_never_started_are_reported_not_dropped() -> None:
    body = sse([created(), arguments_delta(0, "fc_ghost", '{"path": "/"}'), terminal()])
    turn = await collect(body)
    assert turn.calls == ()
    (error,) = turn.errors
    assert error.kind == "protocol"
    assert error.raw == '{"path": "/"}'


async def test_arguments_after_the_item_was_done_are_reported() -> None:
    body = sse(
        [
            created(),
            *whole_call(0, "fc_1", "c", "rm", GOOD),
            arguments_delta(0, "fc_1", "x"),
            terminal(),
        ]
    )
    turn = await collect(body)
    assert [(c.arguments_raw, c.outcome) for c in turn.calls] == [(GOOD, "ok")]
    assert [e.kind for e in turn.errors] == ["protocol"]


async def test_an_item_added_twice_is_one_call() -> None:
    body = sse(
        [
            created(),
            call_added(0, "fc_1", "c", "rm"),
            *whole_call(0, "fc_1", "c", "rm", GOOD),
            terminal(),
        ]
    )
    turn = await collect(body)
    assert [(c.call_id, c.outcome) for c in turn.calls] == [("c", "ok")]
    assert "added twice" in turn.errors[0].message


async def test_two_calls_with_one_call_id_get_two_identities() -> None:
    body = sse(
        [
            created(),
            *whole_call(0, "fc_1", "same", "rm", GOOD),
            *whole_call(1, "fc_2", "same", "rm", GOOD),
            terminal(),
        ]
    )
    turn = await collect(body)
    assert [(c.call_id, c.provider_id) for c in turn.calls] == [("same", None), ("same~2", "same")]


# -- in-band errors and the finish --------------------------------------------------------------


async def test_an_error_event_mid_call_is_fatal_and_the_call_never_runs() -> None:
    body = sse(
        [
            created(),
            call_added(0, "fc_1", "call_rm", "rm"),
            arguments_delta(0, "fc_1", GOOD),
            {
                "type": "error",
                "code": "server_error",
                "message": "The server had an error",
                "param": None,
            },
            arguments_done(0, "fc_1", GOOD),
        ]
    )
    mapper = OpenAIResponsesMapper()
    events = mapper.feed_bytes(body)
    assert mapper.done  # nothing after the error is read
    assert isinstance(events[-1], StreamEnd)
    turn = await collect(body)
    assert turn.stop_reason == "error"
    (error,) = turn.errors
    assert (error.kind, error.code, error.fatal, error.message) == (
        "error_payload",
        "server_error",
        True,
        "The server had an error",
    )
    (call,) = turn.calls
    assert call.truncated
    assert call.outcome == "rejected"
    assert "the provider failed" in (call.verdict.message or "")  # type: ignore[union-attr]


async def test_response_failed_is_fatal_with_the_provider_message() -> None:
    failure = terminal(
        "response.failed", error={"code": "rate_limit_exceeded", "message": "Slow down."}
    )
    body = sse(
        [created(), call_added(0, "fc_1", "c", "rm"), arguments_delta(0, "fc_1", GOOD), failure]
    )
    turn = await collect(body)
    assert (turn.stop_reason, turn.finish_raw) == ("error", "failed")
    (error,) = turn.errors
    assert (error.code, error.message, error.fatal) == ("rate_limit_exceeded", "Slow down.", True)
    assert turn.calls[0].truncated
    assert turn.calls[0].outcome == "rejected"
    assert turn.usage is not None


@pytest.mark.parametrize(
    ("details", "stop", "raw", "length"),
    [
        ({"reason": "max_output_tokens"}, "length", "max_output_tokens", True),
        ({"reason": "content_filter"}, "content_filter", "content_filter", False),
        # The OpenAPI example's "max_tokens" is not in the schema's enum: not the limit's word.
        ({"reason": "max_tokens"}, "unknown", "max_tokens", False),
        ({"reason": "steered"}, "unknown", "steered", False),
        (None, "unknown", "incomplete", False),
    ],
)
async def test_incomplete_reasons(details: Any, stop: str, raw: str, length: bool) -> None:
    body = sse(
        [
            created(),
            *whole_message(0, "msg_1", "Hello"),
            terminal("response.incomplete", incomplete_details=details),
        ]
    )
    turn = await collect(body)
    assert (turn.stop_reason, turn.finish_raw, turn.text) == (stop, raw, "Hello")
    assert turn.truncated is length
    assert turn.truncation_evidence == (("finish_reason",) if length else ())


async def test_an_item_the_provider_called_incomplete_never_runs_whatever_the_reason() -> None:
    # Complete-looking arguments, item status incomplete, cut by the content filter.
    body = sse(
        [
            created(),
            call_added(0, "fc_1", "call_rm", "rm"),
            arguments_delta(0, "fc_1", GOOD),
            call_done(0, "fc_1", "call_rm", "rm", GOOD, status="incomplete"),
            terminal("response.incomplete", incomplete_details={"reason": "content_filter"}),
        ]
    )
    turn = await collect(body)
    assert turn.stop_reason == "content_filter"
    assert_lost(turn)
    assert "incomplete" in turn.errors[0].message


async def test_a_text_only_turn_ends_the_turn() -> None:
    body = sse([created(), *whole_message(0, "msg_1", "All done here."), terminal()])
    turn = await collect(body)
    assert (turn.text, turn.stop_reason, turn.finish_raw, turn.truncated) == (
        "All done here.",
        "end_turn",
        "completed",
        False,
    )
    assert turn.errors == ()


async def test_usage_at_max_output_tokens_is_evidence_of_the_limit() -> None:
    body = sse([created(), *whole_message(0, "msg_1", "Hi"), terminal()])
    request = {"model": "m", "input": "x", "max_output_tokens": 12}
    turn = await collect(body, request=request)
    assert turn.stop_reason == "length"
    assert turn.truncation_evidence == ("usage_at_max_tokens",)


# -- text parts ------------------------------------------------------------------------------


async def test_text_sent_only_whole_is_kept_once() -> None:
    base = {"item_id": "msg_1", "output_index": 0, "content_index": 0}
    body = sse(
        [
            created(),
            {"type": "response.output_text.done", **base, "text": "Only whole."},
            {
                "type": "response.output_item.done",
                "output_index": 0,
                "item": message_item("msg_1", "Only whole."),
            },
            terminal(output=[message_item("msg_1", "Only whole.")]),
        ]
    )
    turn = await collect(body)
    assert turn.text == "Only whole."
    assert turn.errors == ()


async def test_whole_text_that_disagrees_with_its_deltas_is_reported_and_the_deltas_kept() -> None:
    events = whole_message(0, "msg_1", "Streamed text")
    events[-2] = {**events[-2], "text": "Other text"}
    turn = await collect(sse([created(), *events, terminal()]))
    assert turn.text == "Streamed text"
    (error,) = turn.errors  # the .done differs; the finished item agrees with the deltas
    assert error.kind == "protocol"
    assert error.message.startswith("the whole text of output_text part 0 differs")
    assert error.raw == "Other text"


async def test_finished_items_without_an_output_index_are_not_taken_twice() -> None:
    # The final response repeats every item; one whose own done came is never applied again.
    message = whole_message(0, "msg_1", "Hello")
    call = whole_call(1, "fc_1", "call_1", "rm", GOOD)
    for event in (message[-1], call[-1]):
        del event["output_index"]
    final = [message[-1]["item"], call[-1]["item"]]
    events = [
        e
        async for e in toolwire.stream(
            sse([created(), *message, *call, terminal(output=final)]), PROVIDER
        )
    ]
    turn = await collect(sse([created(), *message, *call, terminal(output=final)]))
    assert (turn.text, [c.call_id for c in turn.calls], turn.errors) == ("Hello", ["call_1"], ())
    assert [(i.item_type, i.position) for i in output_items(events)] == [
        ("message", -1),
        ("function_call", -1),
    ]


async def test_a_refusal_is_text() -> None:
    base = {"item_id": "msg_1", "output_index": 0, "content_index": 0}
    body = sse(
        [
            created(),
            {"type": "response.refusal.delta", **base, "delta": "I can't "},
            {"type": "response.refusal.delta", **base, "delta": "help."},
            {"type": "response.refusal.done", **base, "refusal": "I can't help."},
            terminal(),
        ]
    )
    assert (await collect(body)).text == "I can't help."


async def test_reasoning_summary_deltas_are_reasoning() -> None:
    base = {"item_id": "rs_1", "output_index": 0, "summary_index": 0}
    reasoning = {
        "id": "rs_1",
        "type": "reasoning",
        "summary": [{"type": "summary_text", "text": "Think."}],
    }
    body = sse(
        [
            created(),
            {"type": "response.reasoning_summary_text.delta", **base, "delta": "Thi"},
            {"type": "response.reasoning_summary_text.delta", **base, "delta": "nk."},
            {"type": "response.reasoning_summary_text.done", **base, "text": "Think."},
            {"type": "response.output_item.done", "output_index": 0, "item": reasoning},
            *whole_message(1, "msg_1", "Hi"),
            terminal(),
        ]
    )
    turn = await collect(body)
    assert (turn.reasoning, turn.text, turn.errors) == ("Think.", "Hi", ())


# -- server-side tools -----------------------------------------------------------------------


async def test_server_side_tool_items_are_reported_as_items_never_as_calls() -> None:
    search = {
        "id": "ws_1",
        "type": "web_search_call",
        "status": "completed",
        "action": {"type": "search", "query": "weather"},
    }
    code = {
        "id": "ci_1",
        "type": "code_interpreter_call",
        "status": "completed",
        "code": "print(1)",
        "container_id": "c",
    }
    body = sse(
        [
            created(),
            {
                "type": "response.output_item.added",
                "output_index": 0,
                "item": {**search, "status": "in_progress"},
            },
            {"type": "response.web_search_call.in_progress", "output_index": 0, "item_id": "ws_1"},
            {"type": "response.web_search_call.searching", "output_index": 0, "item_id": "ws_1"},
            {"type": "response.web_search_call.completed", "output_index": 0, "item_id": "ws_1"},
            {"type": "response.output_item.done", "output_index": 0, "item": search},
            {
                "type": "response.code_interpreter_call_code.delta",
                "output_index": 1,
                "item_id": "ci_1",
                "delta": "print(1)",
            },
            {"type": "response.output_item.done", "output_index": 1, "item": code},
            *whole_message(2, "msg_1", "It is sunny."),
            terminal(),
        ]
    )
    events = [e async for e in toolwire.stream(body, PROVIDER, tools=[RM_TOOL])]
    turn = await collect(body)
    assert turn.calls == ()
    assert (turn.text, turn.stop_reason, turn.errors) == ("It is sunny.", "end_turn", ())
    items = output_items(events)
    assert [(i.item_type, i.item_id, i.call_id) for i in items] == [
        ("web_search_call", "ws_1", None),
        ("code_interpreter_call", "ci_1", None),
        ("message", "msg_1", None),
    ]
    assert json.loads(items[0].item) == search


# -- dialects ---------------------------------------------------------------------------------


def _mantle(body: bytes) -> bytes:
    """Bedrock Mantle's framing: ``data:`` before ``event:``, keys sorted."""
    out = []
    for block in body.decode().split("\n\n"):
        lines = block.split("\n")
        event = [line for line in lines if line.startswith("event:")]
        data = [line for line in lines if line.startswith("data:")]
        if data:
            payload = json.dumps(json.loads(data[0][5:]), sort_keys=True, separators=(",", ":"))
            out.append("\n".join([f"data: {payload}", *event]))
    return ("\n\n".join(out) + "\n\n").encode()


async def test_bedrock_mantle_data_before_event_and_sorted_keys() -> None:
    original = load_stream("openai-responses/reasoning_text_function_call_gpt5.sse")
    mantle = _mantle(original)
    assert mantle.startswith(b"data: {")
    # Sorted keys change only the recorded items' JSON text (Turn.provider_content).
    from_mantle = await toolwire.collect(mantle, PROVIDER)
    from_original = await toolwire.collect(original, PROVIDER)
    assert msgspec.structs.replace(from_mantle, provider_content=()) == msgspec.structs.replace(
        from_original, provider_content=()
    )


async def test_a_payload_without_type_is_named_by_its_event_line() -> None:
    body = sse([created(), *whole_call(0, "fc_1", "c", "rm", GOOD), terminal()])
    blocks = []
    for block in body.decode().split("\n\n")[:-1]:
        event, data = block.split("\n")
        payload = json.loads(data[5:])
        del payload["type"]
        blocks.append(f"{event}\ndata: {json.dumps(payload)}\n\n")
    turn = await collect("".join(blocks).encode())
    assert [(c.arguments_raw, c.outcome) for c in turn.calls] == [(GOOD, "ok")]
    assert turn.stop_reason == "tool_calls"


async def test_a_chat_style_done_marker_is_not_a_terminator() -> None:
    body = (
        sse([created(), call_added(0, "fc_1", "c", "rm"), arguments_delta(0, "fc_1", GOOD)])
        + b"data: [DONE]\n\n"
    )
    turn = await collect(body)
    assert turn.stop_reason == "disconnected"
    assert turn.calls[0].truncated
    assert turn.errors == ()


# -- bodies that are not streams, HTTP errors, cut streams -------------------------------------


@pytest.mark.parametrize(
    ("body", "kind"),
    [
        (b"<html><body><h1>502 Bad Gateway</h1></body></html>", "not_a_stream"),
        (
            b'{"id": "resp_1", "object": "response", "status": "completed", "output": []}',
            "not_a_stream",
        ),
        (b"", "empty_response"),
    ],
)
async def test_a_body_that_is_not_a_stream_is_an_error_not_a_truncation(
    body: bytes, kind: str
) -> None:
    turn = await collect(body)
    assert (turn.stop_reason, turn.truncated) == ("error", False)
    (error,) = turn.errors
    assert (error.kind, error.fatal) == (kind, True)


async def test_an_http_error_status_is_an_error_that_quotes_the_body() -> None:
    body = (
        b'{"error": {"message": "No tool output found for function call call_1.", '
        b'"type": "invalid_request_error"}}'
    )

    def handler(request: httpx.Request) -> httpx.Response:
        return httpx.Response(400, content=body, headers={"content-type": "application/json"})

    transport = httpx.MockTransport(handler)
    async with httpx.AsyncClient(transport=transport, base_url="http://test") as client:
        async with client.stream("POST", "/v1/responses") as response:
            turn = await collect(response)
    assert (turn.stop_reason, turn.truncated) == ("error", False)
    (error,) = turn.errors
    assert (error.kind, error.code, error.fatal) == ("http_status", "400", True)
    assert "No tool output found" in error.message


async def test_a_stream_cut_after_a_finished_item_keeps_the_finished_call() -> None:
    body = sse(
        [created(), *whole_call(0, "fc_1", "c", "rm", GOOD), *whole_message(1, "msg_1", "Done")]
    )
    cut = body[: body.index(b"event: response.output_text.done")]
    turn = await collect(cut)
    assert turn.stop_reason == "disconnected"
    assert "no_finish" in turn.truncation_evidence
    (call,) = turn.calls
    assert (call.truncated, call.outcome) == (False, "ok")  # its item said it was complete


async def test_a_stream_cut_mid_call_is_disconnected_and_the_call_never_runs() -> None:
    body = sse([created(), call_added(0, "fc_1", "c", "rm"), arguments_delta(0, "fc_1", GOOD)])
    turn = await collect(body)
    assert (turn.stop_reason, turn.cut_by) == ("disconnected", "disconnected")
    assert turn.calls[0].truncated
    assert turn.calls[0].outcome == "rejected"


def test_the_mapper_emits_finish_and_stream_end_once() -> None:
    mapper = OpenAIResponsesMapper()
    events = mapper.feed_bytes(sse([created(), *whole_message(0, "m", "x"), terminal()]))
    events += mapper.finish()
    assert [type(e) for e in events[-2:]] == [Finish, StreamEnd]
    assert sum(isinstance(e, TextDelta) for e in events) == 1
    assert not any(isinstance(e, ProviderError) for e in events)
