"""Properties over every Ollama body: re-chunking changes nothing; a cut is never taken as whole.

The mapper is driven directly (no event loop), as ``collect`` drives it per read
(``_mapper_properties``). Synthesized ids are random per stream: events are compared with each
id's random part named by its first use, and calls by their position in the turn.
"""

from __future__ import annotations

import json

import pytest
from _mapper_properties import MapperDriver, check_loss_is_shown, property_settings
from hypothesis import given
from hypothesis import strategies as st
from test_ollama_fixtures import BODIES, done, line, ndjson, tool_call

from toolwire.adapters.ollama import OllamaMapper
from toolwire.core.events import ToolCallComplete

NAMES = sorted(BODIES)
PROPERTY_SETTINGS = property_settings(max_examples=40)
OLLAMA = MapperDriver(OllamaMapper, body_of=lambda name: BODIES[name][0], synthesizes_ids=True)


@pytest.mark.parametrize("name", NAMES)
@PROPERTY_SETTINGS
@given(data=st.data())
def test_any_rechunking_gives_the_same_events(name: str, data: st.DataObject) -> None:
    OLLAMA.check_any_rechunking(name, data, max_cuts=40)


def check_cut(name: str, cut: int) -> None:
    """A turn read from a prefix of the body never passes a cut call off as complete."""
    full, turn = OLLAMA.cut_turn(name, cut)
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
    check_loss_is_shown(full, turn, cut, lost=lost)
    if turn.finish_raw != full.finish_raw or turn.usage != full.usage:
        # The done line was cut off: a stream that dropped (or no stream at all).
        assert turn.stop_reason in ("disconnected", "error"), f"cut at {cut}: {turn}"
    if turn.stop_reason == "disconnected" and turn.calls:
        # The call generated last may be short: it never runs.
        assert turn.calls[-1].truncated


@pytest.mark.parametrize("name", NAMES)
def test_every_cut_is_never_accepted_as_complete(name: str) -> None:
    # Exhaustive: every byte of every body.
    for cut in OLLAMA.every_cut(name):
        check_cut(name, cut)


@pytest.mark.parametrize("name", NAMES)
@PROPERTY_SETTINGS
@given(data=st.data())
def test_cut_and_rechunked_is_the_same_as_cut(name: str, data: st.DataObject) -> None:
    OLLAMA.check_cut_and_rechunked(name, data, max_cuts=20)


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
    turn = OLLAMA.turn_of(OLLAMA.run([ndjson(*lines, done())]))
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
    events = OLLAMA.run([ndjson(line(calls=[tool_call("rm", {"path": "/"})]), done())])
    (complete,) = [e for e in events if isinstance(e, ToolCallComplete)]
    assert (complete.arguments_raw, complete.arguments_form) == ('{"path":"/"}', "object")
