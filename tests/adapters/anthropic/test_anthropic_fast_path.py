"""The Anthropic fast path (inline deltas) gives what the general path gives.

The general path is forced by routing every event of a read through ``_message`` / ``_event``
/ ``ContentReader``, as before the fast path existed. Both mappers read every recording, and
variants of it made to leave the fast path (``\\r\\n`` line ends, comments, nameless and
multi-line events, a byte order mark, unreadable payloads, deltas out of place), at every split
into two reads, at fixed read sizes, and at random splits. (That the SSE decoder's bulk framing
equals its line-by-line framing is ``test_sse_bulk.py``.)
"""

from __future__ import annotations

import json
import re
from typing import Any

import pytest
from _toolwire_testdata import STREAMS, examples, load_stream, quick_sample
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from toolwire.adapters.anthropic import AnthropicMapper
from toolwire.adapters.framing import Frames
from toolwire.core.events import Event, encode_event

RECORDINGS = sorted(
    f"anthropic/{path.name}" for path in (STREAMS / "anthropic").iterdir() if path.suffix == ".sse"
)


class GeneralPathMapper(AnthropicMapper):
    """The mapper with its inline deltas off: every event through ``_message``."""

    def _frames(self, frames: Frames, out: list[Event]) -> None:
        for number, payload in enumerate(frames.payloads):
            self._message(frames.name(number), payload, out)


def general_mapper() -> AnthropicMapper:
    return GeneralPathMapper()


_SYNTHESIZED = re.compile(rb"toolwire-[0-9a-f]{16}-")


def run(mapper: AnthropicMapper, reads: list[bytes]) -> list[list[bytes]]:
    """The events of each read (then of ``finish``), encoded; synthesized ids made comparable."""
    batches: list[list[Event]] = []
    for read in reads:
        batches.append(mapper.feed_bytes(read))
        if mapper.done:
            break
    batches.append(mapper.finish())
    return [[_SYNTHESIZED.sub(b"toolwire-X-", encode_event(e)) for e in b] for b in batches]


def same_events(body: bytes, reads: list[bytes]) -> None:
    assert b"".join(reads) == body
    assert run(AnthropicMapper(), reads) == run(general_mapper(), reads)


def _events(body: bytes) -> list[bytes]:
    return [event + b"\n\n" for event in body.split(b"\n\n") if event]


def _delta(index: int, delta: dict[str, Any]) -> bytes:
    payload = {"type": "content_block_delta", "index": index, "delta": delta}
    return b"event: content_block_delta\ndata: " + json.dumps(payload).encode() + b"\n\n"


def _deltas_after(event: bytes) -> bytes:
    """Every hot delta kind for the block ``event`` is about: after its start, its stop..."""
    found = re.search(rb'"index": ?(\d+)', event)
    index = int(found.group(1)) if found else 0
    return b"".join(
        [
            _delta(index, {"type": "input_json_delta", "partial_json": "1"}),
            _delta(index, {"type": "input_json_delta", "partial_json": ""}),
            _delta(index, {"type": "text_delta", "text": "hi"}),
            _delta(index, {"type": "text_delta", "text": ""}),
            _delta(index, {"type": "thinking_delta", "thinking": "hm"}),
        ]
    )


