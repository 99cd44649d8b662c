"""One healed exchange, sans-I/O: judged events in, the client's chunks and the retries out.

A :class:`HealSession` is fed the judged events of each upstream response in turn (the first
one, then each retry's) and decides what the client receives (through the
:class:`~toolwire.core.wire.HealEncoder` of its wire format: Chat Completions, Anthropic
Messages, Responses; each written in its provider's package) and whether to ask again. The
shell (the httpx transport) does the I/O: it sends the requests, runs ``Pipeline.stream`` on
each response, passes every event to :meth:`HealSession.feed`, sends what comes back, and calls
:meth:`HealSession.end_attempt` when a response ends.

What the client can rely on:

- It never receives a call toolwire rejected. Accepted calls go out at once (0, 1, 2...).
- The first response's text and reasoning pass through as they arrive. A retry's are held: the
  client never saw the rejected call, so what the model says about the rejection would make no
  sense to it. They go out only when the retry brings no call at all (the model chose to
  answer in words, and that answer is the turn's end). Signed reasoning (Anthropic thinking,
  ``HealEncoder.SIGNED_REASONING``) is verified against everything before it, so it goes out
  only in place: the first response's, until a call of it is rejected; a retry's, and what
  followed a rejected call, never (their context is one the client never sees).
- A retry's call identical (same name, same arguments) to one already sent is not sent again:
  the model was told that call runs, and a tool must run once.
- Each rejected call is healed by asking again (the format's ``follow_up_body``),
  at most ``max_retries`` times per exchange. When the model chose a tool and its call was
  rejected for a reason a grammar prevents, the re-ask asks the server for a call to that tool
  in its schema, in the server's own way (``WireFormat.constrained``; the decision is
  :func:`~toolwire.adapters.constraints.constrained_reask`; ``docs/healing.md``, "A constrained
  re-ask"): the message the model reads is the same true message, what comes back is judged
  as ever, and :attr:`HealSession.constrained` counts the calls it brought. After a cut at the
  token limit the retry may raise the limit (``max_tokens_ceiling``, bounded by
  ``max_tokens_factor`` times the client's own). Past them: a ``length`` finish when the last
  response was cut by the token limit (the client's own length handling fires), otherwise an
  in-band error (``type: toolwire_heal_failed``) that states toolwire's messages.
- A server error (an in-band error, a body that is no stream) reaches the client as an in-band
  error; a stream that dropped with no call cut drops for the client too (``dropped``).
- A fault of the network (:mod:`toolwire.heal.faults`) is never healed as the model's: a
  drop that cut a call, when no call of that response went out, sends the same request again,
  once per exchange (:attr:`Retry.resend`; not a retry of ``max_retries``: the model is told
  nothing); past that, and for a stall or a protocol error at once, the exchange ends with
  the format's error, ``type: toolwire_upstream_error``, ``code`` ``upstream_dropped``,
  ``upstream_timeout`` or ``upstream_protocol_error`` (:attr:`HealSession.error_status`: 502,
  504 for a stall). A stall thus costs one read timeout, never one per retry.
- An error toolwire ends the exchange with itself carries the usage spent so far. A retry the
  server answered with an error status ends it with ``retry_http_status``; a whole exchange's
  status is then that one (:attr:`HealSession.error_status`), as the transport passes it on.
- What the exchange took, for the client's headers (:attr:`HealSession.figures`): the upstream
  requests tried, the calls rejected, the calls passed repaired.
- Text is never lost silently (issue 19): a piece of a response toolwire could not read (not
  JSON, invalid UTF-8, a shape the format never sends, an event over the framing cap) may have
  held text as well as a call, and cannot be passed on unjudged (it may hold a call). The
  exchange ends there with the format's in-band error (``type: toolwire_upstream_error``, the
  piece's kind as ``code``: ``not_json``, ``unknown_shape``, ``too_long``), after what was
  already sent, and nothing is asked again.
- ``finish_reason`` is the server's, corrected for the token limit; a healed turn with calls
  finishes ``tool_calls``, and so does a turn whose calls were recovered from the text (the
  server said ``stop``: it saw no call). Usage is the sum over every response of the exchange
  (what was spent); the retries' share is reported to the observer.
"""

