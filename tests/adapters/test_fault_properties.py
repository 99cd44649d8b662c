"""Fault injection over every recording: a piece made unreadable never lets a partial call run.

For any recording, any one of its events (SSE) or lines (NDJSON) is made unreadable in one of
several ways; the call that piece belonged to, whatever it was, may have lost any part of its
text. The property: every call that may still run carries exactly the full text that the same
call has in the intact recording, and was runnable there too. A call never runs on less.
"""

from __future__ import annotations

import functools
import re

import anyio
import pytest
from _mapper_properties import split_after
from _toolwire_testdata import STREAMS, every_recording
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import toolwire

_SSE_EVENT = re.compile(rb"(?:\r\n|\r|\n){2,}")


def pieces_of(body: bytes, ndjson: bool) -> list[bytes]:
    """The events (SSE, separators kept) or lines (NDJSON) of a body, in order."""
    if ndjson:
        return body.splitlines(keepends=True)
    return split_after(body, _SSE_EVENT)


def damage(piece: bytes, how: str, ndjson: bool) -> bytes:
    """``piece`` made unreadable: its JSON cut short, replaced by text, or by a wrong shape."""
    ending = piece[len(piece.rstrip(b"\r\n")) :]
    content = piece[: len(piece) - len(ending)] if ending else piece
    if ndjson:
        prefix, payload = b"", content
    else:
        position = content.rfind(b"data:")
        if position < 0:
            return piece
        prefix, payload = content[: position + 5], content[position + 5 :]
    if how == "cut":
        payload = payload[: max(1, len(payload) // 2)]
    elif how == "text":
        payload = b" <html>upstream error</html>"
    else:
        payload = b" [1, 2, 3]"
    return prefix + payload + ending


@functools.cache
def intact(name: str, provider: str) -> toolwire.Turn:
    return anyio.run(_collect, (STREAMS / name).read_bytes(), provider)


async def _collect(body: bytes, provider: str) -> toolwire.Turn:
    return await toolwire.collect(body, provider)


RECORDINGS = every_recording()


@pytest.mark.parametrize(("name", "provider"), RECORDINGS)
@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_an_unreadable_piece_never_lets_a_partial_call_run(
    name: str, provider: str, data: st.DataObject
) -> None:
    ndjson = name.endswith(".ndjson")
    body = (STREAMS / name).read_bytes()
    pieces = pieces_of(body, ndjson)
    target = data.draw(st.integers(0, len(pieces) - 1), label="piece")
    how = data.draw(st.sampled_from(["cut", "text", "shape"]), label="how")
    damaged = damage(pieces[target], how, ndjson)
    if damaged == pieces[target] or pieces[target].strip().endswith(b"[DONE]"):
        return  # nothing to damage in this piece (a comment, an event line alone, [DONE])
    whole = intact(name, provider)
    # By name and text, not by id or position: synthesized ids (Gemini, Ollama) are random per
    # stream, and a piece that held a whole call moves the calls after it up one place.
    full = {(call.name, call.arguments_raw) for call in whole.calls if call.may_run}
    turn = anyio.run(_collect, b"".join([*pieces[:target], damaged, *pieces[target + 1 :]]),
                     provider)
    for call in turn.calls:
        if not call.may_run:
            continue
        assert (call.name, call.arguments_raw) in full, (
            f"a call runs on a text no runnable call of the recording has: {call}"
        )
