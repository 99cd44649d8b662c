"""The Ollama fast paths (whole blocks of lines at once, plain lines in a few steps) change nothing.

The general path is forced by switching both off on a mapper: ``_block`` always declines (every
line the NDJSON decoder gives goes through ``_payload``) and ``_plain`` always declines (every
line through ``_read`` / ``_line``), as before the fast paths existed. Both mappers read every
body of ``test_ollama_fixtures``, and variants made to leave the fast paths (``\\r\\n`` line
ends, blank and keep-alive lines, unreadable lines, a line of two values, lines that only make
a value together, lines of other shapes, lines after the end, a first line that is no Ollama
line...), at every split into two reads, at fixed read sizes and at random splits; with the
default cap and with a small one (lines over it).
"""

from __future__ import annotations

import json
import re
from typing import Any

import msgspec
import pytest
from _toolwire_testdata import examples, quick_sample
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_ollama_fixtures import BODIES, done, line, ndjson, tool_call

from toolwire.adapters.ndjson import NDJSONDecoder
from toolwire.adapters.ollama import OllamaMapper
from toolwire.adapters.ollama.wire import decode_any_lines, decode_line, wrapped_lines
from toolwire.core.events import Event, encode_event

_SYNTHESIZED = re.compile(rb"toolwire-[0-9a-f]{16}-")


def _declines(*_: object) -> bool:
    return False


def fast_mapper(cap: int | None = None) -> OllamaMapper:
    mapper = OllamaMapper()
    if cap is not None:
        mapper._ndjson = NDJSONDecoder(cap)
    return mapper


def general_mapper(cap: int | None = None) -> OllamaMapper:
    mapper = fast_mapper(cap)
    mapper._block = _declines  # type: ignore[method-assign]
    mapper._plain = _declines  # type: ignore[method-assign]
    return mapper


def run(mapper: OllamaMapper, reads: list[bytes]) -> list[list[bytes]]:
    """The events of each read (then of ``finish``), encoded; synthesized ids made comparable.

    Every read is fed, even after the end, as a careless caller would.
    """
    names: dict[bytes, bytes] = {}

    def rename(match: re.Match[bytes]) -> bytes:
        return names.setdefault(match.group(), b"toolwire-%d-" % len(names))

    batches: list[list[Event]] = [mapper.feed_bytes(read) for read in reads]
    batches.append(mapper.finish())
    return [[_SYNTHESIZED.sub(rename, encode_event(e)) for e in batch] for batch in batches]


def same_events(body: bytes, reads: list[bytes], cap: int | None = None) -> None:
    assert b"".join(reads) == body
    assert run(fast_mapper(cap), reads) == run(general_mapper(cap), reads)


def _lines(body: bytes) -> list[bytes]:
    return [piece + b"\n" for piece in body.split(b"\n") if piece]


def _text(content: str, **extra: Any) -> bytes:
    return json.dumps({**line(content=content), **extra}, separators=(",", ":")).encode() + b"\n"


