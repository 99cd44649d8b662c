"""Anthropic Messages as a healing wire format: the encoder, the requests, the whole bodies.

The round trip is the contract: a judged stream re-encoded and read back, by toolwire's own
Anthropic adapter and by the official ``anthropic`` SDK, gives the same accepted calls, text and
finish, and never a rejected call; what is read back is written again byte for byte (one table
of cases, both directions). Healed exchanges run through the real
:class:`~toolwire.heal.HealSession`; retry histories are checked by toolwire and by the
independent check of the scripted Messages server (``tests/e2e/anthropic_server.py``).
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any, NamedTuple

import anthropic
import anyio
import httpx2
import pytest
from _toolwire_testdata import data_payloads, every_recording, examples, load_stream
from e2e.anthropic_server import history_errors
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import toolwire
import toolwire.events
from toolwire.adapters.anthropic import ANTHROPIC, AnthropicEventEncoder, AnthropicHistory
from toolwire.adapters.encoding import ACCEPTED_NOTE
from toolwire.core.events import (
    Event,
    Finish,
    ProviderError,
    ResponseInfo,
    StreamEnd,
    TextDelta,
    ToolCallReady,
    Usage,
)
from toolwire.core.turn import Turn
from toolwire.core.wire import WireItem
from toolwire.heal import HealSession
from toolwire.heal.session import AttemptEnd

pytestmark = pytest.mark.anyio

#: On ``event: error`` the SDK raises inside ``AsyncStream.__stream__`` without closing its own
#: SSE generators; on trio the garbage collector finalizes them with this warning (see
#: ``tests/e2e/test_anthropic_loop.py``). Only tests where the SDK raises ignore it.
SDK_ERROR_LEAK = pytest.mark.filterwarnings(
    "ignore:Async generator 'anthropic[.]_streaming[.]:ResourceWarning"
)

RECORDINGS = [path for path, provider in every_recording() if provider == "anthropic"]
CUT = "anthropic/max_tokens_mid_tool_input_no_block_stop.sse"
CUT_ID = "toolu_01EKqbqmZrGRXy18eN7m9kvY"
MAKE_FILE: dict[str, Any] = {
    "name": "make_file",
    "description": "Write lines to a file.",
    "input_schema": {
        "type": "object",
        "properties": {
            "filename": {"type": "string"},
            "lines_of_text": {"type": "array", "items": {"type": "string"}},
        },
        "required": ["filename", "lines_of_text"],
    },
}
TOOLS = [MAKE_FILE]
USER = [{"role": "user", "content": "Write a tax guide to taxes.txt"}]
GOOD_INPUT = {"filename": "taxes.txt", "lines_of_text": ["# TAX GUIDE", "Keep it short."]}


def _request(**extra: Any) -> dict[str, Any]:
    return {
        "model": "claude-test",
        "max_tokens": 124,
        "messages": list(USER),
        "tools": TOOLS,
        "stream": True,
        **extra,
    }


# -- building Messages streams and bodies ------------------------------------------------------


def _event(payload: dict[str, Any]) -> bytes:
    return f"event: {payload['type']}\ndata: {json.dumps(payload)}\n\n".encode()


def _reply(
    *blocks: tuple[str, ...],
    stop_reason: str = "tool_use",
    msg_id: str = "msg_retry",
    usage: tuple[int, int] = (100, 50),
) -> bytes:
    """A streamed turn of ``("text", t)``, ``("thinking", t, signature)``, ``("tool_use", id,
    name, raw input)`` blocks, each delta in pieces of 5 characters."""
    message = {
        "id": msg_id,
        "type": "message",
        "role": "assistant",
        "model": "claude-test",
        "content": [],
        "stop_reason": None,
        "usage": {"input_tokens": usage[0], "output_tokens": 1},
    }
    events = [_event({"type": "message_start", "message": message}), _event({"type": "ping"})]
    for index, block in enumerate(blocks):
        kind, pieces = block[0], [block[-1][i : i + 5] for i in range(0, len(block[-1]), 5)]
        if kind == "text":
            start: dict[str, Any] = {"type": "text", "text": ""}
            deltas = [{"type": "text_delta", "text": p} for p in pieces]
        elif kind == "thinking":
            start = {"type": "thinking", "thinking": "", "signature": ""}
            pieces = [block[1][i : i + 5] for i in range(0, len(block[1]), 5)]
            deltas = [{"type": "thinking_delta", "thinking": p} for p in pieces]
            deltas.append({"type": "signature_delta", "signature": block[2]})
        else:
            start = {"type": "tool_use", "id": block[1], "name": block[2], "input": {}}
            deltas = [{"type": "input_json_delta", "partial_json": p} for p in ["", *pieces]]
        events.append(
            _event({"type": "content_block_start", "index": index, "content_block": start})
        )
        events += [
            _event({"type": "content_block_delta", "index": index, "delta": d}) for d in deltas
        ]
        events.append(_event({"type": "content_block_stop", "index": index}))
    events.append(
        _event(
            {
                "type": "message_delta",
                "delta": {"stop_reason": stop_reason, "stop_sequence": None},
                "usage": {"output_tokens": usage[1]},
            }
        )
    )
    events.append(_event({"type": "message_stop"}))
    return b"".join(events)


def _message(*content: dict[str, Any], stop_reason: str = "tool_use", **extra: Any) -> bytes:
    """A non-streamed ``message`` body."""
    return json.dumps(
        {
            "id": "msg_whole",
            "type": "message",
            "role": "assistant",
            "model": "claude-test",
            "content": list(content),
            "stop_reason": stop_reason,
            "stop_sequence": None,
            "usage": {
                "input_tokens": 100,
                "cache_creation_input_tokens": 0,
                "cache_read_input_tokens": 7,
                "output_tokens": 50,
            },
            **extra,
        }
    ).encode()


# -- reading what was encoded ------------------------------------------------------------------


async def _judged(body: bytes, **options: Any) -> list[Event]:
    return [event async for event in toolwire.Pipeline("anthropic", **options).stream(body)]


def _encoded(events: Iterable[Event]) -> bytes:
    """A plain re-encoding of a judged stream (the encoder's ``feed``), framed."""
    encoder = AnthropicEventEncoder()
    return ANTHROPIC.frame(item for event in events for item in encoder.feed(event))


def _payloads(body: bytes) -> list[dict[str, Any]]:
    return [json.loads(payload) for payload in data_payloads(body)]


def _assert_well_formed(body: bytes) -> None:
    """Every event named by its type; blocks 0, 1, 2... each started, then stopped, in turn."""
    names = [line[7:].decode() for line in body.split(b"\n") if line.startswith(b"event: ")]
    payloads = _payloads(body)
    assert names == [payload["type"] for payload in payloads]
    assert names[0] == "message_start"
    open_index: int | None = None
    started = 0
    for payload in payloads:
        kind = payload["type"]
        if kind == "content_block_start":
            assert open_index is None
            assert payload["index"] == started
            open_index, started = started, started + 1
        elif kind == "content_block_delta":
            assert payload["index"] == open_index
        elif kind == "content_block_stop":
            assert payload["index"] == open_index
            open_index = None
        elif kind in ("message_delta", "error"):
            assert kind == "error" or open_index is None
    assert names.count("message_stop") <= 1
    if "error" in names:
        assert names[-1] == "error"
    elif "message_stop" in names:
        assert names[-2:] == ["message_delta", "message_stop"]


async def _sdk_message(body: bytes, **request: Any) -> Any:
    """The ``anthropic`` SDK's accumulated ``Message`` for a streamed ``body``."""

    def respond(_: httpx2.Request) -> httpx2.Response:
        return httpx2.Response(200, headers={"content-type": "text/event-stream"}, content=body)

    async with (
        httpx2.AsyncClient(transport=httpx2.MockTransport(respond)) as http,
        anthropic.AsyncAnthropic(
            api_key="test", base_url="http://anthropic.test", http_client=http, max_retries=0
        ) as client,
        client.messages.stream(
            **{"model": "claude-test", "max_tokens": 124, "messages": USER, **request}
        ) as stream,
    ):
        return await stream.get_final_message()


class Exchange:
    """A healing session over Anthropic responses, and what the client received."""

    def __init__(self, body: dict[str, Any] | None = None, **options: Any) -> None:
        self.pipeline = toolwire.Pipeline("anthropic")
        self.session = HealSession(
            body or _request(), self.pipeline.next_messages, wire=ANTHROPIC, **options
        )
        self.sent: list[WireItem] = []

    async def respond(self, response: bytes) -> AttemptEnd:
        async for event in self.pipeline.stream(response, request=self.session.body):
            self.sent += self.session.feed(event)
        end = self.session.end_attempt()
        self.sent += end.items
        return end

    @property
    def body(self) -> bytes:
        return ANTHROPIC.frame(self.sent)


# -- every recording ---------------------------------------------------------------------------


def test_there_are_anthropic_recordings() -> None:
    # The package's own recordings/ hold none (llama-cpp-python and OpenAI only).
    assert len(RECORDINGS) >= 6


# As h11's test_io.py: one table of cases drives the reader and the writer. Reading: the bytes of
# each case become judged events, which the writer turns into bytes that read back as the same
# Turn (less the rejected calls, which never reach a client; the finish corrected for the token
# limit). Writing: the events read back from what was written are written as the very same bytes.

#: Every Anthropic recording.
ROUND_TRIPS = [pytest.param(load_stream(r), id=r) for r in RECORDINGS]


class RoundTrip(NamedTuple):
    """One case, read, written, read back, written again."""

    events: list[Event]
    original: Turn
    encoded: bytes
    again: Turn
    rewritten: bytes


async def _round_trip(body: bytes) -> RoundTrip:
    pipeline = toolwire.Pipeline("anthropic")
    events = [event async for event in pipeline.stream(body)]
    encoded = _encoded(events)
    read_back = [event async for event in pipeline.stream(encoded)]
    return RoundTrip(
        events,
        await pipeline.collect(body),
        encoded,
        await pipeline.collect(encoded),
        _encoded(read_back),
    )


@pytest.mark.parametrize("body", ROUND_TRIPS)
async def test_reading_then_writing(anyio_backend: str, body: bytes) -> None:
    """Bytes -> events -> bytes: what the writer wrote reads back as the Turn first read."""
    events, original, encoded, again, _ = await _round_trip(body)
    _assert_well_formed(encoded)
    accepted = [call for call in original.calls if call.may_run]
    assert [(c.call_id, c.name, c.arguments) for c in again.calls] == [
        (c.call_id, c.name, c.arguments) for c in accepted
    ]
    for before, after in zip(accepted, again.calls, strict=True):
        if before.outcome == "ok":
            assert after.arguments_raw == before.arguments_raw  # byte for byte
    for rejected in (c for c in original.calls if not c.may_run):
        assert rejected.call_id.encode() not in encoded  # never reaches a client
    assert (again.text, again.reasoning) == (original.text, original.reasoning)
    assert (again.model, again.response_id) == (original.model, original.response_id)
    assert again.stop_reason == original.stop_reason
    if original.stop_reason == "error":
        assert [(e.code, e.message) for e in again.errors] == [
            (e.code, e.message) for e in original.errors if e.fatal
        ]
        return
    finish = next(event for event in events if isinstance(event, Finish))
    assert again.finish_raw == AnthropicEventEncoder().client_finish_reason(
        finish, calls_sent=bool(accepted)
    )
    if original.cut_by == "token_limit":
        assert again.finish_raw == "max_tokens"
    assert again.usage == original.usage


@pytest.mark.parametrize("body", ROUND_TRIPS)
async def test_writing_then_reading(anyio_backend: str, body: bytes) -> None:
    """Events -> bytes -> events: the events read back from the written bytes write them again."""
    trip = await _round_trip(body)
    assert trip.rewritten == trip.encoded


@pytest.mark.parametrize("recording", [r for r in RECORDINGS if "error" not in r])
async def test_the_sdk_reads_every_re_encoded_recording(anyio_backend: str, recording: str) -> None:
    body = load_stream(recording)
    events = await _judged(body)
    original = await toolwire.Pipeline("anthropic").collect(body)
    message = await _sdk_message(_encoded(events))
    accepted = [call for call in original.calls if call.may_run]
    assert [(b.id, b.name, b.input) for b in message.content if b.type == "tool_use"] == [
        (c.call_id, c.name, json.loads(c.arguments_raw)) for c in accepted
    ]
    assert "".join(b.text for b in message.content if b.type == "text") == original.text
    assert "".join(b.thinking for b in message.content if b.type == "thinking") == (
        original.reasoning
    )
    assert (message.id, message.model) == (original.response_id, original.model)
    assert message.stop_reason == ("max_tokens" if original.cut_by else original.finish_raw)
    assert original.usage is not None
    assert (message.usage.input_tokens, message.usage.output_tokens) == (
        original.usage.input_tokens,
        original.usage.output_tokens,
    )


# -- healed exchanges, read by the SDK ---------------------------------------------------------


async def test_a_cut_call_is_healed_and_the_sdk_reads_the_result(anyio_backend: str) -> None:
    exchange = Exchange(max_tokens_ceiling=1000)
    first = await exchange.respond(load_stream(CUT))
    assert first.retry is not None
    assert (first.retry.cause, first.retry.body["max_tokens"]) == ("token_limit", 248)
    fixed = _reply(
        ("text", "Here it is, shorter."),  # held: the client never saw the rejection
        ("tool_use", "toolu_fixed", "make_file", json.dumps(GOOD_INPUT)),
    )
    end = await exchange.respond(fixed)
    assert end.retry is None
    assert exchange.session.outcome == "healed"
    _assert_well_formed(exchange.body)
    assert CUT_ID.encode() not in exchange.body

    message = await _sdk_message(exchange.body, tools=TOOLS)
    assert [block.type for block in message.content] == ["text", "tool_use"]
    assert (
        message.content[0].text
        == (await toolwire.Pipeline("anthropic").collect(load_stream(CUT))).text
    )
    tool_use = message.content[1]
    assert (tool_use.id, tool_use.name, tool_use.input) == ("toolu_fixed", "make_file", GOOD_INPUT)
    assert message.id == "msg_01UdjYBBipA9omjYhicnevgq"  # the first response's, throughout
    assert message.stop_reason == "tool_use"
    # The sum over the exchange: what was spent.
    assert (message.usage.input_tokens, message.usage.output_tokens) == (450 + 100, 124 + 50)

    # The client sends the turn back: the API's own rules accept it.
    history = [
        *USER,
        {
            "role": "assistant",
            "content": [b.model_dump(exclude_none=True) for b in message.content],
        },
        {
            "role": "user",
            "content": [
                {"type": "tool_result", "tool_use_id": "toolu_fixed", "content": "written"}
            ],
        },
    ]
    assert history_errors(history, {}) == []


async def test_the_retry_history_is_well_formed(anyio_backend: str) -> None:
    good = ("tool_use", "toolu_good", "make_file", json.dumps(GOOD_INPUT))
    bad = ("tool_use", "toolu_bad", "make_file", '{"filename": "b.txt"}')  # misses a field
    exchange = Exchange()
    end = await exchange.respond(_reply(("text", "Two files."), good, bad, msg_id="msg_first"))
    retry = end.retry
    assert retry is not None
    assert retry.cause == "schema"
    body = retry.body
    # The same request, asked for the rejected call's tool (a constrained re-ask, issue 31).
    assert body["tool_choice"] == {"type": "tool", "name": "make_file"}
    assert {k: v for k, v in body.items() if k not in ("messages", "tool_choice")} == {
        k: v for k, v in _request().items() if k != "messages"
    }
    user, assistant, results = body["messages"]
    assert user == USER[0]
    assert assistant["content"] == [
        {"type": "text", "text": "Two files."},
        {"type": "tool_use", "id": "toolu_good", "name": "make_file", "input": GOOD_INPUT},
        {"type": "tool_use", "id": "toolu_bad", "name": "make_file", "input": {}},
    ]
    accepted, rejected = results["content"]
    assert accepted == {
        "type": "tool_result",
        "tool_use_id": "toolu_good",
        "content": ACCEPTED_NOTE,
    }
    assert (rejected["tool_use_id"], rejected["is_error"]) == ("toolu_bad", True)
    assert "lines_of_text" in rejected["content"]
    assert toolwire.Pipeline("anthropic").check_history(body["messages"]) == []
    assert history_errors(body["messages"], {}) == []
    # The accepted call went out at once; the rejected one never does.
    assert b"toolu_good" in exchange.body
    assert b"toolu_bad" not in exchange.body


@SDK_ERROR_LEAK
async def test_the_sdk_raises_when_healing_fails(anyio_backend: str) -> None:
    bad = ("tool_use", "toolu_bad", "make_file", '{"filename": "b.txt"}')
    exchange = Exchange(max_retries=0)
    end = await exchange.respond(_reply(("text", "Writing."), bad))
    assert end.retry is None
    assert exchange.session.outcome == "failed"
    last = exchange.sent[-1]
    assert isinstance(last, dict)
    assert last["type"] == "error"
    assert last["error"]["type"] == "toolwire_heal_failed"
    assert last["error"]["code"] == "tool_call_rejected"
    assert exchange.session.encoder.end() == []  # nothing after an error
    _assert_well_formed(exchange.body)
    with pytest.raises(anthropic.APIStatusError) as raised:
        await _sdk_message(exchange.body)
    assert raised.value.body["error"]["type"] == "toolwire_heal_failed"  # type: ignore[index]
    # toolwire's own adapter reads it as the provider's in-band error.
    turn = await toolwire.Pipeline("anthropic").collect(exchange.body)
    assert (turn.stop_reason, turn.errors[0].code) == ("error", "toolwire_heal_failed")


@SDK_ERROR_LEAK
async def test_a_server_error_reaches_the_sdk_as_the_server_wrote_it(anyio_backend: str) -> None:
    exchange = Exchange()
    end = await exchange.respond(load_stream("anthropic/error_overloaded_mid_stream.derived.sse"))
    assert (end.retry, exchange.session.outcome) == (None, "upstream_error")
    assert exchange.sent[-1] == {
        "type": "error",
        "error": {"type": "overloaded_error", "message": "Overloaded"},
    }
    with pytest.raises(anthropic.APIStatusError) as raised:
        await _sdk_message(exchange.body)
    assert raised.value.body == exchange.sent[-1]


@SDK_ERROR_LEAK
async def test_a_body_that_is_no_stream_is_an_error_event_first(anyio_backend: str) -> None:
    exchange = Exchange()
    await exchange.respond(b"<html>Bad gateway</html>")
    assert exchange.session.outcome == "upstream_error"
    ((kind, error),) = [(p["type"], p["error"]) for p in _payloads(exchange.body)]
    assert (kind, error["type"]) == ("error", "api_error")
    assert "<html>" in error["message"]
    with pytest.raises(anthropic.APIStatusError):
        await _sdk_message(exchange.body)


async def test_a_retry_that_repeats_an_id_gets_one_the_api_accepts(anyio_backend: str) -> None:
    """The retry reuses the accepted call's id: the client sees ``_h2``, never ``~h2``."""
    good = ("tool_use", "toolu_same", "make_file", json.dumps(GOOD_INPUT))
    bad = ("tool_use", "toolu_bad", "make_file", '{"filename": "b.txt"}')
    other = {"filename": "c.txt", "lines_of_text": ["c"]}
    exchange = Exchange()
    await exchange.respond(_reply(good, bad))
    await exchange.respond(_reply(("tool_use", "toolu_same", "make_file", json.dumps(other))))
    message = await _sdk_message(exchange.body)
    assert [(b.id, b.input) for b in message.content] == [
        ("toolu_same", GOOD_INPUT),
        ("toolu_same_h2", other),
    ]


async def test_a_repeated_provider_id_is_written_as_the_api_accepts_it(anyio_backend: str) -> None:
    """toolwire names the second ``toolu_x`` of a response ``toolu_x~2``; the client gets ``_2``."""
    raw = json.dumps(GOOD_INPUT)
    body = _reply(
        ("tool_use", "toolu_x", "make_file", raw), ("tool_use", "toolu_x", "make_file", raw)
    )
    message = await _sdk_message(_encoded(await _judged(body)))
    assert [b.id for b in message.content] == ["toolu_x", "toolu_x_2"]


# -- the encoder's rules -----------------------------------------------------------------------


def _ready(call_id: str, raw: str) -> ToolCallReady:
    return ToolCallReady(
        call=toolwire.events.ToolCallComplete(
            call_id=call_id, name="make_file", index=0, arguments_raw=raw
        ),
        verdict=toolwire.Verdict(outcome="ok", arguments=json.loads(raw)),
    )


def test_message_start_goes_out_first_and_text_at_once() -> None:
    encoder = AnthropicEventEncoder()
    (start,) = encoder.info(ResponseInfo(model="claude-test", response_id="msg_1"))
    assert isinstance(start, dict)
    assert start["message"]["id"] == "msg_1"
    assert start["message"]["usage"] == {"input_tokens": 0, "output_tokens": 0}
    assert encoder.text("") == []  # no empty text block, ever
    opened, piece = encoder.text("Hel")
    assert opened == {
        "type": "content_block_start",
        "index": 0,
        "content_block": {"type": "text", "text": ""},
    }
    assert piece == {
        "type": "content_block_delta",
        "index": 0,
        "delta": {"type": "text_delta", "text": "Hel"},
    }
    assert encoder.text("lo") == [
        {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "lo"}}
    ]
    # A later response's id never replaces the first one's.
    assert encoder.info(ResponseInfo(model="other", response_id="msg_2")) == []


