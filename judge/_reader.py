"""The relaxed reader: one JSON object, read iteratively, applying token repairs on the way.

Why not a library? ``msgspec`` (the fast path) and ``jiter`` only read strict JSON; jiter's
partial mode *completes* truncated input, which is exactly what the judge must never do, and
neither reports which liberty was taken. ``json_repair`` accepts everything (it fills missing
values, keeps the last of two objects, completes truncation) and is 20-100x slower. The judge
needs the opposite: accept only the few deviations that have exactly one reading, name each one,
and fail with a position otherwise. So this reader is small and strict about everything else.

It reads with an explicit stack (never recursion: 100,000 nested brackets cannot raise
``RecursionError``) and gives up beyond :data:`MAX_DEPTH` levels. It never reads past the
``end`` it is given (the end of the bracket group the scan found), and every token is matched
once at its own position, so a read costs time linear in what it reads.

Two dialects, never mixed:

- JSON mode: strict JSON plus the token repairs the policy allows.
- Python mode (``python=True``): a Python dict literal with JSON-compatible values, reported as
  ``python_literal``. Python's own syntax (``True``, single-quoted strings with Python escapes,
  trailing commas) is not reported separately. The repairs that are not a matter of dialect
  compose with it, because their reading is the same in both: a raw line feed inside a string
  (``control_chars``), a key closed by the wrong quote (``single_quoted_keys``) and ``<|"|>``
  quote tokens. Bare keys and JSON's ``true``/``null`` do not: in Python a bare name is a
  variable, so text mixing them is neither dialect.

Wrapping braces (``{{...}}``) are read here too, around either dialect: the inner object must be
followed by as many ``}`` as there were extra ``{``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from ..core.verdict import RepairKind
from ._policy import Policy
from ._python_literal import PYTHON_KEYWORDS
from ._text_repairs import close_wrapping, open_wrapping
from ._tokens import JSON_KEYWORDS, ReadError, TokenReader

__all__ = ["MAX_DEPTH", "Read", "ReadError", "read_group", "read_object"]

#: Deepest nesting the reader accepts; deeper arguments are rejected, not read.
MAX_DEPTH = 256

_BLANKS = re.compile(r"[ \t\r\n]*+")
# The common tokens, each with the blanks before it, matched in one regex call. A plain string
# (no backslash, no control character) is its own value in both dialects; an integer of at most
# 16 digits is read with ``int``; floats, escapes and anything else take the general path.
_B = r"[ \t\r\n]*+"
_PLAIN = r'"([^"\\\x00-\x1f]*+)"(?!")'
_PLAIN_SINGLE = r"'([^'\\\x00-\x1f]*+)'(?!')"
_INT = r"(-?(?:0|[1-9][0-9]{0,15}))(?![0-9A-Za-z_.+\-])"
_IDENTIFIER = r"([A-Za-z_][A-Za-z0-9_]*+)"
_JSON_WORD = r"(true|false|null)(?![A-Za-z0-9_])"
_PYTHON_WORD = r"(True|False|None)(?![A-Za-z0-9_])"
# What may follow a member or an item: a comma, the closer, or a comma and the closer (a
# trailing comma, reported as such).
_AFTER_MEMBER = rf"{_B}(,{_B}\}}|[,}}])?"
_AFTER_ITEM = rf"{_B}(,{_B}\]|[,\]])?"
# A whole member ``key: scalar`` and what follows it: groups double-quoted key, single-quoted
# key, bare key (one identifier), string, integer, keyword, what follows.
_MEMBER = re.compile(
    rf"{_B}(?:{_PLAIN}|{_PLAIN_SINGLE}|{_IDENTIFIER}){_B}:{_B}(?:{_PLAIN}|{_INT}|{_JSON_WORD})"
    + _AFTER_MEMBER
)
_MEMBER_PYTHON = re.compile(
    rf"{_B}(?:{_PLAIN_SINGLE}|{_PLAIN}){_B}:{_B}(?:{_PLAIN_SINGLE}|{_PLAIN}|{_INT}|{_PYTHON_WORD})"
    + _AFTER_MEMBER
)
# A scalar array item and what follows it: string, integer, keyword, what follows.
_ITEM = re.compile(rf"{_B}(?:{_PLAIN}|{_INT}|{_JSON_WORD})" + _AFTER_ITEM)
_ITEM_PYTHON = re.compile(rf"{_B}(?:{_PLAIN_SINGLE}|{_PLAIN}|{_INT}|{_PYTHON_WORD})" + _AFTER_ITEM)
# A key alone (its value is not a scalar): double-quoted, single-quoted, or one identifier.
_KEY = re.compile(rf"{_B}(?:{_PLAIN}|{_PLAIN_SINGLE}|{_IDENTIFIER}){_B}:")
_KEY_PYTHON = re.compile(rf"{_B}(?:{_PLAIN_SINGLE}|{_PLAIN}){_B}:")
_AFTER_VALUE = re.compile(rf"{_B}([,}}\]])")
# What only the Python-literal reader reads: an apostrophe or a Python keyword.
_PYTHON_ONLY = re.compile(r"'|True|False|None")

# The characters after an object's ``{`` that may start wrapping braces: ``{{`` or ``{ {``.
_WRAP_NEXT = frozenset("{ \t\r\n")

_KEY_FIRST, _KEY_NEXT, _VALUE, _ITEM_FIRST, _ITEM_NEXT, _AFTER = range(6)


@dataclass(slots=True)
class Read:
    """A successfully read object, where it ended, and the repairs that reading needed."""

    value: dict[str, Any]
    end: int
    repairs: list[RepairKind]


def _read(text: str, start: int, end: int, policy: Policy, python: bool) -> Read:
    """Read the object at ``start``, not past ``end``: the main loop.

    The common shapes are each matched by one regex call: a whole member ``key: scalar`` with
    the comma or brace after it, a scalar array item with the comma or bracket after it, a key
    alone, a comma or closer. Anything else (nested values, escapes, floats, repairs other than
    one-word bare keys, errors) goes through :class:`~._tokens.TokenReader`, made on first
    need, which names the repairs and the errors.
    """
    if start >= end or text[start] != "{":
        raise ReadError("expected '{'", start)
    blanks = _BLANKS.match
    after_value = _AFTER_VALUE.match
    if python:
        member = _MEMBER_PYTHON.match
        item = _ITEM_PYTHON.match
        key_alone = _KEY_PYTHON.match
        keywords = PYTHON_KEYWORDS
    else:
        member = _MEMBER.match
        item = _ITEM.match
        key_alone = _KEY.match
        keywords = JSON_KEYWORDS
    repairs: list[RepairKind] = []
    tokens: TokenReader | None = None
    wrappers = 0
    index = start + 1
    if policy.wrapping_braces and index < end and text[index] in _WRAP_NEXT:
        wrappers, inner = open_wrapping(text, start, end)
        if wrappers:
            repairs.append("wrapping_braces")
            index = inner + 1
    if python:
        repairs.append("python_literal")
    stack: list[Any] = [{}]
    keys: list[str] = [""]
    state = _KEY_FIRST
    comma = 0
    while True:
        value: Any
        if state <= _KEY_NEXT:
            match = member(text, index, end)
            if match is not None:
                groups = match.groups()
                if python:
                    key = groups[0] if groups[0] is not None else groups[1]
                    if groups[2] is not None:
                        value = groups[2]
                    elif groups[3] is not None:
                        value = groups[3]
                    elif groups[4] is not None:
                        value = int(groups[4])
                    else:
                        value = keywords[groups[5]]
                    after = groups[6]
                else:
                    key = groups[0]
                    if key is None:
                        key, match = _relaxed_key(groups[1], groups[2], policy, repairs, match)
                    if groups[3] is not None:
                        value = groups[3]
                    elif groups[4] is not None:
                        value = int(groups[4])
                    else:
                        value = keywords[groups[5]]
                    after = groups[6]
            if match is not None:
                stack[-1][key] = value
                index = match.end()
                if after == ",":
                    comma = index - 1
                    state = _KEY_NEXT
                    continue
                if after is None:
                    state = _AFTER
                    continue
                if len(after) > 1 and not python:  # a trailing comma is Python syntax
                    _trailing_comma(policy, repairs, match.start(match.lastindex), "}")  # type: ignore[arg-type]
                value = stack.pop()
                keys.pop()
            else:
                match = key_alone(text, index, end)
                if match is not None:
                    key = match.group(1)
                    if key is None:
                        key = match.group(2)
                        if not python:
                            key, match = _relaxed_key(key, match.group(3), policy, repairs, match)
                if match is not None:
                    keys[-1] = key
                    index = match.end()
                    state = _VALUE
                    continue
                index = blanks(text, index, end).end()  # type: ignore[union-attr]
                if index >= end:
                    raise ReadError("the text ends inside an object", end, at_end=True)
                if text[index] != "}":
                    if tokens is None:
                        tokens = TokenReader(text, end, policy, python, repairs)
                    keys[-1], index = tokens.key(index)
                    state = _VALUE
                    continue
                if state == _KEY_NEXT and not python:  # a trailing comma is Python syntax
                    if tokens is None:
                        tokens = TokenReader(text, end, policy, python, repairs)
                    tokens.allow("trailing_commas", "trailing comma before '}'", comma)
                index += 1
                value = stack.pop()
                keys.pop()
        elif state == _AFTER:
            match = after_value(text, index, end)
            is_object = type(stack[-1]) is dict
            if match is None:
                index = blanks(text, index, end).end()  # type: ignore[union-attr]
                if index >= end:
                    what = "an object" if is_object else "an array"
                    raise ReadError(f"the text ends inside {what}", end, at_end=True)
                closer = "}" if is_object else "]"
                raise ReadError(f"expected ',' or '{closer}' but found {text[index]!r}", index)
            index = match.end()
            char = match.group(1)
            if char == ",":
                comma = index - 1
                state = _KEY_NEXT if is_object else _ITEM_NEXT
                continue
            if (char == "}") is not is_object:
                closer = "}" if is_object else "]"
                raise ReadError(f"expected ',' or '{closer}' but found {char!r}", index - 1)
            value = stack.pop()
            keys.pop()
        else:
            match = item(text, index, end) if state != _VALUE else None
            if match is not None:
                groups = match.groups()
                if python:
                    if groups[0] is not None:
                        value = groups[0]
                    elif groups[1] is not None:
                        value = groups[1]
                    elif groups[2] is not None:
                        value = int(groups[2])
                    else:
                        value = keywords[groups[3]]
                    after = groups[4]
                else:
                    if groups[0] is not None:
                        value = groups[0]
                    elif groups[1] is not None:
                        value = int(groups[1])
                    else:
                        value = keywords[groups[2]]
                    after = groups[3]
                stack[-1].append(value)
                index = match.end()
                if after == ",":
                    comma = index - 1
                    state = _ITEM_NEXT
                    continue
                if after is None:
                    state = _AFTER
                    continue
                if len(after) > 1 and not python:
                    _trailing_comma(policy, repairs, match.start(match.lastindex), "]")  # type: ignore[arg-type]
                value = stack.pop()
                keys.pop()
            else:
                index = blanks(text, index, end).end()  # type: ignore[union-attr]
                if index >= end:
                    what = "an object" if type(stack[-1]) is dict else "an array"
                    raise ReadError(f"the text ends inside {what}", end, at_end=True)
                char = text[index]
                if char == "{" or char == "[":
                    if len(stack) >= MAX_DEPTH:
                        raise ReadError(f"nested deeper than {MAX_DEPTH} levels", index)
                    stack.append({} if char == "{" else [])
                    keys.append("")
                    index += 1
                    state = _KEY_FIRST if char == "{" else _ITEM_FIRST
                    continue
                if tokens is None:
                    tokens = TokenReader(text, end, policy, python, repairs)
                if char == "]" and state != _VALUE:
                    if state == _ITEM_NEXT and not python:
                        tokens.allow("trailing_commas", "trailing comma before ']'", comma)
                    index += 1
                    value = stack.pop()
                    keys.pop()
                else:
                    value, index = tokens.scalar(index)
        if not stack:
            if wrappers:
                closed = close_wrapping(text, index, end, wrappers)
                if closed is None:
                    # Not one wrapped object: fail where reading without unwrapping fails.
                    second = blanks(text, start + 1, end).end()  # type: ignore[union-attr]
                    raise ReadError("expected a key in double quotes but found '{'", second)
                index = closed
            return Read(value, index, repairs)
        parent = stack[-1]
        if type(parent) is dict:
            parent[keys[-1]] = value
        else:
            parent.append(value)
        state = _AFTER


def _trailing_comma(
    policy: Policy, repairs: list[RepairKind], position: int, closer: str
) -> None:
    """Record a trailing comma (at ``position``, before ``closer``), or refuse it."""
    if not policy.trailing_commas:
        raise ReadError(f"trailing comma before '{closer}'", position, refused=True)
    if "trailing_commas" not in repairs:
        repairs.append("trailing_commas")


def _relaxed_key(
    single: str | None,
    bare: str | None,
    policy: Policy,
    repairs: list[RepairKind],
    match: re.Match[str],
) -> tuple[str, re.Match[str] | None]:
    """A single-quoted or bare key matched by a fast pattern, when the policy allows it.

    Returns the key and the match, or ``None`` as the match when the repair is off (the
    general path then fails with its message).
    """
    kind: RepairKind = "single_quoted_keys" if single is not None else "bare_keys"
    if not policy.allows(kind):
        return "", None
    if kind not in repairs:
        repairs.append(kind)
    return (single if single is not None else bare) or "", match


def read_object(
    text: str, start: int, policy: Policy, *, python: bool = False, end: int | None = None
) -> Read:
    """Read one object starting at ``text[start]`` (which must be ``{``), not past ``end``.

    Raises :class:`ReadError` when the text is not an object under ``policy``. In Python mode
    ``python_literal`` is reported first (after ``wrapping_braces``), then the repairs found
    inside, in text order.
    """
    return _read(text, start, len(text) if end is None else end, policy, python)


def read_group(text: str, start: int, end: int, policy: Policy) -> Read | ReadError:
    """Read the object at ``start`` as JSON, then (if that fails) as a Python literal.

    Returns the error instead of raising it, because callers keep it (stripped of its
    traceback, so that no frame stays alive with it). The Python reading is tried only when it
    could succeed where JSON failed: Python differs from the JSON reader only in single-quoted
    strings, ``True``/``False``/``None``, and in syntax that the JSON reader knows as a repair
    the policy turned off (trailing commas, raw control characters, unknown escapes). Anything
    else fails the same way in both, so the second read is skipped.
    """
    try:
        return _read(text, start, end, policy, False)
    except ReadError as error:
        if policy.python_literal and (
            error.refused or _PYTHON_ONLY.search(text, start, end) is not None
        ):
            try:
                return _read(text, start, end, policy, True)
            except ReadError:
                pass
        return error.with_traceback(None)
