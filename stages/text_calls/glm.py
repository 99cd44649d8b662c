"""GLM-4.5 / 4.6 / 4.7, and GLM-4-0414's markerless form.

GLM-4.5 on: ``<tool_call>NAME<arg_key>K</arg_key><arg_value>V</arg_value>...</tool_call>``;
GLM-4-0414: markerless ``NAME\\n{json}`` as a whole reply (mlx-swift-lm#623).

Values are text typed by the tool's schema (``_values``; Ollama's GLM parser does the same).
A call with no arguments is ``<tool_call>NAME</tool_call>`` (sglang#15333). Like every
``<tool_call>`` family, a block counts only at the tail of the reply. The markerless form has
no marker at all, so it counts only when the whole reply is exactly an offered tool's name,
a line feed and one JSON object.
"""

from __future__ import annotations

import re

from ._json import json_arguments_block
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
from ._values import arguments_json

__all__ = ["GlmMarkerlessReader", "GlmReader"]

_NAME = TOOL_NAME_PATTERN
_PAIR = re.compile(
    r"<arg_key>\s*([^<]*?)\s*</arg_key>\s*<arg_value>(.*?)</arg_value>\s*", re.DOTALL
)
_OPEN_PAIR = re.compile(r"<arg_key>")


class GlmReader(TextCallReader):
    """``<tool_call>NAME`` then ``<arg_key>``/``<arg_value>`` pairs, then ``</tool_call>``."""

    family = "glm"
    openers = ("<tool_call>",)
    #: GLM-4.5 to 4.7 stop on the next role's token: ``<|observation|>`` (a tool's turn,
    #: GLM-4.6.jinja), ``<|user|>``, or ``<|endoftext|>``; Ling 3.0 writes the same calls and
    #: ends its turn with ``<|role_end|>`` (inclusionai-ling-3.0-flash.jinja).
    end_tokens = ("<|observation|>", "<|user|>", "<|endoftext|>", "<|role_end|>")

    def read(self, text: str, start: int, context: ReadContext) -> ReadResult:
        """One call."""
        final = context.final
        index = skip_blanks(text, start + len("<tool_call>"))
        name = _NAME.match(text, index)
        if name is None:
            return None if final or index < len(text) else NEED_MORE
        if name.end() >= len(text):
            return None if final else NEED_MORE
        if not context.offered(name.group()):
            return None
        index = skip_blanks(text, name.end())
        pairs: list[tuple[str, str]] = []
        while True:
            pair = _PAIR.match(text, index)
            if pair is None:
                break
            pairs.append((pair.group(1), pair.group(2)))
            index = pair.end()
        closing = expect(text, index, "</tool_call>", final)
        if isinstance(closing, _NeedMore):
            return closing
        if not closing:
            opened = expect(text, index, "<arg_key>", final)
            if opened is True or isinstance(opened, _NeedMore):
                if not final:
                    return NEED_MORE
                call = TextCall(name.group(), "", cut=True)
                return Found(start, len(text), (call,), tail_only=True, closed=False)
            if index >= len(text):
                if not final:
                    return NEED_MORE
                call = TextCall(name.group(), "", cut=True)
                return Found(start, len(text), (call,), tail_only=True, closed=False)
            return None
        if not pairs and index != name.end() and not text[name.end() : index].isspace():
            return None
        arguments = arguments_json(pairs, context.property_schemas(name.group()))
        if arguments is None:
            return None
        end = index + len("</tool_call>")
        return Found(start, end, (TextCall(name.group(), arguments),), tail_only=True)


class GlmMarkerlessReader(TextCallReader):
    """A whole reply that is ``NAME`` (an offered tool), a line feed, and one JSON object."""

    family = "glm-markerless"
    whole_reply = True
    end_tokens = ("<|observation|>", "<|user|>", "<|endoftext|>")

    def read(self, text: str, start: int, context: ReadContext) -> ReadResult:
        """The reply from its first non-blank character."""
        name = _NAME.match(text, start)
        if name is None:
            return None
        candidate = name.group()
        if name.end() >= len(text):
            if context.final:
                return None
            return NEED_MORE if any(n.startswith(candidate) for n in context.names) else None
        if not context.offered(candidate) or text[name.end()] not in "\r\n":
            return None
        index = skip_blanks(text, name.end())
        if index >= len(text):
            return None if context.final else NEED_MORE
        if text[index] != "{":
            return None
        return json_arguments_block(text, start, index, candidate, context, tail_only=True)