def test_a_call_closes_the_open_block_and_goes_out_whole() -> None:
    encoder = AnthropicEventEncoder()
    encoder.text("Hi")
    odd_but_valid = '{ "filename" :"a",\n "lines_of_text": [] }'
    items = encoder.call(_ready("toolu_1", odd_but_valid))
    assert items == [
        {"type": "content_block_stop", "index": 0},
        {
            "type": "content_block_start",
            "index": 1,
            "content_block": {
                "type": "tool_use",
                "id": "toolu_1",
                "name": "make_file",
                "input": {},
            },
        },
        {
            "type": "content_block_delta",
            "index": 1,
            "delta": {"type": "input_json_delta", "partial_json": odd_but_valid},
        },
        {"type": "content_block_stop", "index": 1},
    ]
    assert encoder.calls_sent == 1
    assert encoder.text("more")[0] == {
        "type": "content_block_start",
        "index": 2,
        "content_block": {"type": "text", "text": ""},
    }


async def test_a_repaired_call_goes_out_as_compact_json(anyio_backend: str) -> None:
    trailing_comma = '{"filename": "a", "lines_of_text": [],}'
    events = await _judged(
        _reply(("tool_use", "toolu_1", "make_file", trailing_comma)), tools=TOOLS
    )
    assert any(isinstance(event, toolwire.events.ToolCallRepaired) for event in events)
    deltas = [p["delta"] for p in _payloads(_encoded(events)) if p["type"] == "content_block_delta"]
    assert deltas == [
        {"type": "input_json_delta", "partial_json": '{"filename":"a","lines_of_text":[]}'}
    ]


