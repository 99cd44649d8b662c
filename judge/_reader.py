"""The relaxed reader: one JSON object, read iteratively, applying token repairs on the way.

Why not a library? ``msgspec`` (the fast path) and ``jiter`` only read strict JSON; jiter's
partial mode *completes* truncated input, which is exactly what the judge must never do, and
neither reports which liberty was taken. ``json_repair`` accepts everything (it fills missing
values, keeps the last of two objects, completes truncation) and is 20-100x slower. The judge
needs the opposite: accept only the few deviations that have exactly one reading, name each one,
and fail with a position otherwise. So this reader is small and strict about everything else.

It reads with an explicit stack (never recursion: 100,000 nested brackets cannot raise
``RecursionError``) and gives up beyond :data:`MAX_DEPTH` levels. In JSON mode it accepts strict
JSON plus the token repairs the policy allows; in Python mode (``python=True``) it accepts a
Python dict literal with JSON-compatible values and nothing else.
"""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass, field
from typing import Any

from ..pipeline.verdict import RepairKind
from ._policy import Policy
from ._python_literal import PYTHON_KEYWORDS, PythonStringError, read_python_string
from ._scan import DOUBLE_QUOTED
from ._token_repairs import (
    CONTROL_CHAR,
    INVALID_BACKSLASH,
    escape_control_chars,
    escape_invalid_backslashes,
    read_bare_key,
    read_mismatched_key,
    read_quote_token_string,
    read_single_quoted_key,
    skip_trailing_comma,
)

__all__ = ["MAX_DEPTH", "Read", "ReadError", "read_object"]

#: Deepest nesting the reader accepts; deeper arguments are rejected, not read.
MAX_DEPTH = 256

_BLANKS = re.compile(r"[ \t\r\n]*+")
_NUMBER = re.compile(r"-?(?:0|[1-9][0-9]*+)(\.[0-9]++)?([eE][+-]?[0-9]++)?")
_WORD = re.compile(r"[A-Za-z_][A-Za-z0-9_]*+")
_NUMBER_TAIL = frozenset("0123456789.eE+-abcdfghijklmnopqrstuvwxyzABCDFGHIJKLMNOPQRSTUVWXYZ_")
_LONE_SURROGATE = re.compile(r"[\ud800-\udfff]")
_JSON_KEYWORDS: dict[str, Any] = {"true": True, "false": False, "null": None}

_KEY_FIRST, _KEY_NEXT, _VALUE, _ITEM_FIRST, _ITEM_NEXT, _AFTER = range(6)


class ReadError(Exception):
    """The text is not one object under the allowed repairs.

    ``position`` is the offset in the text where reading stopped; ``at_end`` is true when the
    reader ran out of text inside a value (the caller treats that as truncation).
    """

    def __init__(self, message: str, position: int, *, at_end: bool = False) -> None:
        super().__init__(message)
        self.message = message
        self.position = position
        self.at_end = at_end


@dataclass(slots=True)
class Read:
    """A successfully read object, where it ended, and the repairs that reading needed."""

    value: dict[str, Any]
    end: int
    repairs: list[RepairKind] = field(default_factory=list)


