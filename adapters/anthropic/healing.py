"""Anthropic Messages as a healing wire format: ``POST /v1/messages`` requests and bodies.

:data:`ANTHROPIC` binds the :class:`~toolwire.adapters.anthropic.encoder.AnthropicEventEncoder`
(whose docstring says what a client receives) with the requests and whole ``message`` bodies.
A request with thinking on (``enabled``, ``adaptive``, ``between_tools``; with or without
interleaved thinking) is healed: its thinking blocks go out signed, in place (the encoder's
module docstring). A request that offers server tools or MCP servers passes untouched: toolwire
could not write their blocks back faithfully. An earlier ``tool_use`` whose ``input`` the API
refuses is repaired before the request goes upstream, healed or not.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import msgspec

from ...core.turn import Turn
from ...core.wire import Constraint, HealPlan, HealSettings, NextMessages, WireItem
from .. import encoding
from ..encoding import json_object, named_sse_frame, with_first_parts
from ..repaired_requests import planned
from .blocks import THINKING_BLOCKS
from .constrain import constrained_messages
from .encoder import MESSAGE_STOP, AnthropicEventEncoder
from .history import AnthropicHistory, broken_calls, wire_id
from .request import LIMIT_KEYS

__all__ = ["ANTHROPIC", "AnthropicWireFormat", "open_anthropic_format"]

_encode = msgspec.json.Encoder().encode
#: The tool types the client runs: custom tools and Anthropic's client built-ins (``bash_...``,
#: ``text_editor_...``, ``computer_...``, ``memory_...``). Any other type is a server tool.
_CLIENT_TOOL_PREFIXES = ("bash_", "text_editor_", "computer_", "memory_")
#: The blocks a healed stream writes itself; any other block of a body is opaque to it.
_WRITTEN = ("text", "thinking", "redacted_thinking", "tool_use")
#: The ``thinking.type`` values the API documents; a request with another passes untouched.
_THINKING_TYPES = frozenset({"disabled", "enabled", "adaptive", "between_tools"})
_HISTORY = AnthropicHistory()


class AnthropicWireFormat:
    """``POST /v1/messages`` requests and ``message`` bodies, for healing. Stateless.

    ``upstream`` and ``local`` say what serves the endpoint (``HealSettings``): the API, or a
    local server, which a constrained re-ask is asked of in its own way (:mod:`.constrain`).
    """

    provider = "anthropic"
    path = "/messages"

    def __init__(self, *, upstream: str = "anthropic", local: bool = False) -> None:
        self.upstream = upstream
        self.local = local

    def plan_request(self, content: bytes) -> HealPlan | None:
        """Heal a body with a ``messages`` list and client ``tools``; it goes upstream as is,
        but for earlier ``tool_use`` blocks whose ``input`` is no object (the API refuses the
        request: ``tool_use.input: Input should be a valid dictionary``), written as rejected
        calls (:func:`~toolwire.adapters.repaired_requests.repaired_history`).

        The Messages API always streams usage, so nothing is added. Thinking may be on (a
        ``thinking`` object of a documented type). A request that offers server tools or MCP
        servers is not healed (see the module docstring); its history is repaired all the same.
        """
        body = json_object(content)
        if body is None or not isinstance(body.get("messages"), list):
            return None
        streaming = body.get("stream") is True
        return planned(body, "messages", _HISTORY, broken_calls, heals=_heals, streaming=streaming)

    def encoder(self, plan: HealPlan) -> AnthropicEventEncoder:
        """A new encoder (usage always goes out: the API always sends it)."""
        return AnthropicEventEncoder()

    def frame(self, items: Iterable[WireItem]) -> bytes:
        """``event:`` + ``data:`` per event (the kit's ``named_sse_frame``)."""
        return named_sse_frame(items)

    def follow_up_body(
        self, body: Mapping[str, Any], turn: Turn, next_messages: NextMessages
    ) -> dict[str, Any]:
        """See :func:`toolwire.adapters.encoding.follow_up_body` (Messages has ``messages`` too).

        The assistant turn goes back as the API sent it, thinking blocks signed, in order
        (:class:`~toolwire.adapters.anthropic.history.AnthropicHistory`), each rejected call
        with input ``{}``, except a rejected call that a thinking block of the same response
        follows: that one keeps the input the API sent, when it is an object. The thinking after
        it was produced after it, and the API checks (for models with preserved thinking) that
        nothing before a thinking block changed.
        """
        asked = encoding.follow_up_body(body, turn, next_messages)
        assistant = asked["messages"][-2]
        _as_sent_before_thinking(assistant.get("content"), turn)
        return asked

    def raised_limit(
        self, body: Mapping[str, Any], ceiling: int
    ) -> tuple[dict[str, Any], int | None]:
        """``max_tokens`` doubled, up to ``ceiling`` (``None``: unset, or at the ceiling)."""
        return encoding.raised_limit(body, ceiling, LIMIT_KEYS)

    def read_body(self, content: bytes) -> dict[str, Any] | None:
        """``content`` decoded, when it is a ``message`` whose content blocks can be read."""
        body = json_object(content)
        if body is None or body.get("type") != "message":
            return None
        blocks = body.get("content")
        if not isinstance(blocks, list) or not all(
            isinstance(block, dict) and isinstance(block.get("type"), str) for block in blocks
        ):
            return None
        return body

    def body_as_stream(self, body: Mapping[str, Any]) -> bytes:
        """The Messages stream a ``message`` body is equivalent to, as the API would send it."""
        usage = body.get("usage") if isinstance(body.get("usage"), dict) else {}
        message: dict[str, Any] = {
            "id": body.get("id"),
            "type": "message",
            "role": "assistant",
            "model": body.get("model"),
            "content": [],
            "stop_reason": None,
            "stop_sequence": None,
            "usage": usage,
        }
        events: list[WireItem] = [{"type": "message_start", "message": message}]
        for index, block in enumerate(body["content"]):
            start, deltas = _streamed_block(block)
            events.append({"type": "content_block_start", "index": index, "content_block": start})
            events += [
                {"type": "content_block_delta", "index": index, "delta": delta} for delta in deltas
            ]
            events.append({"type": "content_block_stop", "index": index})
        delta = {"stop_reason": body.get("stop_reason"), "stop_sequence": body.get("stop_sequence")}
        events.append({"type": "message_delta", "delta": delta, "usage": usage})
        events.append(dict(MESSAGE_STOP))
        return named_sse_frame(events)

    def healed_body(self, first: Mapping[str, Any], items: Iterable[WireItem]) -> dict[str, Any]:
        """The client's ``message``: ``first`` with the content, finish and usage sent.

        A block the first body holds as sent keeps every field of it there (a thinking block's
        signature, citations, ``caller``); the first body's opaque blocks (server tools) stay
        before the blocks they preceded. Its thinking and ``redacted_thinking`` blocks are
        there when they were sent (the session sends them only in place). Every other top-level
        field of ``first`` is kept; ``stop_sequence`` only when the finish is still its own.
        """
        blocks, stop_reason, usage = _folded(items)
        body = dict(first)
        body["content"] = with_first_parts(
            list(first.get("content") or ()),
            blocks,
            reproduces=_reproduces,
            written=_WRITTEN,
            call_type="tool_use",
        )
        body["stop_reason"] = stop_reason
        if stop_reason != first.get("stop_reason"):
            body["stop_sequence"] = None
        if usage is not None:
            kept = first.get("usage")
            body["usage"] = {**(kept if isinstance(kept, dict) else {}), **usage}
        return body

    def empty_body(self, items: Sequence[WireItem]) -> dict[str, Any]:
        """The ``message`` of the items' ``message_start`` (no content yet), as a whole body."""
        for item in items:
            if isinstance(item, dict) and item.get("type") == "message_start":
                return dict(item["message"])
        return {"type": "message", "role": "assistant", "content": [], "stop_reason": None}

    def constrained(self, body: Mapping[str, Any], tool: str) -> Constraint:
        """See :func:`~toolwire.adapters.anthropic.constrain.constrained_messages`."""
        return constrained_messages(body, tool, upstream=self.upstream, local=self.local)

    def error_body(self, items: Iterable[WireItem]) -> dict[str, Any] | None:
        """The ``error`` event (``{"type": "error", "error": {...}}``) the items end in."""
        for item in items:
            if isinstance(item, dict) and item.get("type") == "error":
                return item
        return None


def _as_sent_before_thinking(content: Any, turn: Turn) -> None:
    """Give back, in ``content``, the input the API sent to each rejected call that a thinking
    block follows (see :meth:`AnthropicWireFormat.follow_up_body`)."""
    if not isinstance(content, list):
        return
    rejected = {
        wire_id(call.call_id): call.arguments_raw for call in turn.calls if not call.may_run
    }
    thinking_after = False
    for block in reversed(content):
        kind = block.get("type") if isinstance(block, dict) else None
        if kind in THINKING_BLOCKS:
            thinking_after = True
        elif kind == "tool_use" and thinking_after and block.get("id") in rejected:
            sent = json_object(rejected[block["id"]])
            if sent is not None:
                block["input"] = sent


def _heals(body: Mapping[str, Any]) -> bool:
    """Client ``tools`` only, thinking of a documented type (or none), no MCP servers."""
    tools = body.get("tools")
    if not isinstance(tools, list) or not tools or not all(map(_client_tool, tools)):
        return False
    thinking = body.get("thinking")
    if thinking is not None and not (
        isinstance(thinking, dict) and thinking.get("type") in _THINKING_TYPES
    ):
        return False
    return not body.get("mcp_servers")


def _client_tool(tool: Any) -> bool:
    """A tool the client runs (anything that is not a tool definition is left to the API)."""
    if not isinstance(tool, dict):
        return False
    kind = tool.get("type")
    return kind in (None, "custom") or (
        isinstance(kind, str) and kind.startswith(_CLIENT_TOOL_PREFIXES)
    )


def _streamed_block(block: Mapping[str, Any]) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """A body's content block as a ``content_block_start`` block and its deltas."""
    kind = block["type"]
    if kind == "text":
        text = block.get("text") or ""
        return {**block, "text": ""}, [{"type": "text_delta", "text": text}] if text else []
    if kind == "thinking":
        deltas = [{"type": "thinking_delta", "thinking": block.get("thinking") or ""}]
        if block.get("signature"):
            deltas.append({"type": "signature_delta", "signature": block["signature"]})
        return {**block, "thinking": "", "signature": ""}, deltas
    if kind == "tool_use":
        partial = _encode(block.get("input", {})).decode()
        return {**block, "input": {}}, [{"type": "input_json_delta", "partial_json": partial}]
    return dict(block), []


def _folded(
    items: Iterable[WireItem],
) -> tuple[list[dict[str, Any]], Any, dict[str, Any] | None]:
    """The content blocks, ``stop_reason`` and usage that ``items`` stream."""
    blocks: list[dict[str, Any]] = []
    inputs: dict[int, str] = {}
    stop_reason: Any = None
    usage: dict[str, Any] | None = None
    for item in items:
        if not isinstance(item, dict):
            continue
        kind = item.get("type")
        if kind == "content_block_start":
            blocks.append(dict(item["content_block"]))
        elif kind == "content_block_delta":
            index, delta = item["index"], item["delta"]
            block = blocks[index]
            if delta["type"] == "text_delta":
                block["text"] += delta["text"]
            elif delta["type"] == "thinking_delta":
                block["thinking"] += delta["thinking"]
            elif delta["type"] == "signature_delta":
                block["signature"] = delta["signature"]
            elif delta["type"] == "input_json_delta":
                inputs[index] = inputs.get(index, "") + delta["partial_json"]
        elif kind == "message_delta":
            stop_reason = item["delta"]["stop_reason"]
            usage = item["usage"]
    for index, text in inputs.items():
        blocks[index]["input"] = msgspec.json.decode(text) if text else {}
    return blocks, stop_reason, usage


def _reproduces(block: Mapping[str, Any], original: Mapping[str, Any]) -> bool:
    kind = block["type"]
    if kind != original.get("type"):
        return False
    if kind == "tool_use":
        return bool(block["id"] == original.get("id") and block["name"] == original.get("name"))
    if kind == "redacted_thinking":
        return bool(block.get("data") == original.get("data"))
    return bool(block.get(kind) == original.get(kind))


#: The Messages API, healed.
ANTHROPIC = AnthropicWireFormat()


def open_anthropic_format(settings: HealSettings) -> AnthropicWireFormat:
    """The Messages API's healing format, for the upstream ``settings`` names."""
    if not settings.upstream_local:
        return ANTHROPIC
    return AnthropicWireFormat(upstream=settings.upstream, local=True)
