"""The sans-I/O SSE decoder: framing rules, and any split of the bytes gives the same messages."""

from __future__ import annotations

import random
import time
import tracemalloc
from pathlib import Path

import pytest
from _toolwire_testdata import STREAMS, examples
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from toolwire.adapters.sse import (
    DEFAULT_MAX_EVENT_BYTES,
    QUOTE_BYTES,
    FrameOverflow,
    Frames,
    SSEDecoder,
)
from toolwire.core.errors import ConfigurationError

Pair = tuple[bytes | None, bytes]
Message = Pair | FrameOverflow


def messages(frames: Frames) -> list[Message]:
    """The columns of one feed as rows: ``(name, data)``, or the overflow in its place."""
    return [
        payload if type(payload) is FrameOverflow else (name, payload)  # type: ignore[misc]
        for name, payload in zip(frames.names, frames.payloads, strict=True)
    ]


def decode(*reads: bytes) -> list[Pair]:
    decoder = SSEDecoder()
    got: list[Message] = []
    for read in reads:
        got.extend(messages(decoder.feed(read)))
    got.extend(messages(decoder.finish()))
    assert not any(isinstance(m, FrameOverflow) for m in got)  # far under the default cap
    return got  # type: ignore[return-value]


def split_at(body: bytes, cuts: list[int]) -> list[bytes]:
    points = sorted({min(max(c, 0), len(body)) for c in cuts})
    pieces, start = [], 0
    for point in [*points, len(body)]:
        pieces.append(body[start:point])
        start = point
    return pieces


# A body exercising every rule at once: CRLF, CR-only, LF, a comment, an event name, two data
# lines, "data:" without the space, multibyte UTF-8 (2, 3 and 4 bytes), an id/retry field,
# [DONE], and a last event with no blank line after it.
MIXED = (
    b": keep-alive comment\r\n"
    b"event: message_start\r\n"
    b'data: {"a":"\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80"}\r\n'
    b"\r\n"
    b"id: 7\rretry: 100\rdata:no-space\rdata: second line\r\r"
    b"data: lf\n\n"
    b"data: [DONE]\n\n"
    b"data: tail without newline"
)
MIXED_EXPECTED: list[Pair] = [
    (b"message_start", '{"a":"é€😀"}'.encode()),
    (None, b"no-space\nsecond line"),
    (None, b"lf"),
    (None, b"[DONE]"),
    (None, b"tail without newline"),
]


def test_mixed_body_in_one_read() -> None:
    assert decode(MIXED) == MIXED_EXPECTED


def test_mixed_body_byte_by_byte() -> None:
    assert decode(*[MIXED[i : i + 1] for i in range(len(MIXED))]) == MIXED_EXPECTED


@pytest.mark.parametrize("cut", range(1, len(MIXED)))
def test_mixed_body_every_two_way_split(cut: int) -> None:
    assert decode(MIXED[:cut], MIXED[cut:]) == MIXED_EXPECTED


@settings(max_examples=examples(300), deadline=None)
@given(st.lists(st.integers(min_value=0, max_value=len(MIXED)), max_size=12))
def test_mixed_body_any_split(cuts: list[int]) -> None:
    assert decode(*split_at(MIXED, cuts)) == MIXED_EXPECTED


def test_multibyte_character_split_between_reads_is_joined() -> None:
    euro = "€".encode()  # 3 bytes
    body = b"data: " + euro + b"\n\n"
    assert decode(body[:7], body[7:]) == [(None, euro)]
    assert decode(body[:8], body[8:]) == [(None, euro)]
    assert decode(*[body[i : i + 1] for i in range(len(body))]) == [(None, euro)]


def test_crlf_split_between_reads_is_one_line_end() -> None:
    # "\r" ends one read, "\n" starts the next: one line end, not two (which would dispatch
    # the event early and then see a stray blank line).
    assert decode(b"data: a\r", b"\ndata: b\r\n\r\n") == [(None, b"a\nb")]
    assert decode(b"data: a\r\n\r", b"\n") == [(None, b"a")]
    assert decode(b"data: a\r", b"\n", b"\r\n") == [(None, b"a")]


