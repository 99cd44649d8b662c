"""Properties over every Gemini recording: re-chunking changes nothing; a cut is never whole.

These drive the sans-I/O mapper directly (no event loop). Gemini sends no call ids, so the
random part of toolwire's synthesized ids is masked before events are compared, and calls of a
cut body are matched with the whole body's by their index.
"""

from __future__ import annotations

import functools
import json
import re

import msgspec
import pytest
from _toolwire_testdata import STREAMS, load_stream
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from toolwire.adapters.gemini import GeminiMapper
from toolwire.pipeline.events import Event, encode_event
from toolwire.pipeline.turn import Turn, TurnBuilder

RECORDINGS = sorted(f"gemini/{path.name}" for path in (STREAMS / "gemini").iterdir())
PROPERTY_SETTINGS = settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow]
)
_RANDOM = re.compile(rb"toolwire-[0-9a-f]{16}-")


def run(reads: list[bytes]) -> list[Event]:
    mapper = GeminiMapper()
    events: list[Event] = []
    for read in reads:
        events.extend(mapper.feed_bytes(read))
    events.extend(mapper.finish())
    return events


def encoded(events: list[Event]) -> list[bytes]:
    return [_RANDOM.sub(b"toolwire-X-", encode_event(e)) for e in events]


def turn_of(events: list[Event]) -> Turn:
    builder = TurnBuilder()
    for event in events:
        builder.add(event)
    return builder.build()


@functools.cache
def whole(name: str) -> tuple[list[bytes], Turn]:
    events = run([load_stream(name)])
    return encoded(events), turn_of(events)


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
    assert encoded(run(split_at(body, cuts))) == whole(name)[0]


@pytest.mark.parametrize("name", RECORDINGS)
def test_byte_by_byte_gives_the_same_events(name: str) -> None:
    body = load_stream(name)
    assert encoded(run([body[i : i + 1] for i in range(len(body))])) == whole(name)[0]


def check_cut(name: str, cut: int) -> None:
    """A turn read from a prefix of the stream never passes a cut call off as complete."""
    _, full = whole(name)
    turn = turn_of(run([load_stream(name)[:cut]]))
    for call in turn.calls:
        assert call.index < len(full.calls), f"cut at {cut} invented call {call.index}"
        original = full.calls[call.index]
        assert call.name == original.name
        assert original.arguments_raw.startswith(call.arguments_raw), f"cut at {cut}: no prefix"
        if call.arguments_raw != original.arguments_raw:
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
    if turn.finish_raw is None:
        # No finish reason arrived: the stream dropped, whatever else came.
        assert turn.stop_reason in ("disconnected", "error")


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
    assert encoded(run(split_at(body[:cut], cuts))) == encoded(run([body[:cut]]))


# A streamed call written from any sequence of pieces: whatever was cut, the text never parses
# as a complete object before the call's end piece, and it always does after it.
_KEYS = st.sampled_from(["a", "b", "c d", "é"])
_LEAVES = st.one_of(
    st.text(max_size=6),
    st.integers(-5, 5),
    st.floats(allow_nan=False, allow_infinity=False, width=32),
    st.booleans(),
    st.none(),
)
_VALUES = st.recursive(
    _LEAVES,
    lambda inner: st.one_of(
        st.lists(inner, min_size=1, max_size=3),
        st.dictionaries(_KEYS, inner, min_size=1, max_size=3),
    ),
    max_leaves=8,
)


def _pieces(value: object, path: str) -> list[dict[str, object]]:
    """The partialArgs pieces a server would send for ``value`` at ``path``."""
    if isinstance(value, dict):
        return [p for key, sub in value.items() for p in _pieces(sub, f"{path}['{key}']")]
    if isinstance(value, list):
        return [p for at, sub in enumerate(value) for p in _pieces(sub, f"{path}[{at}]")]
    if isinstance(value, str):
        half = len(value) // 2
        return [
            {"jsonPath": path, "stringValue": value[:half], "willContinue": True},
            {"jsonPath": path, "stringValue": value[half:]},
        ]
    if value is None:
        return [{"jsonPath": path, "nullValue": None}]
    if isinstance(value, bool):
        return [{"jsonPath": path, "boolValue": value}]
    return [{"jsonPath": path, "numberValue": value}]


@PROPERTY_SETTINGS
@given(arguments=st.dictionaries(_KEYS, _VALUES, min_size=1, max_size=3), data=st.data())
def test_streamed_arguments_are_complete_only_after_the_end_piece(
    arguments: dict[str, object], data: st.DataObject
) -> None:
    pieces = [p for key, sub in arguments.items() for p in _pieces(sub, f"$['{key}']")]
    chunks: list[dict[str, object]] = [{"functionCall": {"name": "f", "willContinue": True}}]
    chunks += [{"functionCall": {"partialArgs": [p], "willContinue": True}} for p in pieces]
    chunks.append({"functionCall": {}})
    body = b"".join(
        b"data: "
        + json.dumps({"candidates": [{"content": {"role": "model", "parts": [part]}}]}).encode()
        + b"\r\n\r\n"
        for part in chunks
    )
    final = b'data: {"candidates": [{"finishReason": "STOP"}]}\r\n\r\n'
    turn = turn_of(run([body + final]))
    (call,) = turn.calls
    expected = json.loads(json.dumps(arguments))
    assert msgspec.json.decode(call.arguments_raw) == expected
    assert not call.truncated
    cut = data.draw(st.integers(min_value=0, max_value=len(body) - 1))
    cut_turn = turn_of(run([body[:cut] + final]))
    for cut_call in cut_turn.calls:
        assert call.arguments_raw.startswith(cut_call.arguments_raw)
        if cut_call.arguments_raw != call.arguments_raw:
            with pytest.raises(msgspec.DecodeError):
                msgspec.json.decode(cut_call.arguments_raw)