def test_thinking_goes_out_at_once_and_its_signature_when_given() -> None:
    encoder = AnthropicEventEncoder()
    items = [*encoder.reasoning("Let me"), *encoder.reasoning(" think.")]
    items += encoder.thinking_signature("sig-1")
    items += encoder.text("Done.")
    assert encoder.thinking_signature("late") == []  # the thinking block is closed
    items += encoder.finish("end_turn") + encoder.end()
    body = ANTHROPIC.frame(items)
    _assert_well_formed(body)
    message = anyio.run(_sdk_message, body)
    thinking, text = message.content
    assert (thinking.thinking, thinking.signature, text.text) == ("Let me think.", "sig-1", "Done.")


def test_usage_goes_out_in_message_delta() -> None:
    encoder = AnthropicEventEncoder()
    encoder.set_usage(Usage(input_tokens=10, output_tokens=5, reasoning_tokens=2))
    delta, stop = [*encoder.finish("end_turn"), *encoder.end()][1:]
    assert delta == {
        "type": "message_delta",
        "delta": {"stop_reason": "end_turn", "stop_sequence": None},
        "usage": {
            "input_tokens": 10,
            "output_tokens": 5,
            "output_tokens_details": {"thinking_tokens": 2},
        },
    }
    assert stop == {"type": "message_stop"}
    unknown = AnthropicEventEncoder()
    assert unknown.finish("end_turn")[-1]["usage"] == {"output_tokens": 0}  # type: ignore[index]