def variants(body: bytes) -> dict[str, bytes]:
    """The body, and bodies made from it that leave the fast paths somewhere."""
    lines = _lines(body)
    middle = len(lines) // 2
    texts = b"".join(_text(f"piece {n} ") for n in range(6))
    head, tail = lines[:middle], lines[middle:]

    def with_(*inserted: bytes) -> bytes:
        return b"".join([*head, texts, *inserted, texts, *tail])

    return {
        "as built": body,
        "text lines first": texts + body,
        "text lines in the middle": with_(),
        "crlf": body.replace(b"\n", b"\r\n"),
        "crlf text": with_().replace(b"\n", b"\r\n"),
        "blank lines": with_(b"\n", b"  \n", b"\r\n"),
        "not json": with_(b"{nope\n"),
        "two values on a line": with_(_text("a")[:-1] + _text("b")),
        "a value over two lines": with_(_text("a")[:20] + b"\n" + _text("a")[20:]),
        # Each line alone is no JSON value; read together they make the right number of values.
        "values that only add up together": with_(
            _text("a")[:-1] + _text("b"), _text("c")[:20] + b"\n" + _text("c")[20:]
        ),
        "two values across lines, bracketed": with_(b'{"message":{"content":"x"}}][{}\n'),
        "not of Ollama's shape": with_(b'{"choices":[]}\n', b"[1]\n", b"7\n"),
        "message null": with_(b'{"model":"m","message":null,"done":false}\n'),
        "content null and empty": with_(_text("")[:-1] + b"\n", b'{"message":{"content":null}}\n'),
        "other model": with_(_text("x", model="other")),
        "model of the wrong type": with_(b'{"model":7,"message":{"content":"x"},"done":false}\n'),
        "done_reason of the wrong type": with_(
            b'{"message":{"content":"x"},"done":false,"done_reason":7}\n'
        ),
        "thinking": with_(
            json.dumps(line(thinking="hmm")).encode() + b"\n",
            json.dumps(line(content="a", thinking="b")).encode() + b"\n",
        ),
        "thinking empty": with_(b'{"message":{"content":"x","thinking":""},"done":false}\n'),
        "a call in the middle": with_(
            json.dumps(line(calls=[tool_call("f", {"a": 1}, call_id="c1")])).encode() + b"\n"
        ),
        "empty tool calls": with_(b'{"message":{"content":"x","tool_calls":[]},"done":false}\n'),
        "counters on a text line": with_(_text("x", eval_count=3)),
        "error": with_(b'{"error":"boom"}\n'),
        "error object": with_(b'{"error":{"message":"boom","code":500}}\n'),
        "done in the middle": with_(json.dumps(done()).encode() + b"\n"),
        "done false, then true": with_(b'{"message":{"content":"x"},"done":false,"done":true}\n'),
        "duplicate message": with_(b'{"message":{"content":"x"},"message":null,"done":false}\n'),
        "escapes": with_(_text('a "quoted" \\ line\nwith é and \u2028 and <tags>')),
        "keys escaped": with_(b'{"message":{"\\u0063ontent":"x"},"\\u0064one":true}\n'),
        "spaces around": with_(b'  {"message":{"content":"x"},"done":false}  \n'),
        "first line no Ollama line": b"<html>\n<body>\n" + body,
        "first lines unreadable": b"{nope\n" + _text("a")[:30] + b"\n" + texts + body,
        "no last line end": body[:-1],
        "text after the end": body + texts,
    }


BODY_NAMES = sorted(BODIES)
CASES = [(name, kind) for name in BODY_NAMES for kind in variants(BODIES[name][0])]


#: The fixed-size and small-cap grids in the quick loop: every 7th case, which meets every body
#: and every variant (the full suite runs all of them).
QUICK_CASES = quick_sample(CASES, 7, covers=(lambda case: case[0], lambda case: case[1]))


def body_of(case: tuple[str, str]) -> bytes:
    return variants(BODIES[case[0]][0])[case[1]]


def cut_points(body: bytes, kind: str) -> list[int]:
    """Every byte of a body as built; of a variant, every byte near a line end and every 7th."""
    if kind == "as built":
        return list(range(len(body) + 1))
    near = {p + d for p, byte in enumerate(body) if byte in b"\r\n" for d in range(-2, 3)}
    return sorted({*range(0, len(body) + 1, 7), *(p for p in near if 0 <= p <= len(body))})


@pytest.mark.parametrize(("name", "kind"), CASES)
@pytest.mark.slow
def test_every_split_in_two(name: str, kind: str) -> None:
    body = body_of((name, kind))
    for cut in cut_points(body, kind):
        reads = [body[:cut], body[cut:]]
        assert run(fast_mapper(), reads) == run(general_mapper(), reads), cut


@pytest.mark.parametrize(("name", "kind"), QUICK_CASES)
def test_fixed_read_sizes(name: str, kind: str) -> None:
    body = body_of((name, kind))
    for size in (1, 2, 3, 7, 50, 64, 100, 127, 200, 500, 1000, 4096, len(body) or 1):
        same_events(body, [body[i : i + size] for i in range(0, len(body), size)])