from __future__ import annotations

from typing import Any, Literal, Protocol

import msgspec

from ..adapters.constraints import CONSTRAIN, ConstraintOptions, constrained_reask
from ..adapters.encoding import add_usage, provider_blocks
from ..adapters.registry import read_request
from ..core.errors import ConfigurationError
from ..core.events import (
    Event,
    Finish,
    ProviderContent,
    ProviderError,
    ReasoningDelta,
    ResponseInfo,
    TextDelta,
    ToolCallReady,
    ToolCallRejected,
    ToolCallRepaired,
    Usage,
)
from ..core.mapper import cap_text
from ..core.turn import TurnBuilder
from ..core.wire import Constraint, HealEncoder, HealPlan, NextMessages, WireFormat, WireItem
from .faults import Fault, exception_fault, stream_fault

__all__ = [
    "AttemptEnd",
    "AttemptOutcome",
    "HealFigures",
    "HealObserver",
    "HealOutcome",
    "HealSession",
    "NullHealObserver",
    "Retry",
    "heal_cause",
]

#: How an exchange ended for the client: ``passed`` (nothing rejected), ``healed`` (a retry
#: replaced what was rejected), ``length`` / ``failed`` (retries ran out: a length finish, an
#: in-band error), ``upstream_error`` (the server failed), ``dropped`` (the upstream stream
#: dropped), ``cancelled`` (the client went away first).
HealOutcome = Literal[
    "passed", "healed", "length", "failed", "upstream_error", "dropped", "cancelled"
]

#: How one upstream response ended: ``accepted`` (nothing rejected), ``rejected``,
#: ``upstream_error``, ``dropped``, ``http_error`` (a retry's request got an error status),
#: ``cancelled``.
AttemptOutcome = Literal[
    "accepted", "rejected", "upstream_error", "dropped", "http_error", "cancelled"
]

_sorted_json = msgspec.json.Encoder(order="sorted").encode
#: The kinds of :class:`ProviderError` that stand for a piece of the stream that was not read.
_LOST_PIECE = frozenset({"not_json", "unknown_shape", "too_long", "too_many_errors"})


def heal_cause(event: ToolCallRejected) -> str:
    """Why a call needed healing, in one word: what cut it, or the judge's reason."""
    call = event.call
    if call.truncated and call.cut_by is not None:
        return call.cut_by
    return event.verdict.reason or "rejected"


class Retry(msgspec.Struct, frozen=True, kw_only=True):
    """One request that asks the model again.

    ``attempt`` counts retries from 1; ``body`` is what goes upstream; ``cause`` is the first
    rejected call's (:func:`heal_cause`), ``causes`` every rejected call's; ``max_tokens`` the
    raised limit, when it was raised. ``resend``: the same request sent again after a drop
    (``cause`` is ``upstream_dropped``), not a retry that asks the model again.
    ``constraint``: whether ``body`` asks for a call to one tool in its schema, and how, or why
    not (``None``: no call was rejected, a resend of an unconstrained request).
    """

    attempt: int
    body: dict[str, Any]
    cause: str
    causes: tuple[str, ...]
    max_tokens: int | None = None
    resend: bool = False
    constraint: Constraint | None = None


class HealFigures(msgspec.Struct, frozen=True, kw_only=True):
    """What one exchange took and changed, as its client is told (``docs/healing.md``, "What
    says a response was healed"): ``attempts`` upstream requests tried (the first, each retry,
    the one resend after a drop), ``rejected_calls`` calls toolwire did not pass on (each asked
    for again, or the exchange failed), ``repaired_calls`` calls passed on repaired."""

    attempts: int
    rejected_calls: int
    repaired_calls: int


class AttemptEnd(msgspec.Struct, frozen=True, kw_only=True):
    """What the end of one upstream response means: items to send, then maybe a retry.

    ``dropped``: the upstream stream dropped with nothing to heal; the shell ends the client's
    stream the same way, after ``items``.
    """

    items: list[WireItem]
    retry: Retry | None = None
    dropped: bool = False