@pytest.mark.parametrize(
    ("finish", "calls_sent", "expected"),
    [
        (Finish(reason="length", raw="max_tokens", cut_by="token_limit"), False, "max_tokens"),
        (Finish(reason="length", raw="tool_use", cut_by="token_limit"), True, "max_tokens"),
        (
            Finish(reason="length", raw="model_context_window_exceeded", cut_by="token_limit"),
            False,
            "model_context_window_exceeded",
        ),
        (Finish(reason="tool_calls", raw="tool_use"), True, "tool_use"),
        (Finish(reason="tool_calls", raw="tool_use"), False, "end_turn"),
        (Finish(reason="end_turn", raw="stop_sequence"), True, "stop_sequence"),
        (Finish(reason="unknown", raw="pause_turn"), False, "pause_turn"),
        (Finish(reason="content_filter", raw="refusal"), False, "refusal"),
        (Finish(reason="tool_calls", raw=None), True, "tool_use"),
        (Finish(reason="end_turn", raw=None), False, "end_turn"),
    ],
)
def test_the_client_stop_reason(finish: Finish, calls_sent: bool, expected: str) -> None:
    assert AnthropicEventEncoder().client_finish_reason(finish, calls_sent=calls_sent) == expected


@pytest.mark.parametrize(
    ("error", "expected"),
    [
        (
            ProviderError(
                message="Overloaded",
                code="overloaded_error",
                fatal=True,
                raw='{"type":"error","error":{"type":"overloaded_error",'
                '"message":"Overloaded","x":1}}',
            ),
            {"type": "overloaded_error", "message": "Overloaded", "x": 1},
        ),
        (  # the payload was capped: what was read, under the server's type
            ProviderError(
                message="Overloaded",
                code="overloaded_error",
                fatal=True,
                raw='{"type":"error","error":{"type":"overlo',
            ),
            {"type": "overloaded_error", "message": "Overloaded"},
        ),
        (
            ProviderError(message="not an event stream: <html>", kind="not_a_stream", fatal=True),
            {"type": "api_error", "message": "not an event stream: <html>"},
        ),
    ],
)
def test_the_upstream_error_object(error: ProviderError, expected: dict[str, Any]) -> None:
    encoder = AnthropicEventEncoder()
    assert encoder.upstream_error(error) == expected
    assert encoder.feed(error) == [{"type": "error", "error": expected}]
    assert encoder.end() == []


