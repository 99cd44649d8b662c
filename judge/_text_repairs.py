"""Repairs that remove text around the arguments: ``template_markers``, ``fence``,
``wrapping_braces``.

Each function takes the (already stripped) text and returns the ``(start, end)`` slice of what
is left once the repair is applied, or ``None`` when the repair does not apply. They never
rewrite the inside of the slice, so positions reported by the parser stay positions in the raw
text, and so each is safe for the same reason: what they remove can never be part of a JSON
value at that place.
"""

from __future__ import annotations

import re

from ._scan import scan

__all__ = ["MAX_WRAPPING", "strip_fence", "strip_template_markers", "unwrap_braces"]

# Chat-template special tokens that leak into the arguments when a server's tool-call parser
# misses them: ``<|tool_call_end|>``, ``<|im_end|>``, ``<|python_tag|>`` (``<|...|>`` tokens,
# but never the ``<|"|>`` quote token), ``<tool_call>`` / ``</tool_call>`` / ``<tool_call|>``
# (Hermes, Qwen, Gemma; openhuman#4766), DeepSeek's full-width-bar markers and
# Mistral's ``[TOOL_CALLS]``.
_MARKER = (
    r"(?:<\|[A-Za-z_][\w.\-]{0,63}\|>"
    r"|<｜[^｜<>]{1,64}｜>"  # noqa: RUF001 - DeepSeek's markers use full-width bars
    r"|</?\|?(?:tool_calls?|function_calls?|tool_use)\|?>"
    r"|\[/?TOOL_CALLS\])"
)
_LEADING_MARKERS = re.compile(rf"(?:\s*{_MARKER})+\s*")
_TRAILING_MARKERS = re.compile(rf"(?:\s*{_MARKER})+\s*\Z")

# A Markdown code fence around the whole text: an optional language tag, then either a newline
# or the JSON itself on the same line, and a closing fence at the very end.
_FENCE = re.compile(
    r"\A```[ \t]*[A-Za-z0-9_+.\-]*[ \t]*(?:\r?\n|(?=[\[{\"]))(?P<body>.*?)\s*```\Z", re.DOTALL
)

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
    end = len(text)
    # Every marker starts with ``<`` or ``[`` and ends with ``>`` or ``]``: checking the edges
    # first keeps the (position-by-position) trailing search off ordinary text.
    if text.startswith(("<", "[")):
        leading = _LEADING_MARKERS.match(text)
        if leading is not None:
            start = leading.end()
    if text.endswith((">", "]")):
        trailing = _TRAILING_MARKERS.search(text, start)
        if trailing is not None:
            end = trailing.start()
    if start == 0 and end == len(text):
        return None
    return start, end


def strip_fence(text: str) -> tuple[int, int] | None:
    """Remove a Markdown code fence (```` ```json ... ``` ````) around the whole text.

    Safe because a JSON text cannot start with a backtick: when the whole text is one fenced
    block, its body is the only candidate for the arguments. A fence that is opened but never
    closed is not removed (the body may be cut off; the prose and truncation rules decide).
    """
    match = _FENCE.match(text)
    if match is None:
        return None
    return match.start("body"), match.end("body")


def unwrap_braces(text: str) -> tuple[int, int, int] | None:
    """Remove doubled braces around one object: ``{{"a": 1}}`` becomes ``{"a": 1}``.

    Returns ``(start, end, levels)``. Safe because ``{{`` is never valid JSON (an object key
    must be a string), and the inner text must be exactly one complete object spanning the
    whole inside, so there is nothing else the outer braces could mean. ``{{"a":1}, "b":2}``
    is not unwrapped: its inside is not one object.
    """
    start = 0
    end = len(text)
    levels = 0
    while levels < MAX_WRAPPING:
        if end - start < 4 or text[start] != "{" or text[end - 1] != "}":
            break
        inner_start = start + 1
        inner_end = end - 1
        while inner_start < inner_end and text[inner_start].isspace():
            inner_start += 1
        while inner_end > inner_start and text[inner_end - 1].isspace():
            inner_end -= 1
        if text[inner_start] != "{" or text[inner_end - 1] != "}":
            break
        inner = text[inner_start:inner_end]
        found = scan(inner)
        if found.unterminated or found.broken is not None or found.groups != [(0, len(inner))]:
            break
        start, end = inner_start, inner_end
        levels += 1
    if levels == 0:
        return None
    return start, end, levels
