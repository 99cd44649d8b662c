"""gpt-oss harmony: a commentary message from the assistant addressed to a function::

    <|start|>assistant<|channel|>commentary to=functions.NAME <|constrain|>json<|message|>
    {...}<|call|>

(on one line). gpt-oss also writes a call on the ``analysis`` channel
(``<|channel|>analysis to=functions.NAME code<|message|>{...}<|call|>``, vllm-mlx#562,
omlx#2216); with its recipient and its ``<|call|>`` it is a call there too. An analysis message
with no recipient is reasoning, and stays text.

The recipient may stand before the channel (``assistant to=functions.NAME<|channel|>...``).
Only a message that ends with ``<|call|>`` is a call: one that ends with ``<|end|>`` is not
(Ollama's fixture), and a message *from* ``functions.NAME`` is a (made-up) result. A message
with no recipient names no tool (trtllm#9256) and stays text.

Some servers drop the special tokens in detokenization and leave
``commentary to=functions.NAME json{...}`` (rapid-mlx#480); that shape counts only as the whole
reply.
"""

from __future__ import annotations

import re

from ._json import json_arguments_block
from ._reading import (
    NEED_MORE,
    Found,
    ReadContext,
    ReadResult,
    Skip,
    TextCall,
    TextCallReader,
)

__all__ = ["HarmonyReader", "StrippedHarmonyReader"]

_MESSAGE = "<|message|>"
#: The channels a call is written on: ``commentary``, as the format says, and ``analysis``,
#: where gpt-oss also addresses functions (vllm-mlx#562, omlx#2216): the recipient and the
#: ``<|call|>`` that ends the message make it a call on either.
_CALL_CHANNELS = ("commentary", "analysis")
_CALL = "<|call|>"
_RECIPIENT = re.compile(r"(?:^|\s)to=functions\.([A-Za-z_][\w\-]*)(?=\s|<|$)")
_HEADER_LIMIT = 512
_BODY_END = re.compile(r"<\|(?:call|end|return)\|>")
_STRIPPED = re.compile(
    r"(?:assistant\s*)?(?:commentary\s+)?to=functions\.([A-Za-z_][\w\-]*)\s*(?:<\|constrain\|>)?"
    r"\s*(?:json)?\s*(?=\{)"
)


class HarmonyReader(TextCallReader):
    """One harmony message addressed to ``functions.NAME``, ended by ``<|call|>``."""

    family = "harmony"
    openers = ("<|start|>", "<|channel|>")

    def read(self, text: str, start: int, context: ReadContext) -> ReadResult:
        """The message's header, then its body up to ``<|call|>``."""
        final = context.final
        body_start = text.find(_MESSAGE, start, start + _HEADER_LIMIT)
        if body_start < 0:
            if not final and len(text) - start < _HEADER_LIMIT:
                return NEED_MORE
            return None
        header = text[start:body_start]
        if "<|end|>" in header or "<|call|>" in header:
            return None
        if header.startswith("<|start|>"):
            author = header[len("<|start|>") :].lstrip()
            if not author.startswith("assistant"):
                return None
        channel = header.find("<|channel|>")
        if channel < 0 or not header.startswith(_CALL_CHANNELS, channel + len("<|channel|>")):
            return None
        recipient = _RECIPIENT.search(header.replace("<|channel|>", " ").replace("<|", " <|"))
        if recipient is None or not context.offered(recipient.group(1)):
            return None
        name = recipient.group(1)
        inside = body_start + len(_MESSAGE)
        stop = _BODY_END.search(text, inside)
        if stop is not None and stop.group() != _CALL:
            return Skip(stop.end())  # an ordinary message (``<|end|>``): no call
        end = stop.start() if stop is not None else -1
        if end < 0:
            if not final:
                return NEED_MORE
            call = TextCall(name, text[inside:].strip(), cut=True)
            return Found(start, len(text), (call,), closed=False)
        call = TextCall(name, text[inside:end].strip())
        return Found(start, end + len(_CALL), (call,))


class StrippedHarmonyReader(TextCallReader):
    """A whole reply ``commentary to=functions.NAME json{...}`` (the tokens were dropped)."""

    family = "harmony"
    whole_reply = True

    def read(self, text: str, start: int, context: ReadContext) -> ReadResult:
        """The reply from its first non-blank character."""
        head = _STRIPPED.match(text, start)
        if head is None:
            rest = text[start : start + 80]
            if (
                not context.final
                and "{" not in rest
                and len(rest) < 80
                and (
                    "commentary to=functions.".startswith(rest[:24])
                    or "to=functions.".startswith(rest[:13])
                    or rest.startswith(("commentary", "to="))
                )
            ):
                return NEED_MORE
            return None
        name = head.group(1)
        if not context.offered(name):
            return None
        return json_arguments_block(text, start, head.end(), name, context, tail_only=True)
