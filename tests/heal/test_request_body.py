"""The body check reads with jiter first and gives the standard library's verdict, always.

``body_refusal`` reads a body of up to ``READ_AT_ONCE_UP_TO`` bytes with jiter (duplicate keys
caught in Rust) and falls back on the standard library's reader with a Python check per object
for anything jiter does not read whole. Whatever the body (duplicate keys at any depth, written
with escapes, a byte order mark, a lone surrogate, NaN, text that is no JSON), the verdict and
its message must be the standard library's alone. ``unreadable_refusal``, which
``HealingTransport`` asks of a body its format did not plan, refuses exactly the bodies msgspec
cannot read, with that same verdict (issue 29, M3). (Moved from ``tests/serve``: the proxy's
guard and the library shell share this check, ``toolwire.heal.request_body``.)
"""

from __future__ import annotations

import json

import msgspec
import pytest
from _toolwire_testdata import examples
from hypothesis import given, settings
from hypothesis import strategies as st

from toolwire.heal import request_body as guard
from toolwire.heal.request_body import READ_AT_ONCE_UP_TO, body_refusal, unreadable_refusal
from toolwire.serve import guard as serve_guard

KEYS = st.sampled_from(["a", "b", "stream", "tools", "é", 'q"t', "\u0000"])
SCALARS = st.one_of(
    st.none(), st.booleans(), st.integers(-(2**70), 2**70), st.floats(), st.text(max_size=6)
)


def _object(members: list[tuple[str, str]]) -> str:
    return "{" + ", ".join(f"{json.dumps(key)}: {value}" for key, value in members) + "}"


@st.composite
def values(draw: st.DrawFn, depth: int = 0) -> str:
    """JSON text (keys may repeat; floats may be NaN or Infinity, as Python writes them)."""
    if depth > 3 or draw(st.integers(0, 2)) == 0:
        return json.dumps(draw(SCALARS))
    if draw(st.booleans()):
        items = draw(st.lists(values(depth + 1), max_size=4))
        return "[" + ", ".join(items) + "]"
    members = draw(st.lists(st.tuples(KEYS, values(depth + 1)), max_size=4))
    return _object(members)


@st.composite
def bodies(draw: st.DrawFn) -> bytes:
    text = draw(values())
    if draw(st.integers(0, 4)) == 0:
        text = text.replace('"a"', '"\\u0061"')  # the same key, written with an escape
    raw = text.encode("utf-8", "surrogatepass")
    return draw(
        st.sampled_from([raw, b"\xef\xbb\xbf" + raw, raw + b" ", raw[: len(raw) // 2] or b"{"])
    )


@settings(max_examples=examples(1500), deadline=None)
@given(body=bodies())
def test_the_verdict_is_the_standard_librarys(body: bytes) -> None:
    assert body_refusal(body) == guard._refusal_read_slowly(body)


def test_each_kind_of_body_the_fast_reader_passes_on() -> None:
    """Every way jiter declines a body, and the verdict the standard library gives it."""
    cases = {
        b'{"a": 1, "a": 2}': "'a' twice",
        b'{"x": [{"k": 1, "\\u006b": 2}]}': "'k' twice",
        b'{"q\\"t": 1, "q\\"t": 2}': "'q\"t' twice",
        b"[" * 300 + b"]" * 300: None,  # past jiter's depth of 200, within Python's
        # What msgspec, which plans the healing, cannot read is refused, naming why (issue 29,
        # M3: it went upstream unhealed); a type the API has no use for is named first.
        b"\xef\xbb\xbf" + b'{"stream": "yes"}': "byte order mark",
        b'{"tools": {}, "s": "\\ud800"}': "'tools' must be a list",
        b'{"s": "\\ud800"}': "lone UTF-16 surrogate",
        b'{"stream": NaN}': "NaN, a number JSON has no form for",
        b'{"t": 1e400}': "1e400, a number JSON has no form for",
        b'{"t": "\xff"}': "not UTF-8",
        b"not json": "not JSON",
    }
    for body, said in cases.items():
        refusal = body_refusal(body)
        assert refusal == guard._refusal_read_slowly(body)
        if said is None:
            assert refusal is None, body
        else:
            assert refusal is not None, body
            assert said in refusal.message, (body, refusal)


def test_a_large_body_is_read_by_the_standard_library_alone(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Above the limit jiter is not called: it would hold the GIL for the whole body, while
    the standard library's reader lets the event loop run between objects."""
    calls: list[int] = []
    real = guard.jiter.from_json

    def counting(content: bytes, **options: object) -> object:
        calls.append(len(content))
        return real(content, **options)  # type: ignore[arg-type]

    monkeypatch.setattr(guard.jiter, "from_json", counting)
    small = b'{"messages": [], "b": 1, "b": 2}'
    large = b'{"messages": [' + b'{"a": 1},' * (READ_AT_ONCE_UP_TO // 9) + b'{"b": 1, "b": 2}]}'
    for body in (small, large):
        refusal = body_refusal(body)
        assert refusal is not None
        assert "'b' twice" in refusal.message
    assert calls == [len(small)]


def test_the_proxy_reads_bodies_with_this_check() -> None:
    """``toolwire serve``'s guard and the library shell share the one check."""
    assert serve_guard.body_refusal is body_refusal
    assert serve_guard.READ_AT_ONCE_UP_TO == READ_AT_ONCE_UP_TO


def _msgspec_reads(body: bytes) -> bool:
    try:
        msgspec.json.decode(body)
    except msgspec.DecodeError:
        return False
    return True


@settings(max_examples=examples(500), deadline=None)
@given(body=bodies())
def test_a_body_msgspec_refuses_is_always_refused_and_no_other(body: bytes) -> None:
    """What ``HealingTransport`` asks of a body its format did not plan: never ``None`` for a
    body msgspec refuses (it would go upstream unhealed), always ``None`` for one it reads
    (a body that is not healed goes upstream as it came); the refusal is the guard's own."""
    refusal = unreadable_refusal(body)
    if _msgspec_reads(body):
        assert refusal is None
    else:
        assert refusal is not None
        assert refusal == guard._refusal_read_slowly(body)
        assert (refusal.status, refusal.code) == (400, "invalid_request")


def test_each_kind_of_unreadable_body_is_named() -> None:
    cases = {
        b'{"t": NaN}': "NaN, a number JSON has no form for",
        b'{"t": -Infinity}': "-Infinity, a number JSON has no form for",
        b'{"t": 1e400}': "1e400, a number JSON has no form for",
        b"\xef\xbb\xbf{}": "byte order mark",
        b'{"s": "thumbs \\ud83d"}': "lone UTF-16 surrogate",
        b'{"s": "\\udc4d"}': "lone UTF-16 surrogate",
        b'{"s": "\xff\xfe"}': "it is not UTF-8",
        b"": "it is not JSON",
        b'{"s": 1': "it is not JSON",
    }
    for body, said in cases.items():
        refusal = unreadable_refusal(body)
        assert refusal is not None, body
        assert said in refusal.message, (body, refusal)
    # A whole emoji's two halves are one character: readable, nothing refused.
    assert unreadable_refusal(b'{"s": "\\ud83d\\udc4d"}') is None
    assert unreadable_refusal(b'{"a": 1, "a": 2}') is None  # msgspec reads it (the last wins)
