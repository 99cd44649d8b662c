"""Calls in a server's quote of the model's output: the family readers over a tail of it.

llama-server's tool parser, when it fails, quotes the model's output from the position where
it failed to the end (``Failed to parse input at pos N: <tail>``, ``stages/server_parsed``).
That tail is read here with every registered family, as a whole final text (nothing more will
come), by the same scanner and the same rules as a reply (``docs/text-calls.md``), with one
difference: the tail is not the whole reply (N characters came before it), so it never counts
as one. A reply that is wholly a call object (bare JSON, ``[f(x=1)]``, ``NAME\\n{json}``) is
certain only from its first character, which a tail has not seen; so whole-reply readers read
it only after a reasoning closer it holds (``</think>``...), where the reply does start.

A tail may start anywhere: at a lone ``</tool_call>`` (ggml-org/llama.cpp#20761), inside a
call, inside a ``<think>`` block. None gives a made-up call: a call needs its family's opener
and an offered name (a quote that starts after them holds no call), ``tail_only`` blocks count
only when nothing but blanks and other blocks follow them (the closing tags of a call a quote
started inside are such text), and text before a reasoning closer with no opener before it
(``</think>``, ``[/THINK]``...: ``reasoning.py``) is the end of a reasoning block: the calls
read there are drafts.
"""

from __future__ import annotations

from ...judge import Toolset
from ._reading import TextCall
from ._scanner import ScanState, scan
from .stage import TextCallStage

__all__ = ["read_quoted_output"]

#: The scan's state at a tail's first character: inside the reply, not at its start (a
#: reasoning closer with no opener before it ends reasoning; the reply starts after it).
_IN_REPLY = ScanState(reply_pending=False)


def read_quoted_output(text: str, toolset: Toolset | None) -> tuple[TextCall, ...] | None:
    """The calls in ``text`` (a quoted tail of the model's output, see the module docstring).

    The calls in order, cut ones marked ``cut``; ``()`` when some family's markup is there but
    holds no call; ``None`` when no family's markup is there (or no tool is offered).
    """
    stage = TextCallStage(None, toolset)
    table = stage.table
    if table is None or not stage.active:
        return None
    scanned = scan(table, text, _IN_REPLY, stage.context.at_final(True))
    drafted = scanned.releases[-1] if scanned.releases else -1
    calls = tuple(call for block in scanned.blocks if block.start > drafted for call in block.calls)
    if calls:
        return calls
    markup = any(token in table.by_opener for token in table.pattern.findall(text))
    return () if markup else None
