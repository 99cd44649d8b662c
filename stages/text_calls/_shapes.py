"""Which keys of a call object hold the call's name and its arguments: a call shape is data.

Most families write OpenAI's object, ``{"name": ..., "arguments": {...}}`` (``parameters`` and
``args`` also name the arguments); it is read by ``_json`` (the same reader as the whole-reply
and Mistral families). Others name the parts differently, and are read here by the same rules
(strict outer object, only the shape's keys, the arguments only delimited, the judge reads them):

- Cohere (Command R, R7B, A, North):
  ``{"tool_call_id": "0", "tool_name": ..., "parameters": {...}}``
  (CohereForAI-c4ai-command-r7b-12-2024-tool_use.jinja and Cohere2MoE.jinja in llama.cpp's
  ``models/templates``; llama.cpp ``common/parsers/cohere2moe.cpp``; SGLang
  ``function_call/cohere_command4_detector.py``; Ollama ``model/parsers/commandr.go``);
- Apertus: the name is the object's one key, ``{"get_weather": {"city": "Paris"}}``
  (Apertus-8B-Instruct.jinja; vLLM ``tool_parsers/apertus_tool_parser.py``; Ollama
  ``model/parsers/apertus15.go``, which refuses an object with more than one key).
"""

from __future__ import annotations

from functools import partial

import msgspec

from ._json import ARGUMENT_KEYS, list_or_skip, members, objects_or_skip
from ._reading import (
    NEED_MORE,
    ReadContext,
    ReadResult,
    TextCall,
    _NeedMore,
)

__all__ = ["COHERE_CALL", "NAME_KEYED_CALL", "OPENAI_CALL", "CallShape", "call_list_or_skip"]


class CallShape(msgspec.Struct, frozen=True, gc=False):
    """The keys a family's call object has."""

    #: The key whose string value is the name; ``""``: the name is the object's one key and
    #: its value the arguments.
    name_key: str = "name"
    #: The keys that may hold the arguments (at most one of them in an object).
    argument_keys: tuple[str, ...] = ARGUMENT_KEYS
    #: Keys the object may have besides; any other key makes it some other JSON.
    other_keys: tuple[str, ...] = ("type", "id")

    @property
    def keys(self) -> frozenset[str]:
        """Every key a call object of this shape may have."""
        return frozenset((self.name_key, *self.argument_keys, *self.other_keys))


#: OpenAI's object, read by ``_json.read_call_object`` (``type`` must be ``"function"``).
OPENAI_CALL = CallShape()
COHERE_CALL = CallShape(
    name_key="tool_name", argument_keys=("parameters",), other_keys=("tool_call_id",)
)
NAME_KEYED_CALL = CallShape(name_key="", argument_keys=(), other_keys=())


def call_list_or_skip(
    text: str, index: int, context: ReadContext, shape: CallShape
) -> tuple[tuple[TextCall, ...], int] | ReadResult:
    """The call object or JSON array of call objects at ``index`` (``{`` or ``[``), inside a
    family's wrapper; "not a call" is a :class:`Skip` past the JSON value."""
    if shape == OPENAI_CALL:
        return list_or_skip(text, index, context, wrapped=True)
    return objects_or_skip(text, index, context, partial(_read_object, shape=shape))


def _read_object(
    text: str, start: int, context: ReadContext, shape: CallShape
) -> tuple[TextCall, int] | _NeedMore | None:
    """The call object at ``text[start] == "{"``, as ``_json.read_call_object`` reads one
    inside a wrapper: a name that is offered, at most one arguments member (missing: none),
    cut once the name is known when the final text ends inside it."""
    keyed = not shape.name_key
    try:
        # A name-keyed object may have no key but an offered name: any other is not a call.
        spans, end, cut = members(text, start, context.names if keyed else shape.keys)
    except ValueError:
        return None
    if cut and not context.final:
        return NEED_MORE
    if keyed:
        if len(spans) != 1:
            return None
        ((name, (value_start, value_stop)),) = spans.items()
        arguments = text[value_start:value_stop]
        if not cut and not arguments.startswith("{"):
            return None  # {"offered_name": "text"}: no arguments object, some other JSON
        return TextCall(name, arguments, cut=cut), end
    name_span = spans.get(shape.name_key)
    if name_span is None:
        return None
    try:
        name = msgspec.json.decode(text[name_span[0] : name_span[1]], type=str)
    except (msgspec.DecodeError, UnicodeEncodeError):
        return None  # cut inside the name, not a string, a lone surrogate: no name is guessed
    if not context.offered(name):
        return None
    keys = [key for key in shape.argument_keys if key in spans]
    if len(keys) > 1:
        return None
    if not keys:
        return TextCall(name, "" if cut else "{}", cut=cut), end
    value_start, value_stop = spans[keys[0]]
    return TextCall(name, text[value_start:value_stop], cut=cut), end
