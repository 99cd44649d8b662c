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
from typing import Literal

__all__ = ["QUOTE_TOKENS", "Scan", "scan"]

#: The quote tokens some chat templates use as string delimiters (Gemma, Kimi via gateways).
QUOTE_TOKENS = ('<|"|>', '<|">')

# Quoted strings, the loop unrolled (a run of plain characters, then escape-and-run pairs):
# sre matches that form about a third faster than an alternation inside the loop.
DOUBLE_QUOTED = re.compile(r'"[^"\\]*+(?:\\.[^"\\]*+)*+"', re.DOTALL)
SINGLE_QUOTED = re.compile(r"'[^'\\]*+(?:\\.[^'\\]*+)*+'", re.DOTALL)
_BLANKS = re.compile(r"\s*+")
_OUTSIDE = re.compile(r"[^{\[]*+")
# Inside brackets, everything up to a quote token, an apostrophe, a bracket or a double quote
# that never closes: complete double-quoted strings and a ``<`` that does not open a quote
# token are consumed here, in C, not token by token in Python.
_INSIDE = re.compile(
    r"""(?:[^"'<{}\[\]]++|"[^"\\]*+(?:\\.[^"\\]*+)*+"|<(?!\|"\|?>))*+""", re.DOTALL
)
# After an apostrophe that cannot start a string, none can until a comma, a colon or a bracket
# (``it's a 'word'`` in a value): everything up to one of those, or a double quote.
_AFTER_APOSTROPHE = re.compile(r"""(?:[^"{}\[\],:<]++|<(?!\|"\|?>))*+""")
# A top-level group with nothing inside that needs a closer look: no bracket, no apostrophe,
# no quote token; its strings closed.
_FLAT_GROUP = re.compile(
    r"""\{(?:[^"'<{}\[\]]++|"[^"\\]*+(?:\\.[^"\\]*+)*+"|<(?!\|"\|?>))*+\}"""
    r"""|\[(?:[^"'<{}\[\]]++|"[^"\\]*+(?:\\.[^"\\]*+)*+"|<(?!\|"\|?>))*+\]""",
    re.DOTALL,
)
# Runs of openers and of closers, with blanks between them.
_OPENERS = re.compile(r"[{\[](?:[ \t\r\n]*+[{\[])*+")
_CLOSERS = re.compile(r"[}\]](?:[ \t\r\n]*+[}\]])*+")
_NO_BLANKS = str.maketrans("", "", " \t\r\n")
_BRACKET_OR_BLANK = frozenset("{}[] \t\r\n")
_JSON_BLANKS = re.compile(r"[ \t\r\n]*+")
_CLOSER_FOR = str.maketrans("{[", "}]")
# Text with no colon and no double quote, and braces around blanks and braces only (``{}``,
# ``{{ }}``: an empty object, maybe wrapped).
_NO_COLON_OR_QUOTE = re.compile(r'[^:"]*+')
_BLANK_BRACES = re.compile(r"\{[ \t\r\n{}]*\}")
_TOKEN_STARTERS = frozenset("{[,:")
_WHITESPACE = frozenset(" \t\r\n")
_CLOSER_OF = {"{": "}", "[": "]"}

Unterminated = Literal["string", "object", "array"]


class Scan:
    """What :func:`scan` found.

    ``groups`` are the complete top-level bracket groups as ``(start, end)`` slices, except
    braces around words with no colon and no quote (``{x}`` in prose), which cannot be an object.
    ``unterminated`` says what the text ends inside (``None`` when it ends outside any value).
    ``open_start`` is where the top-level group (or leading string) still open at the end
    starts. ``broken`` is the start of a top-level group whose brackets do not match
    (``{"a": 1]``); scanning stops there because nothing after a mismatch can be located.
    (A plain class with slots: it is made once per scan, on the hot path.)
    """

    __slots__ = ("broken", "groups", "open_start", "unterminated")

    def __init__(self) -> None:
        self.groups: list[tuple[int, int]] = []
        self.unterminated: Unterminated | None = None
        self.open_start: int | None = None
        self.broken: int | None = None

    def __repr__(self) -> str:
        return (
            f"Scan(groups={self.groups!r}, unterminated={self.unterminated!r}, "
            f"open_start={self.open_start!r}, broken={self.broken!r})"
        )


