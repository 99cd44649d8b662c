"""The Gemini fast path (text chunks decoded as ``TextChunk`` and read in a few steps) changes
nothing.

The general path is forced by making every ``TextChunk`` decode fail: each payload then goes
through ``decode_chunk`` / ``_chunk`` / ``_candidate`` and the replay log's ``text``, as before
the fast path existed. Both read every recording, and bodies made from it that mix answer text
with everything that must leave the fast path (thoughts, signatures, several parts or
candidates, a finish reason on a text chunk, usage repeated or changing, prompt feedback, an
in-band error, calls whole or streamed, unreadable payloads, ``\\n`` line ends), at every split
into two reads, at fixed read sizes and at random splits. The replay log (the parts a turn is
replayed with) is compared too, not only the events.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import msgspec
import pytest
from _toolwire_testdata import STREAMS, examples, load_stream, quick_sample
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from toolwire.adapters.gemini import GeminiMapper
from toolwire.adapters.gemini import mapper as gemini_mapper
from toolwire.core.events import Event, encode_event

RECORDINGS = sorted(f"gemini/{path.name}" for path in (STREAMS / "gemini").iterdir())
_SYNTHESIZED = re.compile(rb"toolwire-[0-9a-f]{16}-")


def _no_text_chunk(data: bytes) -> Any:
    raise msgspec.ValidationError("forced general path")


@contextmanager
def general_path() -> Iterator[None]:
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(gemini_mapper, "decode_text_chunk", _no_text_chunk)
        yield


def _run(reads: list[bytes]) -> list[list[bytes]]:
    names: dict[bytes, bytes] = {}

    def rename(match: re.Match[bytes]) -> bytes:
        return names.setdefault(match.group(), b"toolwire-%d-" % len(names))

    mapper = GeminiMapper()
    batches: list[list[Event]] = [mapper.feed_bytes(read) for read in reads]
    batches.append(mapper.finish())
    encoded = [[_SYNTHESIZED.sub(rename, encode_event(e)) for e in batch] for batch in batches]
    replay = _SYNTHESIZED.sub(rename, msgspec.json.encode(mapper._replay.parts()))
    return [*encoded, [replay]]


def same_events(body: bytes, reads: list[bytes]) -> None:
    assert b"".join(reads) == body
    fast = _run(reads)
    with general_path():
        assert fast == _run(reads)


def _event(payload: dict[str, Any] | bytes, end: bytes = b"\r\n\r\n") -> bytes:
    data = payload if isinstance(payload, bytes) else json.dumps(payload).encode()
    return b"data: " + data + end


def _part(**part: Any) -> dict[str, Any]:
    return {"candidates": [{"content": {"parts": [part], "role": "model"}, "index": 0}]}


def _text(text: str, **extra: Any) -> bytes:
    return _event({**_part(text=text), **extra})


USAGE = {"promptTokenCount": 5, "candidatesTokenCount": 1, "totalTokenCount": 6}
INFO = {"modelVersion": "gemini-2.5-flash", "responseId": "r1"}


def _events(body: bytes) -> list[bytes]:
    return [event + b"\r\n\r\n" for event in body.split(b"\r\n\r\n") if event.strip()]


def variants(body: bytes) -> dict[str, bytes]:
    """The recording, and bodies made from it that leave the fast path somewhere."""
    events = _events(body)
    texts = b"".join(_text(f"piece {n} ") for n in range(5))

    def around(*inserted: bytes) -> bytes:
        return b"".join([texts, *inserted, texts, *events])

    return {
        "as recorded": body,
        "text first": texts + body,
        "text with info and usage": around(
            *(_text(f"p{n}", usageMetadata=USAGE, **INFO) for n in range(4))
        ),
        "usage changing": around(
            *(_text("p", usageMetadata={**USAGE, "candidatesTokenCount": n}) for n in range(4))
        ),
        "usage only": around(_event({"usageMetadata": USAGE})),
        "empty and null text": around(_text(""), _event(_part(text=None)), _text("x")),
        "thought": around(_event(_part(text="hm", thought=True)), _text("x")),
        "thought false": around(_event(_part(text="x", thought=False))),
        "signed text": around(_event(_part(text="x", thoughtSignature="c2ln")), _text("y")),
        "signed empty text": around(_event(_part(text="", thoughtSignature="c2ln"))),
        "two parts": around(
            _event({"candidates": [{"content": {"parts": [{"text": "a"}, {"text": "b"}]}}]})
        ),
        "two candidates": around(
            _event({"candidates": [{**_part(text="a")["candidates"][0]}, {"index": 1}]})
        ),
        "candidate 1 only": around(
            _event({"candidates": [{**_part(text="a")["candidates"][0], "index": 1}]})
        ),
        "finish on a text chunk": around(
            _event({"candidates": [{**_part(text="end")["candidates"][0], "finishReason": "STOP"}]})
        ),
        "prompt feedback": around(_event({**_part(text="a"), "promptFeedback": {}})),
        "blocked": around(_event({"promptFeedback": {"blockReason": "SAFETY"}})),
        "error": around(_event({"error": {"code": 500, "message": "boom"}})),
        "error after text": texts + _event({"error": "down"}) + texts,
        "whole call between": around(
            _event(_part(functionCall={"name": "f", "args": {"a": 1}})), _text("after")
        ),
        "not json": around(_event(b"{nope"), _text("x")),
        "not a chunk": around(_event(b"[1]"), _event(b'{"candidates": 3}'), _text("x")),
        "wrong types": around(_event({**_part(text="a"), "modelVersion": 7})),
        "lf line ends": around().replace(b"\r\n", b"\n"),
        "comment and blank lines": around(b": keep-alive\r\n\r\n", b"\r\n\r\n"),
        "multi-line data": around(
            b'data: {"candidates": [{"content":\r\ndata: {"parts": [{"text": "ml"}]}}]}\r\n\r\n'
        ),
    }


CASES = [(name, kind) for name in RECORDINGS for kind in variants(load_stream(name))]
#: The fixed-read-size grid in the quick loop: every 6th case, which meets every recording
#: and every variant (the full suite runs all of them).
QUICK_CASES = quick_sample(CASES, 6, covers=(lambda case: case[0], lambda case: case[1]))


def body_of(case: tuple[str, str]) -> bytes:
    return variants(load_stream(case[0]))[case[1]]


def cut_points(body: bytes, kind: str) -> list[int]:
    """Every byte of a recording; of a variant, every byte near a line end and every 7th."""
    if kind == "as recorded":
        return list(range(len(body) + 1))
    near = {p + d for p, byte in enumerate(body) if byte in b"\r\n" for d in range(-2, 3)}
    return sorted({*range(0, len(body) + 1, 7), *(p for p in near if 0 <= p <= len(body))})


@pytest.mark.parametrize(("name", "kind"), CASES)
@pytest.mark.slow
def test_every_split_in_two(name: str, kind: str) -> None:
    body = body_of((name, kind))
    cuts = cut_points(body, kind)
    fast = [_run([body[:cut], body[cut:]]) for cut in cuts]
    with general_path():
        general = [_run([body[:cut], body[cut:]]) for cut in cuts]
    for cut, one, other in zip(cuts, fast, general, strict=True):
        assert one == other, cut


@pytest.mark.parametrize(("name", "kind"), QUICK_CASES)
def test_fixed_read_sizes(name: str, kind: str) -> None:
    body = body_of((name, kind))
    for size in (1, 2, 3, 7, 50, 64, 100, 127, 500, 1000, 4096, len(body)):
        same_events(body, [body[i : i + size] for i in range(0, len(body), size)])


@settings(max_examples=examples(300), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(case=st.sampled_from(CASES), cuts=st.lists(st.integers(0, 1 << 14), max_size=12))
def test_random_splits(case: tuple[str, str], cuts: list[int]) -> None:
    body = body_of(case)
    points = sorted({cut % (len(body) + 1) for cut in cuts})
    reads = [body[a:b] for a, b in zip([0, *points], [*points, len(body)], strict=True)]
    same_events(body, reads)


def test_the_fast_path_is_taken(monkeypatch: pytest.MonkeyPatch) -> None:
    """Guard the guard: text chunks are read as ``TextChunk`` (else these tests would compare
    the general path with itself), and only while the answer is text."""
    decode = gemini_mapper.decode_text_chunk
    taken: list[str] = []

    def spy(data: bytes) -> Any:
        chunk = decode(data)
        taken.append(chunk.candidates[0].content.parts[0].text)
        return chunk

    monkeypatch.setattr(gemini_mapper, "decode_text_chunk", spy)
    body = b"".join(_text(f"piece {n} ") for n in range(20))
    call = _event(_part(functionCall={"name": "f", "args": {}}))
    thought = _event(_part(text="hm", thought=True))
    GeminiMapper().feed_bytes(body + call + thought + thought + body)
    # After the call and thoughts, the first text chunk is read the general way; it shows that
    # text goes on, and the next ones are read the short way again.
    assert taken == [f"piece {n} " for n in (*range(20), *range(1, 20))]
