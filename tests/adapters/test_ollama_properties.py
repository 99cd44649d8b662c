"""Properties over every Ollama body: re-chunking changes nothing; a cut is never taken as whole.

The mapper is driven directly (no event loop), as ``collect`` drives it per read. Synthesized
ids are random per stream, so calls are compared by their position in the turn.
"""

from __future__ import annotations

import functools
import json

import msgspec
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_ollama_fixtures import BODIES, done, line, ndjson, tool_call

from toolwire.adapters.ollama import OllamaMapper
from toolwire.pipeline.events import Event, ToolCallComplete, encode_event
from toolwire.pipeline.turn import Turn, TurnBuilder

NAMES = sorted(BODIES)
PROPERTY_SETTINGS = settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow]
)


def run(reads: list[bytes]) -> list[Event]:
    mapper = OllamaMapper()
    events: list[Event] = []
    for read in reads:
        events.extend(mapper.feed_bytes(read))
    events.extend(mapper.finish())
    return events


def turn_of(events: list[Event]) -> Turn:
    builder = TurnBuilder()
    for event in events:
        builder.add(event)
    return builder.build()


def normalized(events: list[Event]) -> list[bytes]:
    """Events as JSON, each synthesized id (random per stream) named by its first use."""
    names: dict[str, str] = {}

    def rename(event: Event) -> Event:
        call_id = getattr(event, "call_id", None)
        if isinstance(call_id, str) and call_id.startswith("toolwire-"):
            fresh = names.setdefault(call_id, f"synthesized-{len(names)}")
            return msgspec.structs.replace(event, call_id=fresh)
        return event

    return [encode_event(rename(event)) for event in events]


def body_of(name: str) -> bytes:
    return BODIES[name][0]


@functools.cache
def whole(name: str) -> tuple[list[bytes], Turn]:
    events = run([body_of(name)])
    return normalized(events), turn_of(events)


def split_at(body: bytes, cuts: list[int]) -> list[bytes]:
    pieces, start = [], 0
    for point in [*sorted(set(cuts)), len(body)]:
        pieces.append(body[start:point])
        start = point
    return pieces


@pytest.mark.parametrize("name", NAMES)
@PROPERTY_SETTINGS
@given(data=st.data())
def test_any_rechunking_gives_the_same_events(name: str, data: st.DataObject) -> None:
    body = body_of(name)
    cuts = data.draw(st.lists(st.integers(min_value=0, max_value=len(body)), max_size=40))
    assert normalized(run(split_at(body, cuts))) == whole(name)[0]


def check_cut(name: str, cut: int) -> None:
    """A turn read from a prefix of the body never passes a cut call off as complete."""
    _, full = whole(name)
    turn = turn_of(run([body_of(name)[:cut]]))
    original = [(c.name, c.arguments_raw) for c in full.calls]
    assert len(turn.calls) <= len(original), f"cut at {cut} invented a call"
    for call in turn.calls:
        name_then, raw_then = original[call.index]
        assert call.name == name_then
        # Ollama sends each call whole in one line: a prefix holds a call whole or not at all.
        assert call.arguments_raw == raw_then, f"cut at {cut}: {call.arguments_raw!r}"
    lost = (turn.text, turn.reasoning, len(turn.calls)) != (
        full.text,
        full.reasoning,
        len(full.calls),
    )
    if lost:
        assert turn.truncated or turn.stop_reason == "error", f"cut at {cut} looks whole: {turn}"
        if turn.truncated:
            assert turn.stop_reason in ("length", "disconnected")
    if turn.finish_raw != full.finish_raw or turn.usage != full.usage:
        # The done line was cut off: a stream that dropped (or no stream at all).
        assert turn.stop_reason in ("disconnected", "error"), f"cut at {cut}: {turn}"
    if turn.stop_reason == "disconnected" and turn.calls:
        # The call generated last may be short: it never runs.
        assert turn.calls[-1].truncated
    if full.truncated:
        assert turn.truncated or turn.stop_reason == "error"


@pytest.mark.parametrize("name", NAMES)
def test_every_cut_is_never_accepted_as_complete(name: str) -> None:
    # Exhaustive: every byte of every body.
    for cut in range(len(body_of(name)) + 1):
        check_cut(name, cut)


@pytest.mark.parametrize("name", NAMES)
@PROPERTY_SETTINGS
@given(data=st.data())
def test_cut_and_rechunked_is_the_same_as_cut(name: str, data: st.DataObject) -> None:
    body = body_of(name)
    cut = data.draw(st.integers(min_value=0, max_value=len(body)))
    cuts = data.draw(st.lists(st.integers(min_value=0, max_value=cut), max_size=20))
    assert normalized(run(split_at(body[:cut], cuts))) == normalized(run([body[:cut]]))


@PROPERTY_SETTINGS
@given(
    calls=st.lists(
        st.tuples(
            st.sampled_from(["rm", "get_weather"]),
            st.dictionaries(st.text(max_size=5), st.integers() | st.text(max_size=8), max_size=3),
            st.sampled_from([None, 0]),
            st.sampled_from([None, "call_same", "call_other"]),
        ),
        min_size=1,
        max_size=6,
    ),
    per_line=st.integers(min_value=1, max_value=3),
)
def test_whole_calls_are_never_merged(
    calls: list[tuple[str, dict[str, object], int | None, str | None]], per_line: int
) -> None:
    """Whatever the ids and indexes (repeated, absent, all 0), each entry is its own call."""
    entries = [tool_call(n, a, index=i, call_id=c) for n, a, i, c in calls]
    lines = [line(calls=entries[i : i + per_line]) for i in range(0, len(entries), per_line)]
    turn = turn_of(run([ndjson(*lines, done())]))
    assert [(c.index, c.name) for c in turn.calls] == [(i, n) for i, (n, *_) in enumerate(calls)]
    assert [json.loads(c.arguments_raw) for c in turn.calls] == [a for _, a, _, _ in calls]
    ids = [c.call_id for c in turn.calls]
    assert len(set(ids)) == len(ids)
    # A repeated provider id is renamed, never merged: <id>, <id>~2, <id>~3...
    given_ids = [c for *_, c in calls]
    for call, given_id in zip(turn.calls, given_ids, strict=True):
        assert call.id_synthesized is (given_id is None)
        if given_id is not None:
            assert call.call_id.split("~")[0] == given_id


def test_a_complete_event_per_call_carries_the_object_form() -> None:
    events = run([ndjson(line(calls=[tool_call("rm", {"path": "/"})]), done())])
    (complete,) = [e for e in events if isinstance(e, ToolCallComplete)]
    assert (complete.arguments_raw, complete.arguments_form) == ('{"path":"/"}', "object")