class HealObserver(Protocol):
    """What a session reports as it goes (telemetry implements it; every method is cheap)."""

    def call_accepted(self, event: ToolCallReady | ToolCallRepaired, attempt: int) -> None:
        """An accepted call went to the client (``attempt`` 0: the first response)."""

    def call_rejected(self, event: ToolCallRejected, attempt: int) -> None:
        """A call was rejected; it will be asked for again, or the exchange fails."""

    def retry_started(self, retry: Retry) -> None:
        """A retry request is about to go upstream."""

    def attempt_ended(self, attempt: int, usage: Usage | None, outcome: AttemptOutcome) -> None:
        """One upstream response ended (``usage``: what it reported)."""

    def finished(self, outcome: HealOutcome) -> None:
        """The exchange ended for the client; called exactly once."""


class NullHealObserver:
    """Reports nothing."""

    def call_accepted(self, event: ToolCallReady | ToolCallRepaired, attempt: int) -> None:
        """Nothing."""

    def call_rejected(self, event: ToolCallRejected, attempt: int) -> None:
        """Nothing."""

    def retry_started(self, retry: Retry) -> None:
        """Nothing."""

    def attempt_ended(self, attempt: int, usage: Usage | None, outcome: AttemptOutcome) -> None:
        """Nothing."""

    def finished(self, outcome: HealOutcome) -> None:
        """Nothing."""


