"""The typed events that flow through a toolwire pipeline.

Every event is a frozen msgspec ``Struct`` in one tagged union (``Event``), tagged with an explicit
dotted name so that the wire form never depends on a class name. Stages dispatch with ``match``
and derive new events with ``msgspec.structs.replace``; nothing is mutated after emission.

The order a provider adapter emits, for one stream::

    ResponseInfo?  (TextDelta | ReasoningDelta | ToolCallStarted | ToolCallArgumentsDelta
                    | ToolCallComplete | Usage | ProviderError)*  Finish  StreamEnd

``ToolCallStarted`` comes as soon as a call's id and name are known, before any argument;
``ToolCallComplete`` comes only on a structural end signal (the next call opening a new slot, the
finish, the end of the stream), never because the buffer happens to parse. ``Finish`` and
``StreamEnd`` come exactly once, last. The judge turns each ``ToolCallComplete`` into exactly one
of ``ToolCallReady`` / ``ToolCallRepaired`` / ``ToolCallRejected`` (the complete event is kept,
inside, as ``call``).

New fields always get defaults, so that events recorded by an older toolwire still decode.
"""

from __future__ import annotations

from typing import Any, Literal

import msgspec

from .verdict import Verdict

__all__ = [
    "ArgumentsForm",
    "ClosedBy",
    "CutBy",
    "Event",
    "Finish",
    "JudgedCallEvent",
    "ProviderError",
    "ReasoningDelta",
    "ResponseInfo",
    "StopCondition",
    "StopReason",
    "StreamEnd",
    "TextDelta",
    "ToolCallArgumentsDelta",
    "ToolCallComplete",
    "ToolCallReady",
    "ToolCallRejected",
    "ToolCallRepaired",
    "ToolCallStarted",
    "TruncationEvidence",
    "TurnStopped",
    "Usage",
    "decode_event",
    "encode_event",
]

#: Why the model stopped, normalized across providers.
StopReason = Literal[
    "end_turn", "tool_calls", "length", "content_filter", "error", "disconnected", "unknown"
]

#: Each kind of evidence that the output was cut off at the output-token limit.
#:
#: - ``finish_reason``: the provider said so (``length``, ``max_tokens``, ``MAX_TOKENS``,
#:   ``max_output_tokens``, ``incomplete_details``, Ollama ``done_reason: length``).
#: - ``usage_at_max_tokens``: output tokens reported equal the request's ``max_tokens``.
#: - ``arguments_unterminated``: a call still open at the end stops inside a string, object or
#:   array (llama-cpp-python reports ``tool_calls`` on such a call).
#: - ``no_finish``: the stream ended with neither a finish reason nor the provider's terminator.
TruncationEvidence = Literal[
    "finish_reason", "usage_at_max_tokens", "arguments_unterminated", "no_finish"
]

#: A condition of ``stop_on`` (see :mod:`toolwire.stages.policy`).
StopCondition = Literal["length", "malformed_tool_call", "content_filter", "repair_loop"]

#: How a tool call's arguments arrived: as JSON text (normal) or as an object (Ollama, some
#: compatible servers); ``object`` arguments were serialized by toolwire with msgspec.
ArgumentsForm = Literal["string", "object"]

#: What cut a call short: the output-token limit, a stream that stopped, or a fatal error.
CutBy = Literal["token_limit", "disconnected", "error"]

#: The structural signal that closed a tool call.
ClosedBy = Literal["next_call", "call_end", "finish", "end_of_stream"]


class Event(msgspec.Struct, frozen=True, kw_only=True, tag_field="type"):
    """Base of every event; never instantiated itself."""


class ResponseInfo(Event, frozen=True, tag="response.info"):
    """What the provider said about the response itself, sent once, as soon as it is known."""

    model: str | None = None
    response_id: str | None = None


class TextDelta(Event, frozen=True, tag="text.delta"):
    """A piece of the visible answer text."""

    text: str


class ReasoningDelta(Event, frozen=True, tag="reasoning.delta"):
    """A piece of reasoning / thinking text (``reasoning_content``, thinking blocks...)."""

    text: str


class ToolCallStarted(Event, frozen=True, tag="tool_call.started"):
    """A tool call opened: its id and name are known, none of its arguments need be."""

    call_id: str
    name: str
    index: int
    #: The provider sent no id; ``call_id`` was made up by toolwire, stable for this call.
    id_synthesized: bool = False


