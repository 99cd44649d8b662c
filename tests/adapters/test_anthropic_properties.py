"""Properties over every Anthropic recording: re-chunking changes nothing; a cut is never whole.

These drive the sans-I/O mapper directly (no event loop), which is what ``collect`` runs per
read, so hypothesis can try many splits quickly.
"""

from __future__ import annotations

import functools

import pytest
from _toolwire_testdata import STREAMS, load_stream
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from toolwire.adapters.anthropic import AnthropicMapper
from toolwire.pipeline.events import Event, ToolCallComplete, encode_event
from toolwire.pipeline.turn import Turn, TurnBuilder
from toolwire.stages.judge import JudgeStage

RECORDINGS = sorted(
    f"anthropic/{path.name}" for path in (STREAMS / "anthropic").iterdir() if path.suffix == ".sse"
)
PROPERTY_SETTINGS = settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow]
)
JUDGE = JudgeStage()


def run(reads: list[bytes]) -> list[Event]:
    mapper = AnthropicMapper()
    events: list[Event] = []
    for read in reads:
        events.extend(mapper.feed_bytes(read))
        if mapper.done:
            break
    events.extend(mapper.finish())
    return events


def turn_of(events: list[Event]) -> Turn:
    builder = TurnBuilder()
    for event in events:
        builder.add(JUDGE.judge(event) if isinstance(event, ToolCallComplete) else event)
    return builder.build()


@functools.cache
def whole(name: str) -> tuple[list[bytes], Turn]:
    events = run([load_stream(name)])
    return [encode_event(e) for e in events], turn_of(events)


def split_at(body: bytes, cuts: list[int]) -> list[bytes]:
    pieces, start = [], 0
    for point in [*sorted(set(cuts)), len(body)]:
        pieces.append(body[start:point])
        start = point
    return pieces


@pytest.mark.parametrize("name", RECORDINGS)
@PROPERTY_SETTINGS
@given(data=st.data())
def test_any_rechunking_gives_the_same_events(name: str, data: st.DataObject) -> None:
    body = load_stream(name)
    cuts = data.draw(st.lists(st.integers(min_value=0, max_value=len(body)), max_size=60))
    encoded, _ = whole(name)
    assert [encode_event(e) for e in run(split_at(body, cuts))] == encoded


def check_cut(name: str, cut: int) -> None:
    """A turn read from a prefix of the stream never lets a call run on less than its text."""
    _, full = whole(name)
    turn = turn_of(run([load_stream(name)[:cut]]))
    original = {call.call_id: call for call in full.calls}
    for call in turn.calls:
        assert call.call_id in original, f"cut at {cut} invented call {call.call_id}"
        whole_call = original[call.call_id]
        if call.may_run:
            assert call.arguments_raw == whole_call.arguments_raw, f"cut at {cut}: {call}"
            assert whole_call.may_run, f"cut at {cut}: a call the whole stream rejects runs"
        if call.arguments_raw != whole_call.arguments_raw:
            assert call.truncated, f"cut at {cut}: {call.arguments_raw!r} taken as complete"
    if turn.text != full.text or len(turn.calls) != len(full.calls):
        assert turn.truncated or turn.stop_reason == "error", f"cut at {cut} looks whole: {turn}"
        if turn.truncated:
            assert turn.stop_reason in ("length", "disconnected")
    if full.truncated:
        assert turn.truncated or turn.stop_reason == "error"


@pytest.mark.parametrize("name", RECORDINGS)
def test_every_cut_is_never_accepted_as_complete(name: str) -> None:
    # Exhaustive: every byte of every recording.
    for cut in range(len(load_stream(name)) + 1):
        check_cut(name, cut)


@pytest.mark.parametrize("name", RECORDINGS)
@PROPERTY_SETTINGS
@given(data=st.data())
def test_cut_and_rechunked_is_the_same_as_cut(name: str, data: st.DataObject) -> None:
    body = load_stream(name)
    cut = data.draw(st.integers(min_value=0, max_value=len(body)))
    cuts = data.draw(st.lists(st.integers(min_value=0, max_value=cut), max_size=30))
    expected = [encode_event(e) for e in run([body[:cut]])]
    assert [encode_event(e) for e in run(split_at(body[:cut], cuts))] == expected
    check_cut(name, cut)
