"""Tool-call accumulation: the quirks of every Chat-Completions-style server (judge off)."""

from __future__ import annotations

from typing import Any

import pytest
from _toolwire_testdata import chat_chunk, load_vectors, sse_body

import toolwire
from toolwire.adapters.openai_chat import OpenAIChatMapper
from toolwire.core.events import (
    Event,
    Finish,
    ProviderError,
    StreamEnd,
    ToolCallArgumentsDelta,
    ToolCallComplete,
    ToolCallStarted,
)

pytestmark = pytest.mark.anyio

VECTORS = {vector["id"]: vector for vector in load_vectors("stream_fragments.jsonl")}

# (id or None when the provider sent none, name, raw arguments, truncated) per vector, written
# from the fragments by hand.
VECTOR_CALLS: dict[str, list[tuple[str | None, str, str, bool]]] = {
    "S1": [("call-bad", "lookup", '{"q":', True)],
    "S2": [("call-x", "ping", "", False)],
    "S3": [("call-a", "alpha", '{"x":1}', False), ("call-b", "beta", '{"y":2}', False)],
    "S4": [("call-a", "alpha", '{"x":1}', False), ("call-b", "beta", '{"y":2}', False)],
    "S5": [("call-a", "alpha", '{"x":1}', False), ("call-b", "beta", '{"y":2}', False)],
    "S6": [("call-1", "lookup", '{"q":1}', False)],
    "S7": [(None, "solo", '{"n":7}', False)],
    "S8": [("call-x", "composio_execute", '{"q":1}<tool_call|>', False)],
    "oxi-early-start": [("call_1", "web_search", '{"query":"rust"}', False)],
    "repeated-header-same-id": [("0", "llm_version", "{}", False)],
}


def test_every_vector_has_expectations() -> None:
    assert sorted(VECTOR_CALLS) == sorted(VECTORS)


def vector_body(vector: dict[str, Any]) -> bytes:
    chunks: list[dict[str, Any] | bytes | str] = [
        chat_chunk({"tool_calls": [fragment]}) for fragment in vector["tool_call_fragments"]
    ]
    chunks.append(chat_chunk({}, vector["finish_reason"]))
    return sse_body(chunks)


async def events_of(body: bytes | list[Any], **kwargs: Any) -> list[Event]:
    return [event async for event in toolwire.stream(body, judge=False, **kwargs)]


def check_call_lifecycle(events: list[Event]) -> None:
    """Started exactly once per call, before any delta; deltas add up to the complete text."""
    started: dict[str, int] = {}
    pieces: dict[str, list[str]] = {}
    completed: set[str] = set()
    for position, event in enumerate(events):
        if isinstance(event, ToolCallStarted):
            assert event.call_id not in started, f"started twice: {event}"
            started[event.call_id] = position
            pieces[event.call_id] = []
        elif isinstance(event, ToolCallArgumentsDelta):
            assert event.call_id in started, f"delta before start: {event}"
            assert event.call_id not in completed, f"delta after complete: {event}"
            pieces[event.call_id].append(event.delta)
        elif isinstance(event, ToolCallComplete):
            assert event.call_id in started, f"complete before start: {event}"
            assert event.call_id not in completed, f"completed twice: {event}"
            completed.add(event.call_id)
            assert "".join(pieces[event.call_id]) == event.arguments_raw
    assert completed == set(started)


@pytest.mark.parametrize("vector_id", sorted(VECTOR_CALLS))
async def test_stream_fragment_vector(vector_id: str) -> None:
    vector = VECTORS[vector_id]
    body = vector_body(vector)
    turn = await toolwire.collect(body, judge=False)
    expected = VECTOR_CALLS[vector_id]
    # The vector file's own expectations agree with the hand-written table.
    assert [(c["id"], c["name"]) for c in vector["expected_calls"]] == [
        (call_id, name) for call_id, name, _, _ in expected
    ]
    assert len(turn.calls) == len(expected)
    for position, (call, (call_id, name, raw, truncated)) in enumerate(
        zip(turn.calls, expected, strict=True)
    ):
        assert call.index == position
        assert call.name == name
        assert call.arguments_raw == raw
        assert call.truncated is truncated
        assert call.verdict is None
        if call_id is None:
            assert call.id_synthesized is True
            assert call.call_id
        else:
            assert call.id_synthesized is False
            assert call.call_id == call_id
    assert turn.truncated is any(t for *_, t in expected)
    if turn.truncated:
        # Cut inside a value with a "tool_calls" finish and no evidence of the token limit: the
        # call is cut, but the cause is unknown and the stop reason stays the provider's.
        assert turn.stop_reason == "tool_calls"
        assert turn.cut_by == "unknown"
        assert turn.truncation_evidence == ("arguments_unterminated",)
    else:
        assert turn.stop_reason == "tool_calls"
    assert turn.errors == ()
    check_call_lifecycle(await events_of(body))


