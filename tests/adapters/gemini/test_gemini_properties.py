"""Properties over every Gemini recording: re-chunking changes nothing; a cut is never whole.

These drive the sans-I/O mapper directly (no event loop; ``_mapper_properties``). Gemini sends
no call ids, so the random part of toolwire's synthesized ids is named by its first use before
events are compared, and calls of a cut body are matched with the whole body's by their index.
"""

from __future__ import annotations

import json

import msgspec
import pytest
from _mapper_properties import MapperDriver, check_loss_is_shown, property_settings
from _toolwire_testdata import STREAMS
from hypothesis import given
from hypothesis import strategies as st

from toolwire.adapters.gemini import GeminiMapper

RECORDINGS = sorted(f"gemini/{path.name}" for path in (STREAMS / "gemini").iterdir())
PROPERTY_SETTINGS = property_settings(max_examples=60)
GEMINI = MapperDriver(GeminiMapper, synthesizes_ids=True)


@pytest.mark.parametrize("name", RECORDINGS)
@PROPERTY_SETTINGS
@given(data=st.data())
def test_any_rechunking_gives_the_same_events(name: str, data: st.DataObject) -> None:
    GEMINI.check_any_rechunking(name, data, max_cuts=40)


@pytest.mark.parametrize("name", RECORDINGS)
def test_byte_by_byte_gives_the_same_events(name: str) -> None:
    GEMINI.check_byte_by_byte(name)


def check_cut(name: str, cut: int) -> None:
    """A turn read from a prefix of the stream never passes a cut call off as complete."""
    full, turn = GEMINI.cut_turn(name, cut)
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
    check_loss_is_shown(full, turn, cut, lost=lost)
    if turn.finish_raw is None:
        # No finish reason arrived: the stream dropped, whatever else came.
        assert turn.stop_reason in ("disconnected", "error")


@pytest.mark.parametrize("name", RECORDINGS)
def test_every_cut_is_never_accepted_as_complete(name: str) -> None:
    # Exhaustive: every byte of every recording.
    for cut in GEMINI.every_cut(name):
        check_cut(name, cut)


@pytest.mark.parametrize("name", RECORDINGS)
@PROPERTY_SETTINGS
@given(data=st.data())
def test_cut_and_rechunked_is_the_same_as_cut(name: str, data: st.DataObject) -> None:
    GEMINI.check_cut_and_rechunked(name, data, max_cuts=20)


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
    turn = GEMINI.turn_of(GEMINI.run([body + final]))
    (call,) = turn.calls
    expected = json.loads(json.dumps(arguments))
    assert msgspec.json.decode(call.arguments_raw) == expected
    assert not call.truncated
    cut = data.draw(st.integers(min_value=0, max_value=len(body) - 1))
    cut_turn = GEMINI.turn_of(GEMINI.run([body[:cut] + final]))
    for cut_call in cut_turn.calls:
        assert call.arguments_raw.startswith(cut_call.arguments_raw)
        if cut_call.arguments_raw != call.arguments_raw:
            with pytest.raises(msgspec.DecodeError):
                msgspec.json.decode(cut_call.arguments_raw)
