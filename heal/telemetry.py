"""OpenTelemetry for healing: a span per healed call and per retry, and four counters.

An exchange in which nothing was rejected costs one counter add per call and no span. Once a
call is rejected, the exchange gets one ``toolwire.heal`` span (INTERNAL), and under it:

- ``toolwire.heal.call {tool}``: one per rejected call, from its rejection until its fate is
  known: ``healed`` (the next response brought valid calls in its place), ``rejected_again``
  (the next response was rejected too: its calls have their own spans), ``no_call`` (the model
  answered with no call), ``failed`` (retries ran out), ``upstream_error``, ``dropped``,
  ``cancelled``. Status ERROR unless healed or rejected again.
- ``toolwire.heal.retry``: one per retry request, from the request to the end of its response,
  with its cause (``token_limit``, ``schema``, ``not_json``...: what cut the first rejected call,
  or the judge's reason), the raised ``max_tokens`` when it was raised, its outcome and the usage
  it added, and whether it was a constrained re-ask (``toolwire.heal.constraint``:
  ``constrained``, or why not: ``no_mechanism``, ``schema_unsupported``, ``off``...; with the
  tool, the mechanism, whether the server's engine keeps to the schema, and what it does not
  take). A call a constrained re-ask healed says so on its span
  (``toolwire.heal.constrained``).

Counters (every attribute from a closed vocabulary or bounded, as in
:mod:`toolwire.stages.telemetry.metrics`): ``toolwire.heal.tool_calls`` by
``toolwire.heal.outcome`` (``passed_through``: accepted in the first response; ``healed``:
accepted in a retry's response; ``failed``: rejected, and no valid call took its place),
``toolwire.heal.retries`` by cause and ``toolwire.heal.constraint``,
``toolwire.heal.retry.tokens`` by ``gen_ai.token.type`` (the usage retries added), and
``toolwire.heal.adapted`` by ``toolwire.heal.adaptation`` (requests rewritten into the form
the server accepts: ``assistant_content``, ``tool_result_role``, ``stream``; the heal span,
when there is one, carries the counts as ``toolwire.heal.adapted.<kind>``). The
``toolwire.turn`` span and metrics of each response, retries included, come from the pipeline
as usual.

Providers are parameters (the global ones by default), never set globally; spans are started
with ``start_span`` and never made current, so nothing is held across a ``yield``. Every span
ends exactly once, on every path (the session reports ``finished`` exactly once, an early exit
included). A telemetry failure is logged once per kind on ``toolwire.telemetry`` and never
reaches the exchange. Content (toolwire's message to the model) is exported only with
``capture_content``, through ``redact``, capped.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any

from opentelemetry import metrics, trace
from opentelemetry.trace import Span, SpanKind, Status, StatusCode

from ..adapters.encoding import add_usage
from ..core.events import ToolCallReady, ToolCallRejected, ToolCallRepaired, Usage
from ..core.version import __version__
from ..core.wire import Constraint
from ..stages.telemetry.metrics import MAX_DISTINCT_VALUES, BoundedValues, PerMeterProvider
from ..stages.telemetry.observer import (
    DEFAULT_CONTENT_CAP,
    Redactor,
    Telemetry,
    exported_content,
)
from .session import AttemptOutcome, HealObserver, HealOutcome, NullHealObserver, Retry, heal_cause

__all__ = ["HealInstruments", "HealRun", "HealTelemetry"]

logger = logging.getLogger("toolwire.telemetry")

#: A rejected call's open span, its tool name, and the response (attempt) that rejected it.
_Pending = tuple[Span, str, int]
_reported: set[str] = set()


def _report(site: str) -> None:
    """Log a telemetry failure once per site; must be called from an ``except`` block."""
    if site not in _reported:
        _reported.add(site)
        logger.exception(
            "toolwire heal telemetry failed (%s); the exchange goes on, later failures of this "
            "kind are not logged",
            site,
        )


class HealInstruments:
    """The heal counters of one meter provider (created once per provider)."""

    __slots__ = ("_adapted", "_calls", "_repaired", "_retries", "_tokens", "_tools")

    def __init__(self, meter: metrics.Meter) -> None:
        self._calls = meter.create_counter(
            "toolwire.heal.tool_calls",
            unit="{call}",
            description="Tool calls of healed exchanges by outcome: passed_through, healed, "
            "failed.",
        )
        self._retries = meter.create_counter(
            "toolwire.heal.retries",
            unit="{retry}",
            description="Retry requests toolwire sent to heal a rejected call, by cause.",
        )
        self._tokens = meter.create_counter(
            "toolwire.heal.retry.tokens",
            unit="{token}",
            description="Tokens the retries added, by gen_ai.token.type (input, output).",
        )
        self._adapted = meter.create_counter(
            "toolwire.heal.adapted",
            unit="{request}",
            description="Requests whose history or shape was adapted to what the server "
            "accepts, by toolwire.heal.adaptation (assistant_content, tool_result_role, stream).",
        )
        self._repaired = meter.create_counter(
            "toolwire.heal.history_repaired",
            unit="{call}",
            description="Earlier calls of a request's history rewritten because a server refuses "
            "their arguments, by toolwire.heal.history_problem (arguments_not_json, "
            "arguments_not_object, arguments_markup).",
        )
        #: The tool names reported, bounded as the pipeline's are.
        self._tools = BoundedValues(MAX_DISTINCT_VALUES)

    def record_call(
        self, outcome: str, *, tool: str, provider: str, constrained: bool = False
    ) -> None:
        """Count one call of a healed exchange (``constrained``: a constrained re-ask brought
        it)."""
        attributes: dict[str, Any] = {
            "toolwire.heal.outcome": outcome,
            "gen_ai.tool.name": self._tools(tool),
            "gen_ai.provider.name": provider,
        }
        if constrained:
            attributes["toolwire.heal.constrained"] = True
        self._calls.add(1, attributes)

    def record_adapted(self, kind: str, *, provider: str) -> None:
        """Count one request adapted in the way ``kind`` says."""
        self._adapted.add(1, {"toolwire.heal.adaptation": kind, "gen_ai.provider.name": provider})

    def record_repaired(self, kind: str, calls: int, *, provider: str) -> None:
        """Count ``calls`` earlier calls of one request repaired for the problem ``kind``."""
        self._repaired.add(
            calls, {"toolwire.heal.history_problem": kind, "gen_ai.provider.name": provider}
        )

    def record_retry(self, cause: str, *, provider: str, constraint: str = "none") -> None:
        """Count one retry request (``constraint``: ``constrained``, why it was not, or
        ``none`` for a resend)."""
        self._retries.add(
            1,
            {
                "toolwire.heal.cause": cause,
                "gen_ai.provider.name": provider,
                "toolwire.heal.constraint": constraint,
            },
        )

    def record_tokens(self, usage: Usage, *, provider: str) -> None:
        """Count the tokens one retry's response reported."""
        for kind, count in (("input", usage.input_tokens), ("output", usage.output_tokens)):
            if count:
                self._tokens.add(
                    count, {"gen_ai.token.type": kind, "gen_ai.provider.name": provider}
                )


