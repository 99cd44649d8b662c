"""The re-encoder, sans-I/O: judged events back into Chat Completions chunks.

The round trip is the contract: re-encoding a judged stream and reading it back with toolwire
gives the same Turn, less the calls that were rejected (which never reach a client), with the
finish corrected for the token limit; and the writer writes again, byte for byte, what it reads
back. Both directions are checked on one table of cases (every recorded Chat stream) and on
generated streams; the rest pins down each rule of ``adapters/openai_chat/encoder.py``.
"""

from __future__ import annotations

import json
from typing import Any, NamedTuple

import anyio
import msgspec
import pytest
from _toolwire_testdata import (
    chat_chunk,
    chat_recordings,
    data_payloads,
    examples,
    load_stream,
    sse_body,
)
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import toolwire
import toolwire.events
from toolwire.adapters.encoding import sse_frame
from toolwire.adapters.openai_chat import CHAT, ChatChunkEncoder, encode_events
from toolwire.adapters.openai_chat.encoder import client_finish_reason
from toolwire.core.events import (
    Event,
    Finish,
    ProviderError,
    ResponseInfo,
    StreamEnd,
    TextDelta,
    Usage,
)
from toolwire.core.turn import Turn
from toolwire.core.wire import DONE

pytestmark = pytest.mark.anyio

WRITE = {
    "type": "function",
    "function": {
        "name": "write",
        "parameters": {
            "type": "object",
            "required": ["path", "content"],
            "properties": {"path": {"type": "string"}, "content": {"type": "string"}},
        },
    },
}


def _provider_of(recording: str) -> str:
    return "llama-cpp" if recording.startswith("llama-cpp-python/") else "openai-chat"


async def _judged(body: bytes, provider: str = "openai-chat", **options: Any) -> list[Event]:
    pipeline = toolwire.Pipeline(provider, **options)
    return [event async for event in pipeline.stream(body)]


def _chunks(body: bytes) -> list[dict[str, Any]]:
    return [json.loads(p) for p in data_payloads(body) if p.strip() != b"[DONE]"]


def _client_calls(body: bytes) -> list[dict[str, Any]]:
    """Every tool-call fragment the encoded body carries, in order."""
    return [
        fragment
        for chunk in _chunks(body)
        for choice in chunk.get("choices", ())
        for fragment in choice["delta"].get("tool_calls") or ()
    ]


# -- the round trip: one table of cases, both directions ---------------------------------------
#
# As h11's test_io.py: one table of cases drives the reader and the writer. Reading: the bytes of
# each case become judged events, which the writer turns into bytes that read back as the same
# Turn (less the rejected calls, which never reach a client; the finish corrected for the token
# limit). Writing: the events read back from what was written are written as the very same bytes.

#: Every recorded Chat-Completions-style stream, read as the server that sent it.
ROUND_TRIPS = [pytest.param(_provider_of(r), load_stream(r), id=r) for r in chat_recordings()]
#: Written into every chunk; ``created`` is otherwise the time the encoder started.
CREATED = 1727346178


class RoundTrip(NamedTuple):
    """One case, read, written, read back, written again."""

    events: list[Event]
    original: Turn
    encoded: bytes
    again: Turn
    rewritten: bytes


async def _round_trip(body: bytes, provider: str = "openai-chat") -> RoundTrip:
    pipeline = toolwire.Pipeline(provider)
    events = [event async for event in pipeline.stream(body)]
    encoded = encode_events(events, created=CREATED)
    read_back = [event async for event in pipeline.stream(encoded)]
    return RoundTrip(
        events,
        await pipeline.collect(body),
        encoded,
        await pipeline.collect(encoded),
        encode_events(read_back, created=CREATED),
    )