async def test_a_dropped_stream_gets_no_finish(anyio_backend: str) -> None:
    whole = load_stream("anthropic/text_then_tool_use.sse")
    dropped = whole[: whole.index(b"event: message_delta")]
    events = await _judged(dropped)
    encoded = _encoded(events)
    names = [p["type"] for p in _payloads(encoded)]
    assert "message_delta" not in names
    assert "message_stop" not in names
    turn = await toolwire.Pipeline("anthropic").collect(encoded)
    assert turn.stop_reason == "disconnected"


def test_the_plain_re_encoding_takes_the_last_usage() -> None:
    encoder = AnthropicEventEncoder()
    items = [
        item
        for event in (
            ResponseInfo(model="m", response_id="r"),
            Usage(input_tokens=9, output_tokens=1),
            TextDelta(text="Hi"),
            Usage(input_tokens=9, output_tokens=4),
            Finish(reason="end_turn", raw="end_turn"),
            StreamEnd(),
        )
        for item in encoder.feed(event)
    ]
    assert [i["type"] for i in items if isinstance(i, dict)] == [
        "message_start",
        "content_block_start",
        "content_block_delta",
        "content_block_stop",
        "message_delta",
        "message_stop",
    ]
    assert items[-2]["usage"] == {"input_tokens": 9, "output_tokens": 4}  # type: ignore[index]


