"""A bad call never runs, even under faults: lost pieces, repeated ids, hostile sizes, bad bodies.

Each test is built from the reproducer of a break found by fault injection (issue 9).
"""

from __future__ import annotations

import gc
import json
import time
from collections.abc import AsyncIterator, Iterator
from typing import Any

import anyio
import httpx
import pytest
from _toolwire_testdata import chat_chunk, sse_body

import toolwire
from toolwire import ToolResult
from toolwire.core.accumulate import CallAccumulator
from toolwire.core.error_budget import MAX_ERRORS
from toolwire.core.events import (
    Event,
    Finish,
    StreamEnd,
    ToolCallArgumentsDelta,
    ToolCallStarted,
)
from toolwire.judge import Policy

pytestmark = pytest.mark.anyio

RM_TOOL = {
    "type": "function",
    "function": {
        "name": "rm",
        "parameters": {
            "type": "object",
            "required": ["path"],
            "properties": {"path": {"type": "string"}},
        },
    },
}


def _header(index: int, call_id: str, name: str) -> dict[str, Any]:
    return chat_chunk(
        {"tool_calls": [{"index": index, "id": call_id, "type": "function",
                         "function": {"name": name, "arguments": ""}}]}
    )


def _piece(index: int, text: str) -> dict[str, Any]:
    return chat_chunk({"tool_calls": [{"index": index, "function": {"arguments": text}}]})


# -- 1. a call that lost a piece never runs ------------------------------------------------------


async def test_the_rm_reproducer_is_rejected_as_lost_in_transit() -> None:
    lost = json.dumps(_piece(0, "old-backups/"))[:-1]  # the chunk's JSON is missing its last }
    body = sse_body(
        [
            _header(0, "call_rm", "rm"),
            _piece(0, '{"path": "/home/me/'),
            lost,
            _piece(0, '"}'),
            chat_chunk({}, "tool_calls"),
        ]
    )
    turn = await toolwire.collect(body, tools=[RM_TOOL])
    (call,) = turn.calls
    assert call.outcome == "rejected"
    assert call.may_run is False
    assert call.verdict is not None
    assert call.verdict.reason == "lost_in_transit"
    assert call.arguments is None
    message = call.verdict.message or ""
    assert "lost in transit" in message
    assert "again" in message
    assert "`rm`" in message
    (error,) = turn.errors
    assert error.kind == "not_json"
    # It never reaches the tool.
    ran: list[str] = []

    async def run_tool(record: toolwire.CallRecord) -> str:
        ran.append(record.call_id)
        return "deleted"

    results = [result async for result in toolwire.dispatch(turn, run_tool)]
    assert ran == []
    assert [result.status for result in results] == ["rejected"]


@pytest.mark.parametrize(
    "unreadable",
    [
        "this is { not json",
        '{"choices": 5}',
        '{"choices": [{"index": 0, "delta": {"tool_calls": "x"}}]}',
        "[1, 2]",
    ],
)
async def test_any_unreadable_piece_marks_every_open_call(unreadable: str) -> None:
    body = sse_body(
        [
            _header(0, "a", "rm"),
            _piece(0, '{"path": "x"}'),
            _header(1, "b", "rm"),
            _piece(1, '{"path": '),
            unreadable,
            _piece(1, '"y"}'),
            chat_chunk({}, "tool_calls"),
        ]
    )
    turn = await toolwire.collect(body, tools=[RM_TOOL])
    first, second = turn.calls
    # "a" was closed by "b" opening a new index before the loss: it is whole and runs.
    assert (first.call_id, first.outcome, first.arguments) == ("a", "ok", {"path": "x"})
    assert (second.call_id, second.outcome) == ("b", "rejected")
    assert second.verdict is not None
    assert second.verdict.reason == "lost_in_transit"
    assert len(turn.errors) == 1


async def test_a_nameless_call_after_a_loss_never_runs() -> None:
    # The lost piece may have been the header (id, name) of the next call; its continuation
    # opens a call with no name, whose text is the tail of something unknown.
    body = sse_body(
        [
            "garbage that was a header",
            _piece(0, '{"path": "/"}'),
            chat_chunk({}, "tool_calls"),
        ]
    )
    turn = await toolwire.collect(body, tools=[RM_TOOL])
    (call,) = turn.calls
    assert call.verdict is not None
    assert call.verdict.reason == "lost_in_transit"


