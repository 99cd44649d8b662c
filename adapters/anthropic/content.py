"""Content blocks (``content_block_start`` / ``_delta`` / ``_stop``) into text, reasoning, calls.

Blocks are addressed by the API's block index; each kind is read its own way:

- ``text`` -> ``TextDelta`` (``citations_delta`` kept for replay);
- ``thinking`` -> ``ReasoningDelta``; its ``signature_delta`` kept byte for byte for replay;
  at its ``content_block_stop`` the signed block is reported whole (``ProviderContent`` with
  ``scope="block"``), so that a writer sends the signature before whatever follows the block;
- ``tool_use`` -> a toolwire call (:class:`~toolwire.core.accumulate.CallAccumulator`
  ``start`` / ``append_to`` / ``close``), its ``input_json_delta`` pieces appended raw;
- ``server_tool_use`` / ``mcp_tool_use`` -> kept for replay, never a toolwire call;
- anything else (``redacted_thinking``, ``*_tool_result``, blocks added later) -> kept opaque;
  a ``redacted_thinking`` block is reported at its stop like a signed ``thinking`` block.

A delta that does not fit its block (an unknown delta type, a delta for a block that never
started, or for a ``tool_use`` block after its stop) is an unreadable piece: every call open then
may lack text, so none of them runs.
"""

from __future__ import annotations

from typing import Any

import msgspec

from ...core.events import Event, ProviderContent, ProviderError, ReasoningDelta, TextDelta
from ...core.json_text import json_text
from ...core.jsonscan import unterminated
from ...core.stream_state import StreamState
from ..frame_errors import CONVERT_FAILURES
from .blocks import SERVER_TOOL_USES, THINKING_BLOCKS, TOOL_USE, ContentBlock, ContentRecord
from .wire import BlockStart, StreamEvent, quote_raw

__all__ = ["ContentReader"]


class ContentReader:
    """The content-block half of one stream's mapper; private to one run."""

    __slots__ = ("_calls", "_reasoning", "_record", "_state")

    def __init__(self, state: StreamState, record: ContentRecord) -> None:
        self._state = state
        self._calls = state.calls
        self._record = record
        self._reasoning: list[str] = []

    def reasoning(self) -> str:
        """The reasoning text emitted so far (what ``Turn.reasoning`` will hold)."""
        return "".join(self._reasoning)

    def start(self, event: StreamEvent, out: list[Event], raw: object) -> None:
        """``content_block_start``: open a block (and a call for ``tool_use``)."""
        index, block = event.index, event.content_block
        if index is None or block is None:
            self._lost(out, "content_block_start without its index or block", raw)
            return
        if index in self._record.by_index:
            self._lost(out, f"a second content_block_start for block {index}", raw, "protocol")
            return
        try:
            head = msgspec.convert(block, BlockStart, strict=False)
        except CONVERT_FAILURES as error:
            self._lost(out, f"a content block of unknown shape: {error}", raw)
            return
        kind = head.type
        if kind == TOOL_USE:
            if head.input is not None and not isinstance(head.input, dict):
                self._lost(out, "a tool_use block whose input is not an object", raw)
                return
            call = self._calls.start(
                out, call_id=head.id or None, name=head.name or None, expects_end=True
            )
            self._record.add(index, ContentBlock(kind, block, call))
            return
        self._record.add(index, ContentBlock(kind, block))
        if kind == "text" and head.text:
            out.append(TextDelta(text=head.text))
        elif kind == "thinking" and head.thinking:
            self._reasoning.append(head.thinking)
            out.append(ReasoningDelta(text=head.thinking))

    def delta(self, event: StreamEvent, out: list[Event], raw: object) -> None:
        """``content_block_delta``: a piece of text, reasoning, signature or call input.

        Its two commonest cases (``input_json_delta`` for an open ``tool_use`` block,
        ``text_delta`` for a ``text`` block) are inlined in ``AnthropicMapper._framed``: a change
        here goes there too.
        """
        index, delta = event.index, event.delta
        block = self._record.by_index.get(index) if index is not None else None
        if delta is None:
            self._lost(out, "content_block_delta without its delta", raw)
            return
        if block is None:
            self._lost(out, f"a delta for block {index}, which never started", raw, "protocol")
            return
        kind, dtype = block.kind, delta.type
        if dtype == "input_json_delta" and delta.partial_json is not None:
            call = block.call
            if call is not None:
                if block.stopped:
                    self._lost(out, "input for a tool_use block after its stop", raw, "protocol")
                else:
                    self._calls.append_to(out, call, delta.partial_json)
                return
            if kind in SERVER_TOOL_USES:
                block.pieces.append(delta.partial_json)
                return
        elif kind == "text":
            if dtype == "text_delta" and delta.text is not None:
                block.pieces.append(delta.text)
                if delta.text:
                    out.append(TextDelta(text=delta.text))
                return
            if dtype == "citations_delta" and delta.citation is not None:
                block.citations.append(delta.citation)
                return
        elif kind == "thinking":
            if dtype == "thinking_delta" and delta.thinking is not None:
                block.pieces.append(delta.thinking)
                if delta.thinking:
                    self._reasoning.append(delta.thinking)
                    out.append(ReasoningDelta(text=delta.thinking))
                return
            if dtype == "signature_delta" and delta.signature is not None:
                block.signature = delta.signature
                return
        self._lost(out, f"a {dtype!r} delta for a {kind!r} block", raw)

    def stop(self, event: StreamEvent, out: list[Event], raw: object) -> None:
        """``content_block_stop``: the block is whole; a ``tool_use`` call closes; a signed
        ``thinking`` block or a ``redacted_thinking`` block is reported whole."""
        index = event.index
        block = self._record.by_index.get(index) if index is not None else None
        if block is None or block.stopped:
            self._state.report(
                out,
                ProviderError(
                    message=f"a content_block_stop for block {index}, which is not open",
                    kind="protocol",
                    raw=quote_raw(raw),
                ),
            )
            return
        block.stopped = True
        if block.kind in THINKING_BLOCKS:
            whole = block.snapshot()  # None for a thinking block that came without a signature
            if whole is not None:
                out.append(ProviderContent(items=(whole,), scope="block"))
            return
        call = block.call
        if call is None or call.closed:
            return
        if call.size == 0:
            # A no-argument tool: only ``partial_json: ""`` came, and the protocol's input is
            # then the start block's ``input`` (``{}``): write its JSON as the call's text.
            self._calls.append_to(out, call, _start_input_json(block.start))
        if call.damage is None and unterminated(call.arguments()):
            # Stopped, yet inside a value (max_tokens_mid_tool_input.derived.sse): it was cut.
            # Left open, the finish closes it and says what cut it (the limit, a stop sequence,
            # a drop...), which this event alone cannot tell.
            return
        self._calls.close(out, call, "call_end")

    def _lost(self, out: list[Event], detail: str, raw: object, kind: str = "") -> None:
        self._state.unreadable(
            out,
            ProviderError(
                message=detail,
                kind="protocol" if kind == "protocol" else "unknown_shape",
                raw=quote_raw(raw),
            ),
        )


def _start_input_json(start: dict[str, Any]) -> str:
    value = start.get("input")
    return json_text(value if isinstance(value, dict) else {})
