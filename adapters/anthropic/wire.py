"""The Anthropic Messages stream's words: its event payloads as typed Structs, its finish values.

The payload shapes are those of ``POST /v1/messages`` with ``stream: true`` (and of the
``anthropic`` SDK's raw ``MessageStreamEvent`` objects, which dump to the same dicts). One flat
Struct reads every event type: the payload's ``type`` says which fields matter, and fields the
API added later (``caller``, ``stop_details``, ``container``, ``cache_creation``...) are skipped
by the decoder. A ``content_block`` is kept as a plain dict because the blocks toolwire does not
interpret (server-tool results) must be replayed to the API exactly as received.
"""

from __future__ import annotations

from typing import Any

import msgspec

from ...core.events import ProviderError, StopReason
from ...core.mapper import cap_text, quoted_object

__all__ = [
    "LENGTH_STOP_REASONS",
    "RETRYABLE_ERROR_TYPES",
    "STOP_REASONS",
    "BlockStart",
    "StreamEvent",
    "decode_event",
    "finish_reason_from_anthropic",
    "is_retryable",
    "quote_raw",
]


class OutputDetails(msgspec.Struct, gc=False):
    """``usage.output_tokens_details`` (newer API versions)."""

    thinking_tokens: int | None = None


class StreamUsage(msgspec.Struct, gc=False):
    """``usage`` of ``message_start`` (input, and 1 output token) or ``message_delta`` (final)."""

    input_tokens: int | None = None
    output_tokens: int | None = None
    output_tokens_details: OutputDetails | None = None


class MessageHead(msgspec.Struct, gc=False):
    """``message_start.message``: the id, the model and the input usage."""

    id: str | None = None
    model: str | None = None
    usage: StreamUsage | None = None
    content: list[Any] | None = None


class StreamDelta(msgspec.Struct, gc=False):
    """``content_block_delta.delta`` (by its ``type``) or ``message_delta.delta``."""

    type: str | None = None
    text: str | None = None
    partial_json: str | None = None
    thinking: str | None = None
    signature: str | None = None
    citation: Any = None
    stop_reason: str | None = None
    stop_sequence: str | None = None


class ErrorBody(msgspec.Struct, gc=False):
    """``error.error``: ``{"type": "overloaded_error", "message": "Overloaded"}``."""

    type: str | None = None
    message: str | None = None


class StreamEvent(msgspec.Struct, gc=False):
    """Any event payload of the stream; ``type`` says which of the other fields it carries."""

    type: str | None = None
    index: int | None = None
    message: MessageHead | None = None
    content_block: dict[str, Any] | None = None
    delta: StreamDelta | None = None
    usage: StreamUsage | None = None
    error: ErrorBody | None = None


class BlockStart(msgspec.Struct, gc=False):
    """The fields of a ``content_block_start`` block that toolwire reads (all block types)."""

    type: str
    id: str | None = None
    name: str | None = None
    input: Any = None
    text: str | None = None
    thinking: str | None = None
    signature: str | None = None


decode_event = msgspec.json.Decoder(StreamEvent).decode

#: Every ``stop_reason`` the Messages API documents, normalized. Anything else is ``unknown``.
#:
#: - ``stop_sequence`` ends the turn normally (the raw value stays in ``Finish.raw``); a
#:   ``tool_use`` block still open then, whose text stops inside a value, is cut for an unknown
#:   cause by the core (a stop sequence may have ended it).
#: - ``pause_turn``: the server paused a long turn of server tools and expects the assistant
#:   content sent back to continue it. It is neither a normal end nor a tool turn: ``unknown``
#:   (its raw value tells a loop to continue).
#: - ``refusal``: the safety classifier stopped the output: ``content_filter``.
#: - ``model_context_window_exceeded``: generation stopped because no more output fits in the
#:   context window. It is the provider's own word that the output ran out of tokens, so it is
#:   evidence of the limit (``length``), like ``max_tokens``; the advice "send smaller
#:   arguments" holds for it as well.
STOP_REASONS: dict[str, StopReason] = {
    "end_turn": "end_turn",
    "stop_sequence": "end_turn",
    "tool_use": "tool_calls",
    "max_tokens": "length",
    "model_context_window_exceeded": "length",
    "refusal": "content_filter",
    "pause_turn": "unknown",
}

#: The stop reasons that name the output-token limit (``Finish.evidence`` ``finish_reason``).
LENGTH_STOP_REASONS = frozenset({"max_tokens", "model_context_window_exceeded"})

#: In-band ``error`` types worth retrying the same request for (Anthropic's "Errors" page:
#: 429, 500, 504, 529). The others (``invalid_request_error``...) fail the same way again.
RETRYABLE_ERROR_TYPES = frozenset(
    {"overloaded_error", "api_error", "rate_limit_error", "timeout_error"}
)


def finish_reason_from_anthropic(raw: str) -> StopReason:
    """Normalize a Messages ``stop_reason`` (see :data:`STOP_REASONS`)."""
    return STOP_REASONS.get(raw, "unknown")


def is_retryable(error: ProviderError) -> bool:
    """An in-band Anthropic error (its type is the ``code``) that a retry may get past."""
    return error.kind == "error_payload" and error.code in RETRYABLE_ERROR_TYPES


def quote_raw(raw: object) -> str:
    """An offending payload (bytes, text, or an SDK object's dump), capped, for an error."""
    return cap_text(raw) if isinstance(raw, bytes | str) else quoted_object(raw)