async def test_a_loss_before_any_call_spares_a_call_that_starts_whole() -> None:
    body = sse_body(
        ["not json", _header(0, "a", "rm"), _piece(0, '{"path": "x"}'), chat_chunk({}, "stop")]
    )
    turn = await toolwire.collect(body, tools=[RM_TOOL])
    assert [(c.call_id, c.outcome) for c in turn.calls] == [("a", "ok")]


async def test_a_lost_sdk_chunk_marks_the_open_call_too() -> None:
    chunks = [_header(0, "a", "rm"), _piece(0, '{"path": "/home/'), {"choices": 5},
              _piece(0, '"}'), chat_chunk({}, "tool_calls")]
    turn = await toolwire.collect(chunks, tools=[RM_TOOL])
    assert turn.calls[0].verdict is not None
    assert turn.calls[0].verdict.reason == "lost_in_transit"


# -- 2. one call, one identity ---------------------------------------------------------------


async def test_two_calls_with_one_id_are_two_calls_with_two_answers() -> None:
    body = sse_body(
        [
            _header(0, "call_1", "rm"),
            _piece(0, '{"path": '),  # cut: rejected
            _header(1, "call_1", "rm"),
            _piece(1, '{"path": "tmp"}'),
            chat_chunk({}, "tool_calls"),
        ]
    )
    turn = await toolwire.collect(body, tools=[RM_TOOL])
    first, second = turn.calls
    assert (first.call_id, first.provider_id, first.outcome) == ("call_1", None, "rejected")
    assert (second.call_id, second.provider_id, second.outcome) == ("call_1~2", "call_1", "ok")

    async def run_tool(record: toolwire.CallRecord) -> str:
        return f"removed {record.arguments}"

    results = [result async for result in toolwire.dispatch(turn, run_tool)]
    assert [(r.call_id, r.status) for r in results] == [
        ("call_1", "rejected"),
        ("call_1~2", "ok"),
    ]
    history = toolwire.Pipeline().next_messages(turn, results)
    assert toolwire.Pipeline().check_history(history) == []
    assert [c["id"] for c in history[0]["tool_calls"]] == ["call_1", "call_1~2"]


async def test_a_provider_id_equal_to_a_synthesized_one_is_renamed() -> None:
    first = sse_body([chat_chunk({"function_call": {"name": "rm", "arguments": '{"path": "a"}'}}),
                      chat_chunk({}, "function_call")])
    turn = await toolwire.collect(first, judge=False)
    synthesized = turn.calls[0].call_id
    assert turn.calls[0].id_synthesized
    body = sse_body(
        [
            chat_chunk({"tool_calls": [{"index": 0, "function": {"name": "rm",
                                                                 "arguments": "{}"}}]}),
            _header(1, synthesized, "rm"),
            chat_chunk({}, "tool_calls"),
        ]
    )
    again = await toolwire.collect(body, judge=False)
    ids = [call.call_id for call in again.calls]
    assert len(set(ids)) == 2


def test_synthesized_ids_never_repeat_across_streams() -> None:
    seen = set()
    for _ in range(1000):
        accumulator = CallAccumulator()
        out: list[Event] = []
        accumulator.fragment(out, index=None, call_id=None, name="f", arguments="{}")
        started = out[0]
        assert isinstance(started, ToolCallStarted)
        seen.add(started.call_id)
    assert len(seen) == 1000


@pytest.mark.slow
def test_opening_a_call_costs_the_same_with_20000_calls_before_it() -> None:
    def run(count: int) -> float:
        accumulator = CallAccumulator(emit_deltas=False)
        out: list[Event] = []
        gc.disable()  # the collector's passes over many live objects are not what is measured
        try:
            start = time.process_time()
            for number in range(count):
                accumulator.fragment(
                    out, index=number, call_id=f"c{number}", name="f", arguments="{}"
                )
            return time.process_time() - start
        finally:
            gc.enable()

    small = min(run(2_500) for _ in range(3))
    large = min(run(20_000) for _ in range(3))
    # Linear: 8x the calls costs well under 24x the CPU time (every earlier call checked: ~64x).
    # CPU time, not the wall clock, which a busy neighbour inflates.
    assert large < small * 8 * 3, (small, large)


# -- 4. bounded memory: arguments, errors ------------------------------------------------------


