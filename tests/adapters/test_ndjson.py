"""The sans-I/O NDJSON decoder: framing rules, the cap, and any split of the bytes is the same."""

from __future__ import annotations

import random
import time
import tracemalloc
from pathlib import Path

import pytest
from _toolwire_testdata import STREAMS, examples
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from toolwire.adapters.ndjson import DEFAULT_MAX_LINE_BYTES, FrameOverflow, NDJSONDecoder
from toolwire.adapters.sse import QUOTE_BYTES
from toolwire.core.errors import ConfigurationError

Item = bytes | FrameOverflow


def decode(*reads: bytes, cap: int = DEFAULT_MAX_LINE_BYTES) -> list[Item]:
    decoder = NDJSONDecoder(max_line_bytes=cap)
    items: list[Item] = []
    for read in reads:
        items.extend(decoder.feed(read).payloads)
    items.extend(decoder.finish().payloads)
    return items


def split_at(body: bytes, cuts: list[int]) -> list[bytes]:
    points = sorted({min(max(c, 0), len(body)) for c in cuts})
    pieces, start = [], 0
    for point in [*points, len(body)]:
        pieces.append(body[start:point])
        start = point
    return pieces


def reference(body: bytes, cap: int) -> list[Item]:
    """The rules written the slow, obvious way: the whole body at once."""
    lines = body.split(b"\n")
    if not lines[-1]:
        lines.pop()  # the body ended with a line end: no last line to flush
    out: list[Item] = []
    for line in lines:
        if line.endswith(b"\r"):
            line = line[:-1]
        if len(line) > cap:
            out.append(FrameOverflow(size=len(line), limit=cap, head=line[:QUOTE_BYTES]))
        elif line.strip(b" \t\r\n"):
            out.append(line)
    return out


# -- framing rules --------------------------------------------------------------------------------


def test_lines_come_out_without_their_line_end() -> None:
    assert decode(b'{"a":1}\n{"b":2}\n') == [b'{"a":1}', b'{"b":2}']


def test_crlf_is_tolerated_even_split_between_reads() -> None:
    assert decode(b'{"a":1}\r\n{"b":2}\r\n') == [b'{"a":1}', b'{"b":2}']
    assert decode(b'{"a":1}\r', b'\n{"b":2}\r', b"\n") == [b'{"a":1}', b'{"b":2}']


def test_blank_and_whitespace_lines_are_skipped() -> None:
    body = b'\n\r\n{"a":1}\n  \t \n\r\r\n{"b":2}\n\n'
    assert decode(body) == [b'{"a":1}', b'{"b":2}']


def test_a_value_with_surrounding_spaces_is_kept_as_sent() -> None:
    # Only the line end goes: the JSON decoder skips the spaces itself.
    assert decode(b'  {"a":1} \n') == [b'  {"a":1} ']


def test_a_last_line_without_newline_is_flushed_by_finish() -> None:
    decoder = NDJSONDecoder()
    assert decoder.feed(b'{"a":1}\n{"done":true}').payloads == [b'{"a":1}']
    assert decoder.finish().payloads == [b'{"done":true}']
    assert decode(b'{"done":true}\r') == [b'{"done":true}']


def test_lines_come_out_as_soon_as_complete() -> None:
    decoder = NDJSONDecoder()
    assert decoder.feed(b'{"a"').payloads == []
    assert decoder.feed(b":1}").payloads == []
    assert decoder.feed(b'\n{"b"').payloads == [b'{"a":1}']
    assert decoder.feed(b"").payloads == []
    assert decoder.finish().payloads == [b'{"b"']


def ndjson_recordings() -> list[Path]:
    return sorted(STREAMS.glob("*/*.ndjson"))


