"""Muse Glimmer and Muse Spark: ATEM calls in messages addressed to a tool.

Every message of a Muse turn names its recipient, and a call is a message to a tool whose body
is an ATEM block (the chat template llama.cpp keeps, ``models/templates/muse-glimmer.jinja``;
vLLM ``vllm/tool_parsers/muse_tool_parser.py``; SGLang ``function_call/muse_glimmer_detector.py``;
llama.cpp ``common/parsers/muse-glimmer.cpp``)::

    <|start|>assistant to=self<|message|>...reasoning...<|eom|>
    <|start|>assistant to=get_weather<|message|><atem:function_calls>
    <atem:invoke name="get_weather">
    <atem:parameter name="city">Paris</atem:parameter>
    </atem:invoke>
    </atem:function_calls><|eom|>
    <|start|>assistant to=user<|message|>...the answer...<|eot|>

The generation prompt ends with ``<|start|>assistant``, so the reply's first message starts
with its recipient (`` to=self<|message|>``). Which message a block stands in decides: "an
``<atem:invoke>`` echoed inside a ``to=self`` reasoning block or a ``to=user`` final answer must
NOT be parsed as a real tool call" (vLLM's parser). So the block counts only as the whole body
of a message to a recipient that is not ``self``, ``user``, ``commentary`` or ``developer``;
ATEM markup anywhere else is text. The invoke names must be offered as written: the doubled
``get_weather.get_weather`` vLLM maps back to ``get_weather`` is not guessed here.

The block's grammar is XML parameters (``xml_format``): values as written ("spaces for string
values are not stripped", the template's tool prompt), typed by the tool's schema ("lists and
objects should use JSON format").
"""

from __future__ import annotations

import re

from ._reading import (
    NEED_MORE,
    Found,
    ReadContext,
    ReadResult,
    TextCallReader,
    skip_blanks,
)
from .xml_format import QUOTED_NAME, XmlCallFormat, XmlTag
from .xml_reader import xml_reader

__all__ = ["ATEM", "MuseMessageReader", "MuseReplyReader"]

#: The ATEM block, read inside a tool's message only (never registered on its own).
ATEM = XmlCallFormat(
    family="muse",
    blocks=(("<atem:function_calls>", "</atem:function_calls>"),),
    invoke=XmlTag('<atem:invoke name="', ">", quote='"', name=QUOTED_NAME),
    invoke_close="</atem:invoke>",
    parameter=XmlTag('<atem:parameter name="', ">", quote='"', name=QUOTED_NAME),
    parameter_close="</atem:parameter>",
    tail_only=False,
)
_ATEM = xml_reader(ATEM)
_BLOCK = ATEM.blocks[0][0]
_START = "<|start|>"
#: ``[<|start|>assistant] to=RECIPIENT<|message|>`` (vLLM's ``_MSG_HEADER_RE``, with a recipient).
_ROLE = re.compile(r"\s*assistant")
_HEADER = re.compile(r"[^\S\n]*to=([\w.\-]++)<\|message\|>")
_NAME = re.compile(r"[\w.\-]*+")
_MESSAGE = "<|message|>"
#: Recipients that are not tools (vLLM ``MuseToolParser._non_tool_recipients``).
_NOT_TOOLS = frozenset({"self", "user", "commentary", "developer"})
#: Muse's message ends (the template's ``<|eom|>`` between messages, ``<|eot|>`` at the end).
END_TOKENS = ("<|eom|>", "<|eot|>")


def _header_may_grow(rest: str) -> bool:
    """Whether ``rest`` (the text from a header's blanks to its end) may still grow into
    ``to=RECIPIENT<|message|>``."""
    rest = rest.lstrip(" \t")
    if not rest.startswith("to="):
        return "to=".startswith(rest)
    name_end = _NAME.match(rest, 3).end()  # type: ignore[union-attr]  # matches ""
    return _MESSAGE.startswith(rest[name_end:])


def read_message(text: str, start: int, index: int, context: ReadContext) -> ReadResult:
    """The message whose header's recipient starts at ``index``: a block of calls when it is
    addressed to a tool and its body is an ATEM block."""
    final = context.final
    header = _HEADER.match(text, index)
    if header is None:
        return NEED_MORE if not final and _header_may_grow(text[index:]) else None
    if header.group(1) in _NOT_TOOLS:
        return None
    body = skip_blanks(text, header.end())
    if not text.startswith(_BLOCK, body):
        ends_early = body >= len(text) or _BLOCK.startswith(text[body:])
        return NEED_MORE if ends_early and not final else None
    found = _ATEM.read(text, body, context)
    if not isinstance(found, Found):
        return found
    return Found(start, found.end, found.calls, closed=found.closed)


class MuseMessageReader(TextCallReader):
    """A message after the first: ``<|start|>assistant to=TOOL<|message|>`` and its block."""

    family = "muse"
    openers = (_START,)
    end_tokens = END_TOKENS

    def read(self, text: str, start: int, context: ReadContext) -> ReadResult:
        """The message at ``start`` (harmony shares the opener; its grammar needs a channel)."""
        role = _ROLE.match(text, start + len(_START))
        if role is None or role.end() >= len(text):
            rest = text[start + len(_START) :].lstrip()
            may_grow = "assistant".startswith(rest) if rest else True
            return NEED_MORE if may_grow and not context.final else None
        return read_message(text, start, role.end(), context)


class MuseReplyReader(TextCallReader):
    """The reply's first message: the prompt ended with ``<|start|>assistant``, so the reply
    starts with ``to=TOOL<|message|>``."""

    family = "muse"
    whole_reply = True
    end_tokens = END_TOKENS

    def read(self, text: str, start: int, context: ReadContext) -> ReadResult:
        """The reply from its first non-blank character."""
        if not text.startswith("to=", start):
            may_grow = "to=".startswith(text[start:]) and not context.final
            return NEED_MORE if may_grow else None
        return read_message(text, start, start, context)