# -- requests ----------------------------------------------------------------------------------


def _plan(body: Any) -> Any:
    return ANTHROPIC.plan_request(json.dumps(body).encode())


def test_which_requests_are_healed() -> None:
    streamed = _plan(_request())
    assert streamed is not None
    assert (streamed.body, streamed.content, streamed.streaming, streamed.client_wants_usage) == (
        _request(),
        None,
        True,
        True,
    )
    whole = _plan(_request(stream=False))
    assert whole is not None
    assert not whole.streaming
    assert _plan(_request(thinking={"type": "disabled"})) is not None
    # Thinking on is healed too (tests/adapters/anthropic/test_anthropic_thinking_healing.py).
    assert _plan(_request(thinking={"type": "enabled", "budget_tokens": 1024})) is not None
    assert _plan(_request(thinking={"type": "adaptive"})) is not None
    bash = {"type": "bash_20250124", "name": "bash"}
    assert _plan(_request(tools=[MAKE_FILE, bash, {**MAKE_FILE, "type": "custom"}])) is not None


@pytest.mark.parametrize(
    "body",
    [
        {k: v for k, v in _request().items() if k != "tools"},
        _request(tools=[]),
        _request(messages="hi"),
        _request(thinking={"type": "telepathic"}),  # not a type the API documents
        _request(thinking="on"),
        _request(tools=[MAKE_FILE, {"type": "web_search_20250305", "name": "web_search"}]),
        _request(mcp_servers=[{"type": "url", "url": "https://mcp.test", "name": "m"}]),
        _request(tools=["make_file"]),
        [1, 2],
    ],
)
def test_requests_that_pass_untouched(body: Any) -> None:
    assert _plan(body) is None