@pytest.mark.parametrize(("name", "kind"), QUICK_CASES)
def test_small_cap(name: str, kind: str) -> None:
    """With a cap of 120 bytes, some lines are over it and every block is: general path."""
    body = body_of((name, kind))
    for size in (1, 60, 200, 1000, len(body) or 1):
        same_events(body, [body[i : i + size] for i in range(0, len(body), size)], cap=120)


@settings(max_examples=examples(300), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(case=st.sampled_from(CASES), cuts=st.lists(st.integers(0, 1 << 14), max_size=12))
def test_random_splits(case: tuple[str, str], cuts: list[int]) -> None:
    body = body_of(case)
    points = sorted({cut % (len(body) + 1) for cut in cuts})
    reads = [body[a:b] for a, b in zip([0, *points], [*points, len(body)], strict=True)]
    same_events(body, reads)


@settings(max_examples=examples(300), deadline=None)
@given(
    pieces=st.lists(
        st.sampled_from(
            [
                _text("a"),
                _text(""),
                _text("b", model="other"),
                json.dumps(line(thinking="t")).encode() + b"\n",
                json.dumps(line(calls=[tool_call("f", {})])).encode() + b"\n",
                json.dumps(done()).encode() + b"\n",
                b"\n",
                b"{nope\n",
                b"{}\n",
                b'{"message":{"content":"x"},"done":false}{}\n',
                b'{"message":\n',
                b'{"content":"y"}}\n',
                b"\r\n",
            ]
        ),
        max_size=25,
    ),
    cuts=st.lists(st.integers(0, 3000), max_size=6),
)
def test_any_lines(pieces: list[bytes], cuts: list[int]) -> None:
    body = b"".join(pieces)
    points = sorted({cut % (len(body) + 1) for cut in cuts})
    reads = [body[a:b] for a, b in zip([0, *points], [*points, len(body)], strict=True)]
    same_events(body, reads)


def test_wrapped_lines() -> None:
    assert wrapped_lines([b"{}"]) == b"[{}]"
    assert wrapped_lines([b'{"a":1}', b"", b"{}"]) == b'[{"a":1}]\n[]\n[{}]'
    with pytest.raises(TypeError):
        wrapped_lines([b"{}", object()])  # type: ignore[list-item]


def test_what_the_wrapping_relies_on() -> None:
    """msgspec refuses a raw line end inside a string, and ``]`` then ``[`` inside a value; it
    reads ``[{}][{}]`` as two values (which the count of lines then refuses)."""
    with pytest.raises(msgspec.DecodeError):
        decode_line(b'{"model":"a\nb"}')
    with pytest.raises(msgspec.DecodeError):
        decode_any_lines(b'[{"model":[[1]\n[2]]}]')
    assert len(decode_any_lines(b"[{}][{}]")) == 2


def test_the_fast_paths_are_taken() -> None:
    """Guard the guard: a long answer in large reads goes through blocks of text lines, and in
    small reads through ``_plain`` (else these tests would compare the general path with itself)."""
    body = ndjson(*(line(content=f"piece {n} ") for n in range(200)), done())
    mapper = fast_mapper()
    seen: list[bool] = []
    block = mapper._block

    def spy(data: list[Any], out: list[Event]) -> bool:
        seen.append(block(data, out))
        return seen[-1]

    mapper._block = spy  # type: ignore[method-assign]
    for start in range(0, len(body), 4096):
        mapper.feed_bytes(body[start : start + 4096])
    assert seen.count(True) >= len(seen) - 1 >= 3

    mapper = fast_mapper()
    plain = mapper._plain
    taken: list[bool] = []

    def spy_plain(*args: Any) -> bool:
        taken.append(plain(*args))
        return taken[-1]

    mapper._plain = spy_plain  # type: ignore[method-assign]
    for piece in _lines(body):
        mapper.feed_bytes(piece)
    assert taken.count(True) == 199
