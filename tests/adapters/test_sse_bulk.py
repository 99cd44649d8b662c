"""The SSE decoder's bulk path gives exactly what its line-by-line path gives, any body, any split.

From an event boundary, a run of events that are all ``data: X`` or all ``event: N`` /
``data: X`` is split in bulk (``SSEDecoder._bulk``), a read that is one whole ``data: X``
event is taken at once (``SSEDecoder._single_event``); everything else is read line by line. This
one property replaces the per-provider framing checks that each private fast path once needed
(Anthropic's and Responses' framers, Ollama's own line splitting): a decoder with the bulk path
off must give the same columns, read by read, and the same ``saw_field`` / ``bytes_seen`` /
``first_bytes`` / ``buffered_bytes``, whatever mix of named, nameless, comment, ``id:``,
multi-line, ``\\r\\n`` / ``\\r`` / ``\\n``, byte-order-mark and over-cap events the body holds.
"""

from __future__ import annotations

from _toolwire_testdata import examples
from hypothesis import given, settings
from hypothesis import strategies as st

from toolwire.adapters.framing import Frames
from toolwire.adapters.sse import DEFAULT_MAX_EVENT_BYTES, SSEDecoder


class LineByLine(SSEDecoder):
    """The decoder with its bulk path off: every line read on its own."""

    __slots__ = ()

    def _bulk(self, lines: list[bytes]) -> bool:
        return False

    def _single_event(self, chunk: bytes) -> bool:
        return False


def columns(frames: Frames) -> tuple[list[object], list[bytes | None]]:
    return list(frames.payloads), frames.names


def state(decoder: SSEDecoder) -> tuple[object, ...]:
    return (decoder.saw_field, decoder.bytes_seen, decoder.first_bytes, decoder.buffered_bytes)


NAMES = st.sampled_from([b"content_block_delta", b"response.output_text.delta", b"a", b""])
PAYLOADS = st.sampled_from(
    [b'{"type":"x","delta":"1"}', b"{}", b"[DONE]", b"", b"\xc3\xa9\xe2\x82\xac", b"y" * 40]
)


@st.composite
def event(draw: st.DrawFn) -> list[bytes]:
    """One event as its lines (no line ends; the blank line that ends it included)."""
    payload = draw(PAYLOADS)
    kind = draw(
        st.sampled_from(
            ["named", "named", "nameless", "nameless", "comment", "id", "multi", "no space",
             "name after data", "name alone", "blank", "long"]
        )
    )  # fmt: skip
    if kind == "named":
        return [b"event: " + draw(NAMES), b"data: " + payload, b""]
    if kind == "nameless":
        return [b"data: " + payload, b""]
    if kind == "comment":
        return [b": keep-alive", b""]
    if kind == "id":
        return [b"id: 7", b"event: " + draw(NAMES), b"data: " + payload, b""]
    if kind == "multi":
        return [b"data: " + payload, b"data: " + payload, b""]
    if kind == "no space":
        return [b"event:" + draw(NAMES), b"data:" + payload, b""]
    if kind == "name after data":
        return [b"data: " + payload, b"event: " + draw(NAMES), b""]
    if kind == "name alone":
        return [b"event: " + draw(NAMES), b""]
    if kind == "blank":
        return [b""]
    return [b"event: " + draw(NAMES), b"data: " + b"z" * draw(st.integers(60, 300)), b""]


@st.composite
def bodies(draw: st.DrawFn) -> bytes:
    lines = [line for each in draw(st.lists(event(), max_size=30)) for line in each]
    if lines and draw(st.booleans()):
        lines = lines[: draw(st.integers(0, len(lines)))]  # a body cut anywhere
    ends = draw(st.lists(st.sampled_from([b"\n", b"\n", b"\n", b"\r\n", b"\r"]), min_size=1))
    if draw(st.booleans()):
        ends = [ends[0]]  # one line end for the whole body, as servers send
    bom = b"\xef\xbb\xbf" if draw(st.integers(0, 5)) == 0 else b""
    return bom + b"".join(line + ends[i % len(ends)] for i, line in enumerate(lines))