_HEAL_INSTRUMENTS = PerMeterProvider(HealInstruments)


class HealTelemetry:
    """Where healing reports to: plain, reusable configuration (see the module docstring).

    It holds the pipeline's :class:`~toolwire.stages.telemetry.observer.Telemetry`
    (:attr:`telemetry`): the same settings, checked by the same rules.
    """

    __slots__ = ("telemetry",)

    def __init__(
        self,
        *,
        tracer_provider: trace.TracerProvider | None = None,
        meter_provider: metrics.MeterProvider | None = None,
        capture_content: bool | None = None,
        redact: Redactor | None = None,
        content_cap: int = DEFAULT_CONTENT_CAP,
    ) -> None:
        self.telemetry = Telemetry(
            tracer_provider=tracer_provider,
            meter_provider=meter_provider,
            capture_content=capture_content,
            redact=redact,
            content_cap=content_cap,
        )

    def count_adapted(self, provider: str, adapted: Mapping[str, int]) -> None:
        """Count one request to ``provider`` adapted by kind (``HealPlan.adapted``)."""
        try:
            instruments = _HEAL_INSTRUMENTS.get(self.telemetry.meter_provider, __version__)
            for kind in sorted(adapted):
                instruments.record_adapted(kind, provider=provider)
        except Exception:
            _report("adapted")

    def count_repaired(self, provider: str, repaired: Mapping[str, int]) -> None:
        """Count the calls of one request to ``provider`` repaired (``HealPlan.repaired``)."""
        try:
            instruments = _HEAL_INSTRUMENTS.get(self.telemetry.meter_provider, __version__)
            for kind, calls in sorted(repaired.items()):
                instruments.record_repaired(kind, calls, provider=provider)
        except Exception:
            _report("repaired")

    def start(self, provider: str, *, adapted: Mapping[str, int] | None = None) -> HealObserver:
        """The observer of one exchange with ``provider`` (a ``gen_ai.provider.name``).

        ``adapted`` (kind -> count, ``HealPlan.adapted``) goes on the exchange's span as
        ``toolwire.heal.adapted.<kind>`` attributes.
        """
        settings = self.telemetry
        try:
            if not settings.records():
                return NullHealObserver()  # nothing could record it (``Telemetry.records``)
            tracer = trace.get_tracer("toolwire", __version__, settings.tracer_provider)
            instruments = _HEAL_INSTRUMENTS.get(settings.meter_provider, __version__)
            capture = settings.captures_content()
        except Exception:
            _report("start")
            return NullHealObserver()
        return HealRun(
            tracer,
            instruments,
            provider=provider,
            capture=capture,
            redact=settings.redact,
            content_cap=settings.content_cap,
            adapted=adapted,
        )