def variants(body: bytes) -> dict[str, bytes]:
    """The recording, and bodies made from it that leave the fast path somewhere."""
    events = _events(body)
    middle = len(events) // 2
    last = events[-1]
    nameless = b"".join(e.split(b"\n", 1)[1] if e.startswith(b"event: ") else e for e in events)
    return {
        "as recorded": body,
        "crlf": body.replace(b"\n", b"\r\n"),
        "cr in the middle": b"".join([*events[:middle], events[middle].replace(b"\n", b"\r")]),
        "byte order mark": b"\xef\xbb\xbf" + body,
        "blank lines first": b"\n\n\n" + body,
        "comment between": b"".join([*events[:middle], b": keep-alive\n\n", *events[middle:]]),
        "nameless events": nameless,
        "no space after the field names": body.replace(b"event: ", b"event:").replace(
            b"data: ", b"data:"
        ),
        "extra blank line": b"".join([*events[:middle], b"\n", *events[middle:]]),
        "not json": b"".join(
            [*events[:middle], b"event: content_block_delta\ndata: {nope\n\n", *events[middle:]]
        ),
        "error not json": b"".join([*events[:middle], b"event: error\ndata: Overloaded\n\n"]),
        "untyped payload": b"".join(
            [*events[:middle], b'event: ping\ndata: {"index": 0}\n\n', *events[middle:]]
        ),
        "deltas after every event": b"".join(e + _deltas_after(e) for e in events),
        "delta for no block": b"".join(
            [*events[:middle], _deltas_after(b'"index": 9'), *events[middle:]]
        ),
        "delta after the end": body + _deltas_after(events[1]),
        "no last blank line": body[:-2] if body.endswith(b"\n\n") else body,
        "multi-line data": b"".join(
            [*events[:middle], b'event: ping\ndata: {"type":\ndata: "ping"}\n\n', *events[middle:]]
        ),
        "last event twice": body + last,
    }


CASES = [(name, kind) for name in RECORDINGS for kind in variants(load_stream(name))]
#: The fixed-read-size grid in the quick loop: every 5th case, which meets every recording
#: and every variant (the full suite runs all of them).
QUICK_CASES = quick_sample(CASES, 5, covers=(lambda case: case[0], lambda case: case[1]))


def cut_points(body: bytes, kind: str) -> list[int]:
    """Every byte of a recording; of a variant, every byte near an event end and every 31st."""
    if kind == "as recorded":
        return list(range(len(body) + 1))
    ends = [p for p in range(len(body)) if body[p : p + 2] in (b"\n\n", b"\r\r", b"\n\r")]
    near = {p + d for p in ends for d in range(-1, 4)}
    return sorted({*range(0, len(body) + 1, 31), *(p for p in near if p <= len(body))})


@pytest.mark.parametrize(("name", "kind"), CASES)
@pytest.mark.slow
def test_every_split_in_two(name: str, kind: str) -> None:
    body = variants(load_stream(name))[kind]
    for cut in cut_points(body, kind):
        reads = [body[:cut], body[cut:]]
        assert run(AnthropicMapper(), reads) == run(general_mapper(), reads), cut


@pytest.mark.parametrize(("name", "kind"), QUICK_CASES)
def test_fixed_read_sizes(name: str, kind: str) -> None:
    body = variants(load_stream(name))[kind]
    for size in (1, 2, 3, 5, 7, 11, 17, 26, 31, 64, 100, 127, 500, 1000, 4096, len(body)):
        same_events(body, [body[i : i + size] for i in range(0, len(body), size)])


@settings(max_examples=examples(300), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(case=st.sampled_from(CASES), cuts=st.lists(st.integers(0, 1 << 14), max_size=12))
def test_random_splits(case: tuple[str, str], cuts: list[int]) -> None:
    body = variants(load_stream(case[0]))[case[1]]
    points = sorted({cut % (len(body) + 1) for cut in cuts})
    reads = [body[a:b] for a, b in zip([0, *points], [*points, len(body)], strict=True)]
    same_events(body, reads)


def test_the_fast_path_is_taken() -> None:
    """Guard the guard: the deltas of a recording read in one go never reach ``_event``
    (else these tests would compare the general path with itself)."""
    mapper = AnthropicMapper()
    kinds: list[str | None] = []
    event = mapper._event

    def spy(decoded: Any, out: list[Event], raw: object) -> None:
        kinds.append(decoded.type)
        event(decoded, out, raw)

    mapper._event = spy  # type: ignore[method-assign,assignment]
    events = mapper.feed_bytes(load_stream("anthropic/text_then_tool_use.sse"))
    assert "content_block_start" in kinds
    assert "content_block_delta" not in kinds
    assert sum(type(e).__name__ == "ToolCallArgumentsDelta" for e in events) > 3
