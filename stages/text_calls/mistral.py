"""Mistral: ``[TOOL_CALLS][{"name": ..., "arguments": {...}}]`` (v3 tokenizer: Nemo, Small
2409, Mixtral) and ``[TOOL_CALLS]NAME[ARGS]{...}`` (Devstral, Ministral 3, Magistral), one
marker per call, optionally ``NAME[CALL_ID]id[ARGS]{...}``.

``[TOOL_CALLS]`` is a special token; there is no end marker, so the call ends where its JSON
ends (read by JSON's rules) and prose may follow (mlx-lm#1448). Arguments that are not strict
JSON count only at the tail of the reply: ``write [TOOL_CALLS]name[ARGS]{...} instead`` is
documentation. ``[TOOL_CALLS]{"content": ...}`` (a narrated result, matlab#94) names no call.
"""

from __future__ import annotations

import re

import msgspec

from ._json import json_arguments_block, list_or_skip
from ._names import TOOL_NAME_PATTERN
from ._reading import (
    NEED_MORE,
    Found,
    ReadContext,
    ReadResult,
    TextCall,
    TextCallReader,
    _NeedMore,
    expect,
    skip_blanks,
)
from .llama import _strict

__all__ = ["MistralReader"]

_OPENER = "[TOOL_CALLS]"
_NAME = TOOL_NAME_PATTERN
_CALL_ID = re.compile(r"\[CALL_ID\][A-Za-z0-9_\-]*")


class MistralReader(TextCallReader):
    """Both Mistral forms, one ``[TOOL_CALLS]`` marker at a time."""

    family = "mistral"
    openers = (_OPENER,)
    #: Mistral's end of turn is its eos, ``</s>`` (mistralai-Mistral-Nemo-Instruct-2407.jinja
    #: writes it right after the ``[TOOL_CALLS]`` list).
    end_tokens = ("</s>",)

    def read(self, text: str, start: int, context: ReadContext) -> ReadResult:
        """A JSON list of calls, or one ``NAME[ARGS]{...}`` call."""
        index = skip_blanks(text, start + len(_OPENER))
        if index >= len(text):
            return None if context.final else NEED_MORE
        if text[index] == "[":
            read = list_or_skip(text, index, context, wrapped=True)
            if not isinstance(read, tuple):
                return read
            calls, end = read
            if calls[-1].cut:
                return Found(start, len(text), calls, closed=False)
            tail_only = not all(_strict(call.arguments) for call in calls)
            return Found(start, end, calls, tail_only=tail_only, closed=False)
        return self._args_form(text, start, index, context)

    def _args_form(self, text: str, start: int, index: int, context: ReadContext) -> ReadResult:
        name = _NAME.match(text, index)
        if name is None:
            return None
        index = name.end()
        if index >= len(text):
            return None if context.final else NEED_MORE
        call_id = _CALL_ID.match(text, index)
        if call_id is not None:
            index = call_id.end()
        marker = expect(text, index, "[ARGS]", context.final)
        if marker is not True:
            if isinstance(marker, _NeedMore):
                return marker
            partial = expect(text, index, "[CALL_ID]", context.final)
            return partial if isinstance(partial, _NeedMore) else None
        if not context.offered(name.group()):
            return None
        index = skip_blanks(text, index + len("[ARGS]"))
        if index >= len(text):
            if not context.final:
                return NEED_MORE
            call = TextCall(name.group(), "", cut=True)
            return Found(start, len(text), (call,), closed=False)
        if text[index] != "{":
            return None
        found = json_arguments_block(text, start, index, name.group(), context, tail_only=False)
        if isinstance(found, Found) and not found.calls[0].cut:
            tail_only = not _strict(found.calls[0].arguments)
            return msgspec.structs.replace(found, tail_only=tail_only)
        return found
