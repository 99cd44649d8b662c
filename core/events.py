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

Events are not tracked by the cyclic garbage collector (``gc=False``): they are frozen and hold
only strings, numbers and other events, so they can never be part of a cycle, and tracking the
hundred thousand events of a hostile turn made every collection pass grow with the turn.
"""

from __future__ import annotations

from typing import Any, Literal

import msgspec

from .verdict import Verdict

__all__ = [
    "LIMIT_EVIDENCE",
    "ArgumentsForm",
    "CallOrigin",
    "ClosedBy",
    "CutBy",
    "CutFacts",
    "Damage",
    "Event",
    "Finish",
    "JudgedCallEvent",
    "ProviderContent",
    "ProviderError",
    "ProviderErrorKind",
    "QuotedForm",
    "ReasoningDelta",
    "ResponseInfo",
    "ServerParse",
    "ServerParseAbout",
    "StopCondition",
    "StopReason",
    "StreamEnd",
    "TextCallMarkup",
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

#: Each kind of evidence that the output was cut off before the model ended it.
#:
#: Evidence of the output-token limit (only these make ``Finish.reason == "length"``):
#:
#: - ``finish_reason``: the provider said so (``length``, ``max_tokens``, ``MAX_TOKENS``,
#:   ``max_output_tokens``, ``incomplete_details``, Ollama ``done_reason: length``).
#: - ``usage_at_max_tokens``: output tokens reported reach the request's ``max_tokens``.
#: - ``server_profile``: the provider profile documents that this server hides its length
#:   finish (llama-cpp-python says ``tool_calls`` for a call cut at ``max_tokens``), a call stops
#:   inside a value, and nothing speaks against the limit (no stop sequence in the request, no
#:   usage below ``max_tokens``).
#:
#: Evidence of a cut whose cause is something else, or unknown:
#:
#: - ``arguments_unterminated``: a call still open at the end stops inside a string, object or
#:   array.
#: - ``call_unfinished``: a call whose provider ends each call explicitly (Anthropic
#:   ``content_block_stop``, Responses ``output_item.done``) never got that end.
#: - ``no_finish``: the stream ended with neither a finish reason nor the provider's terminator.
#: - ``error_mid_call``: a fatal error arrived while a call was being written.
#: - ``server_parser``: the server's tool parser failed on the call and said its text ended
#:   early (Ollama ``unexpected end of JSON input``); why it ended is not known.
TruncationEvidence = Literal[
    "finish_reason",
    "usage_at_max_tokens",
    "server_profile",
    "arguments_unterminated",
    "call_unfinished",
    "no_finish",
    "error_mid_call",
    "server_parser",
]

#: The kinds of evidence that name the output-token limit as the cause.
LIMIT_EVIDENCE: frozenset[TruncationEvidence] = frozenset(
    {"finish_reason", "usage_at_max_tokens", "server_profile"}
)

#: A condition of ``stop_on`` (see :mod:`toolwire.stages.policy`).
StopCondition = Literal["length", "malformed_tool_call", "content_filter", "repair_loop"]

#: How a tool call's arguments arrived: as JSON text (normal) or as an object (Ollama, some
#: compatible servers); ``object`` arguments were serialized by toolwire with msgspec.
ArgumentsForm = Literal["string", "object"]

#: What cut a call short: the output-token limit (with evidence), a stream that stopped, a fatal
#: error, or ``unknown``: the text stops inside a value and nothing shows why (a stop sequence,
#: a server's tool parser...). The message to the model says only what is known.
CutBy = Literal["token_limit", "unknown", "disconnected", "error"]

#: Why a call's text cannot be trusted as complete, apart from being cut: a piece of the stream
#: that may have held part of it could not be read (``lost_fragment``), it passed the size
#: limit while streaming and was no longer buffered (``too_large``), or it was read from the
#: model's markup in the text, whose wrapper is complete but whose JSON does not balance
#: inside it, so which text is its arguments is not certain (``unbalanced``;
#: ``arguments_raw`` is then the call as written).
Damage = Literal["lost_fragment", "too_large", "unbalanced"]

#: What the error of a server whose tool parser failed quoted of the call: its ``arguments``
#: only (Ollama's harmony error: no name), the model's ``output`` from some position on in the
#: model's own markup (llama-server's ``Failed to parse input at pos N: ...``), or ``nothing``.
QuotedForm = Literal["arguments", "output", "nothing"]

#: What a server's tool-parser error says it could not parse (:class:`ServerParse`).
ServerParseAbout = Literal["tool_call", "output"]

#: The structural signal that closed a tool call.
ClosedBy = Literal["next_call", "call_end", "finish", "end_of_stream"]

#: Where a call came from: the server's structured tool calls, or the model's own markup left
#: in the text and read by toolwire (``stages/text_calls``, ``docs/text-calls.md``).
CallOrigin = Literal["structured", "text"]


class Event(msgspec.Struct, frozen=True, kw_only=True, tag_field="type", gc=False):
    """Base of every event; never instantiated itself."""


class CutFacts(msgspec.Struct, frozen=True, kw_only=True):
    """What the stream and the request said about the end of a cut call: the message's facts.

    ``None`` means "not known" (no usage reported, no request given); ``stop_sequences`` is
    ``None`` when the request is not known and ``()`` when it had none.
    """

    finish_raw: str | None = None
    output_tokens: int | None = None
    max_tokens: int | None = None
    stop_sequences: tuple[str, ...] | None = None


class ServerParse(msgspec.Struct, frozen=True, kw_only=True, gc=False):
    """The server's tool parser failed on this call and answered an error instead of it.

    The call was read from that error (``docs/design.md``, "Tool-parser errors"): its
    ``arguments_raw`` is what the error quoted (``quoted`` says what that is), its name is the
    one the error named, or ``""`` when it named none. ``server`` is who said it (``ollama``,
    ``llama.cpp``, ``vllm``...) and ``error`` the parser's own words, capped.
    """

    server: str
    error: str
    quoted: QuotedForm = "arguments"
    #: What the server's words say it could not parse: the model's ``tool_call``, or its
    #: ``output`` as a whole (llama.cpp's ``does not match the expected peg-native format``:
    #: a call may be in it, or not).
    about: ServerParseAbout = "tool_call"


class ResponseInfo(Event, frozen=True, tag="response.info"):
    """What the provider said about the response itself, sent once, as soon as it is known."""

    model: str | None = None
    response_id: str | None = None


class TextDelta(Event, frozen=True, tag="text.delta"):
    """A piece of the visible answer text."""

    text: str


class TextCallMarkup(Event, frozen=True, tag="text.call_markup"):
    """The markup of the calls read from the text, taken out of the visible text.

    Sent once, before the recovered calls and ``Finish``, only when calls were read from the
    text. ``markup`` holds each block's text with the offset (in characters of the visible
    text, the ``TextDelta`` pieces joined) where it stood: inserting each at its offset gives
    the text as the server sent it (``Turn.raw_text``).
    """

    markup: tuple[tuple[int, str], ...] = ()

    def original(self, visible: str) -> str:
        """The text as the server sent it, from the visible text."""
        pieces: list[str] = []
        position = 0
        for offset, text in self.markup:
            pieces.append(visible[position:offset])
            pieces.append(text)
            position = offset
        pieces.append(visible[position:])
        return "".join(pieces)


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
    #: The provider's id, when toolwire had to give this call another one: a second call of the
    #: turn carried an id already used (``call_id`` is then ``<id>~2``, ``<id>~3``...).
    provider_id: str | None = None
    #: ``text``: read from the model's own markup in the text (``text_family`` names it).
    origin: CallOrigin = "structured"
    text_family: str | None = None


class ToolCallArgumentsDelta(Event, frozen=True, tag="tool_call.arguments_delta"):
    """A piece of a call's raw arguments text, exactly as the provider sent it."""

    call_id: str
    index: int
    delta: str


