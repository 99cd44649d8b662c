"""What a parsing layer decides, and the small facts the layers share about a text.

``Accepted`` and ``Refused`` are the layers' results (plain classes with slots: one is made
per judgement, on the hot path); the rest are helpers every layer needs: what strict decoding
said about a text, how to name a position, how to word the common refusals.
"""

from __future__ import annotations

import re
from typing import Any

import msgspec

from ..core.verdict import RejectReason, RepairKind
from ._reader import Read, ReadError

__all__ = [
    "JSON_END",
    "JSON_START",
    "NOT_AN_OBJECT_STRING",
    "STRICT_FAILED",
    "STRICT_TRUNCATED",
    "STRICT_UNTRIED",
    "TRUNCATED_MESSAGE",
    "Accepted",
    "Refused",
    "Result",
    "json_kind",
    "line_column",
    "no_object",
    "one_object",
    "refused_at",
    "strict_outcome",
    "strict_prefix",
]

_decode = msgspec.json.decode
_STRICT_FAILURES = (msgspec.MsgspecError, RecursionError, UnicodeEncodeError)

#: What msgspec says when the text ran out inside a value (a prefix of strict JSON).
TRUNCATED_MESSAGE = "Input data was truncated"

#: What the strict decoding of a text said: not tried yet, failed, or ran out of text.
STRICT_UNTRIED, STRICT_FAILED, STRICT_TRUNCATED = range(3)

#: The characters a JSON text can start and end with (JSON allows blanks around the value).
JSON_START = frozenset('{["-0123456789tfn \t\r\n')
JSON_END = frozenset('}]"0123456789el \t\r\n')

#: The refusal of a double-encoded string whose content is not one object.
NOT_AN_OBJECT_STRING = "the arguments are a JSON string that does not hold an object"

#: Nothing after an object but closers, one of them ``]``: the end of an array never opened.
_LOST_ARRAY_END = re.compile(r"[\s}\]]*\][\s}\]]*")
#: Why such an object is not accepted (``docs/repairs.md``, "prose").
LOST_ARRAY_DETAIL = (
    "the object is followed by ']', which closes an array the text never opened (a list "
    "whose '[' was lost, or a stray bracket)"
)


class Accepted:
    """Arguments that may run, and the repairs (in order) that produced them."""

    __slots__ = ("arguments", "repairs")

    def __init__(self, arguments: dict[str, Any], repairs: list[RepairKind]) -> None:
        self.arguments = arguments
        self.repairs = repairs


class Refused:
    """A rejection: its reason, a technical detail, and where in the raw text (if known)."""

    __slots__ = ("detail", "position", "reason")

    def __init__(self, reason: RejectReason, detail: str, position: int | None) -> None:
        self.reason: RejectReason = reason
        self.detail = detail
        self.position = position


Result = Accepted | Refused


def strict_outcome(error: Exception) -> int:
    """``STRICT_TRUNCATED`` when a strict decoding failed because the text ran out."""
    if type(error) is msgspec.DecodeError and str(error) == TRUNCATED_MESSAGE:
        return STRICT_TRUNCATED
    return STRICT_FAILED


def strict_prefix(text: str, start: int) -> bool:
    """True when ``text[start:]`` is a prefix of strict JSON (strict decoding ran out)."""
    try:
        _decode(text[start:])
    except _STRICT_FAILURES as error:
        return strict_outcome(error) == STRICT_TRUNCATED
    return False


def line_column(raw: str, position: int) -> str:
    """``line L, column C`` of a character offset (both counted from 1)."""
    line = raw.count("\n", 0, position) + 1
    column = position - (raw.rfind("\n", 0, position) + 1) + 1
    return f"line {line}, column {column}"


def json_kind(value: object) -> str:
    """How a rejection names a JSON value that is not an object."""
    if isinstance(value, list):
        return "a JSON array"
    if isinstance(value, bool):
        return f"the JSON boolean {'true' if value else 'false'}"
    if isinstance(value, int | float):
        return "a JSON number"
    if isinstance(value, str):
        return "a JSON string that does not hold an object"
    return "null"


def refused_at(raw: str, error: ReadError, base: int | None) -> Refused:
    """A ``not_json`` refusal located in the raw text (when the text is a slice of it)."""
    if base is None:
        return Refused("not_json", f"inside the JSON string: {error.message}", None)
    position = base + error.position
    return Refused("not_json", f"{error.message} at {line_column(raw, position)}", position)


def no_object(base: int | None, nested: bool) -> Refused:
    """No object in the text (inside a double-encoded string: the string is not arguments)."""
    if nested:
        return Refused("wrong_type", NOT_AN_OBJECT_STRING, None)
    return Refused("not_json", "no JSON object found in the arguments", base)


def one_object(text: str, base: int | None, start: int, read: Read, prose: bool) -> Result:
    """Exactly one object was found: accept it, with ``prose`` when text surrounds it."""
    repairs = read.repairs
    if start != 0 or read.end != len(text):
        if _LOST_ARRAY_END.fullmatch(text, read.end) is not None:
            # ``{...}]`` reads two ways: drop the ``]``, or ``[{...}]`` with its ``[`` lost,
            # which is no arguments (``wrong_type``). The whole array is refused; so is this.
            return Refused("not_json", LOST_ARRAY_DETAIL, None if base is None else base + read.end)
        if not prose:
            where_cut = read.end if start == 0 else 0
            position = None if base is None else base + where_cut
            return Refused("not_json", "text around the JSON object", position)
        repairs.insert(0, "prose")
    return Accepted(read.value, repairs)