def test_cr_then_lf_in_a_later_read_is_a_real_blank_line() -> None:
    # "\r" | "\n" is one line end; another "\n" after that is a blank line (dispatch).
    assert decode(b"data: a\r", b"\n", b"\ndata: b\n\n") == [(None, b"a"), (None, b"b")]


def test_cr_only_line_ends() -> None:
    assert decode(b"data: x\r\rdata: y\r\r") == [(None, b"x"), (None, b"y")]


def test_comments_are_ignored() -> None:
    assert decode(b": ping\n\n:\ndata: x\n: between\n\n") == [(None, b"x")]


def test_data_without_space_and_with_two_spaces() -> None:
    # Only one leading space is removed (WHATWG); the second is part of the value.
    assert decode(b"data:x\n\ndata:  y\n\n") == [(None, b"x"), (None, b" y")]


def test_several_data_lines_are_joined_with_newline() -> None:
    assert decode(b'data: {\ndata: "a": 1\ndata: }\n\n') == [(None, b'{\n"a": 1\n}')]


def test_event_name_applies_to_one_event_only() -> None:
    body = b"event: ping\ndata: 1\n\nevent:pong\ndata: 2\n\ndata: 3\n\n"
    assert decode(body) == [(b"ping", b"1"), (b"pong", b"2"), (None, b"3")]


def test_event_without_data_is_not_dispatched() -> None:
    assert decode(b"event: ping\n\ndata: x\n\n") == [(None, b"x")]


def test_empty_data_line_dispatches_empty_data() -> None:
    assert decode(b"data:\n\n") == [(None, b"")]


def test_no_trailing_newline_is_flushed_by_finish() -> None:
    decoder = SSEDecoder()
    assert decoder.feed(b"data: [DONE]").payloads == []
    assert messages(decoder.finish()) == [(None, b"[DONE]")]


def test_last_event_without_blank_line_is_flushed() -> None:
    assert decode(b"data: a\n") == [(None, b"a")]


def test_done_is_just_data_for_the_decoder() -> None:
    assert decode(b"data: [DONE]\n\n") == [(None, b"[DONE]")]


def test_feed_returns_messages_as_soon_as_complete() -> None:
    decoder = SSEDecoder()
    assert decoder.feed(b"data: a\n").payloads == []
    assert messages(decoder.feed(b"\ndata: b")) == [(None, b"a")]
    assert decoder.feed(b"").payloads == []
    assert messages(decoder.finish()) == [(None, b"b")]


def test_unknown_fields_are_ignored() -> None:
    assert decode(b"id: 1\nretry: 5\nfoo: bar\ndata: x\n\n") == [(None, b"x")]


def test_gemini_style_crlf_recording() -> None:
    body = b'data: {"a": 1}\r\n\r\ndata: {"b": 2}\r\n\r\n'
    expected = [(None, b'{"a": 1}'), (None, b'{"b": 2}')]
    for cut in range(1, len(body)):
        assert decode(body[:cut], body[cut:]) == expected, cut


def test_frames_repr_names_columns() -> None:
    frames = SSEDecoder().feed(b"event: e\ndata: d\n\n")
    assert repr(frames) == "Frames(payloads=[b'd'], names=[b'e'])"


def test_a_leading_byte_order_mark_is_not_part_of_the_first_line() -> None:
    body = b"\xef\xbb\xbfdata: a\n\n"
    for cut in range(len(body) + 1):
        decoder = SSEDecoder()
        got = decoder.feed(body[:cut]).payloads + decoder.feed(body[cut:]).payloads
        assert got + decoder.finish().payloads == [b"a"], cut


def test_a_data_field_without_a_colon_is_an_empty_data_line() -> None:
    decoder = SSEDecoder()
    got = decoder.feed(b"data\ndata: x\n\n").payloads + decoder.finish().payloads
    assert got == [b"\nx"]


# -- the recordings: any split gives the same messages -------------------------------------------


def sse_recordings() -> list[Path]:
    return sorted(STREAMS.glob("*/*.sse"))


