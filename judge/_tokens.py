"""The general token readers of the relaxed reader: keys, strings, numbers, keywords.

The main loop (``_reader``) matches the common tokens itself, one regex call each; everything
else comes here, where each liberty is named and allowed (or refused) by the policy and each
failure gets its message and position. Every helper reads only from its index and never past
``end``, and matches each pattern at one position, so its cost is linear in what it reads.
"""

from __future__ import annotations

import math
import re
from typing import Any, NoReturn

import msgspec

from ..core.verdict import RepairKind
from ._policy import Policy
from ._python_literal import PYTHON_KEYWORDS, PythonStringError, read_python_string
from ._scan import DOUBLE_QUOTED
from ._token_repairs import (
    CONTROL_CHAR,
    escape_control_chars,
    escape_invalid_backslashes,
    first_invalid_escape,
    read_bare_key,
    read_mismatched_key,
    read_quote_token_string,
    read_single_quoted_key,
)

__all__ = ["JSON_KEYWORDS", "ReadError", "TokenReader"]

#: JSON's keywords and their values.
JSON_KEYWORDS: dict[str, Any] = {"true": True, "false": False, "null": None}

_BLANKS = re.compile(r"[ \t\r\n]*+")
_NUMBER = re.compile(r"-?(?:0|[1-9][0-9]*+)(\.[0-9]++)?([eE][+-]?[0-9]++)?")
_WORD = re.compile(r"[A-Za-z_][A-Za-z0-9_]*+")
_NUMBER_TAIL = frozenset("0123456789.eE+-abcdfghijklmnopqrstuvwxyzABCDFGHIJKLMNOPQRSTUVWXYZ_")
_DIGIT_OR_MINUS = frozenset("-0123456789")
_LONE_SURROGATE = re.compile(r"[\ud800-\udfff]")
# A repaired string body is valid JSON by construction, so msgspec decodes it (in C).
_decode_string = msgspec.json.Decoder(str).decode


class ReadError(Exception):
    """The text is not one object under the allowed repairs.

    ``position`` is the offset in the text where reading stopped; ``at_end`` is true when the
    reader ran out of text inside a value; ``refused`` is true when the text needed a repair
    the policy turned off.
    """

    def __init__(
        self, message: str, position: int, *, at_end: bool = False, refused: bool = False
    ) -> None:
        super().__init__(message)
        self.message = message
        self.position = position
        self.at_end = at_end
        self.refused = refused


