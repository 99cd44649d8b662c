"""Llama: ``<|python_tag|>`` JSON (3.1-3.3), ``<|python_start|>`` ... ``<|python_end|>`` (4), and
the custom-tool form ``<function=NAME>{json}</function>`` (3.1's documented format,
hermes-agent#35129).

The special tokens are the family's own markers; what follows must be a call object (or a list,
or several separated by ``;``). A built-in tool call (``brave_search.call(query=...)``) is not a
call of an offered function and stays text: scanning its argument for the next ``{`` would run
whatever object it quotes (unsloth#5620).
"""

from __future__ import annotations

import re

import msgspec

from ._json import list_or_skip, value_end
from ._reading import (
    NEED_MORE,
    Found,
    ReadContext,
    ReadResult,
    Skip,
    TextCall,
    TextCallReader,
    _NeedMore,
    expect,
    skip_blanks,
)
from .hermes import read_json_block

__all__ = ["FunctionTagReader", "PythonStartReader", "PythonTagReader"]

_END_TOKENS = ("<|eom_id|>", "<|eot_id|>")
_NAME = re.compile(r"[A-Za-z_][\w.\-]*")


def _strict(arguments: str) -> bool:
    try:
        msgspec.json.decode(arguments)
    except (msgspec.DecodeError, UnicodeEncodeError):  # (a lone surrogate)
        return False
    return True


class PythonTagReader(TextCallReader):
    """``<|python_tag|>{"name": ..., "parameters": {...}}`` (``;`` between several calls)."""

    family = "llama"
    openers = ("<|python_tag|>",)

    def read(self, text: str, start: int, context: ReadContext) -> ReadResult:
        """Calls up to the end of their JSON (and an ``<|eom_id|>`` after it, if any)."""
        index = skip_blanks(text, start + len("<|python_tag|>"))
        calls: list[TextCall] = []
        end = index
        while True:
            if index >= len(text):
                if not context.final:
                    return NEED_MORE
                if not calls:
                    return None
                break
            if text[index] not in "{[":
                if not calls:
                    return None
                break
            read = list_or_skip(text, index, context, wrapped=False)
            if not isinstance(read, tuple):
                return read
            found, end = read
            calls.extend(found)
            if found[-1].cut:
                return Found(start, len(text), tuple(calls), closed=False)
            index = skip_blanks(text, end)
            if text.startswith(";", index):
                index = skip_blanks(text, index + 1)
                continue
            break
        for token in _END_TOKENS:
            if text.startswith(token, skip_blanks(text, end)):
                end = skip_blanks(text, end) + len(token)
                break
        # No end marker: valid JSON stands (prose may follow), anything else only at the tail.
        tail_only = not all(_strict(call.arguments) for call in calls)
        return Found(start, end, tuple(calls), tail_only=tail_only, closed=False)


class PythonStartReader(TextCallReader):
    """``<|python_start|>`` call JSON ``<|python_end|>`` (Llama 4; vllm#16214)."""

    family = "llama"
    openers = ("<|python_start|>",)

    def read(self, text: str, start: int, context: ReadContext) -> ReadResult:
        """One call (or list) between the two tokens."""
        return read_json_block(
            text, start, "<|python_start|>", "<|python_end|>", context, tail_only=False
        )


class FunctionTagReader(TextCallReader):
    """``<function=NAME>{json}</function>`` (Llama 3.1 custom tools)."""

    family = "llama"
    openers = ("<function=",)

    def read(self, text: str, start: int, context: ReadContext) -> ReadResult:
        """The name in the tag, the JSON object inside, the closing tag."""
        index = start + len("<function=")
        name = _NAME.match(text, index)
        if name is None or name.end() >= len(text):
            return NEED_MORE if not context.final and name is not None else None
        close = expect(text, name.end(), ">", context.final)
        if close is not True:
            return close or None
        index = skip_blanks(text, name.end() + 1)
        if index >= len(text):
            return None if context.final else NEED_MORE
        if text[index] != "{":
            return None  # Qwen3-Coder's <parameter=...> form, or prose
        if not context.offered(name.group()):
            return None
        end = value_end(text, index)
        if end is None:
            if not context.final:
                return NEED_MORE
            call = TextCall(name.group(), text[index:], cut=True)
            return Found(start, len(text), (call,), tail_only=True, closed=False)
        call = TextCall(name.group(), text[index:end])
        after = skip_blanks(text, end)
        closed = expect(text, after, "</function>", context.final)
        if isinstance(closed, _NeedMore):
            return closed
        if closed:
            return Found(start, after + len("</function>"), (call,), tail_only=True)
        if after >= len(text):
            if not context.final:
                return NEED_MORE
            cut = TextCall(call.name, call.arguments, cut=True)
            return Found(start, len(text), (cut,), tail_only=True, closed=False)
        return Skip(end)