class ToolCallComplete(Event, frozen=True, tag="tool_call.complete"):
    """A tool call closed by a structural end signal: its raw arguments are final.

    ``arguments_raw`` is the exact concatenation of the argument deltas, byte for byte (except
    for a ``too_large`` call, whose text stopped being kept at the limit: ``arguments_raw`` is
    then its first characters and ``arguments_length`` the length received).
    ``truncated`` is true when this call was still open when the output was cut off (a
    ``length`` finish, usage at ``max_tokens``, a dropped stream, or text that stops inside a
    value); calls closed earlier by the next call starting are never marked. ``damage`` says
    the text cannot be trusted as whole for another reason; a damaged call never runs.
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
    #: When ``truncated``: the finish, usage and request facts the message may state.
    cut_facts: CutFacts | None = None
    damage: Damage | None = None
    #: Characters received, when it differs from ``len(arguments_raw)`` (``too_large``).
    arguments_length: int | None = None
    provider_id: str | None = None
    #: ``text``: read from the model's own markup in the text (``text_family`` names it).
    origin: CallOrigin = "structured"
    text_family: str | None = None
    #: Set when the server's tool parser failed on this call and its error is where the call
    #: was read from (the judge then says so to the model).
    server_parse: ServerParse | None = None


class Usage(Event, frozen=True, tag="usage"):
    """Token usage as reported by the provider (``None`` where it said nothing)."""

    input_tokens: int | None = None
    output_tokens: int | None = None
    total_tokens: int | None = None
    reasoning_tokens: int | None = None


#: What went wrong with the provider stream:
#:
#: - ``error_payload``: the provider sent an error in band (fatal).
#: - ``not_json`` / ``unknown_shape``: a piece of the stream could not be read; any call that
#:   was being written then is marked ``lost_fragment`` and never runs.
#: - ``too_long``: one line or event passed the framing cap and was dropped (same consequence).
#: - ``protocol``: the provider broke its own protocol (arguments for a closed call...).
#: - ``transport``: reading the source failed (a dropped connection), or closing it did.
#: - ``http_status``: the response had a non-2xx HTTP status; the body is quoted (fatal).
#: - ``not_a_stream``: the body is not an event stream at all (an HTML page, a JSON error body,
#:   binary data); its first bytes are quoted (fatal).
#: - ``empty_response``: the body was empty: no response, not a truncation (fatal).
#: - ``too_many_errors``: more errors came than are kept; this one counts the rest.
#: - ``tool_parser``: an error (an HTTP status, or in band) whose body is a known tool-parser
#:   failure of the server: the model's call was broken, the server is fine. Not fatal: the
#:   call is on the turn, read from what the body quotes (``ToolCallComplete.server_parse``).
#: - ``history_rejected``: an error whose body says the server refused the request's history
#:   (an earlier call's arguments it could not read): fatal; ``Pipeline.repair_history``.
ProviderErrorKind = Literal[
    "error_payload",
    "not_json",
    "unknown_shape",
    "too_long",
    "protocol",
    "transport",
    "http_status",
    "not_a_stream",
    "empty_response",
    "too_many_errors",
    "tool_parser",
    "history_rejected",
]


class ProviderError(Event, frozen=True, tag="provider.error"):
    """The provider stream carried something that is not a normal chunk.

    An in-band error payload, a ``data:`` line that is not JSON, a chunk of unknown shape. The
    offending text is kept in ``raw`` (capped); what was received before it is not lost, and the
    stream goes on unless ``fatal``.
    """

    message: str
    kind: ProviderErrorKind = "error_payload"
    code: str | None = None
    raw: str = ""
    fatal: bool = False


class Finish(Event, frozen=True, tag="finish"):
    """Why the output ended: one typed reason, the provider's raw value, and truncation facts.

    ``truncated``: the model's output was cut before the model ended it (``evidence`` says how
    that was seen, ``cut_by`` by what). ``reason`` is ``length`` only with evidence of the
    output-token limit; a call cut for an unknown cause keeps the provider's reason.
    """

    reason: StopReason
    raw: str | None = None
    truncated: bool = False
    evidence: tuple[TruncationEvidence, ...] = ()
    cut_by: CutBy | None = None


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


class ProviderContent(Event, frozen=True, tag="provider.content"):
    """The assistant turn as the provider must see it again when the history is replayed.

    Emitted once, before ``Finish``, by adapters whose provider requires opaque parts back
    (Anthropic thinking blocks with their signatures, Gemini ``thoughtSignature`` parts,
    Responses reasoning items). ``items`` are that provider's own JSON objects, in stream order;
    a call's entry names toolwire's ``call_id`` so that its arguments are written from the
    verdict, never from the raw text. Only the adapter's history format reads them.

    ``scope="block"``: one opaque block reported as it ended, before anything that follows it
    (Anthropic ``thinking`` with its signature, ``redacted_thinking``), so that a writer can
    send it on in stream order; ``items`` holds that block alone. The whole record still comes
    once, with ``scope="turn"``, before ``Finish``: only that one is the turn's.
    """

    items: tuple[Any, ...] = ()
    scope: Literal["turn", "block"] = "turn"


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
    | ProviderContent
    | TextCallMarkup
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