@pytest.mark.parametrize("path", ndjson_recordings(), ids=lambda path: path.name)
@settings(
    max_examples=50, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(cuts=st.lists(st.integers(min_value=0, max_value=4096), max_size=20))
def test_recording_any_split(path: Path, cuts: list[int]) -> None:
    body = path.read_bytes()
    expected = [line for line in body.split(b"\n") if line]
    assert decode(body) == expected
    assert decode(*split_at(body, [c % (len(body) + 1) for c in cuts])) == expected


TOKENS = [b'{"a":1}', b"{", b"}", b"x", b" ", b"\t", b"\n", b"\n", b"\r", b"\r\n", b"\xc3\xa9"]


@settings(max_examples=examples(600), deadline=None)
@given(
    body=st.lists(st.sampled_from(TOKENS), max_size=60).map(b"".join),
    cap=st.one_of(st.integers(min_value=1, max_value=30), st.just(DEFAULT_MAX_LINE_BYTES)),
    data=st.data(),
)
def test_any_body_any_split_matches_the_reference(
    body: bytes, cap: int, data: st.DataObject
) -> None:
    expected = reference(body, cap)
    cuts = data.draw(st.lists(st.integers(min_value=0, max_value=len(body)), max_size=12))
    for reads in (
        split_at(body, cuts),
        split_at(body, [i + 1 for i, byte in enumerate(body) if byte in b"\r\n"]),
        [body[i : i + 1] for i in range(len(body))],
    ):
        decoder = NDJSONDecoder(max_line_bytes=cap)
        items: list[Item] = []
        last = b""  # the last read that was not empty: its unfinished end is kept as it is
        for read in reads:
            items.extend(decoder.feed(read).payloads)
            last = read or last
            assert decoder.buffered_bytes <= cap + 1 + len(last)  # over the cap: not kept
        items.extend(decoder.finish().payloads)
        assert items == expected
        assert decoder.bytes_seen == len(body)
        assert decoder.first_bytes == body[:QUOTE_BYTES]
        assert all(type(item) is bytes or type(item) is FrameOverflow for item in items)


# -- the cap --------------------------------------------------------------------------------------

READ = 64 * 1024


def test_a_50_mb_line_keeps_memory_bounded_and_is_reported_once() -> None:
    cap = DEFAULT_MAX_LINE_BYTES
    decoder = NDJSONDecoder()
    reads = 50 * 1024 * 1024 // READ
    got = decoder.feed(b'{"first":1}\n{"big":"').payloads
    tracemalloc.start()
    try:
        for number in range(reads):
            # A new object per read, as from a socket: what the decoder keeps is really kept.
            got += decoder.feed(bytes([97 + number % 26]) * READ).payloads
            assert decoder.buffered_bytes <= cap + 1
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    got += decoder.feed(b'"}\r\n{"next":2}\n').payloads + decoder.finish().payloads
    assert peak < cap + 4 * READ
    assert got == [
        b'{"first":1}',
        FrameOverflow(
            size=len(b'{"big":"') + reads * READ + len(b'"}'),
            limit=cap,
            head=(b'{"big":"' + b"a" * READ)[:QUOTE_BYTES],
        ),
        b'{"next":2}',
    ]
    assert decoder.buffered_bytes == 0
    assert decoder.saw_object is True


def test_an_oversized_line_in_one_read() -> None:
    assert decode(b'{"a":1}\n0123456789\r\n{"b":2}\n', cap=9) == [
        b'{"a":1}',
        FrameOverflow(size=10, limit=9, head=b"0123456789"),
        b'{"b":2}',
    ]


def test_the_line_end_is_not_counted_against_the_cap() -> None:
    body = b"0123456789\r\n"
    for cut in range(len(body) + 1):
        assert decode(body[:cut], body[cut:], cap=10) == [b"0123456789"], cut
        assert decode(body[:cut], body[cut:], cap=9) == [
            FrameOverflow(size=10, limit=9, head=b"0123456789")
        ], cut


def test_an_oversized_last_line_is_reported_by_finish() -> None:
    decoder = NDJSONDecoder(max_line_bytes=4)
    assert decoder.feed(b"01234").payloads + decoder.feed(b"56789").payloads == []
    assert decoder.finish().payloads == [FrameOverflow(size=10, limit=4, head=b"0123456789")]


def test_the_cap_must_be_a_positive_int() -> None:
    for bad in (0, -1, 2.5, None):
        with pytest.raises(ConfigurationError):
            NDJSONDecoder(max_line_bytes=bad)  # type: ignore[arg-type]


# -- cost is linear in the bytes, however they are split -----------------------------------------


def seconds_to_decode_one_line(kilobytes: int) -> float:
    """The least CPU time of a few runs (a busy neighbour cannot inflate it as it does the wall
    clock: at 2-4x load the wall-clock ratio reached 58x): one line of ``kilobytes`` KB, fed
    in 1 KB reads."""
    block = b"x" * 1024  # the same object each read, so that only the decoder's work grows
    reads = [b'{"a":"', *[block] * kilobytes, b'"}\n']
    best = float("inf")
    for _ in range(3):
        decoder = NDJSONDecoder()
        start = time.process_time()
        for read in reads:
            got = decoder.feed(read).payloads
        best = min(best, time.process_time() - start)
        assert len(got) == 1
        assert len(got[0]) == kilobytes * 1024 + 8  # type: ignore[arg-type]
    return best


@pytest.mark.slow
def test_a_long_line_in_small_reads_costs_linear_time() -> None:
    # 8x the bytes: about 8x the CPU time when linear, 64x when quadratic; 24x leaves 3x for
    # noise (a neighbour on the other half of a hyperthreaded core). Best of interleaved runs,
    # so that a busy moment of the machine hits both sizes.
    small = large = float("inf")
    for _ in range(3):
        small = min(small, seconds_to_decode_one_line(512))
        large = min(large, seconds_to_decode_one_line(4096))
    assert large < 24 * small, (small, large)


# -- telling a body that is no NDJSON at all ------------------------------------------------------

HTML_502 = (
    b"<html>\r\n<head><title>502 Bad Gateway</title></head>\r\n<body>\r\n"
    b"<center><h1>502 Bad Gateway</h1></center>\r\n</body>\r\n</html>\r\n"
)


@pytest.mark.parametrize(
    "body",
    [
        pytest.param(HTML_502, id="html-502"),
        pytest.param(b"upstream connect error or disconnect/reset before headers", id="text"),
        pytest.param(b"", id="empty"),
        pytest.param(random.Random(7).randbytes(20_000).replace(b"{", b"("), id="binary"),
    ],
)
def test_a_body_that_is_no_ndjson_is_told_apart(body: bytes) -> None:
    for cuts in ([], [1, 2, 3], list(range(0, len(body), 97))):
        decoder = NDJSONDecoder()
        for read in split_at(body, cuts):
            decoder.feed(read)
        decoder.finish()
        assert decoder.saw_object is False
        assert decoder.bytes_seen == len(body)
        assert decoder.first_bytes == body[:QUOTE_BYTES]


def test_a_json_error_body_is_a_line_like_any_other() -> None:
    # Ollama sends its errors in-band as one object: framing hands it on; the mapper reads it.
    decoder = NDJSONDecoder()
    assert decoder.feed(b'{"error": {"message": "bad"}}').payloads == []
    assert decoder.finish().payloads == [b'{"error": {"message": "bad"}}']
    assert decoder.saw_object is True
