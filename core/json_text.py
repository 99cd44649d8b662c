"""The JSON text of a value that came as an object (an SDK's arguments dict), whatever it holds.

The SDKs read JSON with ``json.loads``, which takes ``"\\ud800"`` as a lone surrogate, and an
object can nest deeper than msgspec encodes (it recurses). Neither may raise out of reading
model output. Such a value is still written as JSON text, by a loop that keeps every character
as it came, so the judge reads it and says what is wrong with it: a lone surrogate is not valid
Unicode, and nesting has its limit there.
"""

from __future__ import annotations

import json
from typing import Any

import msgspec

__all__ = ["json_string", "json_text"]

_encode = msgspec.json.encode


class _Literal(str):
    """Text written as it is: a bracket, a separator, a key and its colon."""

    __slots__ = ()


def json_text(value: Any) -> str:
    """``value`` as compact JSON text: msgspec's, or the same text written by a loop when
    msgspec cannot (a lone surrogate, nesting past its recursion, a ``str`` subclass). A value
    JSON has no form for (a tuple key, an object of another type) is written as its ``repr``,
    which is no JSON: the judge rejects it rather than run a guess at it."""
    try:
        return _encode(value).decode()
    except (UnicodeEncodeError, RecursionError, TypeError, msgspec.EncodeError):
        return _written(value)


def json_string(text: str) -> str:
    """``text`` as a JSON string literal, a lone surrogate kept as it came."""
    if type(text) is not str:
        text = str.__str__(text)  # a str subclass, as the plain str it holds
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
    try:
        return _encode(item).decode()
    except (TypeError, msgspec.EncodeError):
        return repr(item)


def _key(key: object) -> str:
    """A key as msgspec writes one (a number as its text, in quotes), else its ``repr``."""
    if isinstance(key, str):
        return json_string(key) + ":"
    if isinstance(key, int | float) and not isinstance(key, bool):
        return json_string(_scalar(key)) + ":"
    return repr(key) + ":"


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