def split(body: bytes, cuts: list[int]) -> list[bytes]:
    points = sorted({cut % (len(body) + 1) for cut in cuts})
    return [body[a:b] for a, b in zip([0, *points], [*points, len(body)], strict=True)]


@settings(max_examples=examples(1500), deadline=None)
@given(
    body=bodies(),
    cuts=st.lists(st.integers(0, 1 << 14), max_size=8),
    cap=st.sampled_from([30, 100, 250, DEFAULT_MAX_EVENT_BYTES]),
)
def test_bulk_equals_line_by_line(body: bytes, cuts: list[int], cap: int) -> None:
    bulk, general = SSEDecoder(cap), LineByLine(cap)
    for read in split(body, cuts):
        assert columns(bulk.feed(read)) == columns(general.feed(read))
        assert state(bulk) == state(general)
    assert columns(bulk.finish()) == columns(general.finish())
    assert state(bulk) == state(general)


@settings(max_examples=examples(300), deadline=None)
@given(body=bodies(), size=st.integers(1, 200))
def test_bulk_equals_line_by_line_in_fixed_reads(body: bytes, size: int) -> None:
    bulk, general = SSEDecoder(), LineByLine()
    for start in range(0, len(body), size):
        read = body[start : start + size]
        assert columns(bulk.feed(read)) == columns(general.feed(read))
    assert columns(bulk.finish()) == columns(general.finish())
    assert state(bulk) == state(general)


@settings(max_examples=examples(600), deadline=None)
@given(events=st.lists(event(), max_size=30), ends=st.sampled_from([b"\n", b"\r\n", b"\r"]))
def test_bulk_equals_line_by_line_one_event_per_read(
    events: list[list[bytes]], ends: bytes
) -> None:
    """As a live server sends: each read one whole event (the single-event path's case)."""
    bulk, general = SSEDecoder(100), LineByLine(100)
    for lines in events:
        read = b"".join(line + ends for line in lines)
        assert columns(bulk.feed(read)) == columns(general.feed(read))
        assert state(bulk) == state(general)
    assert columns(bulk.finish()) == columns(general.finish())


class Counting(SSEDecoder):
    """The decoder, noting whether each run offered to the bulk path was taken."""

    __slots__ = ("taken",)

    def __init__(self) -> None:
        super().__init__()
        self.taken: list[bool] = []

    def _bulk(self, lines: list[bytes]) -> bool:
        self.taken.append(super()._bulk(lines))
        return self.taken[-1]


def test_the_bulk_path_is_taken() -> None:
    """Guard the guard: runs of both shapes are read in bulk (else the property above would
    compare the line-by-line path with itself), whichever line end they use."""
    named = b"".join(b"event: e%d\ndata: {}\n\n" % n for n in range(50))
    nameless = b"data: {}\n\n" * 50
    for body in (named, nameless, named.replace(b"\n", b"\r\n"), nameless.replace(b"\n", b"\r")):
        decoder = Counting()
        frames = decoder.feed(body)
        assert decoder.taken == [True]
        assert len(frames.payloads) == 50
        assert frames.name(49) == (b"e49" if b"event" in body else None)


def test_a_read_of_one_whole_event_is_taken_at_once() -> None:
    """Guard the guard: a read that is exactly one ``data:`` event goes the single-event path
    (else the properties above would not compare it with the line-by-line path)."""

    class Single(SSEDecoder):
        __slots__ = ("taken",)

        def __init__(self) -> None:
            super().__init__()
            self.taken: list[bool] = []

        def _single_event(self, chunk: bytes) -> bool:
            self.taken.append(super()._single_event(chunk))
            return self.taken[-1]

    decoder = Single()
    reads = [b"data: {}\n\n", b'data: {"a": 1}\r\n\r\n', b"data: x\n", b"\n", b"data: \n\n"]
    payloads = [list(decoder.feed(read).payloads) for read in reads]
    assert payloads == [[b"{}"], [b'{"a": 1}'], [], [b"x"], [b""]]
    assert decoder.taken == [True, True, False, True]
