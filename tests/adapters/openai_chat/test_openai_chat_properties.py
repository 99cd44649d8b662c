"""Properties over every recording: re-chunking changes nothing; a cut is never accepted as whole.

These drive the sans-I/O mapper directly (no event loop), which is what ``collect`` runs per read,
so hypothesis can try many splits quickly (``_mapper_properties``).
"""

from __future__ import annotations

import pytest
from _mapper_properties import MapperDriver, check_cut_calls_are_prefixes, property_settings
from _toolwire_testdata import chat_recordings
from hypothesis import given
from hypothesis import strategies as st

from toolwire.adapters.openai_chat import OpenAIChatMapper

RECORDINGS = chat_recordings()
PROPERTY_SETTINGS = property_settings(max_examples=40)
CHAT = MapperDriver(OpenAIChatMapper)


@pytest.mark.parametrize("name", RECORDINGS)
@PROPERTY_SETTINGS
@given(data=st.data())
@pytest.mark.slow
def test_any_rechunking_gives_the_same_events(name: str, data: st.DataObject) -> None:
    CHAT.check_any_rechunking(name, data, max_cuts=40)


@pytest.mark.parametrize("name", RECORDINGS)
def test_byte_by_byte_gives_the_same_events(name: str) -> None:
    CHAT.check_byte_by_byte(name)


@pytest.mark.parametrize("name", RECORDINGS)
@pytest.mark.slow
def test_every_cut_is_never_accepted_as_complete(name: str) -> None:
    # Exhaustive: every byte of every recording (about 5 s for all of them).
    for cut in CHAT.every_cut(name):
        check_cut_calls_are_prefixes(CHAT, name, cut)


@pytest.mark.parametrize("name", RECORDINGS)
@PROPERTY_SETTINGS
@given(data=st.data())
@pytest.mark.slow
def test_cut_and_rechunked_is_the_same_as_cut(name: str, data: st.DataObject) -> None:
    CHAT.check_cut_and_rechunked(name, data, max_cuts=20)