@pytest.mark.parametrize(("provider", "body"), ROUND_TRIPS)
async def test_reading_then_writing(anyio_backend: str, provider: str, body: bytes) -> None:
    """Bytes -> events -> bytes: what the writer wrote reads back as the Turn first read."""
    events, original, encoded, again, _ = await _round_trip(body, provider)
    accepted = [call for call in original.calls if call.may_run]
    assert [(c.call_id, c.name, c.arguments) for c in again.calls] == [
        (c.call_id, c.name, c.arguments) for c in accepted
    ]
    assert [c.index for c in again.calls] == list(range(len(accepted)))
    for before, after in zip(accepted, again.calls, strict=True):
        if before.outcome == "ok":
            assert after.arguments_raw == before.arguments_raw  # byte for byte
    assert (again.text, again.reasoning, again.usage) == (
        original.text,
        original.reasoning,
        original.usage,
    )
    assert (again.model, again.response_id) == (original.model, original.response_id)
    assert again.stop_reason == original.stop_reason
    if original.stop_reason == "disconnected":
        assert b"[DONE]" not in encoded
        return
    finish = next(event for event in events if isinstance(event, Finish))
    assert again.finish_raw == client_finish_reason(finish, calls_sent=bool(accepted))
    if original.cut_by == "token_limit":
        assert again.finish_raw == "length"
    if not original.rejected and original.finish_raw is not None:
        assert again == original  # nothing to correct: the very same Turn


@pytest.mark.parametrize(("provider", "body"), ROUND_TRIPS)
async def test_writing_then_reading(anyio_backend: str, provider: str, body: bytes) -> None:
    """Events -> bytes -> events: the events read back from the written bytes write them again."""
    trip = await _round_trip(body, provider)
    assert trip.rewritten == trip.encoded


async def test_a_hidden_length_finish_is_reported_as_length(anyio_backend: str) -> None:
    """llama-cpp-python says ``tool_calls`` for a call cut at ``max_tokens``."""
    body = load_stream("llama-cpp-python/write_max_tokens_24_cut_mid_string.real.sse")
    assert b'"finish_reason": "tool_calls"' in body
    encoded = encode_events(await _judged(body, "llama-cpp", max_tokens=24))
    finishes = [
        choice["finish_reason"]
        for chunk in _chunks(encoded)
        for choice in chunk.get("choices", ())
        if choice["finish_reason"] is not None
    ]
    assert finishes == ["length"]
    assert _client_calls(encoded) == []  # the cut call never reaches the client


async def test_an_ok_call_keeps_its_bytes_and_a_repaired_one_is_compact_json(
    anyio_backend: str,
) -> None:
    odd_but_valid = '{ "path" :"a.txt",\n  "content": "x\\u00e9" }'
    trailing_comma = '{"path": "b.txt", "content": "y",}'
    body = sse_body(
        [
            chat_chunk({"role": "assistant", "content": None}),
            chat_chunk(
                {
                    "tool_calls": [
                        {
                            "index": 0,
                            "id": "c1",
                            "type": "function",
                            "function": {"name": "write", "arguments": ""},
                        }
                    ]
                }
            ),
            chat_chunk({"tool_calls": [{"index": 0, "function": {"arguments": odd_but_valid}}]}),
            chat_chunk(
                {
                    "tool_calls": [
                        {
                            "index": 1,
                            "id": "c2",
                            "type": "function",
                            "function": {"name": "write", "arguments": trailing_comma},
                        }
                    ]
                }
            ),
            chat_chunk(finish_reason="tool_calls"),
        ]
    )
    encoded = encode_events(await _judged(body, tools=[WRITE]))
    calls = _client_calls(encoded)
    assert [call["function"]["arguments"] for call in calls] == [
        odd_but_valid,
        '{"path":"b.txt","content":"y"}',
    ]
    assert [(call["index"], call["id"], call["type"]) for call in calls] == [
        (0, "c1", "function"),
        (1, "c2", "function"),
    ]


async def test_rejected_calls_leave_no_gap_in_the_client_indices(anyio_backend: str) -> None:
    """The server numbered the calls from 1; the middle one is rejected: the client sees 0, 1."""
    fragments = [
        (1, "c1", '{"path": "a", "content": "1"}'),
        (2, "c2", '{"path": "b"}'),  # schema: content is required
        (3, "c3", '{"path": "c", "content": "3"}'),
    ]
    body = sse_body(
        [
            chat_chunk(
                {
                    "tool_calls": [
                        {
                            "index": index,
                            "id": call_id,
                            "type": "function",
                            "function": {"name": "write", "arguments": raw},
                        }
                    ]
                }
            )
            for index, call_id, raw in fragments
        ]
        + [chat_chunk(finish_reason="tool_calls")]
    )
    encoded = encode_events(await _judged(body, tools=[WRITE]))
    assert [(call["index"], call["id"]) for call in _client_calls(encoded)] == [
        (0, "c1"),
        (1, "c3"),
    ]


