"""Repairs that remove text around the arguments: ``template_markers``, ``fence``,
``wrapping_braces``.

Each function returns positions, never a rewritten text, so positions reported by the parser
stay positions in the raw text; and each is safe for the same reason: what it removes can never
be part of a JSON value at that place.

Every function here runs in time linear in the text. That is why none of them uses a pattern
that is *searched* (tried at every position) with an unbounded run inside it: a search for
``\\s*```\\Z`` or ``(?:\\s*<marker>)+\\s*\\Z`` re-reads a run of blanks from each of its
positions, which is quadratic on a long run (``"x" + " " * 64_000 + "]"`` took 44 s). Edges
are found by walking from the end instead, and patterns are only *matched* at one position.
"""

from __future__ import annotations

import re

__all__ = [
    "MAX_WRAPPING",
    "close_wrapping",
    "open_wrapping",
    "strip_fence",
    "strip_template_markers",
]

# Chat-template special tokens that leak into the arguments when a server's tool-call parser
# misses them: ``<|tool_call_end|>``, ``<|im_end|>``, ``<|python_tag|>`` (``<|...|>`` tokens,
# but never the ``<|"|>`` quote token), ``<tool_call>`` / ``</tool_call>`` / ``<tool_call|>``
# (Hermes, Qwen, Gemma; openhuman#4766), DeepSeek's full-width-bar markers and
# Mistral's ``[TOOL_CALLS]``. Every alternative is at most 68 characters long.
_MARKER = (
    r"(?:<\|[A-Za-z_][\w.\-]{0,63}\|>"
    r"|<｜[^｜<>]{1,64}｜>"  # noqa: RUF001 - DeepSeek's markers use full-width bars
    r"|</?\|?(?:tool_calls?|function_calls?|tool_use)\|?>"
    r"|\[/?TOOL_CALLS\])"
)
_LEADING_MARKERS = re.compile(rf"(?:\s*+{_MARKER})++\s*+")
_ONE_MARKER = re.compile(_MARKER)
#: How far back from an edge a marker can start (the longest marker, with room to spare).
_MARKER_WINDOW = 72
# The ``{`` of an object followed by one or more ``{`` (wrapping braces), and the ``}`` after
# a wrapped object.
_WRAPPING_OPEN = re.compile(r"\{(?:[ \t\r\n]*+\{)++")
_WRAPPING_CLOSE = re.compile(r"(?:[ \t\r\n]*+\})++")

# The opening line of a Markdown code fence: three backticks, an optional language tag, then
# either a newline or the JSON itself on the same line.
_FENCE_OPEN = re.compile(r"```[ \t]*+[A-Za-z0-9_+.\-]*+[ \t]*+(?:\r?\n|(?=[\[{\"]))")
_FENCE = "```"

#: How many pairs of wrapping braces are removed at most; models produce two to four.
MAX_WRAPPING = 16


def strip_template_markers(text: str) -> tuple[int, int] | None:
    """Remove chat-template markers at the start and the end of ``text``.

    Safe because a JSON text can neither start nor end with ``<`` or ``[TOOL_CALLS]`` outside
    a value: markers at the edges are never part of the arguments. Markers *between* two
    objects are not removed here (that text holds two calls and is rejected as ambiguous), and
    markers inside strings are never touched because only the edges are examined.
    """
    start = 0
    length = len(text)
    if text.startswith(("<", "[")):
        leading = _LEADING_MARKERS.match(text)
        if leading is not None:
            start = leading.end()
    # Walk back from the end, one marker (and the blanks before it) at a time. A marker
    # ending with ``>`` starts at a ``<`` and holds no other ``<`` (one ending with ``]``
    # likewise with ``[``), so it can only start at the last one; that one is looked for in a
    # bounded window, so each step costs a constant whatever the length.
    end = length
    while True:
        probe = end
        while probe > start and text[probe - 1].isspace():
            probe -= 1
        if probe <= start:
            break
        last = text[probe - 1]
        if last == ">":
            begin = text.rfind("<", max(start, probe - _MARKER_WINDOW), probe)
        elif last == "]":
            begin = text.rfind("[", max(start, probe - _MARKER_WINDOW), probe)
        else:
            break
        if begin < 0 or _ONE_MARKER.fullmatch(text, begin, probe) is None:
            break
        end = begin
    if end == length:
        return None if start == 0 else (start, end)
    while end > start and text[end - 1].isspace():  # the blanks before the first marker
        end -= 1
    return start, end


def strip_fence(text: str) -> tuple[int, int] | None:
    """Remove a Markdown code fence (```` ```json ... ``` ````) around the whole text.

    Safe because a JSON text cannot start with a backtick: when the whole text is one fenced
    block, its body is the only candidate for the arguments. A fence that is opened but never
    closed is not removed (the body may be cut off; the prose and truncation rules decide).
    The body ends where the blanks before the closing fence start.
    """
    if not text.startswith(_FENCE) or not text.endswith(_FENCE):
        return None
    opening = _FENCE_OPEN.match(text)
    if opening is None:
        return None
    start = opening.end()
    end = len(text) - len(_FENCE)
    if end < start:  # the closing backticks are part of the opening line
        return None
    while end > start and text[end - 1].isspace():
        end -= 1
    return start, end


def open_wrapping(text: str, start: int, end: int) -> tuple[int, int]:
    """Count the extra ``{`` that open right after the ``{`` at ``start``: ``{{ {"a": 1}}}``.

    Returns ``(levels, inner)``: how many wrapping braces there are and where the innermost
    object's ``{`` is (``(0, start)`` when there are none, or more than :data:`MAX_WRAPPING`).
    Safe because ``{{`` is never valid JSON (an object key must be a string): a brace in key
    position can only be the start of the object the outer braces wrap. The reader then
    requires the inner object to be followed by exactly as many ``}``, so ``{{"a":1}, "b":2}``
    (whose inside is not one object) is never unwrapped.
    """
    match = _WRAPPING_OPEN.match(text, start, end)
    if match is None:
        return 0, start
    levels = match.group().count("{") - 1
    if levels > MAX_WRAPPING:
        return 0, start
    return levels, match.end() - 1


def close_wrapping(text: str, index: int, end: int, levels: int) -> int | None:
    """After the wrapped object (ending at ``index``), skip ``levels`` closing braces.

    Returns the index after the last one, or ``None`` when anything else stands there.
    """
    match = _WRAPPING_CLOSE.match(text, index, end)
    if match is None:
        return None
    found = match.group().count("}")
    if found == levels:
        return match.end()
    if found < levels:
        return None
    for _ in range(levels):  # more braces follow: stop after the wrapping ones
        index = text.index("}", index) + 1
    return index