class HealRun:
    """The telemetry of one exchange: a :class:`~toolwire.heal.session.HealObserver`."""

    __slots__ = (
        "_accepted",
        "_adapted",
        "_capture",
        "_constrained",
        "_content_cap",
        "_exchange",
        "_instruments",
        "_pending",
        "_provider",
        "_redact",
        "_retries",
        "_retry_span",
        "_retry_usage",
        "_tracer",
    )

    def __init__(
        self,
        tracer: trace.Tracer,
        instruments: HealInstruments,
        *,
        provider: str,
        capture: bool = False,
        redact: Redactor | None = None,
        content_cap: int = DEFAULT_CONTENT_CAP,
        adapted: Mapping[str, int] | None = None,
    ) -> None:
        self._tracer = tracer
        self._adapted = dict(adapted or {})
        self._instruments = instruments
        self._provider = provider
        self._capture = capture
        self._redact = redact
        self._content_cap = content_cap
        self._exchange: Span | None = None
        #: The spans of rejected calls whose fate is not known yet.
        self._pending: list[_Pending] = []
        self._retry_span: Span | None = None
        self._accepted: dict[int, int] = {}
        #: The attempts whose request was a constrained re-ask.
        self._constrained: set[int] = set()
        self._retries = 0
        self._retry_usage: Usage | None = None

    # -- the observer ------------------------------------------------------------------------

    def call_accepted(self, event: ToolCallReady | ToolCallRepaired, attempt: int) -> None:
        """Count a call sent to the client."""
        try:
            self._accepted[attempt] = self._accepted.get(attempt, 0) + 1
            self._instruments.record_call(
                "passed_through" if attempt == 0 else "healed",
                tool=event.call.name,
                provider=self._provider,
                constrained=attempt in self._constrained,
            )
        except Exception:
            _report("call")

    def call_rejected(self, event: ToolCallRejected, attempt: int) -> None:
        """Open the span of a rejected call (and the exchange's, on the first)."""
        try:
            call = event.call
            verdict = event.verdict
            attributes: dict[str, Any] = {
                "gen_ai.tool.name": call.name,
                "gen_ai.tool.call.id": call.call_id,
                "gen_ai.tool.type": "function",
                "gen_ai.provider.name": self._provider,
                "toolwire.heal.cause": heal_cause(event),
                "toolwire.heal.attempt": attempt,
                "toolwire.truncated": call.truncated or verdict.truncated,
            }
            if verdict.reason is not None:
                attributes["toolwire.reject.reason"] = verdict.reason
            if call.cut_by is not None:
                attributes["toolwire.cut_by"] = call.cut_by
            if self._capture and verdict.message:
                text = self._content(verdict.message)
                if text is not None:
                    attributes["toolwire.heal.message"] = text
            span = self._tracer.start_span(
                f"toolwire.heal.call {call.name}",
                context=self._parent(),
                kind=SpanKind.INTERNAL,
                attributes=attributes,
            )
            self._pending.append((span, call.name, attempt))
        except Exception:
            _report("call span")

    def retry_started(self, retry: Retry) -> None:
        """Open the span of a retry request and count it."""
        try:
            self._retries += 1
            attributes: dict[str, Any] = {
                "gen_ai.provider.name": self._provider,
                "toolwire.heal.attempt": retry.attempt,
                "toolwire.heal.cause": retry.cause,
                "toolwire.heal.causes": list(retry.causes),
                "toolwire.heal.max_tokens_raised": retry.max_tokens is not None,
            }
            if retry.max_tokens is not None:
                attributes["gen_ai.request.max_tokens"] = retry.max_tokens
            constraint = retry.constraint
            said = "none"
            if constraint is not None:
                said = "constrained" if constraint.applied else str(constraint.skipped)
                attributes.update(_constraint_attributes(constraint))
                if constraint.applied:
                    self._constrained.add(retry.attempt)
            attributes["toolwire.heal.constraint"] = said
            self._retry_span = self._tracer.start_span(
                "toolwire.heal.retry",
                context=self._parent(),
                kind=SpanKind.INTERNAL,
                attributes=attributes,
            )
            self._instruments.record_retry(retry.cause, provider=self._provider, constraint=said)
        except Exception:
            _report("retry span")

    def attempt_ended(self, attempt: int, usage: Usage | None, outcome: AttemptOutcome) -> None:
        """End the retry's span; settle the calls earlier responses rejected."""
        try:
            if attempt == 0:
                return
            self._end_retry(usage, outcome)
            earlier = [entry for entry in self._pending if entry[2] < attempt]
            if outcome == "accepted":
                healed = self._accepted.get(attempt, 0) > 0
                if healed and attempt in self._constrained:
                    for span, _, _ in earlier:
                        span.set_attribute("toolwire.heal.constrained", True)
                self._settle(earlier, "healed" if healed else "no_call")
            elif outcome == "rejected":
                self._settle(earlier, "rejected_again")
        except Exception:
            _report("attempt")

    def finished(self, outcome: HealOutcome) -> None:
        """End every span still open, exactly once."""
        try:
            if self._retry_span is not None:
                self._end_retry(None, "cancelled")
            settled = {
                "healed": "healed",
                "passed": "healed",
                "length": "failed",
                "failed": "failed",
            }.get(outcome, outcome)
            self._settle(list(self._pending), settled)
            exchange = self._exchange
            if exchange is not None:
                self._exchange = None
                exchange.set_attribute("toolwire.heal.outcome", outcome)
                exchange.set_attribute("toolwire.heal.retries", self._retries)
                usage = self._retry_usage
                if usage is not None and usage.input_tokens is not None:
                    exchange.set_attribute("toolwire.heal.retry.input_tokens", usage.input_tokens)
                if usage is not None and usage.output_tokens is not None:
                    exchange.set_attribute("toolwire.heal.retry.output_tokens", usage.output_tokens)
                if outcome not in ("healed", "passed", "cancelled"):
                    exchange.set_status(Status(StatusCode.ERROR))
                    exchange.set_attribute("error.type", outcome)
                exchange.end()
        except Exception:
            _report("finish")

    # -- spans -------------------------------------------------------------------------------

    def _parent(self) -> Any:
        if self._exchange is None:
            self._exchange = self._tracer.start_span(
                "toolwire.heal",
                kind=SpanKind.INTERNAL,
                attributes={
                    "gen_ai.provider.name": self._provider,
                    **{f"toolwire.heal.adapted.{k}": n for k, n in self._adapted.items()},
                },
            )
        return trace.set_span_in_context(self._exchange)

    def _settle(self, entries: list[_Pending], outcome: str) -> None:
        for entry in entries:
            if entry not in self._pending:
                continue
            self._pending.remove(entry)
            span, name, _ = entry
            try:
                span.set_attribute("toolwire.heal.outcome", outcome)
                if outcome not in ("healed", "rejected_again", "cancelled"):
                    span.set_status(Status(StatusCode.ERROR))
                    span.set_attribute("error.type", outcome)
                    self._instruments.record_call("failed", tool=name, provider=self._provider)
            finally:
                span.end()

    def _end_retry(self, usage: Usage | None, outcome: str) -> None:
        span, self._retry_span = self._retry_span, None
        if span is None:
            return
        try:
            span.set_attribute("toolwire.heal.retry.outcome", outcome)
            if usage is not None:
                if usage.input_tokens is not None:
                    span.set_attribute("gen_ai.usage.input_tokens", usage.input_tokens)
                if usage.output_tokens is not None:
                    span.set_attribute("gen_ai.usage.output_tokens", usage.output_tokens)
                self._instruments.record_tokens(usage, provider=self._provider)
                self._add_retry_usage(usage)
            if outcome not in ("accepted", "rejected", "cancelled"):
                span.set_status(Status(StatusCode.ERROR))
                span.set_attribute("error.type", outcome)
        finally:
            span.end()

    def _add_retry_usage(self, usage: Usage) -> None:
        self._retry_usage = add_usage(self._retry_usage, usage)

    def _content(self, text: str) -> str | None:
        try:
            return exported_content(text, self._redact, self._content_cap)
        except Exception:
            _report("redact")
            return None


def _constraint_attributes(constraint: Constraint) -> dict[str, Any]:
    """A retry's constrained re-ask on its span: the tool, how, or why not and what."""
    attributes: dict[str, Any] = {}
    if constraint.tool:
        attributes["toolwire.heal.constraint.tool"] = constraint.tool
    if constraint.applied:
        attributes["toolwire.heal.constraint.mechanism"] = str(constraint.mechanism)
        attributes["toolwire.heal.constraint.schema_enforced"] = constraint.enforces_schema
    elif constraint.detail:
        attributes["toolwire.heal.constraint.detail"] = constraint.detail[:200]
    return attributes
