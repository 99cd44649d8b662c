"""gpt-oss harmony: a message from the assistant addressed to a function.

The format (openai/harmony ``docs/format.md``; llama.cpp
``models/templates/openai-gpt-oss-120b.jinja``)::

    <|start|>assistant<|channel|>commentary to=functions.NAME <|constrain|>json<|message|>
    {...}<|call|>

(on one line). "The recipient might be defined in the role or channel section of the
header" (the format's own words; the template writes ``<|start|>assistant
to=functions.NAME<|channel|>commentary json<|message|>``), ``<|constrain|>`` may be glued to
the recipient, and gpt-oss also addresses functions on the ``analysis`` channel (vllm-mlx#562,
omlx#2216). The header is read as harmony's own parser reads it (openai/harmony
``src/encoding.rs``): the channel is the word after ``<|channel|>``, the recipient the ``to=``
word, so a name is anything up to a blank or a token (``functions.Calendar.create_event``,
``functions.mcp__fs__read-file``); only the ``functions.`` namespace holds offered tools.

**The stream as servers send it.** ``<|call|>`` is a stop token: llama-server ends the
generation on it and never sends it, and the generation prompt ends with ``<|start|>assistant``,
so the reply starts right after it, with the channel (``<|channel|>commentary to=...``) or
with the recipient (`` to=functions.NAME<|channel|>commentary json<|message|>{...}``,
llama.cpp#15181). So a message's body ends at the first harmony token or at the end of the text:

- ``<|call|>`` (the family's end token): a call, its body handed to the judge;
- ``<|end|>`` / ``<|return|>``: an ordinary message, no call (Ollama's fixture), but for
  LLM-jp's parallel calls: LLM-jp 4.1 writes every call of a reply as a message of its own, all
  but the last closed by ``<|end|>``, the next one right after it (llama.cpp
  ``models/templates/llm-jp-llm-jp-4.1-8b-thinking.jinja``, "all but the last end with
  <|end|>, the last with <|call|>"; ``common/parsers/llm-jp-harmony.cpp`` reads
  ``call (<|end|> <|start|>assistant call)*``). So a body that is one complete JSON value,
  closed by ``<|end|>`` and followed (blanks between) by ``<|start|>`` and a message that is
  a call, is a call too; the calls of such a run count together, or none of them when the
  run does not end in a call (a lone ``{...}<|end|>`` stays an ordinary message);
- the next message, or the end of the text: a call when the body is one complete JSON value
  (llama.cpp's parser reads exactly that); cut when it stops inside one; no call otherwise
  (an empty or prose body addressed to a function is nothing to run).

A message with no recipient names no tool (trtllm#9256) and is no call; a message *from*
``functions.NAME`` is a (made-up) result. A body ended by no token is not ``closed``: when the
output-token limit ended the turn, the stage counts it cut like any call the limit may have
ended (``docs/text-calls.md``).

Some servers drop the special tokens in detokenization and leave
``commentary to=functions.NAME json{...}`` (rapid-mlx#480); that shape counts only as the whole
reply.
"""

from __future__ import annotations

import re
from typing import ClassVar

from ._json import json_arguments_block, value_end
from ._names import TOOL_NAME
from ._reading import (
    NEED_MORE,
    Found,
    ReadContext,
    ReadResult,
    Skip,
    TextCall,
    TextCallReader,
    skip_blanks,
)

__all__ = ["HarmonyReader", "RecipientFirstHarmonyReader", "StrippedHarmonyReader"]

_START = "<|start|>"
_CHANNEL = "<|channel|>"
_MESSAGE = "<|message|>"
#: The channels a call is written on: ``commentary``, as the format says, and ``analysis``,
#: where gpt-oss also addresses functions (vllm-mlx#562, omlx#2216).
_CALL_CHANNELS = frozenset({"commentary", "analysis"})
#: The namespace of the developer's functions in a recipient (``to=functions.NAME``).
_NAMESPACE = "functions."
_HEADER_LIMIT = 512
#: A header ends at ``<|message|>``; one of these before it means it is no header of a message
#: still being written (its message ended, or another began).
_NOT_IN_HEADER = re.compile(r"<\|(?:start|end|call|return)\|>")
#: Every harmony token: a body ends at the first one.
_TOKEN = re.compile(r"<\|(?:call|end|return|start|channel|message|constrain)\|>")
#: A word of the header: harmony splits the header on blanks, a token standing alone.
_WORD = re.compile(r"<\|[a-z]+\|>|[^\s<]+|<")
_STRIPPED = re.compile(
    rf"(?:assistant\s*)?(?:commentary\s+)?to=functions\.({TOOL_NAME})\s*(?:<\|constrain\|>)?"
    r"\s*(?:json)?\s*(?=\{)"
)


class _Header:
    """What a header says: its channel and its recipient (``None`` when it has none)."""

    __slots__ = ("channel", "recipient", "role")

    def __init__(self, header: str) -> None:
        words = _WORD.findall(header)
        self.role: str | None = None
        self.channel: str | None = None
        self.recipient: str | None = None
        index = 0
        if words[:1] == [_START]:
            self.role = words[1] if len(words) > 1 else ""
            index = 2
        while index < len(words):
            word = words[index]
            if word == _CHANNEL and self.channel is None and index + 1 < len(words):
                self.channel = words[index + 1]
                index += 1
            elif word.startswith("to=") and self.recipient is None:
                self.recipient = word[len("to=") :]
            index += 1


