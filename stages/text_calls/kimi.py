"""Kimi K2: calls in a section of special tokens::

    <|tool_calls_section_begin|>
      <|tool_call_begin|>functions.NAME:0 <|tool_call_argument_begin|>{...}<|tool_call_end|>
      ...
    <|tool_calls_section_end|>

(one line in the text, spread here).

The tokens are special (a JSON string cannot hold one), so each part ends at its token. K2.5's
bare counter id (``0`` with no name) names no call: inferring the name from the arguments has no
single reading when two tools take the same keys (vLLM's own test refuses it), and toolwire
never guesses a name. Arguments that are not JSON stay the call's arguments, for the judge to
reject (vLLM returns them as they are).
"""

from __future__ import annotations

import re
from collections.abc import Callable

from ._names import TOOL_NAME
from ._reading import (
    NEED_MORE,
    Found,
    ReadContext,
    ReadResult,
    TextCall,
    TextCallReader,
    cut_last,
    expect,
    skip_blanks,
)

__all__ = ["KimiReader", "read_token_section"]

_SECTION = "<|tool_calls_section_begin|>"
_SECTION_END = "<|tool_calls_section_end|>"
_CALL = "<|tool_call_begin|>"
_ARGUMENTS = "<|tool_call_argument_begin|>"
_CALL_END = "<|tool_call_end|>"
#: Reads one call's inside (and whether the text was cut in it) into its name and arguments.
ReadCall = Callable[[str, bool], tuple[str, str] | None]

_ID = re.compile(rf"\s*(?:functions\.)?({TOOL_NAME}):\d+\s*")


def read_token_section(
    text: str,
    start: int,
    context: ReadContext,
    *,
    opener: str,
    closer: str,
    call_opener: str,
    call_closer: str,
    read_call: ReadCall,
) -> ReadResult:
    """A section of calls between special tokens (Kimi, DeepSeek): each call from
    ``call_opener`` to ``call_closer``, read by ``read_call(inside) -> (name, arguments)``."""
    final = context.final
    index = skip_blanks(text, start + len(opener))
    calls: list[TextCall] = []
    while True:
        begin = expect(text, index, call_opener, final)
        if begin is not True:
            break
        inside = index + len(call_opener)
        end = text.find(call_closer, inside)
        if end < 0:
            if not final:
                return NEED_MORE
            read = read_call(text[inside:], True)
            if read is None or not context.offered(read[0]):
                return None
            calls.append(TextCall(read[0], read[1], cut=True))
            return Found(start, len(text), tuple(calls), closed=False)
        read = read_call(text[inside:end], False)
        if read is None or not context.offered(read[0]):
            return None
        calls.append(TextCall(*read))
        index = skip_blanks(text, end + len(call_closer))
    if begin is not False:
        return begin  # NEED_MORE
    closing = expect(text, index, closer, final)
    if closing is True:
        return Found(start, index + len(closer), tuple(calls)) if calls else None
    if closing is not False:
        return closing
    if index >= len(text) and calls:
        # The section never closed: the call written last may have been cut after it.
        return Found(start, len(text), cut_last(calls), closed=False)
    return None


def _kimi_call(inside: str, cut: bool) -> tuple[str, str] | None:
    split = inside.find(_ARGUMENTS)
    if split < 0:
        if not cut:
            return None
        head, arguments = inside, ""
    else:
        head, arguments = inside[:split], inside[split + len(_ARGUMENTS) :]
    match = _ID.fullmatch(head)
    if match is None:
        return None
    return match.group(1), arguments.strip()


class KimiReader(TextCallReader):
    """A Kimi K2 tool-call section."""

    family = "kimi"
    openers = (_SECTION,)
    #: moonshotai-Kimi-K2.jinja ends every message with ``<|im_end|>``.
    end_tokens = ("<|im_end|>",)

    def read(self, text: str, start: int, context: ReadContext) -> ReadResult:
        """The whole section, every call in it."""
        return read_token_section(
            text,
            start,
            context,
            opener=_SECTION,
            closer=_SECTION_END,
            call_opener=_CALL,
            call_closer=_CALL_END,
            read_call=_kimi_call,
        )
