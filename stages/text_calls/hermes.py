"""Hermes / Qwen: ``<tool_call>{"name": ..., "arguments": {...}}</tool_call>``.

The JSON inside is read by JSON's rules (``_json``), so a ``</tool_call>`` inside a string is
part of the string (vllm#45167, sglang#28698: parsers that search for the first closing tag cut
such a call and drop it). ``<tool_call>`` is also written in prose and documentation, so a block
counts only at the tail of the reply: nothing but blanks and other calls may follow it. A list
of calls inside one tag (SmolLM2 writes ``<tool_call>[{...}]</tool_call>``) is read too.
"""

from __future__ import annotations

from ._json import list_or_skip
from ._reading import (
    NEED_MORE,
    Found,
    ReadContext,
    ReadResult,
    Skip,
    TextCallReader,
    _NeedMore,
    cut_last,
    expect,
    skip_blanks,
)

__all__ = ["HermesReader", "read_json_block"]


def read_json_block(
    text: str, start: int, opener: str, closer: str, context: ReadContext, *, tail_only: bool
) -> ReadResult:
    """``opener`` JSON-call-or-list ``closer``, the shape of every JSON-in-tags family."""
    index = skip_blanks(text, start + len(opener))
    if index >= len(text):
        return None if context.final else NEED_MORE
    if text[index] not in "{[":
        return None
    read = list_or_skip(text, index, context, wrapped=True)
    if not isinstance(read, tuple):
        return read
    calls, end = read
    if calls[-1].cut:
        return Found(start, len(text), calls, tail_only=tail_only, closed=False)
    after = skip_blanks(text, end)
    closed = expect(text, after, closer, context.final)
    if isinstance(closed, _NeedMore):
        return closed
    if closed:
        return Found(start, after + len(closer), calls, tail_only=tail_only)
    if after >= len(text):
        if not context.final:
            return NEED_MORE
        # The closing marker never came: the markup is cut, so is the call written last.
        return Found(start, len(text), cut_last(calls), tail_only=tail_only, closed=False)
    return Skip(end)


class HermesReader(TextCallReader):
    """``<tool_call>`` JSON ``</tool_call>`` (Hermes, Qwen 2.5/3, SmolLM2, many fine-tunes)."""

    family = "hermes"
    openers = ("<tool_call>",)

    def read(self, text: str, start: int, context: ReadContext) -> ReadResult:
        """One tagged call (or list of calls)."""
        return read_json_block(text, start, "<tool_call>", "</tool_call>", context, tail_only=True)
