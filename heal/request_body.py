"""Whether toolwire reads a request body as the upstream will (issues 19 and 29), sans-I/O.

The healing plans a request with msgspec, which reads strict JSON (RFC 8259) and nothing else.
Python's ``json``, and so many servers written with it, reads more: ``NaN`` and ``Infinity``,
numbers out of range (``1e400`` as infinity), a UTF-8 byte order mark, a lone UTF-16 surrogate
escape (``"\\ud83d"``: half of an emoji, as JavaScript's ``JSON.stringify`` writes a string cut
between the two halves). Such a body was planned as "nothing to heal" and sent upstream as it
came, with no error, header or log, and the model's calls reached the client unjudged; a lone
surrogate stays in a conversation's history, so every later turn went the same way (issue 29,
M3). Both shells now refuse it, naming why:

- :func:`unreadable_refusal`: the refusal of a body msgspec cannot read (``None`` when it
  can). :class:`~toolwire.heal.transport.HealingTransport` asks it of every request to a
  healed endpoint that its format did not plan, so it costs nothing on a healed request and
  one more msgspec read on a readable one that is not healed (measured with ``timeit`` on a
  loaded 2-core machine: 1.3 to 3 us for a 0.5 KB request with two tools, 17 to 35 us for
  23 KB of messages).
- :func:`body_refusal`: that, and what a readable body may still mean differently to a lax
  upstream: a key twice in one object (which one wins differs between parsers), a ``stream``
  that is not a boolean or ``tools`` that are not a list (``"stream": "true"`` is streamed by
  some servers and not by toolwire), nesting too deep to read. ``toolwire serve`` asks it of
  every request to a healed endpoint (``serve/guard.py``).

Both give a :class:`~toolwire.heal.refusal.Refusal`: a 400 ``invalid_request`` whose message
says what was found. A body that is no JSON at all is refused too ("it is not JSON"): toolwire
cannot say whether it would have been healed.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Sequence
from typing import Any

import jiter
import msgspec

from .refusal import Refusal

__all__ = ["READ_AT_ONCE_UP_TO", "body_refusal", "unreadable_refusal"]

#: The largest body :func:`body_refusal` reads with jiter (``toolwire serve`` reads larger ones
#: in a worker thread, ``serve/app.py``).
READ_AT_ONCE_UP_TO = 64 * 1024

#: A UTF-16 surrogate escape with no partner (what JavaScript writes for half an emoji).
_LONE_SURROGATE = re.compile(
    rb"\\u[dD][89abAB][0-9a-fA-F]{2}(?!\\u[dD][c-fC-F])"
    rb"|(?<!\\u[dD][89abAB][0-9a-fA-F]{2})\\u[dD][c-fC-F][0-9a-fA-F]{2}"
)
_BOM = b"\xef\xbb\xbf"


def unreadable_refusal(content: bytes) -> Refusal | None:
    """The refusal of a body the healing cannot read (msgspec refuses it), or ``None``.

    Never ``None`` for a body msgspec refuses, so that no such body goes upstream unhealed.
    The message is the standard library's verdict on the body, as :func:`body_refusal` gives
    it: the first problem Python's ``json`` meets reading it (which may be a key twice, or a
    ``tools`` that is no list, met before the ``NaN``).
    """
    try:
        msgspec.json.decode(content)
    except msgspec.DecodeError:
        return _refusal_read_slowly(content)
    return None


def body_refusal(content: bytes) -> Refusal | None:
    """The refusal of a body toolwire would read differently from the upstream, or ``None``.

    A body of up to :data:`READ_AT_ONCE_UP_TO` bytes (read on the event loop) is read by jiter
    first: in Rust, duplicate keys caught as it goes, in about 0.6x the time of the standard
    library's parser calling a Python check per object (``docs/serve.md``). Anything jiter
    does not read whole (a duplicate key, nesting past its depth of 200, ``NaN``, a byte order
    mark, a lone surrogate, no JSON at all), or that msgspec then refuses (jiter reads ``1e400``
    as infinity), is read again by the standard library, which gives the verdict and the exact
    key as before. (msgspec's read costs 3 us for a 0.5 KB body, 32 us for 23 KB; a regular
    expression looking for such numbers cost 200 to 600 us.) A larger body is the standard
    library's alone: read in a worker thread, the Python check per object lets the event loop
    take the GIL back as it goes, where jiter would hold it for the whole body (64 ms for
    10 MB).
    """
    if len(content) > READ_AT_ONCE_UP_TO:
        return _refusal_read_slowly(content)
    try:
        body = jiter.from_json(content, catch_duplicate_keys=True, allow_inf_nan=False)
        msgspec.json.decode(content)  # the healing's own reader must read it too
    except (ValueError, msgspec.DecodeError):
        return _refusal_read_slowly(content)
    return _typed_refusal(body)


def _refusal_read_slowly(content: bytes) -> Refusal | None:
    """The standard library's verdict on ``content``: the first thing wrong with it, or
    ``None`` when nothing is (then msgspec reads it too)."""
    if content.startswith(_BOM):
        return _unreadable("it starts with a UTF-8 byte order mark, which JSON does not allow")
    try:
        body = json.loads(
            content,
            object_pairs_hook=_unique_keys,
            parse_constant=_no_constant,
            parse_float=_finite,
        )
    except _DuplicateKeyError as error:
        return Refusal(
            400,
            "invalid_request",
            f"the request body has the key {error.key!r} twice in one object; toolwire "
            "and the upstream could read different values",
        )
    except _NoJSONNumberError as error:
        return _unreadable(f"it holds {error.text[:40]}, a number JSON has no form for")
    except RecursionError:
        return Refusal(400, "invalid_request", "the request body is nested too deeply")
    except UnicodeDecodeError:
        return _unreadable("it is not UTF-8")
    except ValueError:
        return _unreadable("it is not JSON")
    refusal = _typed_refusal(body)
    if refusal is not None:
        return refusal
    try:
        msgspec.json.decode(content)  # the healing's own reader must read it too
    except msgspec.DecodeError as error:
        if _LONE_SURROGATE.search(content):
            return _unreadable(
                "it holds a lone UTF-16 surrogate escape (such as \\ud83d, half of an "
                "emoji), which no UTF-8 text can carry"
            )
        return _unreadable(str(error))
    return None


def _unreadable(why: str) -> Refusal:
    return Refusal(
        400,
        "invalid_request",
        f"toolwire cannot read this request's JSON to heal it: {why}. It was not sent upstream, "
        "where it would have gone unhealed",
    )


def _typed_refusal(body: object) -> Refusal | None:
    """The refusal of a JSON body whose ``stream`` or ``tools`` has a type no API takes."""
    if isinstance(body, dict):
        if "stream" in body and not isinstance(body["stream"], bool | None):
            return _wrong_type("stream", "a boolean", body["stream"])
        if "tools" in body and not isinstance(body["tools"], list | None):
            return _wrong_type("tools", "a list", body["tools"])
    return None


def _wrong_type(key: str, expected: str, value: object) -> Refusal:
    got = type(value).__name__
    return Refusal(400, "invalid_request", f"{key!r} must be {expected}, not {got} {value!r:.40}")


def _unique_keys(pairs: Sequence[tuple[str, Any]]) -> dict[str, Any]:
    seen: dict[str, Any] = {}
    for key, value in pairs:
        if key in seen:
            raise _DuplicateKeyError(key)
        seen[key] = value
    return seen


class _DuplicateKeyError(ValueError):
    def __init__(self, key: str) -> None:
        super().__init__(key)
        self.key = key


class _NoJSONNumberError(ValueError):
    """A number Python's ``json`` reads and JSON has none for (``NaN``, ``1e400``)."""

    def __init__(self, text: str) -> None:
        super().__init__(text)
        self.text = text


def _no_constant(text: str) -> Any:
    raise _NoJSONNumberError(text)


def _finite(text: str) -> float:
    number = float(text)
    if math.isinf(number):
        raise _NoJSONNumberError(text)
    return number