def test_a_body_that_is_not_json_passes_untouched() -> None:
    assert ANTHROPIC.plan_request(b"{not json") is None


def test_raised_limit() -> None:
    assert ANTHROPIC.raised_limit({"max_tokens": 300}, 500) == ({"max_tokens": 500}, 500)
    assert ANTHROPIC.raised_limit({"max_tokens": 100}, 500) == ({"max_tokens": 200}, 200)
    assert ANTHROPIC.raised_limit({"max_tokens": 500}, 500) == ({"max_tokens": 500}, None)
    assert ANTHROPIC.raised_limit({"model": "m"}, 500) == ({"model": "m"}, None)
    assert ANTHROPIC.raised_limit({"max_tokens": True}, 500) == ({"max_tokens": True}, None)
    # Chat's key is not Anthropic's: it is left alone.
    assert ANTHROPIC.raised_limit({"max_completion_tokens": 10}, 500)[1] is None


# -- whole bodies ------------------------------------------------------------------------------


async def _heal_whole(*bodies: bytes) -> tuple[HealSession, list[WireItem], dict[str, Any]]:
    """The transport's non-streamed loop, without HTTP: the session over each whole body."""
    pipeline = toolwire.Pipeline("anthropic")
    session = HealSession(_request(stream=False), pipeline.next_messages, wire=ANTHROPIC)
    items: list[WireItem] = []
    first = ANTHROPIC.read_body(bodies[0])
    assert first is not None
    for content in bodies:
        read = ANTHROPIC.read_body(content)
        assert read is not None
        async for event in pipeline.stream(ANTHROPIC.body_as_stream(read), request=session.body):
            items += session.feed(event)
        end = session.end_attempt()
        items += end.items
        if end.retry is None:
            break
    return session, items, first


async def test_a_whole_body_reads_as_the_stream_it_is(anyio_backend: str) -> None:
    thinking = {"type": "thinking", "thinking": "Plan.", "signature": "sig-a"}
    text = {"type": "text", "text": "Writing.", "citations": None}
    tool_use = {
        "type": "tool_use",
        "id": "toolu_1",
        "name": "make_file",
        "input": GOOD_INPUT,
        "caller": {"type": "direct"},
    }
    body = ANTHROPIC.read_body(_message(thinking, text, tool_use))
    assert body is not None
    turn = await toolwire.Pipeline("anthropic", tools=TOOLS).collect(ANTHROPIC.body_as_stream(body))
    assert (turn.reasoning, turn.text, turn.response_id, turn.model) == (
        "Plan.",
        "Writing.",
        "msg_whole",
        "claude-test",
    )
    (call,) = turn.calls
    assert (call.call_id, call.outcome, call.arguments) == ("toolu_1", "ok", GOOD_INPUT)
    assert (turn.stop_reason, turn.finish_raw) == ("tool_calls", "tool_use")
    assert turn.usage is not None
    assert (turn.usage.input_tokens, turn.usage.output_tokens) == (100, 50)
    # The thinking block goes back with its signature, the call with its extra fields.
    assert AnthropicHistory().assistant_message(turn)["content"] == [
        thinking,
        {"type": "text", "text": "Writing."},
        {
            "type": "tool_use",
            "id": "toolu_1",
            "name": "make_file",
            "input": GOOD_INPUT,
            "caller": {"type": "direct"},
        },
    ]


