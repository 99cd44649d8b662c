"""Calls in a server's quote of the model's output: the family readers over a tail of it.

llama-server's tool parser, when it fails, quotes the model's output from the position where
it failed to the end (``Failed to parse input at pos N: <tail>``, ``stages/server_parsed``).
That tail is read here with every registered family, as a whole final text (nothing more will
come), by the same scanner and the same rules as a reply (``docs/text-calls.md``), with one
difference: the tail is not the whole reply (N characters came before it), so it never counts
as one. A reply that is wholly a call object (bare JSON, ``[f(x=1)]``, ``NAME\\n{json}``) is
certain only from its first character, which a tail has not seen; so whole-reply readers read
it only after a ``</think>`` it holds, where the reply does start.

A tail may start anywhere: at a lone ``</tool_call>`` (ggml-org/llama.cpp#20761), inside a
call, inside a ``<think>`` block. None gives a made-up call: a call needs its family's opener
and an offered name (a quote that starts after them holds no call), ``tail_only`` blocks count
only when nothing but blanks and other blocks follow them (the closing tags of a call a quote
started inside are such text), and text before a ``</think>`` with no ``<think>`` before it is
the end of a reasoning block, never read.
"""

from __future__ import annotations

from ...judge import Toolset
from ._reading import TextCall
from ._scanner import THINK, ScanState, scan
from .stage import TextCallStage

__all__ = ["read_quoted_output"]

_THINK_START, _THINK_END = "<think>", "</think>"

#: The scan's state at a tail's first character: inside the reply, not at its start.
_IN_REPLY = ScanState(reply_pending=False)
#: ... or inside a reasoning block, the reply starting after its ``</think>``.
_IN_THINK = ScanState(mode=THINK, reply_pending=False, reply_after_think=True)


def read_quoted_output(text: str, toolset: Toolset | None) -> tuple[TextCall, ...] | None:
    """The calls in ``text`` (a quoted tail of the model's output, see the module docstring).

    The calls in order, cut ones marked ``cut``; ``()`` when some family's markup is there but
    holds no call; ``None`` when no family's markup is there (or no tool is offered).
    """
    stage = TextCallStage(None, toolset)
    table = stage.table
    if table is None or not stage.active:
        return None
    end = text.find(_THINK_END)
    in_think = end >= 0 and not 0 <= text.find(_THINK_START) < end
    scanned = scan(table, text, _IN_THINK if in_think else _IN_REPLY, stage.context.at_final(True))
    calls = tuple(call for block in scanned.blocks for call in block.calls)
    if calls:
        return calls
    markup = any(token in table.by_opener for token in table.pattern.findall(text))
    return () if markup else None
