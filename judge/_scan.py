"""A lenient structural scan: where the top-level objects are, and whether the text is cut off.

The scan never builds values; it only tracks strings and brackets, so it can decide two things
about text that no parser accepts yet:

- whether the text *ends inside a value* (inside a string, or with a bracket still open), which
  is the judge's definition of truncation, and
- where each top-level ``{...}`` / ``[...]`` group starts and ends, which is what the ``prose``
  repair and the ``ambiguous`` rejection count.

It understands the same string forms as the relaxed reader: double-quoted strings with
backslash escapes, single-quoted strings (only where a token may start inside brackets, so an
apostrophe in prose such as ``it's`` is never a string), and ``<|"|>`` / ``<|">`` quote tokens.
Outside brackets everything except an opening bracket is prose. It runs in one left-to-right
pass with regexes doing the inner loops, and it never recurses, so 100,000 nested brackets cost
one list of 100,000 characters.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Literal

__all__ = ["QUOTE_TOKENS", "Scan", "scan"]

#: The quote tokens some chat templates use as string delimiters (Gemma, Kimi via gateways).
QUOTE_TOKENS = ('<|"|>', '<|">')

DOUBLE_QUOTED = re.compile(r'"(?:[^"\\]++|\\.)*+"', re.DOTALL)
SINGLE_QUOTED = re.compile(r"'(?:[^'\\]++|\\.)*+'", re.DOTALL)
_OUTSIDE = re.compile(r"[^{\[]*+")
_INSIDE = re.compile(r"""[^"'<{}\[\]]*+""")
_TOKEN_STARTERS = frozenset("{[,:")
_WHITESPACE = frozenset(" \t\r\n")
_CLOSER_OF = {"{": "}", "[": "]"}

Unterminated = Literal["string", "object", "array"]


@dataclass(slots=True)
class Scan:
    """What :func:`scan` found.

    ``groups`` are the complete top-level bracket groups as ``(start, end)`` slices.
    ``unterminated`` says what the text ends inside (``None`` when it ends outside any value).
    ``open_start`` is where the top-level group (or leading string) still open at the end
    starts. ``broken`` is the start of a top-level group whose brackets do not match
    (``{"a": 1]``); scanning stops there because nothing after a mismatch can be located.
    """

    groups: list[tuple[int, int]] = field(default_factory=list)
    unterminated: Unterminated | None = None
    open_start: int | None = None
    broken: int | None = None


def _token_may_start(text: str, index: int) -> bool:
    """True when the previous non-blank character allows a string to start at ``index``."""
    back = index - 1
    while back >= 0 and text[back] in _WHITESPACE:
        back -= 1
    return back >= 0 and text[back] in _TOKEN_STARTERS


def scan(text: str) -> Scan:
    """Scan ``text`` once; see :class:`Scan` for what is reported."""
    result = Scan()
    length = len(text)
    index = 0
    stack: list[str] = []
    group_start = 0
    # A text that starts with a double quote may be a (double-encoded) JSON string: a quote that
    # never closes there means the text ends inside that string.
    first = len(text) - len(text.lstrip())
    if first < length and text[first] == '"':
        match = DOUBLE_QUOTED.match(text, first)
        if match is None:
            result.unterminated = "string"
            result.open_start = first
            return result
        index = match.end()
    while index < length:
        if not stack:
            index = _OUTSIDE.match(text, index).end()  # type: ignore[union-attr]
            if index >= length:
                break
            group_start = index
            stack.append(text[index])
            index += 1
            continue
        index = _INSIDE.match(text, index).end()  # type: ignore[union-attr]
        if index >= length:
            break
        char = text[index]
        if char == '"':
            match = DOUBLE_QUOTED.match(text, index)
            if match is None:
                result.unterminated = "string"
                result.open_start = group_start
                return result
            index = match.end()
        elif char == "'":
            if _token_may_start(text, index):
                match = SINGLE_QUOTED.match(text, index)
                if match is None:
                    result.unterminated = "string"
                    result.open_start = group_start
                    return result
                index = match.end()
            else:
                index += 1
        elif char == "<":
            token = next((t for t in QUOTE_TOKENS if text.startswith(t, index)), None)
            if token is None:
                index += 1
            else:
                close = text.find(token, index + len(token))
                if close < 0:
                    result.unterminated = "string"
                    result.open_start = group_start
                    return result
                index = close + len(token)
        elif char in _CLOSER_OF:
            stack.append(char)
            index += 1
        else:
            if _CLOSER_OF[stack.pop()] != char:
                result.broken = group_start
                return result
            index += 1
            if not stack:
                result.groups.append((group_start, index))
    if stack:
        result.unterminated = "object" if stack[-1] == "{" else "array"
        result.open_start = group_start
    return result