async def test_s7_synthesized_id_is_stable_across_events() -> None:
    events = await events_of(vector_body(VECTORS["S7"]))
    ids = {
        e.call_id
        for e in events
        if isinstance(e, ToolCallStarted | ToolCallArgumentsDelta | ToolCallComplete)
    }
    assert len(ids) == 1
    started = next(e for e in events if isinstance(e, ToolCallStarted))
    complete = next(e for e in events if isinstance(e, ToolCallComplete))
    assert started.id_synthesized is True
    assert complete.id_synthesized is True


async def test_oxi_early_start_started_before_arguments() -> None:
    # Exactly one started event, on the first fragment (which has "" arguments).
    mapper = OpenAIChatMapper()
    vector = VECTORS["oxi-early-start"]
    first, second = (
        sse_body([chat_chunk({"tool_calls": [fragment]})], done=False)
        for fragment in vector["tool_call_fragments"]
    )
    out = mapper.feed_bytes(first)
    assert [type(e) for e in out if not e.__class__.__name__ == "ResponseInfo"] == [ToolCallStarted]
    out = mapper.feed_bytes(second)
    assert out == [ToolCallArgumentsDelta(call_id="call_1", index=0, delta='{"query":"rust"}')]


# -- further quirks -------------------------------------------------------------------------------


async def test_arguments_sent_as_an_object() -> None:
    body = sse_body(
        [
            chat_chunk(
                {
                    "tool_calls": [
                        {
                            "index": 0,
                            "id": "call_obj",
                            "function": {"name": "f", "arguments": {"b": [1, "é"], "a": None}},
                        }
                    ]
                }
            ),
            chat_chunk({}, "tool_calls"),
        ]
    )
    events = await events_of(body)
    complete = [e for e in events if isinstance(e, ToolCallComplete)]
    assert len(complete) == 1
    assert complete[0].arguments_form == "object"
    # Serialized once, compactly, key order kept, UTF-8 kept.
    assert complete[0].arguments_raw == '{"b":[1,"é"],"a":null}'
    check_call_lifecycle(events)


async def test_legacy_function_call_next_to_tool_calls_is_counted_once() -> None:
    # llama-cpp-python repeats every tool_calls fragment as a legacy function_call delta.
    def both(arguments: str) -> dict[str, Any]:
        return chat_chunk(
            {
                "function_call": {"name": "write", "arguments": arguments},
                "tool_calls": [
                    {
                        "index": 0,
                        "id": "call__0_write",
                        "type": "function",
                        "function": {"name": "write", "arguments": arguments},
                    }
                ],
            }
        )

    body = sse_body(
        [
            chat_chunk(
                {"role": "assistant", "content": None, "function_call": None, "tool_calls": None}
            ),
            both("{"),
            both('"a"'),
            both(":1}"),
            both(""),
            chat_chunk({}, "tool_calls"),
        ]
    )
    turn = await toolwire.collect(body, judge=False)
    assert [(c.call_id, c.name, c.arguments_raw) for c in turn.calls] == [
        ("call__0_write", "write", '{"a":1}')
    ]
    assert turn.stop_reason == "tool_calls"


async def test_function_call_only_legacy_stream() -> None:
    body = sse_body(
        [
            chat_chunk({"role": "assistant", "function_call": {"name": "f", "arguments": ""}}),
            chat_chunk({"function_call": {"arguments": '{"a":'}}),
            chat_chunk({"function_call": {"arguments": "1}"}}),
            chat_chunk({}, "function_call"),
        ]
    )
    events = await events_of(body)
    check_call_lifecycle(events)
    complete = [e for e in events if isinstance(e, ToolCallComplete)]
    assert len(complete) == 1
    assert complete[0].name == "f"
    assert complete[0].arguments_raw == '{"a":1}'
    assert complete[0].id_synthesized is True
    finish = next(e for e in events if isinstance(e, Finish))
    assert (finish.reason, finish.raw, finish.truncated) == ("tool_calls", "function_call", False)


@pytest.mark.parametrize("empty", [[], None])
async def test_empty_or_null_tool_calls_on_text_chunks(empty: list[Any] | None) -> None:
    body = sse_body(
        [
            chat_chunk({"role": "assistant", "content": ""}),
            chat_chunk({"content": "Hmm", "tool_calls": empty}),
            chat_chunk({"content": ",", "tool_calls": empty}),
            chat_chunk({}, "stop"),
        ]
    )
    events = await events_of(body)
    assert not [e for e in events if isinstance(e, ToolCallStarted | ProviderError)]
    turn = await toolwire.collect(body, judge=False)
    assert (turn.text, turn.calls, turn.stop_reason) == ("Hmm,", (), "end_turn")


