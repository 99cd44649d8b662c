"""Gemma: Gemma 4's ``<|tool_call>call:NAME{key:<|"|>text<|"|>,n:1}<tool_call|>``,
FunctionGemma's ``<start_function_call>call:NAME{key:<escape>text<escape>}<end_function_call>``
(both from Ollama's parsers and fixtures), and Gemma 3's ``tool_code`` fence (``pythonic``).

Arguments are the family's object syntax: bare keys, and strings between delimiter tokens with
no escapes inside (a backslash or a quote is itself). The judge reads exactly that
(``bare_keys``, ``quote_tokens``); FunctionGemma's ``<escape>`` delimiter is the same idea with
another spelling and is handed over as ``<|"|>``. Only the token-wrapped form counts: a bare
``call:NAME{...}`` is what a model quotes from a fetched page (openclaude#380, a prompt-injection
path), never a call.
"""

from __future__ import annotations

import re

from ._names import TOOL_NAME, TOOL_NAME_PATTERN
from ._reading import (
    NEED_MORE,
    Found,
    ReadContext,
    ReadResult,
    TextCall,
    TextCallReader,
)

__all__ = ["FunctionGemmaReader", "Gemma4Reader"]

_NAME = re.compile(rf"call:({TOOL_NAME})(?=\{{)")


def _read_wrapped(
    text: str,
    start: int,
    context: ReadContext,
    opener: str,
    closer: str,
    quote: str | None,
) -> ReadResult:
    index = start + len(opener)
    head = _NAME.match(text, index)
    if head is None:
        rest = text[index : index + 80]
        if (
            not context.final
            and "{" not in rest
            and len(rest) < 80
            and (
                "call:".startswith(rest[:5])
                and (len(rest) <= 5 or TOOL_NAME_PATTERN.fullmatch(rest, 5) is not None)
            )
        ):
            return NEED_MORE
        return None
    name = head.group(1)
    if not context.offered(name):
        return None
    end = text.find(closer, head.end())
    if end < 0:
        if not context.final:
            return NEED_MORE
        arguments = text[head.end() :]
        if quote is not None:
            arguments = arguments.replace(quote, '<|"|>')
        return Found(start, len(text), (TextCall(name, arguments, cut=True),), closed=False)
    arguments = text[head.end() : end]
    if quote is not None:
        arguments = arguments.replace(quote, '<|"|>')
    return Found(start, end + len(closer), (TextCall(name, arguments),))


class Gemma4Reader(TextCallReader):
    """``<|tool_call>call:NAME{...}<tool_call|>``."""

    family = "gemma4"
    openers = ("<|tool_call>",)
    #: google-gemma-4-31B-it.jinja ends a turn with ``<turn|>``.
    end_tokens = ("<turn|>",)

    def read(self, text: str, start: int, context: ReadContext) -> ReadResult:
        """One call between the two tokens."""
        return _read_wrapped(text, start, context, "<|tool_call>", "<tool_call|>", None)


class FunctionGemmaReader(TextCallReader):
    """``<start_function_call>call:NAME{...}<end_function_call>``."""

    family = "functiongemma"
    openers = ("<start_function_call>",)
    #: Gemma's end of turn (google-gemma-2-2b-it.jinja), FunctionGemma's as well.
    end_tokens = ("<end_of_turn>",)

    def read(self, text: str, start: int, context: ReadContext) -> ReadResult:
        """One call between the two tokens."""
        return _read_wrapped(
            text, start, context, "<start_function_call>", "<end_function_call>", "<escape>"
        )