class HealSession:
    """The healing of one client request (see the module docstring). Not reusable.

    ``body`` is the request as it went upstream (decoded); ``next_messages`` writes the history
    after a turn in the provider's format (``Pipeline.next_messages``); ``wire`` is the format
    the client speaks (its provider's healing format, from the registry); ``encoder`` one of
    its encoders already opened for the request (``wire.encoder`` by default); ``max_retries``
    caps the retries; ``max_tokens_ceiling``, when set, lets a retry after a token-limit cut
    raise the request's limit up to it, and ``max_tokens_factor`` to no more than that many
    times the client's own limit. ``constrain`` says whether a re-ask may be constrained to the
    rejected call's tool (on by default; :class:`~toolwire.adapters.constraints
    .ConstraintOptions`).

    :attr:`body` is the request as the model is asked (the client's, with every follow-up):
    what the next follow-up is built on and what its answer is judged against (the client's
    tools). A constrained re-ask sends :attr:`Retry.body`, that request with the forcing keys.
    """

    def __init__(
        self,
        body: dict[str, Any],
        next_messages: NextMessages,
        *,
        wire: WireFormat,
        encoder: HealEncoder | None = None,
        max_retries: int = 2,
        max_tokens_ceiling: int | None = None,
        max_tokens_factor: float | None = None,
        constrain: ConstraintOptions = CONSTRAIN,
        observer: HealObserver | None = None,
    ) -> None:
        self.wire = wire
        self.encoder = encoder or wire.encoder(
            HealPlan(body=body, content=None, streaming=True, client_wants_usage=True)
        )
        self.body = body
        self._next_messages = next_messages
        self._max_retries = max_retries
        self._ceiling = max_tokens_ceiling
        self._factor = max_tokens_factor
        #: The client's own output-token limit (read once, when first needed; 0: none).
        self._client_limit: int | None = None
        self._constrain = constrain
        #: What was sent last (a resend after a drop sends it again), and its constraint.
        self._sent = body
        self._constraint: Constraint | None = None
        #: Calls sent to the client that a constrained re-ask brought, by tool.
        self.constrained: dict[str, int] = {}
        self._observer: HealObserver = observer or NullHealObserver()
        self.attempt = 0
        #: Retries that asked the model again (at most ``max_retries``), and whether the one
        #: resend after a drop was spent; ``attempt`` counts both.
        self._asked = 0
        self._resent = False
        self._resending = False
        self.outcome: HealOutcome | None = None
        #: The HTTP status of a whole (non-streamed) exchange that ends in toolwire's error: 502;
        #: a fault's (504 for a stall, :mod:`.faults`); a retry's own error status.
        self.error_status = 502
        #: Something the client receives differs from what the first response said (a repair,
        #: an id toolwire gave, a corrected finish, a rejection): a non-streamed body that was
        #: not rewritten may go to the client byte for byte.
        self.rewritten = False
        self._total_usage: Usage | None = None
        #: Calls rejected over every response, and repaired calls sent (:attr:`figures`).
        self._rejected_calls = 0
        self._repaired_calls = 0
        self._sent_before: set[tuple[str, bytes]] = set()
        self._sent_now: set[tuple[str, bytes]] = set()
        self._start_attempt()

    def _start_attempt(self) -> None:
        self._builder = TurnBuilder()
        self._rejected: list[ToolCallRejected] = []
        self._held: list[TextDelta | ReasoningDelta] = []
        self._usage: Usage | None = None
        self._finish: Finish | None = None
        self._fatal: ProviderError | None = None
        self._text_calls_sent = False
        self._sent_before |= self._sent_now
        self._sent_now = set()

    @property
    def figures(self) -> HealFigures:
        """What the exchange took and changed so far (final once :attr:`outcome` is set)."""
        return HealFigures(
            attempts=self.attempt + 1,
            rejected_calls=self._rejected_calls,
            repaired_calls=self._repaired_calls,
        )

    @property
    def total_usage(self) -> Usage | None:
        """The sum of the usage every response of the exchange reported so far."""
        return self._total_usage

    # -- one response's events ---------------------------------------------------------------

    def feed(self, event: Event) -> list[WireItem]:
        """Take one judged event of the current response; return what the client gets now."""
        if self.outcome is not None:
            return []
        self._builder.add(event)
        encoder = self.encoder
        first = self.attempt == 0
        match event:
            case TextDelta():
                if first:
                    return encoder.text(event.text)
                self._held.append(event)
            case ReasoningDelta():
                if self._in_place():
                    return encoder.reasoning(event.text)
                if not encoder.SIGNED_REASONING:
                    self._held.append(event)
            case ProviderContent(scope="block") if self._in_place():
                return provider_blocks(encoder, event)
            case ToolCallReady() | ToolCallRepaired():
                return self._accepted(event)
            case ToolCallRejected():
                self.rewritten = True
                self._rejected.append(event)
                self._rejected_calls += 1
                self._observer.call_rejected(event, self.attempt)
            case ResponseInfo():
                return encoder.info(event)
            case ProviderContent():
                return encoder.provider_content(event)
            case Usage():
                self._usage = event
            case ProviderError() if event.fatal:
                self._fatal = event
            case ProviderError() if event.kind in _LOST_PIECE and self._fatal is None:
                # (After a failed read, an unreadable piece is only what the failure cut.)
                return self._lost_piece(event)
            case Finish():
                self._finish = event
        return []

    def _in_place(self) -> bool:
        """Reasoning goes out as it comes: in the first response, and for signed reasoning
        only until a call of it was rejected (see the module docstring)."""
        return self.attempt == 0 and not (self._rejected and self.encoder.SIGNED_REASONING)

    def _lost_piece(self, event: ProviderError) -> list[WireItem]:
        self._observer.attempt_ended(self.attempt, self._usage, "upstream_error")
        self.rewritten = True
        told = msgspec.structs.replace(
            event,
            message="toolwire could not read a piece of the upstream's response "
            f"({event.message}); it may have held text or a tool call, so the response ends "
            "here instead of going on without it",
            raw="",
        )
        encoder = self.encoder
        return self._end("upstream_error", encoder.error(encoder.upstream_error(told))).items

    def _accepted(self, event: ToolCallReady | ToolCallRepaired) -> list[WireItem]:
        call = event.call
        key = (call.name, _sorted_json(event.verdict.arguments))
        if key in self._sent_before:
            return []  # the model was told this call runs: it must not run twice
        self._sent_now.add(key)
        if (
            isinstance(event, ToolCallRepaired)
            or call.id_synthesized
            or call.provider_id is not None
        ):
            self.rewritten = True
        if call.origin == "text":
            self._text_calls_sent = True
        if self.attempt > 0 and self._constraint is not None and self._constraint.applied:
            self.constrained[call.name] = self.constrained.get(call.name, 0) + 1
        if isinstance(event, ToolCallRepaired):
            self._repaired_calls += 1
        self._observer.call_accepted(event, self.attempt)
        return self.encoder.call(event)

    # -- the end of one response -------------------------------------------------------------

    def end_attempt(self) -> AttemptEnd:
        """The current response ended: finish the client's stream, or ask again."""
        if self.outcome is not None:
            return AttemptEnd(items=[])
        attempt = self.attempt
        usage = self._usage
        self._total_usage = add_usage(self._total_usage, usage)
        encoder = self.encoder
        fatal = self._fatal
        finish = self._finish
        if fatal is not None and fatal.kind != "transport":
            # The server failed, not the model: its error goes to the client, nothing is asked.
            self._observer.attempt_ended(attempt, usage, "upstream_error")
            self.rewritten = True
            return self._end("upstream_error", encoder.error(encoder.upstream_error(fatal)))
        rejected = self._rejected
        fault = stream_fault(fatal, finish)
        if fault is not None and (rejected or fault.kind != "dropped"):
            # The network failed the response: not the model's to answer for (issue 18).
            return self._faulted(fault)
        if rejected:
            self._observer.attempt_ended(attempt, usage, "rejected")
            if self._asked < self._max_retries:
                return self._retry(rejected)
            return self._give_up(rejected, finish)
        turn_had_calls = bool(self._builder.build().calls)
        items: list[WireItem] = []
        if attempt > 0 and not turn_had_calls:
            # The model answered the rejection in words, with no call: that is the answer.
            for held in self._held:
                if isinstance(held, TextDelta):
                    items += encoder.text(held.text)
                else:
                    items += encoder.reasoning(held.text)
        if fault is not None or finish is None:
            # A drop that cut no call (text): the client's stream drops the same way.
            self._observer.attempt_ended(attempt, usage, "dropped")
            return AttemptEnd(items=self._end("dropped", items).items, dropped=True)
        self._observer.attempt_ended(attempt, usage, "accepted")
        calls_sent = encoder.calls_sent > 0
        if attempt == 0:
            reason = encoder.client_finish_reason(finish, calls_sent=calls_sent)
            if self._text_calls_sent and finish.cut_by != "token_limit":
                # The server's raw finish (``stop``) is about a turn it saw no call in.
                reason = encoder.CALLS
            if reason != finish.raw:
                self.rewritten = True
        elif finish.cut_by == "token_limit":
            reason = encoder.LENGTH
        elif calls_sent:
            reason = encoder.CALLS
        else:
            reason = encoder.client_finish_reason(finish, calls_sent=False)
        encoder.set_usage(self._total_usage)
        items += encoder.finish(reason)
        items += encoder.end()
        return self._end("passed" if attempt == 0 else "healed", items)

    def _retry(self, rejected: list[ToolCallRejected]) -> AttemptEnd:
        causes = tuple(heal_cause(event) for event in rejected)
        turn = self._builder.build()
        body = self.wire.follow_up_body(self.body, turn, self._next_messages)
        limit: int | None = None
        ceiling = self._raised_ceiling()
        if ceiling is not None and "token_limit" in causes:
            body, limit = self.wire.raised_limit(body, ceiling)
        self._asked += 1
        self.body = body
        constraint = constrained_reask(body, turn, self.wire.constrained, self._constrain)
        self._constraint = constraint
        asked = constraint.body if constraint is not None and constraint.applied else None
        self._sent = body if asked is None else asked
        return self._next(causes, limit)

    def _raised_ceiling(self) -> int | None:
        """How high a retry after a cut may raise the limit: the ceiling, and no more than
        ``max_tokens_factor`` times the client's own limit when both are known."""
        ceiling = self._ceiling
        if ceiling is None or self._factor is None:
            return ceiling
        if self._client_limit is None:
            try:
                self._client_limit = read_request(self.wire.provider, self.body).max_tokens or 0
            except ConfigurationError:
                self._client_limit = 0
        if not self._client_limit:
            return ceiling
        return min(ceiling, max(1, int(self._factor * self._client_limit)))

    def _next(self, causes: tuple[str, ...], limit: int | None, resend: bool = False) -> AttemptEnd:
        self.attempt += 1
        self._resending = resend
        retry = Retry(
            attempt=self.attempt,
            body=self._sent,
            cause=causes[0],
            causes=causes,
            max_tokens=limit,
            resend=resend,
            constraint=self._constraint,
        )
        self._start_attempt()
        self._observer.retry_started(retry)
        return AttemptEnd(items=[], retry=retry)

    def unread(self, error: BaseException) -> AttemptEnd:
        """The current response could not be read at all (a whole body that broke off), or a
        retry's request could not be sent: ``error`` is what the shell caught. Nothing of it
        reached the client; it is a fault of the network (see the module docstring)."""
        if self.outcome is not None:
            return AttemptEnd(items=[])
        return self._faulted(exception_fault(error))

    def _faulted(self, fault: Fault) -> AttemptEnd:
        """A fault of the network ended the current response: the same request once more (a
        drop, when no call of the response went out), or the exchange's typed error."""
        dropped = fault.kind == "dropped"
        self._observer.attempt_ended(
            self.attempt, self._usage, "dropped" if dropped else "upstream_error"
        )
        if dropped and not self._resent and not self._sent_now:
            self._resent = True
            return self._next((fault.code,), None, resend=True)
        encoder = self.encoder
        encoder.set_usage(self._total_usage)
        self.error_status = fault.status
        self.rewritten = True
        error = encoder.heal_failed(
            fault.message(self._resent), fault.code, status=fault.status, upstream=True
        )
        return self._end("dropped" if dropped else "upstream_error", encoder.error(error))

    def _give_up(self, rejected: list[ToolCallRejected], finish: Finish | None) -> AttemptEnd:
        encoder = self.encoder
        encoder.set_usage(self._total_usage)
        if finish is not None and finish.cut_by == "token_limit":
            return self._end("length", [*encoder.finish(encoder.LENGTH), *encoder.end()])
        return self._end("failed", encoder.error(self._failure(rejected)))

    def _failure(self, rejected: list[ToolCallRejected]) -> dict[str, Any]:
        said = " ".join(
            event.verdict.message
            or f"Tool call `{event.call.name}` (id {event.call.call_id}) was rejected."
            for event in rejected
        )
        retries = self._asked
        asked = f"after {retries} {'retry' if retries == 1 else 'retries'}"
        return self.encoder.heal_failed(
            f"toolwire did not pass on a tool call the model sent ({asked}); "
            f"no call was sent in its place. {said}",
            "tool_call_rejected",
        )

    def retry_refused(self, status: int | None, body: bytes) -> list[WireItem]:
        """A retry's request got HTTP ``status`` (``body``: what it said): the exchange fails
        with the format's error, ``retry_http_status``; a whole exchange's status is then that
        error status (:attr:`error_status`), as the transport passes a retry's own on.

        ``status`` is ``None`` when the retry failed with an answer but no status is known (a
        gateway's client raised on a body it could not use; ``body`` is its words): the error
        is then ``retry_failed`` and names no status it would have to make up.
        """
        if self.outcome is not None:
            return []
        self._observer.attempt_ended(self.attempt, None, "http_error")
        self.encoder.set_usage(self._total_usage)
        asked = (
            "sent the request again after the connection dropped"
            if self._resending
            else f"asked the model again (retry {self._asked}) after rejecting a tool call"
        )
        if status is None:
            said, code = "the retry failed", "retry_failed"
        else:
            said, code = f"the server answered HTTP {status}", "retry_http_status"
            if status >= 400:
                self.error_status = status
        error = self.encoder.heal_failed(
            f"toolwire {asked}, and {said}: {cap_text(body, 1000)}", code, status=self.error_status
        )
        return self._end("failed", self.encoder.error(error)).items

    def _end(self, outcome: HealOutcome, items: list[WireItem]) -> AttemptEnd:
        self.outcome = outcome
        self._observer.finished(outcome)
        return AttemptEnd(items=items)

    def close(self) -> None:
        """The exchange ended early (the client went away, an exception): say so once."""
        if self.outcome is None:
            self._observer.attempt_ended(self.attempt, self._usage, "cancelled")
            self.outcome = "cancelled"
            self._observer.finished("cancelled")