async def test_provider_index_starting_at_1() -> None:
    body = sse_body(
        [
            chat_chunk({"tool_calls": [{"index": 1, "id": "a", "function": {"name": "f"}}]}),
            chat_chunk({"tool_calls": [{"index": 1, "function": {"arguments": "{}"}}]}),
            chat_chunk(
                {
                    "tool_calls": [
                        {"index": 2, "id": "b", "function": {"name": "g", "arguments": ""}}
                    ]
                }
            ),
            chat_chunk({"tool_calls": [{"index": 2, "function": {"arguments": '{"k":2}'}}]}),
            chat_chunk({}, "tool_calls"),
        ]
    )
    events = await events_of(body)
    check_call_lifecycle(events)
    complete = [e for e in events if isinstance(e, ToolCallComplete)]
    # toolwire's own index: the position in the turn, from 0.
    assert [(e.call_id, e.index, e.arguments_raw, e.closed_by) for e in complete] == [
        ("a", 0, "{}", "next_call"),
        ("b", 1, '{"k":2}', "finish"),
    ]
    started = [e for e in events if isinstance(e, ToolCallStarted)]
    assert [(e.call_id, e.index) for e in started] == [("a", 0), ("b", 1)]


async def test_no_id_at_all_synthesized_ids_are_distinct_and_stable() -> None:
    body = sse_body(
        [
            chat_chunk({"tool_calls": [{"index": 0, "function": {"name": "f", "arguments": ""}}]}),
            chat_chunk({"tool_calls": [{"index": 0, "function": {"arguments": '{"a":1}'}}]}),
            chat_chunk({"tool_calls": [{"index": 1, "function": {"name": "g", "arguments": "{"}}]}),
            chat_chunk({"tool_calls": [{"index": 1, "function": {"arguments": "}"}}]}),
            chat_chunk({}, "tool_calls"),
        ]
    )
    events = await events_of(body)
    check_call_lifecycle(events)
    started = [e for e in events if isinstance(e, ToolCallStarted)]
    assert [e.id_synthesized for e in started] == [True, True]
    first, second = (e.call_id for e in started)
    assert first != second
    complete = {e.call_id: e for e in events if isinstance(e, ToolCallComplete)}
    assert complete[first].arguments_raw == '{"a":1}'
    assert complete[second].arguments_raw == "{}"
    assert all(e.id_synthesized for e in complete.values())


async def test_synthesized_ids_are_fresh_per_run() -> None:
    # A random part per stream: the same response replayed twice (or a server that repeats
    # response ids) never gives two turns of one history the same synthesized id.
    body = sse_body([chat_chunk({"function_call": {"name": "f", "arguments": "{}"}})])
    ids = {(await toolwire.collect(body, judge=False)).calls[0].call_id for _ in range(50)}
    assert len(ids) == 50
    assert all(call_id.startswith("toolwire-") for call_id in ids)


async def test_synthesized_id_skips_a_provider_id_seen_before() -> None:
    body = sse_body(
        [
            chat_chunk(
                {"tool_calls": [{"index": 0, "id": "toolwire-call-0", "function": {"name": "a"}}]}
            ),
            chat_chunk({"tool_calls": [{"index": 0, "function": {"arguments": "{}"}}]}),
            chat_chunk(
                {"tool_calls": [{"index": 1, "function": {"name": "b", "arguments": "{}"}}]}
            ),
            chat_chunk({}, "tool_calls"),
        ]
    )
    turn = await toolwire.collect(body, judge=False)
    ids = [c.call_id for c in turn.calls]
    assert ids[0] == "toolwire-call-0"
    assert len(set(ids)) == 2
    assert [c.name for c in turn.calls] == ["a", "b"]


async def test_provider_id_after_an_equal_synthesized_id_is_a_new_call() -> None:
    # The first call has no id (synthesized "toolwire-call-0"); a later call's provider id
    # happens to be "toolwire-call-0". They are two calls, with two different ids.
    body = sse_body(
        [
            chat_chunk({"tool_calls": [{"function": {"name": "a", "arguments": "{}"}}]}),
            chat_chunk(
                {
                    "tool_calls": [
                        {"id": "toolwire-call-0", "function": {"name": "b", "arguments": '{"x":1}'}}
                    ]
                }
            ),
            chat_chunk({}, "tool_calls"),
        ]
    )
    turn = await toolwire.collect(body, judge=False)
    assert [(c.name, c.arguments_raw) for c in turn.calls] == [("a", "{}"), ("b", '{"x":1}')]
    assert len({c.call_id for c in turn.calls}) == 2