async def test_ids_are_toolwire_s_synthesized_and_unique(anyio_backend: str) -> None:
    """No id from the server, then a repeated id: the client gets the ids history uses."""
    body = sse_body(
        [
            chat_chunk(
                {
                    "tool_calls": [
                        {
                            "index": 0,
                            "type": "function",
                            "function": {
                                "name": "write",
                                "arguments": '{"path":"a","content":"1"}',
                            },
                        }
                    ]
                }
            ),
            chat_chunk(
                {
                    "tool_calls": [
                        {
                            "index": 1,
                            "id": "same",
                            "type": "function",
                            "function": {
                                "name": "write",
                                "arguments": '{"path":"b","content":"2"}',
                            },
                        }
                    ]
                }
            ),
            chat_chunk(
                {
                    "tool_calls": [
                        {
                            "index": 2,
                            "id": "same",
                            "type": "function",
                            "function": {
                                "name": "write",
                                "arguments": '{"path":"c","content":"3"}',
                            },
                        }
                    ]
                }
            ),
            chat_chunk(finish_reason="tool_calls"),
        ]
    )
    events = await _judged(body, tools=[WRITE])
    turn = await toolwire.Pipeline("openai-chat", tools=[WRITE]).collect(body)
    ids = [call["id"] for call in _client_calls(encode_events(events))]
    assert ids[1:] == ["same", "same~2"]
    assert ids[0].startswith("toolwire-")
    assert len(set(ids)) == 3
    # Synthesized ids are random per run: the client's ids are those of the run it was sent.
    assert [c.call_id for c in turn.calls][1:] == ids[1:]


def test_an_id_sent_before_gets_a_suffix() -> None:
    """Two responses of one healed turn may reuse an id; the client sees one id per call."""
    encoder = ChatChunkEncoder(created=1)
    call = toolwire.events.ToolCallReady(
        call=toolwire.events.ToolCallComplete(
            call_id="c", name="write", index=0, arguments_raw='{"path":"a","content":"b"}'
        ),
        verdict=toolwire.Verdict(outcome="ok", arguments={"path": "a", "content": "b"}),
    )
    first = encoder.call(call)
    second = encoder.call(call)
    ids = [
        item["choices"][0]["delta"]["tool_calls"][0]["id"]
        for item in (*first, *second)
        if isinstance(item, dict) and item["choices"][0]["delta"].get("tool_calls")
    ]
    assert ids == ["c", "c~h2"]


def test_text_goes_out_at_once_after_the_role() -> None:
    encoder = ChatChunkEncoder(created=7)
    opened = encoder.feed(ResponseInfo(model="m", response_id="r"))
    assert [item["choices"][0]["delta"] for item in opened if isinstance(item, dict)] == [
        {"role": "assistant", "content": None}
    ]
    (chunk,) = encoder.feed(TextDelta(text="Hel"))
    assert isinstance(chunk, dict)
    assert chunk["choices"][0]["delta"] == {"content": "Hel"}
    assert (chunk["id"], chunk["model"], chunk["created"]) == ("r", "m", 7)


@pytest.mark.parametrize("send_usage", [True, False])
def test_usage_goes_out_after_the_finish_only_when_asked(send_usage: bool) -> None:
    encoder = ChatChunkEncoder(usage=send_usage)
    items = [
        *encoder.feed(ResponseInfo(model="m", response_id="r")),
        *encoder.feed(Usage(input_tokens=10, output_tokens=5, total_tokens=15)),
        *encoder.feed(Finish(reason="end_turn", raw="stop")),
        *encoder.feed(StreamEnd(terminated=True)),
    ]
    assert items[-1] is DONE
    finish_chunk = items[1]
    assert isinstance(finish_chunk, dict)
    assert finish_chunk["choices"][0]["finish_reason"] == "stop"
    usage_chunks = [i for i in items if isinstance(i, dict) and "usage" in i]
    if send_usage:
        assert usage_chunks == [
            {
                "id": "r",
                "object": "chat.completion.chunk",
                "created": encoder.created,
                "model": "m",
                "choices": [],
                "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15},
            }
        ]
        assert items.index(usage_chunks[0]) == len(items) - 2
    else:
        assert usage_chunks == []


