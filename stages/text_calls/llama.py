"""Llama: ``<|python_tag|>`` JSON (3.1-3.3) and the custom-tool form
``<function=NAME>{json}</function>`` (3.1's documented format, hermes-agent#35129); Llama 4's
``<|python_start|>`` ... ``<|python_end|>`` is a row of ``families.py``.

The special tokens are the family's own markers; what follows must be a call object, a list,
or several: separated by ``;`` (vLLM's llama3_json parser splits on it) or a line feed, or one
right after the other, as Llama 3.x writes them (issue 28's set held ``;`` and line feeds). A
built-in tool call (``brave_search.call(query=...)``) is not a call of an offered function and
stays text: scanning its argument for the next ``{`` would run whatever object it quotes
(unsloth#5620).
"""

from __future__ import annotations

from typing import ClassVar

import msgspec

from ._json import list_or_skip, read_call_list, value_end
from ._names import TOOL_NAME_PATTERN
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

__all__ = ["END_TOKENS", "FunctionTagReader", "PythonTagReader"]

#: Llama's end-of-turn tokens: ``<|eom_id|>`` after a call, ``<|eot_id|>`` (3.1-3.3,
#: meta-llama-Llama-3.1-8B-Instruct.jinja), ``<|eom|>`` / ``<|eot|>`` (Llama 4).
END_TOKENS = ("<|eom_id|>", "<|eot_id|>", "<|eom|>", "<|eot|>")
_NAME = TOOL_NAME_PATTERN


def _strict(arguments: str) -> bool:
    try:
        msgspec.json.decode(arguments)
    except (msgspec.DecodeError, UnicodeEncodeError):  # (a lone surrogate)
        return False
    return True


class PythonTagReader(TextCallReader):
    """``<|python_tag|>{"name": ..., "parameters": {...}}``, several separated by ``;`` or a
    line feed, or written one after the other."""

    family = "llama"
    openers = ("<|python_tag|>",)
    end_tokens: ClassVar[tuple[str, ...]] = END_TOKENS

    def read(self, text: str, start: int, context: ReadContext) -> ReadResult:
        """Calls up to the end of their JSON (the scanner takes an ``<|eom_id|>`` after it)."""
        index = skip_blanks(text, start + len("<|python_tag|>"))
        calls: list[TextCall] = []
        end = index
        separated = False
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
            read: tuple[tuple[TextCall, ...], int] | ReadResult
            if calls and not separated:
                # A value after a line feed or right after a call: another call, or the
                # calls end here (what follows is text after them).
                read = read_call_list(text, index, context, wrapped=False)
                if read is None:
                    break
            else:
                read = list_or_skip(text, index, context, wrapped=False)
            if not isinstance(read, tuple):
                return read
            found, end = read
            calls.extend(found)
            if found[-1].cut:
                return Found(start, len(text), tuple(calls), closed=False)
            index = skip_blanks(text, end)
            separated = text.startswith(";", index)
            if separated:
                index = skip_blanks(text, index + 1)
        # No end marker: valid JSON stands (prose may follow), anything else only at the tail.
        tail_only = not all(_strict(call.arguments) for call in calls)
        return Found(start, end, tuple(calls), tail_only=tail_only, closed=False)


class FunctionTagReader(TextCallReader):
    """``<function=NAME>{json}</function>`` (Llama 3.1 custom tools)."""

    family = "llama"
    openers = ("<function=",)
    end_tokens: ClassVar[tuple[str, ...]] = END_TOKENS

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
