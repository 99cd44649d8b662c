"""The OpenAI Responses stream's words: typed payloads, and the finish vocabulary.

Every payload is one JSON object whose ``type`` names the event (``response.output_text.delta``,
``response.function_call_arguments.delta``, ``response.completed``...). The decoders here are
lenient where servers differ and strict where toolwire relies on a value:

- fields that only some events carry, or that carry another type in events toolwire does not
  use, are decoded as ``Any`` and checked by the mapper for the events it reads, so that an
  event toolwire ignores can never make a stream "unreadable";
- ``item`` and ``response`` are kept as :class:`msgspec.Raw` (the bytes as sent, no copy) and
  decoded only for the events that need them: a ``response.created`` carrying the whole request
  echo costs nothing, and an output item can be replayed byte for byte;
- fields nobody reads (``obfuscation``, ``logprobs``, ``content_filters`` on Azure...) are
  skipped by the decoder, and ``sequence_number`` may be in any key position or absent
  (recordings before ~April 2025 have none).
"""

from __future__ import annotations

from typing import Any

import msgspec

from ...core.events import StopReason

__all__ = [
    "Envelope",
    "Item",
    "Response",
    "Usage",
    "decode_envelope",
    "decode_item",
    "decode_response",
    "present",
    "stop_reason_from_responses",
]


class Envelope(msgspec.Struct, gc=False):
    """One event, with only what the mapper may read; every event type fits."""

    type: Any = None
    sequence_number: Any = None
    output_index: Any = None
    item_id: Any = None
    content_index: Any = None
    summary_index: Any = None
    delta: Any = None
    arguments: Any = None
    text: Any = None
    refusal: Any = None
    #: Empty when absent (``msgspec.Raw`` cannot be optional); see :func:`present`.
    item: msgspec.Raw = msgspec.Raw()
    response: msgspec.Raw = msgspec.Raw()
    # The ``error`` event's fields.
    code: Any = None
    message: Any = None
    #: A payload that is an error object with no ``type``: ``{"error": {...}}``, as
    #: llama-server sends an error in band on ``/v1/responses`` (``format_oai_sse``).
    error: Any = None


class Item(msgspec.Struct, gc=False):
    """An output item (``response.output_item.added`` / ``.done``, ``response.output``)."""

    type: str = ""
    id: str | None = None
    status: str | None = None
    # function_call items only.
    call_id: str | None = None
    name: str | None = None
    arguments: str | None = None


class _IncompleteDetails(msgspec.Struct, gc=False):
    reason: str | None = None


class _ErrorBody(msgspec.Struct, gc=False):
    code: str | int | None = None
    message: str | None = None


class _TokenDetails(msgspec.Struct, gc=False):
    reasoning_tokens: int | None = None


class Usage(msgspec.Struct, gc=False):
    """``response.usage``: output tokens count reasoning, as ``max_output_tokens`` does."""

    input_tokens: int | None = None
    output_tokens: int | None = None
    total_tokens: int | None = None
    output_tokens_details: _TokenDetails | None = None


class Response(msgspec.Struct, gc=False):
    """The response object of the lifecycle events (created, in_progress, terminal)."""

    id: str | None = None
    model: str | None = None
    status: str | None = None
    incomplete_details: _IncompleteDetails | None = None
    error: _ErrorBody | None = None
    usage: Usage | None = None
    output: list[msgspec.Raw] | None = None


def present(raw: msgspec.Raw) -> bool:
    """A ``Raw`` field that was sent and is not ``null``."""
    size = len(raw)
    return size > 0 and not (size == 4 and bytes(raw) == b"null")


decode_envelope = msgspec.json.Decoder(Envelope).decode
decode_item = msgspec.json.Decoder(Item).decode
decode_response = msgspec.json.Decoder(Response).decode

#: ``incomplete_details.reason`` -> stop reason. Only ``max_output_tokens`` is the provider's own
#: word for the output-token limit. The OpenAPI example's ``max_tokens`` is not in the schema's
#: enum (see the fixtures README, "Documentation discrepancies"), and ``max_messages`` /
#: ``steered`` (newer SDK enum values) are other limits: all of them, and any reason not known
#: yet, are ``unknown``, never a normal end.
_INCOMPLETE_REASONS: dict[str, StopReason] = {
    "max_output_tokens": "length",
    "content_filter": "content_filter",
}


def stop_reason_from_responses(terminal: str, reason: str | None = None) -> StopReason:
    """Normalize a terminal event (and, for ``response.incomplete``, its reason).

    ``response.completed`` is a normal end (``end_turn``; the finish decision makes it
    ``tool_calls`` when the turn called a function), ``response.failed`` is ``error``, and
    ``response.incomplete`` depends on ``incomplete_details.reason``.
    """
    if terminal == "response.completed":
        return "end_turn"
    if terminal == "response.failed":
        return "error"
    if terminal == "response.incomplete" and reason is not None:
        return _INCOMPLETE_REASONS.get(reason, "unknown")
    return "unknown"
