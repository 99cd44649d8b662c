"""Properties over every Responses recording: re-chunking changes nothing; a cut or a damaged
event never lets a call run on less than its full text.

These drive the sans-I/O mapper directly (no event loop), which is what ``collect`` runs per
read, so hypothesis can try many splits quickly.
"""

from __future__ import annotations

import re

import pytest
from _mapper_properties import (
    MapperDriver,
    check_cut_calls_are_prefixes,
    property_settings,
    split_after,
)
from _toolwire_testdata import STREAMS, load_stream
from hypothesis import given
from hypothesis import strategies as st

from toolwire.adapters.openai_responses import OpenAIResponsesMapper
from toolwire.core.events import Event, ToolCallComplete, ToolCallRejected
from toolwire.stages.judge import JudgeStage

FOLDER = "openai-responses"
RECORDINGS = [
    f"{FOLDER}/{p.name}" for p in sorted((STREAMS / FOLDER).iterdir()) if p.suffix == ".sse"
]
PROPERTY_SETTINGS = property_settings(max_examples=40)
RESPONSES = MapperDriver(OpenAIResponsesMapper, stop_when_done=True)
_SSE_EVENT = re.compile(rb"\n\n")


@pytest.mark.parametrize("name", RECORDINGS)
@PROPERTY_SETTINGS
@given(data=st.data())
@pytest.mark.slow
def test_any_rechunking_gives_the_same_events(name: str, data: st.DataObject) -> None:
    RESPONSES.check_any_rechunking(name, data, max_cuts=40)


@pytest.mark.parametrize("name", RECORDINGS)
def test_byte_by_byte_gives_the_same_events(name: str) -> None:
    RESPONSES.check_byte_by_byte(name)


@pytest.mark.parametrize("name", RECORDINGS)
@pytest.mark.slow
def test_every_cut_is_never_accepted_as_complete(name: str) -> None:
    # Exhaustive: every byte of every recording.
    for cut in RESPONSES.every_cut(name):
        check_cut_calls_are_prefixes(RESPONSES, name, cut)


@pytest.mark.parametrize("name", RECORDINGS)
@PROPERTY_SETTINGS
@given(data=st.data())
@pytest.mark.slow
def test_cut_and_rechunked_is_the_same_as_cut(name: str, data: st.DataObject) -> None:
    RESPONSES.check_cut_and_rechunked(name, data, max_cuts=20)


# -- fault injection: one event made unreadable -------------------------------------------------


def events_of(body: bytes) -> list[bytes]:
    """The SSE events of a body, each with its blank-line separator."""
    return split_after(body, _SSE_EVENT)


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
    full = runnable(RESPONSES.run([body]))
    pieces = events_of(body)
    pieces[position] = damaged(pieces[position], how)
    for call_id, text in runnable(RESPONSES.run([b"".join(pieces)])).items():
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
