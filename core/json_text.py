"""The JSON text of a value that came as an object (an SDK's arguments dict), whatever it holds.

The SDKs read JSON with ``json.loads``, which takes ``"\\ud800"`` as a lone surrogate, and an
object can nest deeper than msgspec encodes (it recurses). Neither may raise out of reading
model output. Such a value is still written as JSON text, by a loop that keeps every character
as it came, so the judge reads it and says what is wrong with it: a lone surrogate is not valid
Unicode, and nesting has its limit there. NaN and the infinities (``json.loads`` reads them
too), which msgspec writes as ``null``, and what JSON has no form for, are written as no JSON,
so that the call is rejected rather than run on a value the model did not send.
"""

from __future__ import annotations

import json
import math
from typing import Any

import msgspec

__all__ = ["json_string", "json_text", "plain_str"]

_encode = msgspec.json.encode


class _Literal(str):
    """Text written as it is: a bracket, a separator, a key and its colon."""

    __slots__ = ()


def json_text(value: Any) -> str:
    """``value`` as compact JSON text: msgspec's, or the same text written by a loop when
    msgspec cannot (a lone surrogate, nesting past its recursion, a ``str`` subclass) or would
    change it (NaN). A value JSON has no form for is written as no JSON (:func:`_scalar`): the
    judge rejects it rather than run a guess at it."""
    try:
        text = _encode(value)
    except (UnicodeEncodeError, RecursionError, TypeError, msgspec.EncodeError):
        return _written(value)
    if b"null" in text and _holds_non_finite(value):
        # msgspec writes NaN and the infinities as null: a value the model never sent.
        return _written(value)
    return text.decode()


def plain_str(text: str) -> str:
    """``text`` as an exact ``str``: a subclass (an SDK's or a caller's) as the plain str it
    holds, since msgspec reads and writes no other."""
    return text if type(text) is str else str.__str__(text)


def json_string(text: str) -> str:
    """``text`` as a JSON string literal, a lone surrogate kept as it came."""
    text = plain_str(text)
    try:
        return _encode(text).decode()
    except UnicodeEncodeError:
        return json.dumps(text, ensure_ascii=False)


def _written(value: Any) -> str:
    parts: list[str] = []
    pending: list[Any] = [value]
    while pending:
        item = pending.pop()
        if type(item) is _Literal:
            parts.append(item)
        elif isinstance(item, dict):
            _push(pending, "{", "}", [(_key(key), member) for key, member in item.items()])
        elif isinstance(item, list | tuple):
            _push(pending, "[", "]", [(None, member) for member in item])
        elif isinstance(item, str):
            parts.append(json_string(item))
        else:
            parts.append(_scalar(item))
    return "".join(parts)


def _scalar(item: object) -> str:
    """A leaf: as JSON, or (NaN, the infinities, what JSON has no form for) as no JSON at all,
    in brackets no repair reads (``(nan)``, ``(b'x')``), so the judge rejects the call."""
    if isinstance(item, float) and not math.isfinite(item):
        return f"({item!r})"
    try:
        return _encode(item).decode()
    except (TypeError, msgspec.EncodeError):
        return f"({item!r})"


def _key(key: object) -> str:
    """A key as msgspec writes one (a number as its text, in quotes), else no JSON (see
    :func:`_scalar`, in square brackets: a bare key may be anything up to its colon)."""
    if isinstance(key, str):
        return json_string(key) + ":"
    if isinstance(key, int | float) and not isinstance(key, bool) and math.isfinite(key):
        return json_string(_scalar(key)) + ":"
    return f"[{key!r}]:"  # (a bracket: a bare key may be anything up to the colon)


def _holds_non_finite(value: Any) -> bool:
    pending = [value]
    while pending:
        item = pending.pop()
        if isinstance(item, float):
            if not math.isfinite(item):
                return True
        elif isinstance(item, dict):
            pending.extend(item.values())
            pending.extend(key for key in item if isinstance(key, float))
        elif isinstance(item, list | tuple):
            pending.extend(item)
    return False


def _push(
    pending: list[Any], opener: str, closer: str, entries: list[tuple[str | None, Any]]
) -> None:
    """Push a container's text in reverse, so that popping writes it in order."""
    pending.append(_Literal(closer))
    for position in range(len(entries) - 1, -1, -1):
        key, member = entries[position]
        pending.append(member)
        if key is not None:
            pending.append(_Literal(key))
        if position:
            pending.append(_Literal(","))
    pending.append(_Literal(opener))