async def test_an_in_band_error_goes_out_as_the_server_wrote_it(anyio_backend: str) -> None:
    error = {"message": "The server is overloaded", "type": "server_error", "code": "overloaded"}
    body = sse_body([chat_chunk({"content": "Hi"}), {"error": error}])
    encoded = encode_events(await _judged(body))
    assert _chunks(encoded)[-1] == {"error": error}
    assert b"[DONE]" not in encoded  # nothing follows an error
    turn = await toolwire.collect(encoded)
    assert turn.stop_reason == "error"
    assert turn.errors[0].message == "The server is overloaded"


def test_a_body_that_is_no_stream_is_described() -> None:
    encoder = ChatChunkEncoder()
    items = encoder.feed(
        ProviderError(message="not an event stream: <html>", kind="not_a_stream", fatal=True)
    )
    assert items == [
        {
            "error": {
                "message": "not an event stream: <html>",
                "type": "toolwire_upstream_error",
                "param": None,
                "code": "not_a_stream",
            }
        }
    ]
    assert encoder.end() == []


def test_sse_frame_is_what_the_chat_mapper_reads() -> None:
    assert sse_frame([{"a": 1}, DONE]) == b'data: {"a":1}\n\ndata: [DONE]\n\n'


@pytest.mark.parametrize(
    ("finish", "calls_sent", "expected"),
    [
        (Finish(reason="length", raw="tool_calls", cut_by="token_limit"), False, "length"),
        (Finish(reason="tool_calls", raw="tool_calls"), True, "tool_calls"),
        (Finish(reason="tool_calls", raw="tool_calls"), False, "stop"),
        (Finish(reason="tool_calls", raw="stop"), True, "stop"),
        (Finish(reason="tool_calls", raw=None), True, "tool_calls"),
        (Finish(reason="end_turn", raw=None), False, "stop"),
        (Finish(reason="content_filter", raw="content_filter"), False, "content_filter"),
    ],
)
def test_the_client_finish_reason(finish: Finish, calls_sent: bool, expected: str) -> None:
    assert client_finish_reason(finish, calls_sent=calls_sent) == expected


# -- generated streams -------------------------------------------------------------------------

_JSON_LEAF = st.none() | st.booleans() | st.integers(-(10**9), 10**9) | st.text(max_size=12)
_ARGUMENTS = st.dictionaries(
    st.text(max_size=8),
    st.recursive(
        _JSON_LEAF,
        lambda inner: (
            st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner, max_size=3)
        ),
        max_leaves=6,
    ),
    max_size=4,
)


def _stream_of(texts: list[str], calls: list[dict[str, Any]], piece: int) -> bytes:
    chunks: list[dict[str, Any]] = [chat_chunk({"role": "assistant", "content": ""})]
    chunks += [chat_chunk({"content": text}) for text in texts if text]
    for index, arguments in enumerate(calls):
        raw = json.dumps(arguments, ensure_ascii=False)
        chunks.append(
            chat_chunk(
                {
                    "tool_calls": [
                        {
                            "index": index,
                            "id": f"call_{index}",
                            "type": "function",
                            "function": {"name": "tool", "arguments": ""},
                        }
                    ]
                }
            )
        )
        for start in range(0, len(raw), piece):
            chunks.append(
                chat_chunk(
                    {
                        "tool_calls": [
                            {"index": index, "function": {"arguments": raw[start : start + piece]}}
                        ]
                    }
                )
            )
    chunks.append(chat_chunk(finish_reason="tool_calls" if calls else "stop"))
    chunks.append(
        {
            **chat_chunk(),
            "choices": [],
            "usage": {"prompt_tokens": 3, "completion_tokens": 4, "total_tokens": 7},
        }
    )
    return sse_body(chunks)