async def _endless_arguments(pieces: int, size: int) -> AsyncIterator[bytes]:
    yield sse_body([_header(0, "big", "rm"), _piece(0, '{"path": "')], done=False)
    piece = sse_body([_piece(0, "x" * size)], done=False)
    for _ in range(pieces):
        yield piece
    yield sse_body([_piece(0, '"}'), chat_chunk({}, "tool_calls")])


async def test_a_call_past_the_size_limit_is_rejected_while_streaming() -> None:
    policy = Policy(max_bytes=10_000)
    events = [
        event
        async for event in toolwire.stream(_endless_arguments(200, 1000), tools=[RM_TOOL],
                                           policy=policy)
    ]
    deltas = [event for event in events if isinstance(event, ToolCallArgumentsDelta)]
    # No piece past the limit is buffered or handed on.
    assert sum(len(delta.delta) for delta in deltas) <= 10_000
    turn = await toolwire.collect(_endless_arguments(200, 1000), tools=[RM_TOOL], policy=policy)
    (call,) = turn.calls
    assert call.verdict is not None
    assert call.verdict.reason == "too_large"
    assert len(call.arguments_raw) <= 500
    assert call.verdict.raw_length == 200_000 + len('{"path": "') + 2
    assert "too large (200012 characters" in (call.verdict.message or "")


async def test_an_endless_argument_stream_keeps_memory_bounded() -> None:
    # 64 MB of arguments for one call, at the default 1 MiB limit: what is kept stays small.
    async def collect_it() -> toolwire.Turn:
        return await toolwire.collect(_endless_arguments(1024, 65536), tools=[RM_TOOL])

    gc.collect()
    turn = await collect_it()
    assert turn.calls[0].verdict is not None
    assert turn.calls[0].verdict.reason == "too_large"
    assert len(turn.calls[0].arguments_raw) <= 500


async def test_errors_are_capped_and_counted() -> None:
    body = sse_body(["bad line"] * 10_000 + [chat_chunk({"content": "ok"}), chat_chunk({}, "stop")])
    turn = await toolwire.collect(body)
    assert turn.text == "ok"
    assert len(turn.errors) == MAX_ERRORS + 1
    last = turn.errors[-1]
    assert last.kind == "too_many_errors"
    assert f"{10_000 - MAX_ERRORS} more provider errors" in last.message
    assert turn.stop_reason == "end_turn"


# -- stop at the terminator; close every source ------------------------------------------------


async def test_reading_stops_at_done_even_if_the_body_stays_open() -> None:
    closed: list[bool] = []

    async def held_open() -> AsyncIterator[bytes]:
        try:
            yield sse_body([chat_chunk({"content": "hi"}), chat_chunk({}, "stop")])
            await anyio.sleep_forever()
        finally:
            closed.append(True)

    with anyio.fail_after(5):
        turn = await toolwire.collect(held_open())
    assert (turn.text, turn.stop_reason) == ("hi", "end_turn")
    assert closed == [True]