def _token_may_start(text: str, index: int) -> bool:
    """True when the previous non-blank character allows a string to start at ``index``."""
    back = index - 1
    while back >= 0 and text[back] in _WHITESPACE:
        back -= 1
    return back >= 0 and text[back] in _TOKEN_STARTERS


def _is_prose_braces(text: str, start: int, end: int) -> bool:
    """True for ``{x}``: braces around words with no colon and no quote, which no reading can
    take for an object (only ``{}`` has no key). They are prose, so they are not reported."""
    return (
        text[start] == "{"
        and _NO_COLON_OR_QUOTE.match(text, start, end).end() == end  # type: ignore[union-attr]
        and _BLANK_BRACES.fullmatch(text, start, end) is None
    )


def _nth_closer_end(text: str, index: int, count: int) -> int:
    """The index after the ``count``-th closing bracket from ``index`` (blanks between)."""
    for _ in range(count - 1):
        index = _JSON_BLANKS.match(text, index + 1).end()  # type: ignore[union-attr]
    return index + 1


def scan(text: str, start: int = 0) -> Scan:
    """Scan ``text`` once from ``start``; see :class:`Scan` for what is reported.

    Every character is looked at a bounded number of times, so the scan is linear in the text.
    """
    result = Scan()
    length = len(text)
    index = start
    stack: list[str] = []
    group_start = start
    # A text that starts with a double quote may be a (double-encoded) JSON string: a quote that
    # never closes there means the text ends inside that string.
    if start == 0 and length and (text[0] == '"' or text[0].isspace()):
        first = _BLANKS.match(text).end()  # type: ignore[union-attr]
    else:
        first = length
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
            flat = _FLAT_GROUP.match(text, index)
            if flat is not None:  # a group with no bracket and no apostrophe inside: one call
                end = flat.end()
                if not _is_prose_braces(text, index, end):
                    result.groups.append((index, end))
                index = end
                continue
            group_start = index
            stack.append(text[index])
            index += 1
            continue
        index = _INSIDE.match(text, index).end()  # type: ignore[union-attr]
        if index >= length:
            break
        char = text[index]
        if char == '"':  # _INSIDE stops at a double quote only when the string never closes
            result.unterminated = "string"
            result.open_start = group_start
            return result
        if char == "'":
            if _token_may_start(text, index):
                match = SINGLE_QUOTED.match(text, index)
                if match is None:
                    result.unterminated = "string"
                    result.open_start = group_start
                    return result
                index = match.end()
            else:
                index = _AFTER_APOSTROPHE.match(text, index + 1).end()  # type: ignore[union-attr]
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
            if index + 1 < length and text[index + 1] in _BRACKET_OR_BLANK:
                # A run of openers (with blanks between) is pushed at once, in C.
                run = _OPENERS.match(text, index)
                stack.extend(run.group().translate(_NO_BLANKS))  # type: ignore[union-attr]
                index = run.end()  # type: ignore[union-attr]
            else:
                stack.append(char)
                index += 1
        elif index + 1 >= length or text[index + 1] not in _BRACKET_OR_BLANK:
            if _CLOSER_OF[stack.pop()] != char:  # one closer alone: the common case
                result.broken = group_start
                return result
            index += 1
            if not stack and not _is_prose_braces(text, group_start, index):
                result.groups.append((group_start, index))
        else:
            # A run of closers is checked against the top of the stack at once, in C.
            run_text = _CLOSERS.match(text, index).group()  # type: ignore[union-attr]
            closers = run_text.translate(_NO_BLANKS)
            count = min(len(closers), len(stack))
            expected = "".join(stack[-count:])[::-1].translate(_CLOSER_FOR)
            if closers[:count] != expected:
                result.broken = group_start
                return result
            del stack[-count:]
            if count == len(closers):
                index += len(run_text)
            elif len(run_text) == len(closers):
                index += count
            else:  # the run goes on past the group, with blanks in it: find its end
                index = _nth_closer_end(text, index, count)
            if not stack and not _is_prose_braces(text, group_start, index):
                result.groups.append((group_start, index))
    if stack:
        result.unterminated = "object" if stack[-1] == "{" else "array"
        result.open_start = group_start
    return result