@settings(max_examples=examples(60), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    texts=st.lists(st.text(max_size=10), max_size=4),
    calls=st.lists(_ARGUMENTS, max_size=3),
    piece=st.integers(1, 9),
)
def test_any_generated_stream_round_trips(
    texts: list[str], calls: list[dict[str, Any]], piece: int
) -> None:
    _, original, encoded, again, rewritten = anyio.run(_round_trip, _stream_of(texts, calls, piece))
    assert [c.outcome for c in original.calls] == ["ok"] * len(calls)
    assert again == original  # reading then writing
    assert rewritten == encoded  # writing then reading
    # Each call goes out whole, once, with its arguments exactly as the model sent them.
    assert [json.loads(call["function"]["arguments"]) for call in _client_calls(encoded)] == calls
    assert msgspec.json.decode(encoded.split(b"data: ")[1])["choices"][0]["delta"]["role"] == (
        "assistant"
    )


# -- requests (the Chat format's plan and raised limit) ------------------------------------------


def _body(**extra: Any) -> dict[str, Any]:
    return {
        "model": "m",
        "messages": [{"role": "user", "content": "Write hello to notes.txt"}],
        "tools": [{"type": "function", "function": {"name": "write", "parameters": {}}}],
        "max_tokens": 24,
        "stream": True,
        "stream_options": {"include_usage": True},
        **extra,
    }


def test_raised_limit() -> None:
    assert CHAT.raised_limit({"max_completion_tokens": 100, "max_tokens": 300}, 500) == (
        {"max_completion_tokens": 200, "max_tokens": 500},
        200,
    )
    assert CHAT.raised_limit({"max_tokens": 500}, 500) == ({"max_tokens": 500}, None)
    assert CHAT.raised_limit({"model": "m"}, 500) == ({"model": "m"}, None)
    assert CHAT.raised_limit({"max_tokens": True}, 500) == ({"max_tokens": True}, None)


def test_which_requests_are_healed() -> None:
    def plan(body: dict[str, Any]) -> Any:
        return CHAT.plan_request(json.dumps(body).encode())

    assert plan({"model": "m", "messages": []}) is None  # no tools: nothing to judge
    assert plan(_body(tools=[])) is None
    assert plan(_body(n=2)) is None
    assert CHAT.plan_request(b"not json") is None
    assert CHAT.plan_request(b"[1, 2]") is None
    asked = plan(_body())
    assert asked.content is None
    assert asked.client_wants_usage
    assert asked.streaming
    not_asked = plan(_body(stream_options={"other": 1}))
    assert not not_asked.client_wants_usage
    assert not_asked.body["stream_options"] == {"other": 1, "include_usage": True}
    assert json.loads(not_asked.content) == not_asked.body
    whole = plan(_body(stream=False, stream_options=None))
    assert whole.content is None
    assert not whole.streaming


_JSON_SCALARS = st.none() | st.booleans() | st.integers(-(2**53), 2**53) | st.text(max_size=8)
_JSON = st.recursive(
    _JSON_SCALARS,
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner, max_size=3)
    ),
    max_leaves=8,
)


@given(
    extra=st.dictionaries(
        st.text(max_size=8).filter(
            lambda key: key not in {"messages", "tools", "stream", "n", "stream_options"}
        ),
        _JSON,
        max_size=4,
    ),
    layout=st.sampled_from([(None, None), (2, None), (None, (",", ":")), (1, (", ", " : "))]),
    before=st.sampled_from(["", " ", "\n", "\r\n\t "]),
)
@settings(max_examples=200, suppress_health_check=[HealthCheck.too_slow])
def test_usage_asked_for_a_stream_keeps_the_clients_bytes_but_one_member(
    extra: dict[str, Any], layout: tuple[int | None, tuple[str, str] | None], before: str
) -> None:
    # The commonest healed request: a stream that did not ask for usage. One member is spliced
    # in front (no re-encoding); what goes up reads as the plan's body, and the client's own
    # bytes (spacing, key order, escapes) follow it unchanged.
    indent, separators = layout
    client = {**extra, **_body(), "stream": True}
    del client["stream_options"]
    content = (before + json.dumps(client, indent=indent, separators=separators)).encode()
    plan = CHAT.plan_request(content)
    assert plan is not None
    assert plan.content is not None
    assert plan.body == {**client, "stream_options": {"include_usage": True}}
    assert json.loads(plan.content) == plan.body
    assert msgspec.json.decode(plan.content) == plan.body
    assert plan.content.endswith(content.lstrip()[1:])
    assert not plan.client_wants_usage
