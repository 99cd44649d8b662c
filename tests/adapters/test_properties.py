"""Properties over every recording: re-chunking changes nothing; a cut is never accepted as whole.

These drive the sans-I/O mapper directly (no event loop), which is what ``collect`` runs per read,
so hypothesis can try many splits quickly.
"""

from __future__ import annotations

import functools

import pytest
from _toolwire_testdata import chat_recordings, load_stream
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from toolwire.adapters.openai_chat import OpenAIChatMapper
from toolwire.pipeline.events import Event, encode_event
from toolwire.pipeline.turn import Turn, TurnBuilder

RECORDINGS = chat_recordings()
PROPERTY_SETTINGS = settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow]
)


def run(reads: list[bytes]) -> list[Event]:
    mapper = OpenAIChatMapper()
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


@functools.cache
def whole(name: str) -> tuple[list[bytes], Turn]:
    events = run([load_stream(name)])
    return [encode_event(e) for e in events], turn_of(events)


def split_at(body: bytes, cuts: list[int]) -> list[bytes]:
    points = sorted(set(cuts))
    pieces, start = [], 0
    for point in [*points, len(body)]:
        pieces.append(body[start:point])
        start = point
    return pieces


@pytest.mark.parametrize("name", RECORDINGS)
@PROPERTY_SETTINGS
@given(data=st.data())
def test_any_rechunking_gives_the_same_events(name: str, data: st.DataObject) -> None:
    body = load_stream(name)
    cuts = data.draw(st.lists(st.integers(min_value=0, max_value=len(body)), max_size=40))
    encoded, _ = whole(name)
    assert [encode_event(e) for e in run(split_at(body, cuts))] == encoded


@pytest.mark.parametrize("name", RECORDINGS)
def test_byte_by_byte_gives_the_same_events(name: str) -> None:
    body = load_stream(name)
    encoded, _ = whole(name)
    assert [encode_event(e) for e in run([body[i : i + 1] for i in range(len(body))])] == encoded


def check_cut(name: str, cut: int) -> None:
    """A turn read from a prefix of the stream never passes a cut call off as complete."""
    _, full = whole(name)
    turn = turn_of(run([load_stream(name)[:cut]]))
    original = {call.call_id: call.arguments_raw for call in full.calls}
    for call in turn.calls:
        assert call.call_id in original, f"cut at {cut} invented call {call.call_id}"
        whole_raw = original[call.call_id]
        assert whole_raw.startswith(call.arguments_raw), f"cut at {cut}: not a prefix"
        if call.arguments_raw != whole_raw:
            assert call.truncated, f"cut at {cut}: {call.arguments_raw!r} accepted as complete"
    lost = turn.text != full.text or [c.arguments_raw for c in turn.calls] != [
        c.arguments_raw for c in full.calls
    ]
    if lost:
        assert turn.truncated or turn.stop_reason == "error", f"cut at {cut} looks whole: {turn}"
        if turn.truncated:
            assert turn.stop_reason in ("length", "disconnected")
    if full.truncated:
        # A cut of a truncated recording cannot look whole either.
        assert turn.truncated or turn.stop_reason == "error"


@pytest.mark.parametrize("name", RECORDINGS)
def test_every_cut_is_never_accepted_as_complete(name: str) -> None:
    # Exhaustive: every byte of every recording (about 5 s for all of them).
    for cut in range(len(load_stream(name)) + 1):
        check_cut(name, cut)


@pytest.mark.parametrize("name", RECORDINGS)
@PROPERTY_SETTINGS
@given(data=st.data())
def test_cut_and_rechunked_is_the_same_as_cut(name: str, data: st.DataObject) -> None:
    body = load_stream(name)
    cut = data.draw(st.integers(min_value=0, max_value=len(body)))
    cuts = data.draw(st.lists(st.integers(min_value=0, max_value=cut), max_size=20))
    expected = [encode_event(e) for e in run([body[:cut]])]
    assert [encode_event(e) for e in run(split_at(body[:cut], cuts))] == expected