class HarmonyReader(TextCallReader):
    """One harmony message addressed to ``functions.NAME``, at ``<|start|>`` or ``<|channel|>``."""

    family = "harmony"
    openers = ("<|start|>", "<|channel|>")
    #: ``<|call|>`` ends a call message; a stop token, so servers usually never send it.
    end_tokens: ClassVar[tuple[str, ...]] = ("<|call|>",)

    def read(self, text: str, start: int, context: ReadContext) -> ReadResult:
        """The message's header, then its body."""
        return read_message(self, text, start, context)


class RecipientFirstHarmonyReader(TextCallReader):
    """A reply that starts with the recipient: the text right after the generation prompt's
    ``<|start|>assistant`` (`` to=functions.NAME<|channel|>commentary json<|message|>{...}``)."""

    family = "harmony"
    whole_reply = True
    end_tokens: ClassVar[tuple[str, ...]] = ("<|call|>",)

    def read(self, text: str, start: int, context: ReadContext) -> ReadResult:
        """The reply from its first non-blank character: ``to=`` must open it."""
        if not text.startswith("to=", start):
            rest = text[start : start + 3]
            return NEED_MORE if not context.final and "to=".startswith(rest) else None
        return read_message(self, text, start, context)


class _EndedCall:
    """A complete JSON body addressed to an offered function and closed by ``<|end|>``: a call
    when the message right after it is one (LLM-jp's parallel calls), else nothing to run."""

    __slots__ = ("call", "end")

    def __init__(self, call: TextCall, end: int) -> None:
        self.call = call
        #: Just after its ``<|end|>``.
        self.end = end


def read_message(reader: TextCallReader, text: str, start: int, context: ReadContext) -> ReadResult:
    """The message from ``start`` (``<|start|>``, ``<|channel|>`` or the recipient), with the
    run of calls after it when it is a call closed by ``<|end|>`` (see the module docstring).

    A run that does not end in a call is no call at all, and it is stepped over whole, so that
    each message is read once however long the run (hostile text stays linear)."""
    calls: list[TextCall] = []
    at = start
    while True:
        result = _read_one(reader, text, at, context)
        if not isinstance(result, _EndedCall):
            break
        calls.append(result.call)
        after = skip_blanks(text, result.end)
        if text.startswith(_START, after):
            at = after  # the next message: the run goes on if it is a call
            continue
        if not context.final and _START.startswith(text[after : after + len(_START)]):
            return NEED_MORE  # the next message may still begin
        return Skip(result.end)  # nothing follows it that is a call: no call
    if not calls:
        return result
    if isinstance(result, Found):
        return Found(start, result.end, (*calls, *result.calls), closed=result.closed)
    if result is NEED_MORE:
        return NEED_MORE
    return Skip(at)  # the run ends in a message that is no call: none of them counts


def _read_one(
    reader: TextCallReader, text: str, start: int, context: ReadContext
) -> ReadResult | _EndedCall:
    """One message from ``start``."""
    final = context.final
    body_start = text.find(_MESSAGE, start, start + _HEADER_LIMIT)
    limit = body_start if body_start >= 0 else min(len(text), start + _HEADER_LIMIT)
    if _NOT_IN_HEADER.search(text, start + 1, limit) is not None:
        return None  # this header never reaches a message of its own
    if body_start < 0:
        if not final and len(text) - start < _HEADER_LIMIT:
            return NEED_MORE
        return None
    inside = body_start + len(_MESSAGE)
    header = _Header(text[start:body_start])
    if header.role is not None and header.role.split("<")[0] != "assistant":
        return Skip(inside)  # a message from another author (a tool's result): no call
    if header.channel not in _CALL_CHANNELS or header.recipient is None:
        return None
    if not header.recipient.startswith(_NAMESPACE):
        return None  # a built-in tool (browser, python) or the assistant: nothing offered
    name = header.recipient[len(_NAMESPACE) :]
    if not context.offered(name):
        return None
    stop = _TOKEN.search(text, inside)
    if stop is not None and stop.group() in reader.end_tokens:
        return Found(start, stop.end(), (TextCall(name, text[inside : stop.start()].strip()),))
    if stop is not None and stop.group() == "<|end|>":
        at = skip_blanks(text, inside)
        body = text[at : stop.start()]  # a JSON value never runs past its message
        length = value_end(body, 0) if body[:1] in ("{", "[") else None
        if length is not None and not body[length:].strip():
            return _EndedCall(TextCall(name, body[:length]), stop.end())
        return Skip(stop.end())  # an ordinary message, not a call
    if stop is not None and stop.group() == "<|return|>":
        return Skip(stop.end())  # the final answer's end, not a call
    if stop is None and not final:
        return NEED_MORE  # the body may go on, or <|call|> may come
    # The message ended without its end token: the next message began, or the text ended.
    body_end = stop.start() if stop is not None else len(text)
    at = min(skip_blanks(text, inside), body_end)
    json_body = at < body_end and text[at] in "{["
    # Only the body is read (a slice): a JSON value never runs past the next message.
    length = value_end(text[at:body_end], 0) if json_body else None
    end = at + length if length is not None else None
    if end is not None and skip_blanks(text, end) >= body_end:
        return Found(start, end, (TextCall(name, text[at:end]),), closed=False)
    if stop is None and json_body and end is None:
        call = TextCall(name, text[at:].rstrip(), cut=True)  # stops inside its JSON
        return Found(start, len(text), (call,), closed=False)
    if stop is None and at >= body_end:
        # The header was written, the body never came: a call cut before its arguments.
        return Found(start, len(text), (TextCall(name, "", cut=True),), closed=False)
    return Skip(body_end)  # an empty or prose body, no end token: nothing to run


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
