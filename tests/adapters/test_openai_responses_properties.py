"""Properties over every Responses recording: re-chunking changes nothing; a cut or a damaged
event never lets a call run on less than its full text.

These drive the sans-I/O mapper directly (no event loop), which is what ``collect`` runs per
read, so hypothesis can try many splits quickly.
"""

from __future__ import annotations

import functools
import re

import pytest
from _toolwire_testdata import STREAMS, load_stream
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from toolwire.adapters.openai_responses import OpenAIResponsesMapper
from toolwire.pipeline.events import Event, ToolCallComplete, ToolCallRejected, encode_event
from toolwire.pipeline.turn import Turn, TurnBuilder
from toolwire.stages.judge import JudgeStage

FOLDER = "openai-responses"
RECORDINGS = [
    f"{FOLDER}/{p.name}" for p in sorted((STREAMS / FOLDER).iterdir()) if p.suffix == ".sse"
]
PROPERTY_SETTINGS = settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow]
)
_SSE_EVENT = re.compile(rb"\n\n")


def run(reads: list[bytes]) -> list[Event]:
    mapper = OpenAIResponsesMapper()
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
    cuts = data.draw(st.lists(st.integers(min_value=0, max_value=cut), max_size=20))
    expected = [encode_event(e) for e in run([body[:cut]])]
    assert [encode_event(e) for e in run(split_at(body[:cut], cuts))] == expected


# -- fault injection: one event made unreadable -------------------------------------------------


def events_of(body: bytes) -> list[bytes]:
    """The SSE events of a body, each with its blank-line separator."""
    pieces, start = [], 0
    for match in _SSE_EVENT.finditer(body):
        pieces.append(body[start : match.end()])
        start = match.end()
    if start < len(body):
        pieces.append(body[start:])
    return pieces


def damaged(piece: bytes, how: str) -> bytes:
    """``piece`` with its ``data:`` payload cut short, replaced by text, or dropped."""
    lines = piece.split(b"\n")
    out = []
    for line in lines:
        if line.startswith(b"data:"):
            if how == "drop":
                return b""
            payload = line[5:]
            line = b"data:" + (payload[: len(payload) // 2] if how == "cut" else b" garbage")
        out.append(line)
    return b"\n".join(out)


_JUDGE = JudgeStage()


def runnable(events: list[Event]) -> dict[str, str]:
    """call id -> raw text of every call the default judge lets run."""
    return {
        event.call_id: event.arguments_raw
        for event in events
        if isinstance(event, ToolCallComplete)
        and not isinstance(_JUDGE.judge(event), ToolCallRejected)
    }


def check_damage(name: str, position: int, how: str) -> None:
    body = load_stream(name)
    full = runnable(run([body]))
    pieces = events_of(body)
    pieces[position] = damaged(pieces[position], how)
    for call_id, text in runnable(run([b"".join(pieces)])).items():
        assert full.get(call_id) == text, (
            f"event {position} {how}: call {call_id} would run on {text!r}, "
            f"not {full.get(call_id)!r}"
        )


@pytest.mark.parametrize("how", ["cut", "garbage", "drop"])
@pytest.mark.parametrize("name", RECORDINGS)
def test_a_damaged_event_never_lets_a_call_run_on_less(name: str, how: str) -> None:
    # Exhaustive over the events of each recording; "drop" removes an event whole, which only
    # the sequence numbers (or a disagreeing whole value) can show.
    for position in range(len(events_of(load_stream(name)))):
        check_damage(name, position, how)