class _Reader:
    """The state of one read; a class so that the helpers share text, policy and repairs."""

    __slots__ = ("length", "policy", "python", "repairs", "text")

    def __init__(self, text: str, policy: Policy, python: bool) -> None:
        self.text = text
        self.length = len(text)
        self.policy = policy
        self.python = python
        self.repairs: list[RepairKind] = []

    def allow(self, kind: RepairKind, message: str, position: int) -> None:
        """Record ``kind`` if the policy allows it; otherwise fail at ``position``."""
        if not self.policy.allows(kind):
            raise ReadError(message, position)
        if kind not in self.repairs:
            self.repairs.append(kind)

    def blank_end(self, index: int) -> int:
        return _BLANKS.match(self.text, index).end()  # type: ignore[union-attr]

    def json_body(self, body: str, position: int) -> str:
        """Decode the body of a double-quoted string, applying string repairs if needed."""
        if "\\" not in body and CONTROL_CHAR.search(body) is None:
            return body
        fixed = body
        control = CONTROL_CHAR.search(fixed)
        if control is not None:
            self.allow(
                "control_chars",
                f"raw control character U+{ord(control.group()):04X} inside a string",
                position + 1 + control.start(),
            )
            fixed = escape_control_chars(fixed)
        if "\\" in fixed:
            for match in INVALID_BACKSLASH.finditer(fixed):
                if match.group(1) is not None:
                    self.allow("invalid_escapes", "invalid escape inside a string", position)
                    fixed = escape_invalid_backslashes(fixed)
                    break
        value: str = json.loads(f'"{fixed}"')
        if _LONE_SURROGATE.search(value) is not None:
            raise ReadError("a \\u escape encodes a lone surrogate, which is not Unicode", position)
        return value

    def key(self, index: int) -> tuple[str, int]:
        """Read a key and its colon at ``index``; return the key and the index after the colon."""
        text = self.text
        char = text[index]
        if self.python:
            if char not in "'\"":
                raise ReadError("expected a quoted key", index)
            key, end = self.python_string(index)
            colon = self.blank_end(end)
            if colon >= self.length:
                raise ReadError("the text ends after a key", colon, at_end=True)
            if text[colon] != ":":
                raise ReadError("expected ':' after the key", colon)
            return key, colon + 1
        if char == '"':
            match = DOUBLE_QUOTED.match(text, index)
            if match is not None:
                colon = self.blank_end(match.end())
                if colon < self.length and text[colon] == ":":
                    return self.json_body(text[index + 1 : match.end() - 1], index), colon + 1
            mismatched = read_mismatched_key(text, index)
            if mismatched is not None:
                self.allow("single_quoted_keys", "key closed by the wrong quote", index)
                return self.json_body(mismatched[0], index), mismatched[1]
            if match is None:
                raise ReadError("the text ends inside a key", self.length, at_end=True)
            if colon >= self.length:
                raise ReadError("the text ends after a key", colon, at_end=True)
            raise ReadError("expected ':' after the key", colon)
        if char == "'":
            single = read_single_quoted_key(text, index) or read_mismatched_key(text, index)
            if single is None:
                raise ReadError("expected a key in double quotes", index)
            self.allow("single_quoted_keys", "single-quoted key", index)
            return self.json_body(single[0], index), single[1]
        if char == "<":
            token = read_quote_token_string(text, index)
            if token is not None:
                colon = self.blank_end(token[1])
                if colon < self.length and text[colon] == ":":
                    self.allow("quote_tokens", 'key delimited by <|"|> tokens', index)
                    return token[0], colon + 1
        bare = read_bare_key(text, index)
        if bare is not None:
            self.allow("bare_keys", "key without quotes", index)
            return bare
        raise ReadError(f"expected a key in double quotes but found {char!r}", index)

    def python_string(self, index: int) -> tuple[str, int]:
        try:
            value, end = read_python_string(self.text, index)
        except PythonStringError as error:
            at_end = self.text.find(self.text[index], index + 1) < 0
            raise ReadError(str(error), index, at_end=at_end) from None
        if _LONE_SURROGATE.search(value) is not None:
            raise ReadError("the string holds a lone surrogate, which is not Unicode", index)
        return value, end

    def scalar(self, index: int) -> tuple[Any, int]:
        """Read a string, number or keyword at ``index``."""
        text = self.text
        char = text[index]
        if char == '"' and not self.python:
            match = DOUBLE_QUOTED.match(text, index)
            if match is None:
                raise ReadError("the text ends inside a string", self.length, at_end=True)
            return self.json_body(text[index + 1 : match.end() - 1], index), match.end()
        if char in "'\"":
            if not self.python:
                raise ReadError("a single-quoted string value", index)
            return self.python_string(index)
        if char == "<" and not self.python:
            token = read_quote_token_string(text, index)
            if token is not None:
                self.allow("quote_tokens", 'string delimited by <|"|> tokens', index)
                return token
        if char == "-" or char.isdigit():
            return self.number(index)
        word = _WORD.match(text, index)
        if word is not None:
            keywords = PYTHON_KEYWORDS if self.python else _JSON_KEYWORDS
            name = word.group()
            if name in keywords:
                return keywords[name], word.end()
            if word.end() >= self.length:
                raise ReadError("the text ends inside a value", self.length, at_end=True)
            if name in PYTHON_KEYWORDS:
                raise ReadError(f"{name} is Python, not JSON", index)
            raise ReadError(f"unquoted value {name!r} (string values need quotes)", index)
        raise ReadError(f"expected a value but found {char!r}", index)

    def number(self, index: int) -> tuple[Any, int]:
        match = _NUMBER.match(self.text, index)
        if match is None:
            if index + 1 >= self.length:
                raise ReadError("the text ends inside a number", self.length, at_end=True)
            raise ReadError("invalid number", index)
        end = match.end()
        if end < self.length and self.text[end] in _NUMBER_TAIL:
            raise ReadError("invalid number", index)
        token = match.group()
        try:
            if match.group(1) is None and match.group(2) is None:
                return int(token), end
            value = float(token)
        except ValueError:
            raise ReadError("number too long", index) from None
        if math.isinf(value):
            raise ReadError("number out of range", index)
        return value, end

    def read(self, start: int) -> Read:
        text = self.text
        length = self.length
        if start >= length or text[start] != "{":
            raise ReadError("expected '{'", start)
        root: dict[str, Any] = {}
        stack: list[Any] = [root]
        keys: list[str] = [""]
        index = start + 1
        state = _KEY_FIRST
        while True:
            index = self.blank_end(index)
            if index >= length:
                what = "an object" if type(stack[-1]) is dict else "an array"
                raise ReadError(f"the text ends inside {what}", length, at_end=True)
            char = text[index]
            value: Any
            if state == _AFTER:
                container = stack[-1]
                is_object = type(container) is dict
                closer = "}" if is_object else "]"
                if char == ",":
                    closing = skip_trailing_comma(text, index + 1, closer)
                    if closing is None:
                        index += 1
                        state = _KEY_NEXT if is_object else _ITEM_NEXT
                        continue
                    if not self.python:  # a trailing comma is plain Python syntax
                        self.allow("trailing_commas", f"trailing comma before '{closer}'", index)
                    index = closing
                elif char != closer:
                    raise ReadError(f"expected ',' or '{closer}' but found {char!r}", index)
                index += 1
                value = stack.pop()
                keys.pop()
            elif state == _KEY_FIRST or state == _KEY_NEXT:
                if char == "}" and state == _KEY_FIRST:
                    index += 1
                    value = stack.pop()
                    keys.pop()
                else:
                    keys[-1], index = self.key(index)
                    state = _VALUE
                    continue
            elif char == "]" and state == _ITEM_FIRST:
                index += 1
                value = stack.pop()
                keys.pop()
            elif char == "{" or char == "[":
                if len(stack) >= MAX_DEPTH:
                    raise ReadError(f"nested deeper than {MAX_DEPTH} levels", index)
                stack.append({} if char == "{" else [])
                keys.append("")
                index += 1
                state = _KEY_FIRST if char == "{" else _ITEM_FIRST
                continue
            else:
                value, index = self.scalar(index)
            if not stack:
                return Read(value, index, self.repairs)
            parent = stack[-1]
            if type(parent) is dict:
                parent[keys[-1]] = value
            else:
                parent.append(value)
            state = _AFTER


def read_object(text: str, start: int, policy: Policy, *, python: bool = False) -> Read:
    """Read one object starting at ``text[start]`` (which must be ``{``).

    Raises :class:`ReadError` when the text is not an object under ``policy``. In Python mode
    the only repair recorded is ``python_literal``.
    """
    reader = _Reader(text, policy, python)
    result = reader.read(start)
    if python:
        result.repairs = ["python_literal"]
    return result
