"""The Anthropic fast path (bulk framing, inline deltas) gives what the general path gives.

The general path is forced by putting the plain :class:`SSEDecoder` back in place of the
mapper's :class:`EventFramer`: every byte then goes through the decoder line by line and every
event through ``_message`` / ``_event`` / ``ContentReader``, as before the fast path existed.
Both mappers read every recording, and variants of it made to leave the fast path (``\\r\\n``
line ends, comments, nameless and multi-line events, a byte order mark, unreadable payloads,
deltas out of place), at every split into two reads, at fixed read sizes, and at random splits.
The framer alone is also checked against the decoder message by message, read by read,
including events over a small cap.
"""

from __future__ import annotations

import json
import re
from typing import Any

import pytest
from _toolwire_testdata import STREAMS, load_stream
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from toolwire.adapters.anthropic import AnthropicMapper
from toolwire.adapters.anthropic.framing import EventFramer, event_name
from toolwire.adapters.sse import FrameOverflow, SSEDecoder, SSEMessage
from toolwire.core.events import Event, encode_event

RECORDINGS = sorted(
    f"anthropic/{path.name}" for path in (STREAMS / "anthropic").iterdir() if path.suffix == ".sse"
)


class _DecoderOnly:
    """The framing before :class:`EventFramer`: every byte through the general decoder."""

    def __init__(self, max_event_bytes: int | None = None) -> None:
        self.decoder = SSEDecoder() if max_event_bytes is None else SSEDecoder(max_event_bytes)

    def feed(
        self, data: bytes
    ) -> tuple[list[SSEMessage | FrameOverflow], list[bytes], list[bytes]]:
        return self.decoder.feed(data), [], []

    def finish(self) -> list[SSEMessage | FrameOverflow]:
        return self.decoder.finish()


def general_mapper() -> AnthropicMapper:
    mapper = AnthropicMapper()
    mapper._framer = _DecoderOnly()  # type: ignore[assignment]
    return mapper


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


@pytest.mark.parametrize(("name", "kind"), CASES)
def test_fixed_read_sizes(name: str, kind: str) -> None:
    body = variants(load_stream(name))[kind]
    for size in (1, 2, 3, 5, 7, 11, 17, 26, 31, 64, 100, 127, 500, 1000, 4096, len(body)):
        same_events(body, [body[i : i + size] for i in range(0, len(body), size)])


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(case=st.sampled_from(CASES), cuts=st.lists(st.integers(0, 1 << 14), max_size=12))
def test_random_splits(case: tuple[str, str], cuts: list[int]) -> None:
    body = variants(load_stream(case[0]))[case[1]]
    points = sorted({cut % (len(body) + 1) for cut in cuts})
    reads = [body[a:b] for a, b in zip([0, *points], [*points, len(body)], strict=True)]
    same_events(body, reads)


def test_a_long_event_is_held_by_the_decoder() -> None:
    """The framer keeps at most the end of one read: a long event goes to the decoder, which
    holds it in linear time, instead of being joined again on every read."""
    body = b"event: a\ndata: 1\n\nevent: b\ndata: " + b"x" * 100_000 + b"\n\n"
    framer = EventFramer()
    for start in range(0, len(body), 1000):
        framer.feed(body[start : start + 1000])
        assert len(framer._pending) <= 1000
    assert framer.decoder.buffered_bytes == 0


def test_the_fast_path_is_taken() -> None:
    """Guard the guard: a whole recording in one read is framed by EventFramer, past its first
    event (else these tests would compare the general path with itself)."""
    framer = EventFramer()
    messages, lines, payloads = framer.feed(load_stream("anthropic/text_then_tool_use.sse"))
    assert len(messages) == 1
    assert len(payloads) > 10
    assert [event_name(line) for line in lines][:1] == [b"content_block_start"]


# -- the framer alone, message by message --------------------------------------------------------


def _framed(framer: EventFramer, read: bytes) -> list[tuple[bytes | None, bytes] | FrameOverflow]:
    messages, lines, payloads = framer.feed(read)
    return [
        *map(_item, messages),
        *((event_name(n), p) for n, p in zip(lines, payloads, strict=True)),
    ]


def _item(message: SSEMessage | FrameOverflow) -> tuple[bytes | None, bytes] | FrameOverflow:
    return message if isinstance(message, FrameOverflow) else (message.event, message.data)