class ToolCallArgumentsDelta(Event, frozen=True, tag="tool_call.arguments_delta"):
    """A piece of a call's raw arguments text, exactly as the provider sent it."""

    call_id: str
    index: int
    delta: str


class ToolCallComplete(Event, frozen=True, tag="tool_call.complete"):
    """A tool call closed by a structural end signal: its raw arguments are final.

    ``arguments_raw`` is the exact concatenation of the argument deltas, byte for byte.
    ``truncated`` is true when this call was still open when the output was cut off (a
    ``length`` finish, usage at ``max_tokens``, a dropped stream, or text that stops inside a
    value); calls closed earlier by the next call starting are never marked.
    """

    call_id: str
    name: str
    index: int
    arguments_raw: str
    id_synthesized: bool = False
    arguments_form: ArgumentsForm = "string"
    closed_by: ClosedBy = "finish"
    truncated: bool = False
    #: When ``truncated``: what cut the call short (the message to the model depends on it).
    cut_by: CutBy | None = None


class Usage(Event, frozen=True, tag="usage"):
    """Token usage as reported by the provider (``None`` where it said nothing)."""

    input_tokens: int | None = None
    output_tokens: int | None = None
    total_tokens: int | None = None
    reasoning_tokens: int | None = None


class ProviderError(Event, frozen=True, tag="provider.error"):
    """The provider stream carried something that is not a normal chunk.

    An in-band error payload, a ``data:`` line that is not JSON, a chunk of unknown shape. The
    offending text is kept in ``raw`` (capped); what was received before it is not lost, and the
    stream goes on unless ``fatal``.
    """

    message: str
    kind: Literal["error_payload", "not_json", "unknown_shape", "protocol", "transport"] = (
        "error_payload"
    )
    code: str | None = None
    raw: str = ""
    fatal: bool = False


class Finish(Event, frozen=True, tag="finish"):
    """Why the output ended: one typed reason, the provider's raw value, and truncation facts."""

    reason: StopReason
    raw: str | None = None
    truncated: bool = False
    evidence: tuple[TruncationEvidence, ...] = ()


class StreamEnd(Event, frozen=True, tag="stream.end"):
    """The last event of every run. ``terminated``: the provider's own end marker was seen."""

    terminated: bool = True


class ToolCallReady(Event, frozen=True, tag="tool_call.ready"):
    """A call whose arguments were valid exactly as sent."""

    call: ToolCallComplete
    verdict: Verdict


class ToolCallRepaired(Event, frozen=True, tag="tool_call.repaired"):
    """A call whose arguments had exactly one reading once repaired (``verdict.repairs``)."""

    call: ToolCallComplete
    verdict: Verdict


class ToolCallRejected(Event, frozen=True, tag="tool_call.rejected"):
    """A call that must never run; ``verdict.message`` is what the model should read."""

    call: ToolCallComplete
    verdict: Verdict


class TurnStopped(Event, frozen=True, tag="turn.stopped"):
    """A condition of ``stop_on`` held: nothing of this turn may be dispatched.

    Emitted right after ``Finish``, before ``StreamEnd``; ``conditions`` lists every condition
    that held.
    """

    conditions: tuple[StopCondition, ...]


JudgedCallEvent = ToolCallReady | ToolCallRepaired | ToolCallRejected

AnyEvent = (
    ResponseInfo
    | TextDelta
    | ReasoningDelta
    | ToolCallStarted
    | ToolCallArgumentsDelta
    | ToolCallComplete
    | Usage
    | ProviderError
    | Finish
    | StreamEnd
    | ToolCallReady
    | ToolCallRepaired
    | ToolCallRejected
    | TurnStopped
)

_encoder = msgspec.json.Encoder()
_decoder: msgspec.json.Decoder[Any] = msgspec.json.Decoder(AnyEvent)


def encode_event(event: Event) -> bytes:
    """Serialize any built-in event to JSON (with its ``type`` tag)."""
    return _encoder.encode(event)


def decode_event(data: bytes | str) -> Event:
    """Read back an event written by :func:`encode_event`."""
    event: Event = _decoder.decode(data)
    return event
