"""The kit every healing writer uses: what the three formats' encoders and formats share.

Each provider's write side (``adapters/<provider>/encoder.py`` and ``healing.py``) is its own
mapper run backwards; what is the same in all of them is written once here:

- the bookkeeping of one client response (:class:`EncoderState`, the encoders' base: calls
  sent, finished, failed, usage, the ids used, the opening sent once) and the one plain re-encoding
  (:func:`re_encode`) behind every encoder's ``feed``;
- the pieces every encoder writes the same way: a call's arguments (:func:`call_arguments`),
  unique ids (:class:`CallIds`), the sum of usage reports (:func:`add_usage`), a server's
  error payload (:func:`error_payload`);
- the SSE frame writers (:func:`sse_frame` for ``data:`` lines, :func:`named_sse_frame` for
  ``event:`` + ``data:``), the reading of a JSON body (:func:`json_object`);
- the requests and bodies: the follow-up that asks again (:func:`follow_up_body`, with
  :func:`turn_results`), the raised token limit (:func:`raised_limit`, given the provider's
  limit keys, declared once in its ``request.py``), and a healed whole body's parts in the
  first body's form (:func:`with_first_parts`).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any, ClassVar

import msgspec

from ..core.events import (
    Event,
    Finish,
    ProviderContent,
    ProviderError,
    ReasoningDelta,
    ResponseInfo,
    StreamEnd,
    TextDelta,
    ToolCallReady,
    ToolCallRepaired,
    Usage,
)
from ..core.results import ToolResult, rejected_result
from ..core.turn import CallRecord, Turn
from ..core.wire import Done, HealEncoder, NextMessages, WireItem

__all__ = [
    "ACCEPTED_NOTE",
    "CallIds",
    "EncoderState",
    "accepted_result",
    "add_usage",
    "call_arguments",
    "call_arguments_object",
    "error_payload",
    "failure_type",
    "follow_up_body",
    "json_object",
    "named_sse_frame",
    "provider_blocks",
    "raised_limit",
    "raised_limit_in",
    "re_encode",
    "sse_frame",
    "turn_results",
    "with_first_parts",
]

#: The result a retry request gives a call that was accepted (it is the client's to run).
ACCEPTED_NOTE = (
    "This call is valid and was passed on to be run; its result comes later. Do not send it "
    "again: send only the calls that were not run, corrected."
)

_encode = msgspec.json.Encoder().encode


# -- frames ------------------------------------------------------------------------------------


def sse_frame(items: Iterable[WireItem]) -> bytes:
    """``data: <chunk>`` lines (and ``data: [DONE]``), each followed by a blank line."""
    out = bytearray()
    for item in items:
        if isinstance(item, Done):
            out += b"data: [DONE]\n\n"
        else:
            out += b"data: " + _encode(item) + b"\n\n"
    return bytes(out)


def named_sse_frame(items: Iterable[WireItem]) -> bytes:
    """``event: <type>`` + ``data: <object>`` per item: the framing of Anthropic and Responses.

    Both name each event by its object's ``type``.
    """
    out = bytearray()
    for item in items:
        if isinstance(item, dict):
            out += b"event: " + str(item["type"]).encode() + b"\ndata: " + _encode(item) + b"\n\n"
    return bytes(out)


# -- the pieces of a response -------------------------------------------------------------


class EncoderState:
    """The bookkeeping every healing encoder keeps for one client response; a base class.

    Calls sent, whether the finish went out, whether an error ended the response, the usage to
    report, the call ids used (``id_separator`` as in :class:`CallIds`) and the opening sent
    once: a format's encoder writes :meth:`_opened` (the role chunk, ``message_start``,
    ``response.created``...) and calls :meth:`_opening` before anything else it sends.
    A format whose reasoning is signed sets :attr:`SIGNED_REASONING` and writes
    :meth:`provider_block`.
    """

    #: Reasoning is not signed: held reasoning may go out later (see ``HealEncoder``).
    SIGNED_REASONING: ClassVar[bool] = False

    __slots__ = ("_calls_sent", "_failed", "_finished", "_ids", "_started", "_usage")

    def __init__(self, *, id_separator: str = "~") -> None:
        self._started = False
        self._failed = False
        self._finished = False
        self._calls_sent = 0
        self._ids = CallIds(id_separator)
        self._usage: Usage | None = None

    @property
    def calls_sent(self) -> int:
        """How many calls went out (the next call's client index)."""
        return self._calls_sent

    @property
    def finished(self) -> bool:
        """Whether the finish went out (what ends the response is then due)."""
        return self._finished

    def set_usage(self, usage: Usage | None) -> None:
        """The usage to report with the finish or the end (the healing session gives the sum
        over the exchange)."""
        self._usage = usage

    def provider_block(self, block: Any) -> list[WireItem]:
        """A provider's opaque block reported as it ended: nothing, for a format that writes
        none."""
        return []

    def provider_content(self, event: ProviderContent) -> list[WireItem]:
        """The response's opaque parts: nothing to write in most formats (Gemini's encoder
        writes its signatures from them)."""
        return []

    def _opening(self, out: list[WireItem]) -> None:
        """Append what opens the response to ``out``, the first time only."""
        if not self._started:
            self._started = True
            out += self._opened()

    def _opened(self) -> list[WireItem]:
        """What opens the response in the format; written by each encoder."""
        raise NotImplementedError


class CallIds:
    """The call ids one client response used, so that each call it sends has its own.

    Another response of the same healed turn (a retry, a scripted server) may use an id again:
    the second gets ``<id><separator>h2``, then ``h3``... (``~`` by default; Anthropic's ids
    allow only ``[a-zA-Z0-9_-]``, so it uses ``_``).
    """

    __slots__ = ("_separator", "_used")

    def __init__(self, separator: str = "~") -> None:
        self._separator = separator
        self._used: set[str] = set()

    def claim(self, call_id: str) -> str:
        """``call_id``, or the first free variant of it; either way, used from now on."""
        if call_id in self._used:
            n = 2
            while f"{call_id}{self._separator}h{n}" in self._used:
                n += 1
            call_id = f"{call_id}{self._separator}h{n}"
        self._used.add(call_id)
        return call_id


def call_arguments(event: ToolCallReady | ToolCallRepaired) -> str:
    """The arguments text a client receives: as sent when ``ok``, compact JSON when repaired."""
    verdict = event.verdict
    if isinstance(event, ToolCallReady) and verdict.outcome == "ok":
        return event.call.arguments_raw
    return _encode(verdict.arguments).decode()


def call_arguments_object(event: ToolCallReady | ToolCallRepaired) -> Any:
    """The arguments object a client receives, for formats that send an object (Gemini,
    Ollama): the model's own text decoded when ``ok`` (key order kept), the repaired object
    when repaired."""
    if isinstance(event, ToolCallReady) and event.verdict.outcome == "ok":
        try:
            return msgspec.json.decode(event.call.arguments_raw)
        except msgspec.DecodeError:
            pass  # a text the judge read and msgspec cannot (NaN): the judge's object
    return event.verdict.arguments


def add_usage(total: Usage | None, more: Usage | None) -> Usage | None:
    """The field-by-field sum of two usage reports (a field neither reported stays ``None``)."""
    if total is None:
        return more
    if more is None:
        return total

    def plus(a: int | None, b: int | None) -> int | None:
        return b if a is None else a if b is None else a + b

    return Usage(
        input_tokens=plus(total.input_tokens, more.input_tokens),
        output_tokens=plus(total.output_tokens, more.output_tokens),
        total_tokens=plus(total.total_tokens, more.total_tokens),
        reasoning_tokens=plus(total.reasoning_tokens, more.reasoning_tokens),
    )


def re_encode(encoder: HealEncoder, event: Event) -> list[WireItem]:
    """What ``event`` of a judged stream puts on the wire with no healing, in any format.

    The one plain re-encoding behind every encoder's ``feed``: text, reasoning and accepted calls at
    once; a rejected call, the events of calls still being judged and anything unknown, nothing; a
    provider block reported as it ended (a signed thinking block) as the format writes it
    (``encoder.provider_block``); usage counted (``encoder.usage``: each format knows whether its
    reports add up or are cumulative); a fatal provider error as the format's in-band error; the
    finish as the client's finish; after a finish, the stream's end closes the response even when
    the server left its end marker out. A stream that dropped gets neither a finish nor an end, as
    it had none.
    """
    match event:
        case TextDelta():
            return encoder.text(event.text)
        case ReasoningDelta():
            return encoder.reasoning(event.text)
        case ToolCallReady() | ToolCallRepaired():
            return encoder.call(event)
        case ResponseInfo():
            return encoder.info(event)
        case ProviderContent(scope="block"):
            return provider_blocks(encoder, event)
        case ProviderContent():
            return encoder.provider_content(event)
        case Usage():
            encoder.usage(event)
        case ProviderError() if event.fatal and event.kind != "transport":
            return encoder.error(encoder.upstream_error(event))
        case Finish() if event.reason not in ("error", "disconnected"):
            calls_sent = encoder.calls_sent > 0
            return encoder.finish(encoder.client_finish_reason(event, calls_sent=calls_sent))
        case StreamEnd() if encoder.finished:
            return encoder.end()
    return []


def provider_blocks(encoder: HealEncoder, event: ProviderContent) -> list[WireItem]:
    """What the blocks of ``event`` (reported as each ended) put on the wire, in order."""
    return [item for block in event.items for item in encoder.provider_block(block)]


def failure_type(upstream: bool) -> str:
    """The ``type`` of an error toolwire ends an exchange with itself: ``toolwire_upstream_error``
    when the network failed it (a drop, a stall, a protocol error), else
    ``toolwire_heal_failed`` (no valid call came in the retries)."""
    return "toolwire_upstream_error" if upstream else "toolwire_heal_failed"


def error_item(items: Iterable[WireItem]) -> dict[str, Any] | None:
    """The first item that carries an ``error`` member (the error a session ended in), if any.

    Chat, Gemini and Ollama end a failed exchange with an ``{"error": {...}}`` element.
    """
    for item in items:
        if isinstance(item, dict) and "error" in item:
            return item
    return None


def json_object(data: bytes | str) -> dict[str, Any] | None:
    """``data`` decoded when it is one whole JSON object; ``None`` when it is not JSON, was cut,
    or is another JSON value. Every request, body and error payload healing reads starts here.
    """
    try:
        value = msgspec.json.decode(data)
    except msgspec.DecodeError:
        return None
    return value if isinstance(value, dict) else None


def error_payload(error: ProviderError) -> dict[str, Any]:
    """A server's in-band error payload, decoded, when it is whole JSON; ``{}`` otherwise (a
    payload cut by ``cap_text``, an error that is no payload)."""
    if error.kind != "error_payload" or not error.raw:
        return {}
    return json_object(error.raw) or {}


# -- requests and whole bodies ------------------------------------------------------------


def accepted_result(call: CallRecord) -> ToolResult:
    """The result a retry request gives an accepted call (see :data:`ACCEPTED_NOTE`)."""
    return ToolResult(call_id=call.call_id, name=call.name, content=ACCEPTED_NOTE, status="ok")


def turn_results(turn: Turn) -> list[ToolResult]:
    """One result per call of ``turn`` for a retry request: the accepted calls answered with
    :data:`ACCEPTED_NOTE` (they went to the client, who runs them), the rejected ones with
    toolwire's message (:func:`~toolwire.core.results.rejected_result`)."""
    return [accepted_result(call) if call.may_run else rejected_result(call) for call in turn.calls]


def follow_up_body(
    body: Mapping[str, Any],
    turn: Turn,
    next_messages: NextMessages,
    *,
    key: str = "messages",
) -> dict[str, Any]:
    """``body`` asked again: its messages, then ``turn`` and one result per call.

    The previous request's history (under ``key``: ``messages``; ``input`` for Responses,
    where a lone string is the one user message it stands for) comes first, untouched;
    ``next_messages`` (the
    provider's history format, as ``Pipeline.next_messages``) writes the assistant turn with
    every rejected call's arguments as ``{}`` and the results in the form the server shows
    its model.
    """
    history = body[key]
    if isinstance(history, str):
        history = [{"role": "user", "content": history}]
    return {**body, key: [*history, *next_messages(turn, turn_results(turn))]}


def raised_limit(
    body: Mapping[str, Any], ceiling: int, keys: Sequence[str]
) -> tuple[dict[str, Any], int | None]:
    """``body`` with its output-token limit (under any of ``keys``) doubled, capped at ``ceiling``.

    ``keys`` are the provider's limit keys (its ``request.py`` declares them once, for its
    request reader too). Only a limit the request set is raised: the server's own default is
    not known, so it is never replaced. Returns the new body and the new limit, or the body
    unchanged and ``None`` when no limit was set or it is already at the ceiling.
    """
    raised = dict(body)
    limits: list[int] = []
    for key in keys:
        value = body.get(key)
        if not isinstance(value, int) or isinstance(value, bool) or value < 1:
            continue
        higher = min(ceiling, value * 2)
        if higher > value:
            raised[key] = higher
            limits.append(higher)
    if not limits:
        return dict(body), None
    return raised, min(limits)


def raised_limit_in(
    body: Mapping[str, Any], ceiling: int, sections: Sequence[str], keys: Sequence[str]
) -> tuple[dict[str, Any], int | None]:
    """:func:`raised_limit` for a limit inside a settings object: the first of ``sections``
    that ``body`` holds as an object (Gemini's ``generationConfig``, Ollama's ``options``)."""
    for section in sections:
        inner = body.get(section)
        if isinstance(inner, Mapping):
            raised, limit = raised_limit(inner, ceiling, keys)
            if limit is None:
                break
            return {**body, section: raised}, limit
    return dict(body), None


def with_first_parts(
    first: Sequence[Any],
    parts: Sequence[dict[str, Any]],
    *,
    reproduces: Callable[[Mapping[str, Any], Mapping[str, Any]], bool],
    written: tuple[str, ...],
    call_type: str,
) -> list[dict[str, Any]]:
    """A healed whole body's parts (Anthropic blocks, Responses items), each one the first body
    holds in the first body's own form, in order.

    ``parts`` is what the session sent; a part ``reproduces`` one of ``first`` when it is that
    part passed on unchanged. Such a part goes back as the first body had it (ids, signatures,
    annotations the encoder does not write), a call merged with what was sent (a repair
    changes its arguments). The first body's parts of types the encoder never writes
    (``written``: opaque ones) stay where they stood before the parts that follow them, and its
    opaque tail stays too when nothing new was sent (it belongs to that response alone).
    """
    out: list[dict[str, Any]] = []
    rest = [part for part in first if isinstance(part, dict)]
    new = False
    for part in parts:
        at = next((i for i, original in enumerate(rest) if reproduces(part, original)), None)
        if at is None:
            new = True
            out.append(part)
            continue
        out += [original for original in rest[:at] if original.get("type") not in written]
        out.append({**rest[at], **part} if part["type"] == call_type else rest[at])
        rest = rest[at + 1 :]
    if not new:
        out += [original for original in rest if original.get("type") not in written]
    return out