def same_messages(body: bytes, reads: list[bytes], cap: int) -> None:
    framer, decoder = EventFramer(cap), SSEDecoder(cap)
    for read in reads:
        assert _framed(framer, read) == list(map(_item, decoder.feed(read)))
        assert framer.decoder.saw_field == decoder.saw_field
        if not decoder.saw_field:
            assert framer.decoder.bytes_seen == decoder.bytes_seen
            assert framer.decoder.first_bytes == decoder.first_bytes
    assert list(map(_item, framer.finish())) == list(map(_item, decoder.finish()))
    assert framer.decoder.saw_field == decoder.saw_field
    assert framer.decoder.buffered_bytes == decoder.buffered_bytes == 0


_A, _C = b"event: a\ndata: 1\n\n", b"event: c\ndata: 3\n\n"
FRAMER_BODIES = {
    "events": _A + b"event: b\ndata: 2\n\n" + _C,
    "long event": _A + b"event: b\ndata: " + b"x" * 90 + b"\n\n" + _C,
    "long name": _A + b"event: " + b"n" * 90 + b"\ndata: 2\n\n" + _C,
    "long comment": _A + b":" + b"c" * 90 + b"\n\n" + _C,
    "no data": _A + b"event: b\n\n" + _C,
    "empty name": _A + b"event: \ndata: 2\n\n",
    "id in place of the name": _A + b"id: 7\ndata: 2\n\n" + _C,
    "comment in place of the name": _A + b": hi\ndata: 2\n\n" + _C,
    "data in place of the name": _A + b"data: 1\ndata: 2\n\n" + _C,
    "cr lf": b"event: a\r\ndata: 1\r\n\r\nevent: b\ndata: 2\n\nevent: c\ndata: 3\r\r",
    "lone cr": b"event: a\ndata: 1\n\nevent: b\rdata: 2\r\revent: c\ndata: 3\n\n",
    "cr ending a read": b"event: a\ndata: 1\n\nevent: b\ndata: 2\r\n\nevent: c\ndata: 3\n\n",
    "newlines": b"\n\n\nevent: a\ndata: 1\n\n\n\nevent: b\ndata: 2\n\n\n",
    "not a stream": b"<html>\n\n<body>oops</body>\n\n</html>\n",
    "bom": b"\xef\xbb\xbfevent: a\ndata: 1\n\nevent: b\ndata: 2\n\n",
    "id and retry": b"event: a\ndata: 1\n\nid: 7\nevent: b\ndata: 2\n\nretry: 5\n\n",
    "unterminated": b"event: a\ndata: 1\n\nevent: b\ndata: 2",
}


@pytest.mark.parametrize("kind", FRAMER_BODIES)
@pytest.mark.parametrize("cap", [40, 16 * 1024 * 1024])
def test_framer_gives_the_decoders_messages_at_every_split(kind: str, cap: int) -> None:
    body = FRAMER_BODIES[kind]
    for first in range(len(body) + 1):
        for second in range(first, len(body) + 1, 3):
            same_messages(body, [body[:first], body[first:second], body[second:]], cap)


@settings(max_examples=300, deadline=None)
@given(
    lines=st.lists(
        st.sampled_from(
            [
                b"event: a",
                b"event: b",
                b"data: 1",
                b"data: {}",
                b"",
                b"",
                b":c",
                b"data:2",
                b"event:x",
                b"id: 1",
                b"data: " + b"y" * 30,
            ]
        ),
        max_size=30,
    ),
    ends=st.lists(st.sampled_from([b"\n", b"\n", b"\n", b"\r\n", b"\r"]), min_size=1),
    cuts=st.lists(st.integers(0, 1000), max_size=6),
    cap=st.sampled_from([20, 50, 1 << 20]),
)
def test_framer_on_any_lines(
    lines: list[bytes], ends: list[bytes], cuts: list[int], cap: int
) -> None:
    body = b"".join(line + ends[i % len(ends)] for i, line in enumerate(lines))
    points = sorted({cut % (len(body) + 1) for cut in cuts})
    reads = [body[a:b] for a, b in zip([0, *points], [*points, len(body)], strict=True)]
    same_messages(body, reads, cap)
