"""A reply that is wholly a call object, or a list of them: ``{"name": ..., "arguments": ...}``.

Several calls stand one after the other, each on its own line or separated by ``;`` (Llama
3.x: ``{"name": "a", "parameters": {}}; {"name": "b", "parameters": {}}``); every JSON value
of the reply must then be a call, or none is.

Qwen2.5-Coder on Ollama answers bare JSON although its template asks for ``<tool_call>``
(ollama#12174, opencode#10402); Llama 3.x templates render calls bare with ``parameters``
(rapid-mlx#700, omlx#1153), Llama 3.3 adds ``"type": "function"`` (vllm-mlx#580); llama.cpp's
generic format is ``{"tool_calls": [...]}`` or ``{"tool_call": {...}}`` (llama.cpp#14697).

The whole reply must be the object (or list), alone or alone in one code fence: JSON inside
prose, a JSON answer with other keys, a name that is not offered, arguments that are not an
object: none is a call. Any key besides ``name``, the arguments, ``type: "function"`` and
``id`` makes it some other JSON (a JSON Schema has ``description``; a person has ``age``).
"""

from __future__ import annotations

import re
from typing import ClassVar

from ._json import members, read_call_list
from ._reading import (
    NEED_MORE,
    Found,
    ReadContext,
    ReadResult,
    TextCall,
    TextCallReader,
    _NeedMore,
    cut_last,
    skip_blanks,
)

__all__ = ["WholeReplyJsonReader"]

_FENCE_OPEN = re.compile(r"```(?:json|JSON)?[ \t]*\r?\n")
_GENERIC_KEYS = frozenset({"tool_calls", "tool_call"})
_GENERIC_OPEN = re.compile(r'\{\s*"tool_calls?"')


class WholeReplyJsonReader(TextCallReader):
    """A reply that is one call object, a list of them, or llama.cpp's generic wrapper."""

    family = "json"
    whole_reply = True
    #: The end-of-turn tokens of the models that answer bare JSON: ChatML's (Qwen2.5-Coder,
    #: Qwen-Qwen2.5-7B-Instruct.jinja), Llama 3.x's and 4's (``<|eom_id|>`` after a call,
    #: meta-llama-Llama-3.2-3B-Instruct.jinja), Phi's, Gemma's and Mistral's (llama.cpp's
    #: generic format is any model's).
    end_tokens: ClassVar[tuple[str, ...]] = (
        "<|im_end|>",
        "<|endoftext|>",
        "<|eot_id|>",
        "<|eom_id|>",
        "<|eot|>",
        "<|eom|>",
        "<|end|>",
        "<end_of_turn>",
        "</s>",
    )

    def read(self, text: str, start: int, context: ReadContext) -> ReadResult:
        """The reply from ``start`` (its first non-blank character) to its end."""
        fenced = False
        index = start
        if text.startswith("`", start):
            fence = _FENCE_OPEN.match(text, start)
            if fence is None:
                rest = text[start : start + 8]
                may_grow = not context.final and "\n" not in rest and len(rest) < 8
                return NEED_MORE if may_grow and "```json".startswith(rest[:7]) else None
            fenced = True
            index = skip_blanks(text, fence.end())
        if index >= len(text):
            return None if context.final else NEED_MORE
        if text[index] == "{" and _generic(text, index):
            read = _read_generic(text, index, context)
        elif text[index] in "{[":
            read = _read_sequence(text, index, context)
        else:
            return None
        if read is None or isinstance(read, _NeedMore):
            return read
        calls, end = read
        if calls[-1].cut:
            return Found(start, len(text), calls, tail_only=True, closed=False)
        if fenced:
            after = skip_blanks(text, end)
            if text.startswith("```", after):
                end = after + 3
            elif not context.final and "```".startswith(text[after:]):
                return NEED_MORE  # the closing fence may be arriving (nothing, "`", "``")
            else:
                return None  # the fence holds more than the call
        return Found(start, end, calls, tail_only=True)


def _read_sequence(
    text: str, index: int, context: ReadContext
) -> tuple[tuple[TextCall, ...], int] | _NeedMore | None:
    """Call objects (or lists of them) one after the other, separated by blanks, line feeds
    or ``;`` (Llama 3.x writes several calls so: issue 28's set held both; vLLM's llama3_json
    parser reads ``;`` between them): every one must be a call, or the reply is some other
    JSON."""
    calls: list[TextCall] = []
    length = len(text)
    while True:
        read = read_call_list(text, index, context, wrapped=False)
        if read is None or isinstance(read, _NeedMore):
            return read
        found, end = read
        calls.extend(found)
        if found[-1].cut:
            return tuple(calls), end
        index = skip_blanks(text, end)
        if index < length and text[index] == ";":
            index = skip_blanks(text, index + 1)
            if index >= length:  # a ";" at the very end separates nothing: it is markup
                return (tuple(calls), length) if context.final else NEED_MORE
        if index >= length or text[index] not in "{[":
            return tuple(calls), end


def _generic(text: str, index: int) -> bool:
    """The object at ``index`` opens with a ``tool_calls`` / ``tool_call`` key."""
    return _GENERIC_OPEN.match(text, index) is not None


def _read_generic(
    text: str, index: int, context: ReadContext
) -> tuple[tuple[TextCall, ...], int] | _NeedMore | None:
    try:
        spans, end, cut = members(text, index, _GENERIC_KEYS)
    except ValueError:
        return None
    if cut and not spans:
        return None if context.final else NEED_MORE
    if len(spans) != 1:
        return None
    ((key, (value_start, _)),) = spans.items()
    inner = read_call_list(text, value_start, context, wrapped=True)
    if inner is None or isinstance(inner, _NeedMore):
        return inner
    calls, _ = inner
    if key == "tool_call" and (len(calls) != 1 or text[value_start] != "{"):
        return None
    if key == "tool_calls" and text[value_start] != "[":
        return None
    if cut and not calls[-1].cut:
        if not context.final:
            return NEED_MORE
        calls = cut_last(calls)
    return calls, end