async def test_a_passing_whole_body_folds_back_to_itself(anyio_backend: str) -> None:
    thinking = {"type": "thinking", "thinking": "Plan.", "signature": "sig-a"}
    redacted = {"type": "redacted_thinking", "data": "opaque"}
    text = {"type": "text", "text": "Writing.", "citations": None}
    tool_use = {"type": "tool_use", "id": "toolu_1", "name": "make_file", "input": GOOD_INPUT}
    content = _message(thinking, redacted, text, tool_use, container={"id": "c1"})
    session, items, first = await _heal_whole(content)
    assert session.outcome == "passed"
    assert not session.rewritten  # the transport sends it byte for byte
    assert ANTHROPIC.error_body(items) is None
    # Folded anyway, it is the very same body: signature, opaque blocks and fields kept.
    assert ANTHROPIC.healed_body(first, items) == json.loads(content)


async def test_a_healed_whole_body_keeps_the_first_body_s_fields(anyio_backend: str) -> None:
    bad = {
        "type": "tool_use",
        "id": "toolu_bad",
        "name": "make_file",
        "input": {"filename": "b.txt"},
    }
    good = {"type": "tool_use", "id": "toolu_good", "name": "make_file", "input": GOOD_INPUT}
    first = _message({"type": "text", "text": "Writing."}, bad, container={"id": "c1"})
    retry = _message({"type": "text", "text": "Fixed."}, good)
    session, items, first_body = await _heal_whole(first, retry)
    assert (session.outcome, session.rewritten) == ("healed", True)
    healed = ANTHROPIC.healed_body(first_body, items)
    assert healed["content"] == [{"type": "text", "text": "Writing."}, good]
    assert (healed["id"], healed["container"], healed["stop_reason"]) == (
        "msg_whole",
        {"id": "c1"},
        "tool_use",
    )
    assert healed["usage"] == {
        "input_tokens": 200,  # the sum over the exchange
        "output_tokens": 100,
        "cache_creation_input_tokens": 0,  # the first body's details, kept
        "cache_read_input_tokens": 7,
    }


async def test_a_failed_whole_body_is_an_error_body(anyio_backend: str) -> None:
    bad = {
        "type": "tool_use",
        "id": "toolu_bad",
        "name": "make_file",
        "input": {"filename": "b.txt"},
    }
    content = _message(bad)
    session, items, _ = await _heal_whole(content, content, content)
    assert session.outcome == "failed"
    error = ANTHROPIC.error_body(items)
    assert error is not None
    assert error["type"] == "error"
    assert error["error"]["type"] == "toolwire_heal_failed"
    assert "after 2 retries" in error["error"]["message"]


@pytest.mark.parametrize(
    "content",
    [
        b"{not json",
        b"[]",
        json.dumps({"type": "error", "error": {"type": "api_error", "message": "x"}}).encode(),
        json.dumps({"type": "message", "content": "text"}).encode(),
        json.dumps({"type": "message", "content": [{"text": "no type"}]}).encode(),
    ],
)
def test_bodies_that_are_not_read(content: bytes) -> None:
    assert ANTHROPIC.read_body(content) is None


# -- generated streams -------------------------------------------------------------------------

_JSON_LEAF = st.none() | st.booleans() | st.integers(-(10**9), 10**9) | st.text(max_size=12)


def _nested(inner: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    # A named function, not a lambda: hypothesis reads a lambda's source to check that it
    # uses its argument, and a multi-line lambda's source is not always found (a deprecation
    # warning, an error under filterwarnings=error).
    return st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner, max_size=3)


_INPUTS = st.dictionaries(
    st.text(max_size=8),
    st.recursive(_JSON_LEAF, _nested, max_leaves=6),
    max_size=4,
)


@settings(max_examples=examples(60), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    texts=st.lists(st.text(min_size=1, max_size=10), max_size=3),
    inputs=st.lists(_INPUTS, max_size=3),
)
def test_any_generated_stream_round_trips(texts: list[str], inputs: list[dict[str, Any]]) -> None:
    blocks: list[tuple[str, ...]] = [("text", text) for text in texts[:1]]
    for number, value in enumerate(inputs):
        blocks.append(
            ("tool_use", f"toolu_{number}", "tool", json.dumps(value, ensure_ascii=False))
        )
        blocks += [("text", text) for text in texts[1 + number : 2 + number]]
    body = _reply(*blocks, stop_reason="tool_use" if inputs else "end_turn")
    _, original, encoded, again, rewritten = anyio.run(_round_trip, body)
    assert [c.outcome for c in original.calls] == ["ok"] * len(inputs)
    _assert_well_formed(encoded)
    assert again == original  # reading then writing
    assert rewritten == encoded  # writing then reading
