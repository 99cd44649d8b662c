"""The sans-I/O SSE decoder: framing rules, and any split of the bytes gives the same messages."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from toolwire.adapters.sse import SSEDecoder, SSEMessage

Pair = tuple[bytes | None, bytes]


def decode(*reads: bytes) -> list[Pair]:
    decoder = SSEDecoder()
    messages: list[SSEMessage] = []
    for read in reads:
        messages.extend(decoder.feed(read))
    messages.extend(decoder.finish())
    return [(m.event, m.data) for m in messages]


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


@settings(max_examples=300, deadline=None)
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
    assert decoder.feed(b"data: [DONE]") == []
    messages = decoder.finish()
    assert [(m.event, m.data) for m in messages] == [(None, b"[DONE]")]


def test_last_event_without_blank_line_is_flushed() -> None:
    assert decode(b"data: a\n") == [(None, b"a")]


def test_done_is_just_data_for_the_decoder() -> None:
    assert decode(b"data: [DONE]\n\n") == [(None, b"[DONE]")]


def test_feed_returns_messages_as_soon_as_complete() -> None:
    decoder = SSEDecoder()
    assert decoder.feed(b"data: a\n") == []
    first = decoder.feed(b"\ndata: b")
    assert [(m.event, m.data) for m in first] == [(None, b"a")]
    assert decoder.feed(b"") == []
    assert [(m.event, m.data) for m in decoder.finish()] == [(None, b"b")]


def test_unknown_fields_are_ignored() -> None:
    assert decode(b"id: 1\nretry: 5\nfoo: bar\ndata: x\n\n") == [(None, b"x")]


def test_gemini_style_crlf_recording() -> None:
    body = b'data: {"a": 1}\r\n\r\ndata: {"b": 2}\r\n\r\n'
    expected = [(None, b'{"a": 1}'), (None, b'{"b": 2}')]
    for cut in range(1, len(body)):
        assert decode(body[:cut], body[cut:]) == expected, cut


def test_message_repr_names_fields() -> None:
    assert repr(SSEMessage(b"e", b"d")) == "SSEMessage(event=b'e', data=b'd')"


def test_a_leading_byte_order_mark_is_not_part_of_the_first_line() -> None:
    body = b"\xef\xbb\xbfdata: a\n\n"
    for cut in range(len(body) + 1):
        decoder = SSEDecoder()
        got = decoder.feed(body[:cut]) + decoder.feed(body[cut:]) + decoder.finish()
        assert [m.data for m in got] == [b"a"], cut


def test_a_data_field_without_a_colon_is_an_empty_data_line() -> None:
    decoder = SSEDecoder()
    got = decoder.feed(b"data\ndata: x\n\n") + decoder.finish()
    assert [m.data for m in got] == [b"\nx"]
