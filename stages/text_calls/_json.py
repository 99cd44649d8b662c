"""Call objects written as JSON, read by JSON's rules: where a value ends is decided by its
strings and brackets, never by searching for a closing tag (a ``</tool_call>`` inside a JSON
string is text of the string).

Used by every family whose calls are JSON objects (``<tool_call>``, a whole reply, Llama,
Mistral's list, llama.cpp's generic shape). The outer object is read strictly (double-quoted
keys, known keys only); the arguments value is only delimited here and read by the judge.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from functools import partial

import msgspec

from ...judge import parse_arguments
from ._reading import (
    NEED_MORE,
    Found,
    ReadContext,
    ReadResult,
    Skip,
    TextCall,
    _NeedMore,
    cut_last,
    skip_blanks,
)

__all__ = [
    "ARGUMENT_KEYS",
    "CALL_KEYS",
    "json_arguments_block",
    "list_or_skip",
    "members",
    "read_call_list",
    "read_call_object",
    "value_end",
]

_STRING = re.compile(r'"[^"\\]*+(?:\\.[^"\\]*+)*+"', re.DOTALL)
_TOKEN = re.compile(r'"[^"\\]*+(?:\\.[^"\\]*+)*+"|[{}\[\]"]', re.DOTALL)
_SCALAR = re.compile(r"[^\s,}\]]+")

#: The keys that may name the arguments of a call object (Hermes/OpenAI ``arguments``, Llama
#: ``parameters``, some community templates ``args``).
ARGUMENT_KEYS = ("arguments", "parameters", "args")
#: Every key a call object may have; any other key means it is some other JSON.
CALL_KEYS = frozenset({"name", "type", "id", *ARGUMENT_KEYS})


def value_end(text: str, start: int) -> int | None:
    """The end of the JSON object or array at ``start``, by strings and brackets; ``None``
    when the text ends inside it (inside a string, or with a bracket open)."""
    depth = 0
    for match in _TOKEN.finditer(text, start):
        token = match.group()
        first = token[0]
        if first == '"':
            if len(token) == 1:
                return None
            continue
        if first in "{[":
            depth += 1
        else:
            depth -= 1
            if depth <= 0:
                return match.end()
    return None


class _Cut(Exception):
    """The text ended inside the object."""


def members(
    text: str, start: int, allowed: frozenset[str]
) -> tuple[dict[str, tuple[int, int]], int, bool]:
    """The members of the object at ``start``: key -> value span, the end, and whether the
    text ended inside it (the last span then runs to the end). Raises ``ValueError`` when it
    is not a JSON object with string keys, or as soon as a key is not in ``allowed`` (a large
    JSON answer is known not to be a call at its first foreign key, not at its end)."""
    found: dict[str, tuple[int, int]] = {}
    length = len(text)
    index = skip_blanks(text, start + 1)
    if index < length and text[index] == "}":
        return found, index + 1, False
    while True:
        if index >= length:
            return found, length, True
        match = _STRING.match(text, index)
        if match is None:
            if text[index] == '"':
                return found, length, True  # a key never closed
            raise ValueError("a key is not a string")
        try:
            key = msgspec.json.decode(match.group(), type=str)
        except UnicodeEncodeError:  # a lone surrogate: no key a call has
            raise ValueError("not a call object") from None
        if key not in allowed:
            raise ValueError("not a call object")
        index = skip_blanks(text, match.end())
        if index >= length:
            return found, length, True
        if text[index] != ":":
            raise ValueError("no colon after a key")
        index = skip_blanks(text, index + 1)
        if index >= length:
            found[key] = (length, length)
            return found, length, True
        first = text[index]
        if first == '"':
            value = _STRING.match(text, index)
            end = value.end() if value is not None else None
        elif first in "{[":
            end = value_end(text, index)
        else:
            scalar = _SCALAR.match(text, index)
            end = scalar.end() if scalar is not None else index
            if end >= length:
                end = None  # a number or keyword may go on
        if end is None:
            found[key] = (index, length)
            return found, length, True
        found[key] = (index, end)
        index = skip_blanks(text, end)
        if index >= length:
            return found, length, True
        if text[index] == "}":
            return found, index + 1, False
        if text[index] != ",":
            raise ValueError("no comma between members")
        index = skip_blanks(text, index + 1)
        if index < length and text[index] == "}":
            return found, index + 1, False  # a trailing comma separates nothing


def read_call_object(
    text: str, start: int, context: ReadContext, *, wrapped: bool
) -> tuple[TextCall, int] | _NeedMore | None:
    """The call object at ``text[start] == "{"`` and its end, or ``None`` when it is not one.

    A call object has a ``name`` that is offered, an arguments member (``arguments``,
    ``parameters`` or ``args``; inside a family's wrapper it may be missing: no arguments),
    and otherwise only ``type: "function"`` and ``id``. Its arguments text is passed on as
    written; the judge reads it. When the text ends inside the object it is a cut call, once
    the name is known; before the text is final, :data:`NEED_MORE`.
    """
    try:
        spans, end, cut = members(text, start, CALL_KEYS)
    except ValueError:
        return None
    if cut and not context.final:
        return NEED_MORE
    name_span = spans.get("name")
    if name_span is None:
        return None
    raw_name = text[name_span[0] : name_span[1]]
    try:
        name = msgspec.json.decode(raw_name, type=str)
    except (msgspec.DecodeError, UnicodeEncodeError):
        return None  # cut inside the name, not a string, a lone surrogate: no name is guessed
    if not context.offered(name):
        return None
    kind = spans.get("type")
    if kind is not None and text[kind[0] : kind[1]] != '"function"':
        return None
    keys = [key for key in ARGUMENT_KEYS if key in spans]
    if len(keys) > 1:
        return None
    if not keys:
        if cut and wrapped:
            # Cut after the name, before its arguments: inside a family's wrapper this is a
            # call (the name is whole and offered) that never runs; without one, not a call.
            return TextCall(name, "", cut=True), end
        if not wrapped:
            return None
        return TextCall(name, "{}"), end
    span = spans[keys[0]]
    arguments = text[span[0] : span[1]]
    if not wrapped and not cut and not arguments.startswith("{"):
        if not (arguments.startswith('"') and _string_holding_an_object(arguments, name)):
            return None  # a whole reply whose "arguments" are not an object is some other JSON
    return TextCall(name, arguments, cut=cut), end


def _string_holding_an_object(arguments: str, name: str) -> bool:
    """``"arguments": "{\\"a\\": 1}"``: a JSON string holding one object, by the judge's own
    rule for structured calls (its ``double_encoded`` reading), asked of the judge itself."""
    verdict = parse_arguments(arguments, tool=name)
    return verdict.may_run and "double_encoded" in verdict.repairs


#: Reads one call object at an index: the call and the index after it, "more text", or none.
ObjectReader = Callable[[str, int, ReadContext], "tuple[TextCall, int] | _NeedMore | None"]


def read_object_list(
    text: str, start: int, context: ReadContext, read_object: ObjectReader
) -> tuple[tuple[TextCall, ...], int] | _NeedMore | None:
    """A call object, or a JSON array of them (``[{...}, {...}]``), at ``start``, each object
    read by ``read_object``: the one list grammar under every call shape (``_shapes.py``)."""
    length = len(text)
    if start >= length:
        return NEED_MORE if not context.final else None
    if text[start] == "{":
        read = read_object(text, start, context)
        if read is None or isinstance(read, _NeedMore):
            return read
        return (read[0],), read[1]
    if text[start] != "[":
        return None
    calls: list[TextCall] = []
    index = skip_blanks(text, start + 1)
    while True:
        if index >= length:
            if not context.final:
                return NEED_MORE
            if not calls:
                return None
            # The list was cut after a complete call: the call written last is cut with it.
            return cut_last(calls), length
        if text[index] != "{":
            if text[index] == "]" and calls:
                return tuple(calls), index + 1
            return None
        read = read_object(text, index, context)
        if read is None or isinstance(read, _NeedMore):
            return read
        call, index = read
        calls.append(call)
        if call.cut:
            return tuple(calls), length
        index = skip_blanks(text, index)
        if index < length and text[index] == ",":
            index = skip_blanks(text, index + 1)
        elif index < length and text[index] != "]":
            return None


def read_call_list(
    text: str, start: int, context: ReadContext, *, wrapped: bool
) -> tuple[tuple[TextCall, ...], int] | _NeedMore | None:
    """A ``{"name", "arguments"}`` call object, or a JSON array of them, at ``start``."""
    return read_object_list(text, start, context, partial(read_call_object, wrapped=wrapped))


def objects_or_skip(
    text: str, index: int, context: ReadContext, read_object: ObjectReader
) -> tuple[tuple[TextCall, ...], int] | ReadResult:
    """:func:`read_object_list`, with "not a call" as a :class:`Skip` past the JSON value: the
    value is one value by JSON's rules, so nothing inside it opens a call."""
    read = read_object_list(text, index, context, read_object)
    if read is not None:
        return read
    end = value_end(text, index)
    if end is None:
        return Skip(len(text)) if context.final else NEED_MORE
    return Skip(end)


def list_or_skip(
    text: str, index: int, context: ReadContext, *, wrapped: bool
) -> tuple[tuple[TextCall, ...], int] | ReadResult:
    """:func:`objects_or_skip` over ``{"name", "arguments"}`` call objects."""
    return objects_or_skip(text, index, context, partial(read_call_object, wrapped=wrapped))


def json_arguments_block(
    text: str, start: int, index: int, name: str, context: ReadContext, *, tail_only: bool
) -> Found | _NeedMore:
    """The JSON object at ``index`` as ``name``'s arguments, a block from ``start`` to its
    end (no end marker); cut at the end of the final text."""
    end = value_end(text, index)
    if end is None:
        if not context.final:
            return NEED_MORE
        call = TextCall(name, text[index:], cut=True)
        return Found(start, len(text), (call,), tail_only=tail_only, closed=False)
    return Found(start, end, (TextCall(name, text[index:end]),), tail_only=tail_only, closed=False)