async def test_only_a_source_read_by_awaiting_gets_the_drain_timer(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """After the terminator, a source in memory (or read synchronously) is drained without the
    grace timer: nothing could be waited on, and no timer could cut a blocking read off (the
    cancel scope was a tenth of healing a whole completion). An awaited source keeps it."""
    timers: list[float] = []
    move_on_after = anyio.move_on_after

    def counted(delay: float, *args: Any, **kwargs: Any) -> Any:
        timers.append(delay)
        return move_on_after(delay, *args, **kwargs)

    monkeypatch.setattr(anyio, "move_on_after", counted)
    body = sse_body([chat_chunk({"content": "a"}), chat_chunk({}, "stop")])

    async def awaited() -> AsyncIterator[bytes]:
        yield body

    for source in (body, [body], iter([body, b"more"])):
        turn = await toolwire.collect(source)
        assert (turn.text, turn.stop_reason) == ("a", "end_turn")
    assert timers == []
    turn = await toolwire.collect(awaited())
    assert (turn.text, turn.stop_reason) == ("a", "end_turn")
    assert len(timers) == 1


async def test_a_source_whose_close_fails_keeps_the_turn() -> None:
    class Stream:
        def __init__(self) -> None:
            self.reads = [sse_body([chat_chunk({"content": "kept"}), chat_chunk({}, "stop")])]

        def __aiter__(self) -> Stream:
            return self

        async def __anext__(self) -> bytes:
            if not self.reads:
                raise StopAsyncIteration
            return self.reads.pop()

        async def aclose(self) -> None:
            raise OSError("socket already gone")

    turn = await toolwire.collect(Stream())
    assert (turn.text, turn.stop_reason) == ("kept", "end_turn")
    (error,) = turn.errors
    assert (error.kind, error.fatal) == ("transport", False)
    assert "socket already gone" in error.message


async def test_a_sync_generator_source_is_closed() -> None:
    closed: list[bool] = []

    def reads() -> Iterator[bytes]:
        try:
            yield sse_body([chat_chunk({"content": "a"}), chat_chunk({}, "stop")])
            yield b"never read"
        finally:
            closed.append(True)

    turn = await toolwire.collect(reads())
    assert turn.text == "a"
    assert closed == [True]


async def test_events_end_with_finish_and_stream_end_when_closing_fails() -> None:
    class Stream:
        def __aiter__(self) -> Stream:
            return self

        async def __anext__(self) -> bytes:
            raise StopAsyncIteration

        async def aclose(self) -> None:
            raise OSError("gone")

    events = [event async for event in toolwire.stream(Stream())]
    assert isinstance(events[-2], Finish)
    assert isinstance(events[-1], StreamEnd)


# -- httpx.Response sources, and bodies that are not streams -----------------------------------


def _client(status: int, body: bytes, content_type: str) -> httpx.AsyncClient:
    def handler(request: httpx.Request) -> httpx.Response:
        return httpx.Response(status, content=body, headers={"content-type": content_type})

    return httpx.AsyncClient(transport=httpx.MockTransport(handler), base_url="http://test")


async def test_an_http_error_status_is_an_error_that_quotes_the_body() -> None:
    body = b'{"error": {"message": "Invalid history: content must not be null"}}'
    async with _client(500, body, "application/json") as client:
        async with client.stream("POST", "/v1/chat/completions") as response:
            turn = await toolwire.collect(response)
    assert turn.stop_reason == "error"
    assert turn.truncated is False
    (error,) = turn.errors
    assert (error.kind, error.code, error.fatal) == ("http_status", "500", True)
    assert "Invalid history" in error.message
    assert error.message.startswith("HTTP 500")


async def test_an_ok_http_response_reads_like_its_body() -> None:
    body = sse_body([chat_chunk({"content": "hello"}), chat_chunk({}, "stop")])
    async with _client(200, body, "text/event-stream") as client:
        async with client.stream("POST", "/v1/chat/completions") as response:
            turn = await toolwire.collect(response)
    assert (turn.text, turn.stop_reason, turn.errors) == ("hello", "end_turn", ())


@pytest.mark.parametrize(
    ("body", "kind"),
    [
        (b"<html><body><h1>502 Bad Gateway</h1></body></html>", "not_a_stream"),
        (b'{"error": {"message": "model not found"}}', "not_a_stream"),
        (bytes(range(256)) * 4, "not_a_stream"),
        (b"", "empty_response"),
    ],
)
async def test_a_body_that_is_not_a_stream_is_an_error_not_a_truncation(
    body: bytes, kind: str
) -> None:
    for source in (body, [body[:7], body[7:]]):
        turn = await toolwire.collect(source)
        assert turn.stop_reason == "error"
        assert turn.truncated is False
        (error,) = turn.errors
        assert (error.kind, error.fatal) == (kind, True)
        if body:
            assert error.raw
            assert error.raw[:20] == body[:20].decode("utf-8", "replace")[:20]
    async with _client(200, body, "text/html") as client:
        async with client.stream("GET", "/") as response:
            turn = await toolwire.collect(response)
    assert (turn.stop_reason, turn.errors[0].kind) == ("error", kind)


async def test_a_results_list_never_gives_a_rejected_call_another_answer() -> None:
    body = sse_body(
        [
            _header(0, "same", "rm"),
            _piece(0, "{bad"),
            _header(1, "same", "rm"),
            _piece(1, '{"path": "ok"}'),
            chat_chunk({}, "tool_calls"),
        ]
    )
    turn = await toolwire.collect(body, tools=[RM_TOOL])
    ok = ToolResult(call_id="same", name="rm", content="done", status="ok")
    with pytest.raises(toolwire.HistoryError):
        toolwire.answer_every_call(turn, [ok])
