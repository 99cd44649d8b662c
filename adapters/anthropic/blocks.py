"""The assistant content blocks of one stream, in order, as the API needs them back.

Anthropic requires parts of a turn to be replayed exactly: a ``thinking`` block with its
``signature`` byte for byte (the API verifies it, and requires the thinking block before a
``tool_use`` when thinking is on), ``redacted_thinking`` blocks as the opaque ``data`` they
carry, and server-tool blocks (``server_tool_use`` and their ``*_tool_result`` blocks) so that a
paused turn (``pause_turn``) can be continued. :class:`ContentRecord` keeps them while the
mapper reads; :meth:`ContentRecord.snapshot` gives them as plain dicts.

``tool_use`` blocks are kept as references (id, name, extra fields such as ``caller``): their
``input`` is written by the history format from the judged call, never from the raw text.

The mapper emits the snapshot as a ``ProviderContent`` event before ``Finish``, so it travels
with the ``Turn`` (``Turn.provider_content``) wherever the turn goes; each signed ``thinking``
and each ``redacted_thinking`` block is also reported alone as it ends (``scope="block"``), for
the healing encoder, which must send it, signed, before the calls that follow it.
"""

from __future__ import annotations

from typing import Any

import msgspec

from ...core.accumulate import OpenCall
from ...core.turn import Turn

__all__ = ["THINKING_BLOCKS", "ContentBlock", "ContentRecord", "recorded_content"]

#: Client-side tool calls: judged and dispatched by toolwire.
TOOL_USE = "tool_use"
#: The blocks of the model's reasoning, which the API verifies when they come back: reported
#: whole as each one ends (``ProviderContent`` with ``scope="block"``).
THINKING_BLOCKS = frozenset({"thinking", "redacted_thinking"})
#: Server-side tool calls: run by Anthropic, never judged or dispatched here.
SERVER_TOOL_USES = frozenset({"server_tool_use", "mcp_tool_use"})


class ContentBlock:
    """One content block being read: its start payload and what its deltas added."""

    __slots__ = ("call", "citations", "kind", "pieces", "signature", "start", "stopped")

    def __init__(self, kind: str, start: dict[str, Any], call: OpenCall | None = None) -> None:
        self.kind = kind
        #: The ``content_block`` of ``content_block_start``, exactly as received.
        self.start = start
        #: ``text`` / ``thinking`` / ``input_json_delta`` pieces (the latter for server tools
        #: only: a client call's pieces live in the accumulator).
        self.pieces: list[str] = []
        #: The last ``signature_delta`` (the SDK, too, replaces rather than appends).
        self.signature: str | None = None
        self.citations: list[Any] = []
        self.call = call
        self.stopped = False

    def snapshot(self) -> dict[str, Any] | None:
        """The block as it goes back to the API, or ``None`` when it cannot go back."""
        start = self.start
        kind = self.kind
        if kind == "text":
            text = (start.get("text") or "") + "".join(self.pieces)
            if not text:
                return None  # the API refuses empty text blocks
            block: dict[str, Any] = {"type": "text", "text": text}
            citations = [*(start.get("citations") or ()), *self.citations]
            if citations:
                block["citations"] = citations
            return block
        if kind == "thinking":
            signature = self.signature or start.get("signature") or ""
            if not signature:
                return None  # cut before its signature: the API would refuse it
            thinking = (start.get("thinking") or "") + "".join(self.pieces)
            return {"type": "thinking", "thinking": thinking, "signature": signature}
        if kind == TOOL_USE:
            call = self.call
            extras = {
                key: value
                for key, value in start.items()
                if key not in ("type", "id", "name", "input") and value is not None
            }
            return {
                "type": TOOL_USE,
                "id": call.call_id if call is not None else start.get("id"),
                "name": call.name if call is not None else start.get("name"),
                **extras,
            }
        if kind in SERVER_TOOL_USES:
            return {**start, "input": self.server_input()}
        return dict(start)  # redacted_thinking, *_tool_result, unknown blocks: opaque

    def server_input(self) -> Any:
        """A server tool's input: its JSON pieces parsed, else the start block's ``input``."""
        fallback = self.start.get("input")
        if self.pieces:
            try:
                value = msgspec.json.decode("".join(self.pieces))
            except (msgspec.DecodeError, UnicodeEncodeError):  # (a lone surrogate)
                value = None
            if isinstance(value, dict):
                return value
        return fallback if isinstance(fallback, dict) else {}


class ContentRecord:
    """Every content block of one stream, by the API's block index and in order."""

    __slots__ = ("blocks", "by_index")

    def __init__(self) -> None:
        self.blocks: list[ContentBlock] = []
        self.by_index: dict[int, ContentBlock] = {}

    def add(self, index: int, block: ContentBlock) -> None:
        """A ``content_block_start`` for block ``index``."""
        self.blocks.append(block)
        self.by_index[index] = block

    def snapshot(self) -> tuple[dict[str, Any], ...]:
        """The blocks that can go back to the API, in order."""
        return tuple(b for b in (block.snapshot() for block in self.blocks) if b is not None)


def recorded_content(turn: Turn) -> tuple[dict[str, Any], ...]:
    """The content blocks the stream of ``turn`` carried, in order (``Turn.provider_content``).

    ``tool_use`` blocks carry no ``input`` (the history format writes it from the verdict);
    ``server_tool_use`` blocks carry their parsed input, and server-tool results are as
    received: this is how server-side tool use is surfaced (it is never a toolwire call).
    """
    return tuple(item for item in turn.provider_content if isinstance(item, dict))