async def test_complete_only_on_a_structural_signal() -> None:
    # The arguments parse after the second chunk, but nothing closes the call until the finish.
    mapper = OpenAIChatMapper()
    header = sse_body(
        [chat_chunk({"tool_calls": [{"index": 0, "id": "c", "function": {"name": "f"}}]})],
        done=False,
    )
    args = sse_body(
        [chat_chunk({"tool_calls": [{"index": 0, "function": {"arguments": '{"a":1}'}}]})],
        done=False,
    )
    more_text = sse_body([chat_chunk({"content": "still going"})], done=False)
    for body in (header, args, more_text):
        assert not [e for e in mapper.feed_bytes(body) if isinstance(e, ToolCallComplete)]
    out = mapper.feed_bytes(sse_body([chat_chunk({}, "tool_calls")], done=False))
    # finish_reason alone does not close (usage may still follow) ...
    assert not [e for e in out if isinstance(e, ToolCallComplete)]
    # ... [DONE] does, followed by Finish and StreamEnd.
    out = mapper.feed_bytes(b"data: [DONE]\n\n")
    assert [type(e) for e in out] == [ToolCallComplete, Finish, StreamEnd]
    assert isinstance(out[0], ToolCallComplete)
    assert (out[0].arguments_raw, out[0].closed_by, out[0].truncated) == (
        '{"a":1}',
        "finish",
        False,
    )
    assert mapper.finish() == []


async def test_next_index_closes_previous_call() -> None:
    mapper = OpenAIChatMapper()
    mapper.feed_bytes(
        sse_body(
            [chat_chunk({"tool_calls": [{"index": 0, "id": "a", "function": {"name": "f"}}]})],
            done=False,
        )
    )
    out = mapper.feed_bytes(
        sse_body(
            [chat_chunk({"tool_calls": [{"index": 1, "id": "b", "function": {"name": "g"}}]})],
            done=False,
        )
    )
    assert [type(e) for e in out] == [ToolCallComplete, ToolCallStarted]
    assert isinstance(out[0], ToolCallComplete)
    assert (out[0].call_id, out[0].closed_by, out[0].truncated) == ("a", "next_call", False)


async def test_fragment_for_a_call_closed_by_the_next_call_is_reported() -> None:
    body = sse_body(
        [
            chat_chunk({"tool_calls": [{"index": 0, "id": "a", "function": {"name": "f"}}]}),
            chat_chunk({"tool_calls": [{"index": 0, "function": {"arguments": "{}"}}]}),
            chat_chunk({"tool_calls": [{"index": 1, "id": "b", "function": {"name": "g"}}]}),
            chat_chunk({"tool_calls": [{"index": 0, "function": {"arguments": "LATE"}}]}),
            chat_chunk({"tool_calls": [{"index": 1, "function": {"arguments": "{}"}}]}),
            chat_chunk({}, "tool_calls"),
        ]
    )
    turn = await toolwire.collect(body, judge=False)
    assert [(c.call_id, c.arguments_raw) for c in turn.calls] == [("a", "{}"), ("b", "{}")]
    assert len(turn.errors) == 1
    assert turn.errors[0].kind == "protocol"
    assert turn.errors[0].raw == "LATE"
    assert turn.errors[0].fatal is False
    assert turn.stop_reason == "tool_calls"


async def test_fragment_with_nothing_to_attach_to_is_reported() -> None:
    body = sse_body(
        [
            chat_chunk({"tool_calls": [{"function": {"arguments": "{}"}}]}),
            chat_chunk({}, "stop"),
        ]
    )
    turn = await toolwire.collect(body, judge=False)
    assert turn.calls == ()
    assert [e.kind for e in turn.errors] == ["protocol"]


async def test_only_choice_zero_is_read() -> None:
    chunk = chat_chunk({"content": "zero"})
    chunk["choices"].append(
        {"index": 1, "delta": {"content": "one"}, "logprobs": None, "finish_reason": None}
    )
    turn = await toolwire.collect(sse_body([chunk, chat_chunk({}, "stop")]), judge=False)
    assert turn.text == "zero"


async def test_reasoning_fields() -> None:
    body = sse_body(
        [
            chat_chunk({"reasoning_content": "a"}),
            chat_chunk({"reasoning": "b"}),
            chat_chunk({"content": "c"}),
            chat_chunk({}, "stop"),
        ]
    )
    turn = await toolwire.collect(body, judge=False)
    assert (turn.reasoning, turn.text) == ("ab", "c")


async def test_stop_with_calls_is_tool_calls() -> None:
    # Ollama's /v1 and vLLM say "stop" on a turn that called tools.
    body = sse_body(
        [
            chat_chunk(
                {
                    "tool_calls": [
                        {"index": 0, "id": "c", "function": {"name": "f", "arguments": "{}"}}
                    ]
                }
            ),
            chat_chunk({}, "stop"),
        ]
    )
    turn = await toolwire.collect(body, judge=False)
    assert (turn.stop_reason, turn.finish_raw) == ("tool_calls", "stop")
