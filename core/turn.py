"""A ``Turn``: everything one provider stream said, with every tool call judged.

``Turn`` is what :func:`toolwire.collect` returns and what :func:`toolwire.dispatch` consumes. It
is built by :class:`TurnBuilder`, a plain synchronous sink that anyone consuming
:func:`toolwire.stream` can use too.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import msgspec

from .events import (
    CallOrigin,
    CutBy,
    Event,
    Finish,
    ProviderContent,
    ProviderError,
    ReasoningDelta,
    ResponseInfo,
    StopCondition,
    StopReason,
    TextCallMarkup,
    TextDelta,
    ToolCallComplete,
    ToolCallReady,
    ToolCallRejected,
    ToolCallRepaired,
    TruncationEvidence,
    TurnStopped,
    Usage,
)
from .verdict import Verdict

__all__ = ["CallRecord", "Turn", "TurnBuilder"]


class CallRecord(msgspec.Struct, frozen=True, kw_only=True, gc=False):
    """One tool call of a turn: what arrived, and (when judged) the verdict.

    ``arguments`` is the parsed object the tool may run with, ``None`` when the call was rejected
    (or not judged). ``arguments_raw`` is the text exactly as the model sent it, kept for
    debugging and never replayed to a provider.
    """

    call_id: str
    name: str
    index: int
    arguments_raw: str
    arguments: dict[str, Any] | None = None
    verdict: Verdict | None = None
    truncated: bool = False
    id_synthesized: bool = False
    #: The provider's id when toolwire gave this call another (a repeated id; see
    #: :mod:`toolwire.core.accumulate`). ``call_id`` is what history replays and answers.
    provider_id: str | None = None
    #: ``text`` when the call was read from the model's markup in the text; ``text_family``
    #: names the family (``docs/text-calls.md``).
    origin: CallOrigin = "structured"
    text_family: str | None = None

    @property
    def id(self) -> str:
        """Alias of ``call_id``, the name most frameworks use."""
        return self.call_id

    @property
    def outcome(self) -> str:
        """``ok``, ``repaired``, ``rejected``, or ``unjudged`` when no judge ran."""
        return self.verdict.outcome if self.verdict is not None else "unjudged"

    @property
    def may_run(self) -> bool:
        """True only for a judged call whose arguments passed (ok or repaired)."""
        return self.verdict is not None and self.verdict.may_run

    @classmethod
    def from_event(cls, call: ToolCallComplete, verdict: Verdict | None = None) -> CallRecord:
        """Build the record of a complete (and maybe judged) call."""
        return cls(
            call_id=call.call_id,
            name=call.name,
            index=call.index,
            arguments_raw=call.arguments_raw,
            arguments=verdict.arguments if verdict is not None else None,
            verdict=verdict,
            truncated=call.truncated or (verdict is not None and verdict.truncated),
            id_synthesized=call.id_synthesized,
            provider_id=call.provider_id,
            origin=call.origin,
            text_family=call.text_family,
        )


class Turn(msgspec.Struct, frozen=True, kw_only=True, gc=False):
    """One assistant turn, as toolwire understood it."""

    text: str = ""
    reasoning: str = ""
    calls: tuple[CallRecord, ...] = ()
    stop_reason: StopReason = "unknown"
    finish_raw: str | None = None
    #: The output was cut before the model ended it (by the limit, a drop, or an unknown cause).
    truncated: bool = False
    truncation_evidence: tuple[TruncationEvidence, ...] = ()
    #: What cut it: ``token_limit`` (with evidence), ``unknown``, ``disconnected``, ``error``.
    cut_by: CutBy | None = None
    usage: Usage | None = None
    errors: tuple[ProviderError, ...] = ()
    model: str | None = None
    response_id: str | None = None
    provider: str | None = None
    #: The stop conditions the turn was collected with (see ``toolwire.stages.policy``).
    stop_on: frozenset[StopCondition] = frozenset()
    #: The conditions of ``stop_on`` that held: when not empty, nothing may be dispatched.
    stopped_by: tuple[StopCondition, ...] = ()
    #: The provider's own record of the turn, for history replay (see ``ProviderContent``).
    provider_content: tuple[Any, ...] = ()
    #: The text as the server sent it, when calls were read out of it (``text`` is then that
    #: text without their markup); ``None`` when ``text`` is what the server sent.
    raw_text: str | None = None
    #: The tool the request of this turn forced, when it was a constrained re-ask
    #: (``Pipeline.collect(..., request=reask)`` with a ``Constraint`` that applied): its calls
    #: came from the server's structured-output engine, and were judged as any call is.
    constrained_to: str | None = None

    @property
    def stopped(self) -> bool:
        """True when a stop condition held (see ``stopped_by``)."""
        return bool(self.stopped_by)

    @property
    def rejected(self) -> tuple[CallRecord, ...]:
        """The calls that must not run."""
        return tuple(call for call in self.calls if call.outcome == "rejected")

    @property
    def runnable(self) -> tuple[CallRecord, ...]:
        """The calls whose arguments passed the judge."""
        return tuple(call for call in self.calls if call.may_run)


class TurnBuilder:
    """Fold a run's events into a :class:`Turn`. Feed every event, then call :meth:`build`."""

    __slots__ = (
        "_calls",
        "_content",
        "_errors",
        "_finish",
        "_info",
        "_markup",
        "_reasoning",
        "_stopped_by",
        "_text",
        "_usage_event",
        "provider",
        "stop_on",
    )

    def __init__(
        self, provider: str | None = None, stop_on: frozenset[StopCondition] = frozenset()
    ) -> None:
        self.provider = provider
        self.stop_on = stop_on
        self._stopped_by: tuple[StopCondition, ...] = ()
        self._text: list[str] = []
        self._reasoning: list[str] = []
        self._calls: list[CallRecord] = []
        self._errors: list[ProviderError] = []
        self._finish: Finish | None = None
        self._usage_event: Usage | None = None
        self._info: ResponseInfo | None = None
        self._content: tuple[Any, ...] = ()
        self._markup: TextCallMarkup | None = None

    def add(self, event: Event) -> None:
        """Take one event (a dict lookup on its type; events it does not know are ignored)."""
        handler = _HANDLERS.get(type(event))
        if handler is not None:
            handler(self, event)

    def add_many(self, events: list[Event]) -> None:
        """:meth:`add` for a batch; text and reasoning pieces, most of a turn, cost least."""
        handlers = _HANDLERS
        text = self._text.append
        text_delta = TextDelta
        for event in events:
            if type(event) is text_delta:
                text(event.text)
                continue
            handler = handlers.get(type(event))
            if handler is not None:
                handler(self, event)

    def _text_delta(self, event: TextDelta) -> None:
        self._text.append(event.text)

    def _reasoning_delta(self, event: ReasoningDelta) -> None:
        self._reasoning.append(event.text)

    def _judged(self, event: ToolCallReady | ToolCallRepaired | ToolCallRejected) -> None:
        self._calls.append(CallRecord.from_event(event.call, event.verdict))

    def _complete(self, event: ToolCallComplete) -> None:
        self._calls.append(CallRecord.from_event(event))

    def _usage(self, event: Usage) -> None:
        self._usage_event = event

    def _finish_event(self, event: Finish) -> None:
        self._finish = event

    def _error(self, event: ProviderError) -> None:
        self._errors.append(event)

    def _info_event(self, event: ResponseInfo) -> None:
        self._info = event

    def _stopped(self, event: TurnStopped) -> None:
        self._stopped_by = event.conditions

    def _provider_content(self, event: ProviderContent) -> None:
        if event.scope == "turn":  # a block reported as it ended is in the turn's record too
            self._content = event.items

    def _text_call_markup(self, event: TextCallMarkup) -> None:
        self._markup = event

    def build(self) -> Turn:
        """The turn so far (normally called after ``StreamEnd``)."""
        finish = self._finish
        info = self._info
        text = "".join(self._text)
        markup = self._markup
        return Turn(
            text=text,
            reasoning="".join(self._reasoning),
            calls=tuple(sorted(self._calls, key=_call_index)),
            stop_reason=finish.reason if finish is not None else "unknown",
            finish_raw=finish.raw if finish is not None else None,
            truncated=finish.truncated if finish is not None else False,
            truncation_evidence=finish.evidence if finish is not None else (),
            cut_by=finish.cut_by if finish is not None else None,
            usage=self._usage_event,
            errors=tuple(self._errors),
            model=info.model if info is not None else None,
            response_id=info.response_id if info is not None else None,
            provider=self.provider,
            stop_on=self.stop_on,
            stopped_by=self._stopped_by,
            provider_content=self._content,
            raw_text=markup.original(text) if markup is not None else None,
        )


def _call_index(call: CallRecord) -> int:
    return call.index


_HANDLERS: dict[type[Event], Callable[[TurnBuilder, Any], None]] = {
    TextDelta: TurnBuilder._text_delta,
    ReasoningDelta: TurnBuilder._reasoning_delta,
    ToolCallReady: TurnBuilder._judged,
    ToolCallRepaired: TurnBuilder._judged,
    ToolCallRejected: TurnBuilder._judged,
    ToolCallComplete: TurnBuilder._complete,
    Usage: TurnBuilder._usage,
    Finish: TurnBuilder._finish_event,
    ProviderError: TurnBuilder._error,
    ResponseInfo: TurnBuilder._info_event,
    TurnStopped: TurnBuilder._stopped,
    ProviderContent: TurnBuilder._provider_content,
    TextCallMarkup: TurnBuilder._text_call_markup,
}
