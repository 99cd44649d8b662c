"""Properties over every Anthropic recording: re-chunking changes nothing; a cut is never whole.

These drive the sans-I/O mapper directly (no event loop), which is what ``collect`` runs per
read, so hypothesis can try many splits quickly (``_mapper_properties``).
"""

from __future__ import annotations

import pytest
from _mapper_properties import MapperDriver, check_loss_is_shown, property_settings
from _toolwire_testdata import STREAMS
from hypothesis import given
from hypothesis import strategies as st

from toolwire.adapters.anthropic import AnthropicMapper

RECORDINGS = sorted(
    f"anthropic/{path.name}" for path in (STREAMS / "anthropic").iterdir() if path.suffix == ".sse"
)
PROPERTY_SETTINGS = property_settings(max_examples=60)
#: Turns are judged: a call of a cut body may run only on the whole body's text.
ANTHROPIC = MapperDriver(AnthropicMapper, stop_when_done=True, judged=True)


@pytest.mark.parametrize("name", RECORDINGS)
@PROPERTY_SETTINGS
@given(data=st.data())
def test_any_rechunking_gives_the_same_events(name: str, data: st.DataObject) -> None:
    ANTHROPIC.check_any_rechunking(name, data, max_cuts=60)


def check_cut(name: str, cut: int) -> None:
    """A turn read from a prefix of the stream never lets a call run on less than its text."""
    full, turn = ANTHROPIC.cut_turn(name, cut)
    original = {call.call_id: call for call in full.calls}
    for call in turn.calls:
        assert call.call_id in original, f"cut at {cut} invented call {call.call_id}"
        whole_call = original[call.call_id]
        if call.may_run:
            assert call.arguments_raw == whole_call.arguments_raw, f"cut at {cut}: {call}"
            assert whole_call.may_run, f"cut at {cut}: a call the whole stream rejects runs"
        if call.arguments_raw != whole_call.arguments_raw:
            assert call.truncated, f"cut at {cut}: {call.arguments_raw!r} taken as complete"
    lost = turn.text != full.text or len(turn.calls) != len(full.calls)
    check_loss_is_shown(full, turn, cut, lost=lost)


@pytest.mark.parametrize("name", RECORDINGS)
def test_every_cut_is_never_accepted_as_complete(name: str) -> None:
    # Exhaustive: every byte of every recording.
    for cut in ANTHROPIC.every_cut(name):
        check_cut(name, cut)


@pytest.mark.parametrize("name", RECORDINGS)
@PROPERTY_SETTINGS
@given(data=st.data())
def test_cut_and_rechunked_is_the_same_as_cut(name: str, data: st.DataObject) -> None:
    cut = ANTHROPIC.check_cut_and_rechunked(name, data, max_cuts=30)
    check_cut(name, cut)