@pytest.mark.parametrize(
    "path", sse_recordings(), ids=lambda path: f"{path.parent.name}/{path.name}"
)
@settings(
    max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(cuts=st.lists(st.integers(min_value=0, max_value=1 << 16), max_size=20))
@pytest.mark.slow
def test_recording_any_split(path: Path, cuts: list[int]) -> None:
    body = path.read_bytes()
    assert decode(*split_at(body, [c % (len(body) + 1) for c in cuts])) == decode(body)


# -- a reference model of the rules, the cap included --------------------------------------------

Item = tuple[object, ...]


def reference(body: bytes, cap: int) -> list[Item]:
    """The rules written the slow, obvious way: the whole body at once, all of it kept.

    An event is over the cap when its ``data``/``event`` lines add up to more than ``cap``; its
    name is the last one set while it was still under; its quote is the start of all its data.
    """
    if body.startswith(b"\xef\xbb\xbf"):
        body = body[3:]
    lines = body.replace(b"\r\n", b"\n").replace(b"\r", b"\n").split(b"\n")
    if lines[-1]:
        lines.append(b"")  # the end of the body ends the last line and the last event
    out: list[Item] = []
    data: list[bytes] = []
    event: bytes | None = None
    size = 0
    for line in lines:
        if line.startswith(b"data:") or line == b"data":
            size += len(line)
            data.append(line[6:] if line[5:6] == b" " else line[5:])
        elif line.startswith(b"event:"):
            size += len(line)
            if size <= cap:
                event = line[7:] if line[6:7] == b" " else line[6:]
        elif not line:
            if size > cap:
                out.append(("overflow", event, size, b"\n".join(data)[:QUOTE_BYTES], cap))
            elif data:
                out.append((event, b"\n".join(data)))
            data, event, size = [], None, 0
    return out


def items_of(got: list[Message]) -> list[Item]:
    return [
        ("overflow", m.event, m.size, m.head, m.limit) if isinstance(m, FrameOverflow) else m
        for m in got
    ]


TOKENS = [
    b"data: ", b"data:", b"data", b"event: ", b"event:", b"id: 7", b"retry: 5", b":", b" ",
    b"x", b"yy", b"\xc3\xa9", b"{}", b"0123456789abcdef", b"\n", b"\n", b"\n\n", b"\r", b"\r\n",
]  # fmt: skip


FIELDS = [b"data: ", b"data:", b"data", b"event: ", b"event:", b": ", b"id: ", b"retry: ", b"x"]
VALUES = [b"", b"x", b" y", b"{}", b"\xc3\xa9", b"0123456789abcdef", b"z" * 45]


@st.composite
def sse_bodies(draw: st.DrawFn) -> bytes:
    """Bodies as lines (field, value, any line end, many blank lines), or as loose tokens."""
    bom = b"\xef\xbb\xbf" if draw(st.booleans()) else b""
    if draw(st.booleans()):
        return bom + b"".join(draw(st.lists(st.sampled_from(TOKENS), max_size=60)))
    field = st.sampled_from([*FIELDS, b"", b""])  # b"": a blank line, often
    value = st.lists(st.sampled_from(VALUES), max_size=3).map(b"".join)
    line = st.tuples(field, value).map(lambda pair: pair[0] + pair[1] if pair[0] else b"")
    ends = st.sampled_from([b"\n", b"\n", b"\r", b"\r\n"])
    lines = draw(st.lists(st.tuples(line, ends).map(b"".join), max_size=25))
    return bom + b"".join(lines) + draw(st.sampled_from([b"", b"data: last", b"event: e"]))


def line_ends(body: bytes) -> list[int]:
    """Cuts right after each line end: where a held line and a split CRLF are found."""
    return [i + 1 for i, byte in enumerate(body) if byte in b"\r\n"]


@settings(max_examples=examples(600), deadline=None)
@given(
    body=sse_bodies(),
    cap=st.one_of(st.integers(min_value=1, max_value=60), st.just(DEFAULT_MAX_EVENT_BYTES)),
    data=st.data(),
)
@pytest.mark.slow
def test_any_body_any_split_matches_the_reference(
    body: bytes, cap: int, data: st.DataObject
) -> None:
    expected = reference(body, cap)
    cuts = data.draw(st.lists(st.integers(min_value=0, max_value=len(body)), max_size=12))
    for reads in (
        split_at(body, cuts),
        split_at(body, line_ends(body)),
        [body[i : i + 1] for i in range(len(body))],
    ):
        decoder = SSEDecoder(max_event_bytes=cap)
        got: list[Message] = []
        last = b""  # the last read that was not empty: its unfinished end is kept as it is
        for read in reads:
            got.extend(messages(decoder.feed(read)))
            last = read or last
            assert decoder.buffered_bytes <= cap + len(last)  # over the cap: counted, not kept
        got.extend(messages(decoder.finish()))
        assert items_of(got) == expected


@settings(max_examples=examples(300), deadline=None)
@given(body=sse_bodies(), cap=st.integers(min_value=1, max_value=40))
def test_the_columns_agree(body: bytes, cap: int) -> None:
    """A payload is bytes or an overflow, and the names column is as long as the payloads."""
    decoder = SSEDecoder(max_event_bytes=cap)
    frames = [decoder.feed(read) for read in split_at(body, line_ends(body))]
    for each in [*frames, decoder.finish()]:
        assert all(type(p) is bytes or type(p) is FrameOverflow for p in each.payloads)
        assert len(each.names) == len(each.payloads)
        if each._event_lines is not None:
            assert len(each._event_lines) == len(each.payloads)


@settings(max_examples=examples(300), deadline=None)
@given(body=sse_bodies(), cuts=st.lists(st.integers(min_value=0, max_value=400), max_size=6))
def test_no_field_seen_means_no_message(body: bytes, cuts: list[int]) -> None:
    decoder = SSEDecoder()
    got = [p for read in split_at(body, cuts) for p in decoder.feed(read).payloads]
    got += decoder.finish().payloads
    assert decoder.saw_field or not got
    assert decoder.bytes_seen == len(body)
    assert decoder.first_bytes == body[:QUOTE_BYTES]


# -- the cap --------------------------------------------------------------------------------------

READ = 64 * 1024


def test_a_50_mb_line_keeps_memory_bounded_and_is_reported_once() -> None:
    cap = DEFAULT_MAX_EVENT_BYTES
    decoder = SSEDecoder()
    reads = 50 * 1024 * 1024 // READ
    got = messages(decoder.feed(b": opening comment\n\nevent: big\ndata: "))
    tracemalloc.start()
    try:
        for number in range(reads):
            # A new object per read, as from a socket: what the decoder keeps is really kept.
            got += messages(decoder.feed(bytes([97 + number % 26]) * READ))
            assert decoder.buffered_bytes <= cap
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    got += messages(decoder.feed(b"\n\ndata: next\n\n")) + messages(decoder.finish())
    assert peak < cap + 4 * READ  # the old decoder held (and re-copied) all 50 MB
    (overflow, following) = got
    assert isinstance(overflow, FrameOverflow)
    assert overflow == FrameOverflow(
        event=b"big",
        size=len(b"event: big") + len(b"data: ") + reads * READ,
        limit=cap,
        head=b"a" * QUOTE_BYTES,
    )
    assert following == (None, b"next")
    assert decoder.buffered_bytes == 0


def test_an_oversized_event_comes_out_in_place_of_its_payload() -> None:
    decoder = SSEDecoder(max_event_bytes=10)
    got = decoder.feed(b"data: 1\n\ndata: 0123456789\n\ndata: 2\n\n").payloads
    assert got == [b"1", FrameOverflow(size=16, limit=10, head=b"0123456789"), b"2"]
    assert [type(item) is bytes for item in got] == [True, False, True]


def test_data_lines_each_under_the_cap_overflow_together() -> None:
    decoder = SSEDecoder(max_event_bytes=100)
    line = b"data: " + b"z" * 40 + b"\n"  # 46 bytes a line: the third goes over 100
    got = messages(decoder.feed(line * 5 + b"\ndata: after\n\n")) + messages(decoder.finish())
    assert items_of(got) == [
        ("overflow", None, 5 * 46, b"\n".join([b"z" * 40] * 5), 100),
        (None, b"after"),
    ]


def test_the_quote_is_the_first_bytes_of_the_data() -> None:
    decoder = SSEDecoder(max_event_bytes=1000)
    value = bytes(range(48, 58)) * 200  # 2000 bytes, in 7-byte reads
    body = b"event: e\ndata:" + value + b"\n\n"
    got = [m for i in range(0, len(body), 7) for m in decoder.feed(body[i : i + 7]).payloads]
    assert got == [FrameOverflow(event=b"e", size=8 + 5 + 2000, limit=1000, head=value[:500])]


def test_an_oversized_event_without_a_blank_line_is_reported_by_finish() -> None:
    decoder = SSEDecoder(max_event_bytes=8)
    assert decoder.feed(b"data: 0123456789").payloads == []
    assert decoder.finish().payloads == [FrameOverflow(size=16, limit=8, head=b"0123456789")]


def test_an_oversized_comment_is_dropped_silently() -> None:
    decoder = SSEDecoder(max_event_bytes=64)
    comment = b":" + b"p" * 10_000 + b"\n"
    got = messages(decoder.feed(b"data: a\n" + comment[:5000]))
    got += messages(decoder.feed(comment[5000:] + b"\n"))
    assert items_of(got) == [(None, b"a")]
    assert decoder.buffered_bytes == 0


def test_the_cap_must_be_a_positive_int() -> None:
    for bad in (0, -1, 1.5, None):
        with pytest.raises(ConfigurationError):
            SSEDecoder(max_event_bytes=bad)  # type: ignore[arg-type]


# -- cost is linear in the bytes, however they are split -----------------------------------------


def seconds_to_decode_one_line(kilobytes: int) -> float:
    """The least CPU time of a few runs (a busy neighbour cannot inflate it as it does the wall
    clock: at 2-4x load the wall-clock ratio reached 58x): one data line of ``kilobytes`` KB,
    fed in 1 KB reads."""
    block = b"x" * 1024  # the same object each read, so that only the decoder's work grows
    reads = [b"data: ", *[block] * kilobytes, b"\n\n"]
    best = float("inf")
    for _ in range(3):
        decoder = SSEDecoder()
        start = time.process_time()
        for read in reads:
            got = decoder.feed(read).payloads
        best = min(best, time.process_time() - start)
        assert len(got) == 1
        assert len(got[0]) == kilobytes * 1024  # type: ignore[arg-type]
    return best


@pytest.mark.slow
def test_a_long_line_in_small_reads_costs_linear_time() -> None:
    # 8x the bytes: about 8x the CPU time when linear, 64x when quadratic; 24x leaves 3x for
    # noise (a neighbour on the other half of a hyperthreaded core) (the old decoder re-copied
    # the line on every read). Best of interleaved runs, so that a busy moment hits both sizes.
    small = large = float("inf")
    for _ in range(3):
        small = min(small, seconds_to_decode_one_line(512))
        large = min(large, seconds_to_decode_one_line(4096))
    assert large < 24 * small, (small, large)


# -- telling a body that is no event stream at all ------------------------------------------------

HTML_502 = (
    b"<html>\r\n<head><title>502 Bad Gateway</title></head>\r\n<body>\r\n"
    b"<center><h1>502 Bad Gateway</h1></center>\r\n<hr><center>nginx</center>\r\n"
    b"</body>\r\n</html>\r\n"
)


@pytest.mark.parametrize(
    "body",
    [
        pytest.param(HTML_502, id="html-502"),
        pytest.param(b'{"error": {"message": "bad"}}', id="json-error"),
        pytest.param(b'{\n  "error": {\n    "message": "bad"\n  }\n}\n', id="json-pretty"),
        pytest.param(b"", id="empty"),
        pytest.param(random.Random(7).randbytes(20_000).replace(b":", b"."), id="binary"),
    ],
)
def test_a_body_that_is_no_event_stream_is_told_apart(body: bytes) -> None:
    assert b"\ndata" not in body
    assert b"\n:" not in body
    assert not body.startswith((b"data", b":"))
    for cuts in ([], [1, 2, 3], list(range(0, len(body), 97))):
        decoder = SSEDecoder()
        got = [m for read in split_at(body, cuts) for m in decoder.feed(read).payloads]
        assert got + decoder.finish().payloads == []
        assert decoder.saw_field is False
        assert decoder.bytes_seen == len(body)
        assert decoder.first_bytes == body[:QUOTE_BYTES]


@pytest.mark.parametrize(
    "body", [b": ping\n\n", b"id: 1\n\n", b"retry: 10\n", b"event: ping\n\n", b"data\n\n"]
)
def test_any_field_or_comment_counts_as_an_event_stream(body: bytes) -> None:
    decoder = SSEDecoder()
    decoder.feed(body)
    decoder.finish()
    assert decoder.saw_field is True