class TokenReader:
    """The state the helpers of one read share: text, end, dialect, policy and repairs.

    ``repairs`` is the read's own list: the main loop and the helpers append to the same one.
    """

    __slots__ = ("end", "policy", "python", "repairs", "text")

    def __init__(
        self, text: str, end: int, policy: Policy, python: bool, repairs: list[RepairKind]
    ) -> None:
        self.text = text
        self.end = end
        self.policy = policy
        self.python = python
        self.repairs = repairs

    def allow(self, kind: RepairKind, message: str, position: int) -> None:
        """Record ``kind`` if the policy allows it; otherwise fail at ``position``."""
        if not self.policy.allows(kind):
            raise ReadError(message, position, refused=True)
        if kind not in self.repairs:
            self.repairs.append(kind)

    def blank_end(self, index: int) -> int:
        return _BLANKS.match(self.text, index, self.end).end()  # type: ignore[union-attr]

    def json_body(self, body: str, position: int) -> str:
        """Decode the body of a double-quoted string, applying string repairs if needed."""
        control = CONTROL_CHAR.search(body)
        if control is not None:
            self.allow(
                "control_chars",
                f"raw control character U+{ord(control.group()):04X} inside a string",
                position + 1 + control.start(),
            )
        if "\\" not in body:
            return body  # a raw control character can only mean itself
        fixed = body if control is None else escape_control_chars(body)
        if first_invalid_escape(fixed) is not None:
            self.allow("invalid_escapes", "invalid escape inside a string", position)
            fixed = escape_invalid_backslashes(fixed)
        try:
            value: str = _decode_string(f'"{fixed}"')
        except msgspec.DecodeError:  # what is left to fail: a \u escape of a lone surrogate
            raise ReadError(
                "a \\u escape encodes a lone surrogate, which is not Unicode", position
            ) from None
        return value

    def missing_colon(self, index: int) -> NoReturn:
        """Fail after a key ending at ``index`` that no colon follows."""
        colon = self.blank_end(index)
        if colon >= self.end:
            raise ReadError("the text ends after a key", colon, at_end=True)
        raise ReadError("expected ':' after the key", colon)

    def key(self, index: int) -> tuple[str, int]:
        """Read a key and its colon at ``index``; return the key and the index after the colon."""
        text = self.text
        end = self.end
        char = text[index]
        if self.python and char in "'\"":
            return self.python_key(index)
        if char == '"':
            match = DOUBLE_QUOTED.match(text, index, end)
            if match is not None:
                colon = self.blank_end(match.end())
                if colon < end and text[colon] == ":":
                    return self.json_body(text[index + 1 : match.end() - 1], index), colon + 1
            mismatched = read_mismatched_key(text, index, end)
            if mismatched is not None:
                self.allow("single_quoted_keys", "key closed by the wrong quote", index)
                return self.json_body(mismatched[0], index), mismatched[1]
            if match is None:
                raise ReadError("the text ends inside a key", end, at_end=True)
            self.missing_colon(match.end())
        if char == "'" and not self.python:
            single = read_single_quoted_key(text, index, end) or read_mismatched_key(
                text, index, end
            )
            if single is None:
                raise ReadError("expected a key in double quotes", index)
            self.allow("single_quoted_keys", "single-quoted key", index)
            return self.json_body(single[0], index), single[1]
        if char == "<":
            token = read_quote_token_string(text, index, end)
            if token is not None:
                colon = self.blank_end(token[1])
                if colon < end and text[colon] == ":":
                    self.allow("quote_tokens", 'key delimited by <|"|> tokens', index)
                    return token[0], colon + 1
        if self.python:
            raise ReadError("expected a quoted key", index)
        bare = read_bare_key(text, index, end)
        if bare is not None:
            self.allow("bare_keys", "key without quotes", index)
            return bare
        raise ReadError(f"expected a key in double quotes but found {char!r}", index)

    def python_key(self, index: int) -> tuple[str, int]:
        """A key in Python mode: a Python string, or one closed by the wrong quote."""
        try:
            key, after = self.python_string(index)
        except ReadError:
            mismatched = self.python_mismatched_key(index)
            if mismatched is None:
                raise
            return mismatched
        colon = self.blank_end(after)
        if colon < self.end and self.text[colon] == ":":
            return key, colon + 1
        mismatched = self.python_mismatched_key(index)
        if mismatched is None:
            self.missing_colon(after)
        return mismatched

    def python_mismatched_key(self, index: int) -> tuple[str, int] | None:
        """``"parameters': {...}`` in Python mode: only without escapes (both dialects agree)."""
        mismatched = read_mismatched_key(self.text, index, self.end)
        if mismatched is None or self.text.find("\\", index, mismatched[1]) >= 0:
            return None
        self.allow("single_quoted_keys", "key closed by the wrong quote", index)
        return self.json_body(mismatched[0], index), mismatched[1]

    def python_string(self, index: int) -> tuple[str, int]:
        text = self.text
        try:
            value, after, line_feed = read_python_string(text, index, self.end)
        except PythonStringError as error:
            at_end = text.find(text[index], index + 1, self.end) < 0
            raise ReadError(str(error), index, at_end=at_end) from None
        if line_feed:
            self.allow("control_chars", "raw line feed inside a string", index)
        if _LONE_SURROGATE.search(value) is not None:
            raise ReadError("the string holds a lone surrogate, which is not Unicode", index)
        return value, after

    def scalar(self, index: int) -> tuple[Any, int]:
        """Read a string, number or keyword at ``index``."""
        text = self.text
        end = self.end
        char = text[index]
        if char == '"' and not self.python:
            match = DOUBLE_QUOTED.match(text, index, end)
            if match is None:
                raise ReadError("the text ends inside a string", end, at_end=True)
            return self.json_body(text[index + 1 : match.end() - 1], index), match.end()
        if char in "'\"":
            if not self.python:
                raise ReadError("a single-quoted string value", index)
            return self.python_string(index)
        if char == "<":
            token = read_quote_token_string(text, index, end)
            if token is not None:
                self.allow("quote_tokens", 'string delimited by <|"|> tokens', index)
                return token
        if char in _DIGIT_OR_MINUS:
            return self.number(index)
        word = _WORD.match(text, index, end)
        if word is not None:
            keywords = PYTHON_KEYWORDS if self.python else JSON_KEYWORDS
            name = word.group()
            if name in keywords:
                return keywords[name], word.end()
            if word.end() >= end:
                raise ReadError("the text ends inside a value", end, at_end=True)
            if name in PYTHON_KEYWORDS:
                raise ReadError(f"{name} is Python, not JSON", index)
            raise ReadError(f"unquoted value {name!r} (string values need quotes)", index)
        raise ReadError(f"expected a value but found {char!r}", index)

    def number(self, index: int) -> tuple[Any, int]:
        end = self.end
        match = _NUMBER.match(self.text, index, end)
        if match is None:
            if index + 1 >= end:
                raise ReadError("the text ends inside a number", end, at_end=True)
            raise ReadError("invalid number", index)
        after = match.end()
        if after < end and self.text[after] in _NUMBER_TAIL:
            raise ReadError("invalid number", index)
        token = match.group()
        try:
            if match.group(1) is None and match.group(2) is None:
                return int(token), after
            value = float(token)
        except ValueError:
            raise ReadError("number too long", index) from None
        if math.isinf(value):
            raise ReadError("number out of range", index)
        return value, after
