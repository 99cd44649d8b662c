"""OpenTelemetry for toolwire: a span per turn, a span per repair and per rejection, metrics.

The pipeline feeds every output event to a :class:`TurnObserver`, synchronously, in the loop of
``collect`` / ``stream``, and closes it exactly once in a ``finally``. The observer:

- starts one ``toolwire.turn`` span (INTERNAL) when the run starts, with ``tracer.start_span``:
  it is never made current, so no context is held across a ``yield``;
- ends one child span per repaired call (``toolwire.repair {tool}``) and per rejected call
  (``toolwire.reject {tool}``, status ERROR), each ended as soon as it is created; the child
  spans of calls cut off by the token limit wait for the ``Finish`` (or the close) so they can
  say which evidence showed the cut;
- records the metrics of :mod:`toolwire.stages.telemetry.metrics`.

Providers are parameters (the global ones by default) and are never set globally. Every call
into OpenTelemetry or into the user's redaction hook is guarded: a failure there is logged once
per kind on the ``toolwire.telemetry`` logger and never reaches the stream. Content (raw
arguments, the message the model will read, the judge's detail) is off by default; it is turned
on by ``capture_content=True`` or by ``OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT``,
passed through ``redact`` and capped. The attribute table is in ``docs/observability.md``.
"""

from __future__ import annotations

import logging
import os
import time
from collections.abc import Callable, Mapping
from typing import Any

from opentelemetry import metrics, trace
from opentelemetry.trace import Span, SpanKind, Status, StatusCode

from ...core.errors import ConfigurationError
from ...core.events import (
    Event,
    Finish,
    ProviderError,
    ReasoningDelta,
    ResponseInfo,
    StreamEnd,
    TextDelta,
    ToolCallArgumentsDelta,
    ToolCallComplete,
    ToolCallReady,
    ToolCallRejected,
    ToolCallRepaired,
    ToolCallStarted,
    TruncationEvidence,
    Usage,
)
from ...core.version import __version__
from .metrics import Instruments, instruments_for

__all__ = [
    "CAPTURE_CONTENT_ENV",
    "DEFAULT_CONTENT_CAP",
    "NullObserver",
    "Redactor",
    "Telemetry",
    "TurnObserver",
    "capture_content_from_env",
    "exported_content",
    "observe_turn",
    "start_observer",
]

logger = logging.getLogger("toolwire.telemetry")

#: The environment variable the OpenTelemetry GenAI instrumentations read for content capture.
CAPTURE_CONTENT_ENV = "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT"
#: Content attributes longer than this many characters are cut, with a marker.
DEFAULT_CONTENT_CAP = 4096
#: A redaction hook: takes a captured text, returns what may be exported (``None``: nothing).
Redactor = Callable[[str], str | None]

_TRUE = frozenset({"true", "1", "yes", "on", "span_only", "span_and_event"})
_reported: set[str] = set()


def _report(site: str) -> None:
    """Log a telemetry failure once per site; must be called from an ``except`` block."""
    if site not in _reported:
        _reported.add(site)
        logger.exception(
            "toolwire telemetry failed (%s); the stream goes on, later failures of this kind "
            "are not logged",
            site,
        )


def capture_content_from_env(environ: Mapping[str, str] = os.environ) -> bool:
    """Whether the environment opts in to content capture, as the GenAI instrumentations read it.

    ``true`` (any case) turns it on, and so do ``SPAN_ONLY`` / ``SPAN_AND_EVENT`` (the values of
    the newer instrumentations); anything else, or nothing, leaves it off.
    """
    return environ.get(CAPTURE_CONTENT_ENV, "").strip().lower() in _TRUE


def exported_content(text: str, redact: Redactor | None, cap: int) -> str | None:
    """``text`` as it may be exported: through ``redact`` (``None`` from it: nothing may be),
    then cut at ``cap`` characters with a marker. What ``redact`` raises propagates: the caller
    reports it and exports nothing."""
    if redact is not None:
        redacted = redact(text)
        if redacted is None:
            return None
        text = str(redacted)
    if len(text) > cap:
        text = f"{text[:cap]}… ({len(text)} characters)"
    return text


def _meter_placeholder() -> type | None:
    """The class of the global meter provider the API hands out until an application sets one
    (private, so looked up; ``None`` for an API version without it: never taken as silent)."""
    try:
        from opentelemetry.metrics._internal import _ProxyMeterProvider
    except ImportError:
        return None
    return _ProxyMeterProvider


_METER_PLACEHOLDER = _meter_placeholder()


def _records_nothing(
    provider: object, global_provider: Callable[[], object], placeholder: type | None, no_op: type
) -> bool:
    """Whether ``provider`` (the global one for ``None``) records nothing: the API's ``no_op``
    provider, or its ``placeholder`` while no global provider is set. A placeholder hands
    everything over to the global provider once one is, so it is as silent as that one. By
    exact type: a subclass may record."""
    if provider is None or type(provider) is placeholder:
        provider = global_provider()
    return type(provider) is no_op or type(provider) is placeholder


class Telemetry:
    """How toolwire reports a run: providers, content capture. Plain, reusable configuration.

    ``tracer_provider`` / ``meter_provider`` default to the global ones (read when a run starts,
    so setting them later works); toolwire never sets a global provider. ``capture_content``
    ``None`` means "as the environment says" (:func:`capture_content_from_env`). ``redact`` is
    applied to every captured text before it is capped; if it raises, that text is dropped.
    """

    __slots__ = ("capture_content", "content_cap", "meter_provider", "redact", "tracer_provider")

    def __init__(
        self,
        *,
        tracer_provider: trace.TracerProvider | None = None,
        meter_provider: metrics.MeterProvider | None = None,
        capture_content: bool | None = None,
        redact: Redactor | None = None,
        content_cap: int = DEFAULT_CONTENT_CAP,
    ) -> None:
        if redact is not None and not callable(redact):
            raise ConfigurationError(f"redact must be a callable or None, got {redact!r}")
        if capture_content is not None and not isinstance(capture_content, bool):
            raise ConfigurationError(
                f"capture_content must be True, False or None, got {capture_content!r}"
            )
        if not isinstance(content_cap, int) or content_cap < 0:
            raise ConfigurationError(f"content_cap must be an int >= 0, got {content_cap!r}")
        self.tracer_provider = tracer_provider
        self.meter_provider = meter_provider
        self.capture_content = capture_content
        self.redact = redact
        self.content_cap = content_cap

    def records(self) -> bool:
        """Whether a run starting now can record anything at all.

        False only when neither provider can: each is the OpenTelemetry API's own no-op one, or
        the global one (or its placeholder, passed in) while no application has set it. A run
        then opens no span and records no metric, as it would through those providers, without
        the OpenTelemetry calls that find that out (about 22 µs of a healed request's CPU, with
        the healing's own; issue 20). Read when the run starts, as the providers are: a
        provider set later counts from the next run.
        """
        return not (
            _records_nothing(
                self.tracer_provider,
                trace.get_tracer_provider,
                trace.ProxyTracerProvider,
                trace.NoOpTracerProvider,
            )
            and _records_nothing(
                self.meter_provider,
                metrics.get_meter_provider,
                _METER_PLACEHOLDER,
                metrics.NoOpMeterProvider,
            )
        )

    def captures_content(self) -> bool:
        """Whether a run starting now captures content: the setting, or the environment's."""
        if self.capture_content is not None:
            return self.capture_content
        return capture_content_from_env()

    def start(
        self,
        provider: str,
        *,
        max_tokens: int | None = None,
        request_model: str | None = None,
    ) -> TurnObserver:
        """Start observing one run (one provider stream): opens its turn span."""
        version = __version__
        tracer = trace.get_tracer("toolwire", version, tracer_provider=self.tracer_provider)
        try:
            instruments = instruments_for(self.meter_provider, version)
        except Exception:
            # Broken metrics must not cost the spans: record to no-op instruments instead.
            _report("metrics")
            instruments = Instruments(metrics.NoOpMeter("toolwire"))
        capture = self.captures_content()
        return TurnObserver(
            tracer,
            instruments,
            provider=provider,
            max_tokens=max_tokens,
            request_model=request_model,
            capture=capture,
            redact=self.redact,
            content_cap=self.content_cap,
        )


class NullObserver:
    """What a run observes with when telemetry could not even start: nothing."""

    __slots__ = ()

    def observe(self, event: Event) -> None:
        """Ignore the event."""

    def observe_many(self, events: list[Event]) -> None:
        """Ignore the events."""

    def close(self, error: BaseException | None = None) -> None:
        """Nothing to end."""


def observe_turn(
    provider: str,
    *,
    max_tokens: int | None = None,
    request_model: str | None = None,
    tracer_provider: trace.TracerProvider | None = None,
    meter_provider: metrics.MeterProvider | None = None,
    capture_content: bool | None = None,
    redact: Redactor | None = None,
) -> TurnObserver | NullObserver:
    """The observer of one ``collect`` / ``stream`` run; never raises for a telemetry failure.

    Bad arguments (a ``redact`` that is not callable...) raise :class:`ConfigurationError`;
    anything failing inside OpenTelemetry gives a :class:`NullObserver` and one log record.
    """
    telemetry = Telemetry(
        tracer_provider=tracer_provider,
        meter_provider=meter_provider,
        capture_content=capture_content,
        redact=redact,
    )
    return start_observer(telemetry, provider, max_tokens=max_tokens, request_model=request_model)


def start_observer(
    telemetry: Telemetry,
    provider: str,
    *,
    max_tokens: int | None = None,
    request_model: str | None = None,
) -> TurnObserver | NullObserver:
    """The observer of one run of an already checked ``telemetry`` configuration.

    Anything failing inside OpenTelemetry gives a :class:`NullObserver` and one log record;
    so does a run that could record nothing (:meth:`Telemetry.records`), without a log record.
    """
    try:
        if not telemetry.records():
            return NullObserver()
        return telemetry.start(provider, max_tokens=max_tokens, request_model=request_model)
    except Exception:
        _report("start")
        return NullObserver()


def _is_early_exit(error: BaseException) -> bool:
    """Closing the generator and cancellation end a run early; they are not failures."""
    if isinstance(error, GeneratorExit):
        return True
    try:
        import anyio

        if isinstance(error, anyio.get_cancelled_exc_class()):
            return True
    except Exception:  # no async library running: fall back to the names
        pass
    return type(error).__name__ in {"CancelledError", "Cancelled"}


_Pending = tuple[ToolCallRepaired | ToolCallRejected, int]


class TurnObserver:
    """Observes one run: feed it every output event, then :meth:`close` it exactly once."""

    __slots__ = (
        "_capture",
        "_content_cap",
        "_context",
        "_counts",
        "_fatal_error",
        "_finish",
        "_instruments",
        "_model",
        "_pending",
        "_provider",
        "_provider_errors",
        "_redact",
        "_saw_end",
        "_span",
        "_tracer",
        "closed",
    )

    def __init__(
        self,
        tracer: trace.Tracer,
        instruments: Instruments,
        *,
        provider: str,
        max_tokens: int | None = None,
        request_model: str | None = None,
        capture: bool = False,
        redact: Redactor | None = None,
        content_cap: int = DEFAULT_CONTENT_CAP,
    ) -> None:
        self._tracer = tracer
        self._instruments = instruments
        self._provider = provider
        self._capture = capture
        self._redact = redact
        self._content_cap = content_cap
        self._model: str | None = None
        self._finish: Finish | None = None
        self._pending: list[_Pending] = []
        self._counts = {"ok": 0, "repaired": 0, "rejected": 0, "unjudged": 0}
        self._provider_errors = 0
        self._fatal_error: str | None = None
        self._saw_end = False
        self.closed = False
        attributes: dict[str, Any] = {"gen_ai.provider.name": provider}
        if request_model is not None:
            attributes["gen_ai.request.model"] = request_model
        if max_tokens is not None:
            attributes["gen_ai.request.max_tokens"] = max_tokens
        # start_span, never start_as_current_span: the span must not be current across a yield.
        self._span: Span = tracer.start_span(
            "toolwire.turn", kind=SpanKind.INTERNAL, attributes=attributes
        )
        self._context = trace.set_span_in_context(self._span)

    # -- events ------------------------------------------------------------------------------

    def observe(self, event: Event) -> None:
        """Take one output event; cheap for the events telemetry does not look at."""
        handler = _HANDLERS.get(type(event), _unknown)
        if handler is None:
            return
        try:
            handler(self, event)
        except Exception:
            _report("observe")

    def observe_many(self, events: list[Event]) -> None:
        """:meth:`observe` for a batch: one call per batch, not per event (``collect``)."""
        handlers = _HANDLERS
        for event in events:
            handler = handlers.get(type(event), _unknown)
            if handler is None:
                continue
            try:
                handler(self, event)
            except Exception:
                _report("observe")

    def _on_info(self, event: ResponseInfo) -> None:
        span = self._span
        if event.model is not None:
            self._model = event.model
            span.set_attribute("gen_ai.response.model", event.model)
        if event.response_id is not None:
            span.set_attribute("gen_ai.response.id", event.response_id)

    def _on_usage(self, event: Usage) -> None:
        span = self._span
        if event.input_tokens is not None:
            span.set_attribute("gen_ai.usage.input_tokens", event.input_tokens)
        if event.output_tokens is not None:
            span.set_attribute("gen_ai.usage.output_tokens", event.output_tokens)
        if event.reasoning_tokens is not None:
            span.set_attribute("gen_ai.usage.reasoning.output_tokens", event.reasoning_tokens)

    def _on_finish(self, event: Finish) -> None:
        self._finish = event
        span = self._span
        span.set_attribute("gen_ai.response.finish_reasons", [event.raw] if event.raw else [])
        span.set_attribute("toolwire.stop_reason", event.reason)
        span.set_attribute("toolwire.truncated", event.truncated)
        if event.evidence:
            span.set_attribute("toolwire.truncation.evidence", list(event.evidence))
        if event.cut_by is not None:
            span.set_attribute("toolwire.cut_by", event.cut_by)
        if event.truncated:
            self._instruments.record_truncated_turn(
                provider=self._provider, model=self._model, evidence=event.evidence
            )
        self._flush_pending()

    def _on_error(self, event: ProviderError) -> None:
        self._provider_errors += 1
        attributes: dict[str, Any] = {
            "toolwire.provider_error.kind": event.kind,
            "toolwire.provider_error.fatal": event.fatal,
        }
        if event.code is not None:
            attributes["toolwire.provider_error.code"] = event.code
        if self._capture:
            self._put_content(attributes, "toolwire.provider_error.message", event.message)
        self._span.add_event("toolwire.provider_error", attributes)
        if event.fatal and self._fatal_error is None:
            self._fatal_error = event.code or event.kind

    def _on_end(self, event: StreamEnd) -> None:
        self._saw_end = True
        self._span.set_attribute("toolwire.stream.terminated", event.terminated)

    def _on_complete(self, event: ToolCallComplete) -> None:
        self._counts["unjudged"] += 1
        self._instruments.record_call(
            outcome="unjudged",
            verdict=None,
            tool=event.name,
            provider=self._provider,
            model=self._model,
            raw_length=len(event.arguments_raw),
            origin=event.origin,
            family=event.text_family,
        )

    def _on_judged(self, event: ToolCallReady | ToolCallRepaired | ToolCallRejected) -> None:
        verdict = event.verdict
        call = event.call
        outcome = verdict.outcome
        self._counts[outcome] = self._counts.get(outcome, 0) + 1
        self._instruments.record_call(
            outcome=outcome,
            verdict=verdict,
            tool=call.name,
            provider=self._provider,
            model=self._model,
            raw_length=verdict.raw_length or len(call.arguments_raw),
            origin=call.origin,
            family=call.text_family,
        )
        if isinstance(event, ToolCallReady):
            return
        if (call.truncated or verdict.truncated) and self._finish is None:
            # The truncation evidence is on the Finish, which comes after the cut call.
            self._pending.append((event, time.time_ns()))
        else:
            self._child_span(event, None)

    # -- spans -------------------------------------------------------------------------------

    def _flush_pending(self) -> None:
        pending, self._pending = self._pending, []
        for event, observed_at in pending:
            try:
                self._child_span(event, observed_at)
            except Exception:
                _report("child span")

    def _child_span(self, event: ToolCallRepaired | ToolCallRejected, at: int | None) -> None:
        call = event.call
        verdict = event.verdict
        rejected = isinstance(event, ToolCallRejected)
        truncated = call.truncated or verdict.truncated
        attributes: dict[str, Any] = {
            "gen_ai.tool.name": call.name,
            "gen_ai.tool.call.id": call.call_id,
            "gen_ai.tool.type": "function",
            "gen_ai.provider.name": self._provider,
            "toolwire.outcome": verdict.outcome,
            "toolwire.arguments.length": verdict.raw_length or len(call.arguments_raw),
            "toolwire.arguments.form": call.arguments_form,
            "toolwire.call.index": call.index,
            "toolwire.call.closed_by": call.closed_by,
            "toolwire.call.id_synthesized": call.id_synthesized,
            "toolwire.call.origin": call.origin,
            "toolwire.truncated": truncated,
        }
        if call.text_family is not None:
            attributes["toolwire.call.family"] = call.text_family
        if self._model is not None:
            attributes["gen_ai.response.model"] = self._model
        if verdict.position is not None:
            attributes["toolwire.parse.position"] = verdict.position
        if truncated:
            attributes["toolwire.truncation.evidence"] = list(self._evidence())
        if rejected:
            reason = verdict.reason or "unknown"
            attributes["toolwire.reject.reason"] = reason
            attributes["error.type"] = reason
        else:
            attributes["toolwire.repair.kinds"] = list(verdict.repairs)
        if self._capture:
            self._put_content(attributes, "gen_ai.tool.call.arguments", call.arguments_raw)
            if verdict.message is not None:
                self._put_content(attributes, "toolwire.reject.message", verdict.message)
            if verdict.detail is not None:
                self._put_content(attributes, "toolwire.verdict.detail", verdict.detail)
        kind = "reject" if rejected else "repair"
        span = self._tracer.start_span(
            f"toolwire.{kind} {call.name[:128]}",
            context=self._context,
            kind=SpanKind.INTERNAL,
            attributes=attributes,
            start_time=at,
        )
        try:
            if rejected:
                span.set_status(Status(StatusCode.ERROR, attributes["toolwire.reject.reason"]))
        finally:
            span.end(end_time=at)

    def _evidence(self) -> tuple[TruncationEvidence, ...]:
        finish = self._finish
        if finish is not None and finish.evidence:
            return finish.evidence
        # No turn-level evidence (yet): the judge saw the text stop inside a value.
        return ("arguments_unterminated",)

    def _put_content(self, attributes: dict[str, Any], key: str, text: str) -> None:
        try:
            exported = exported_content(text, self._redact, self._content_cap)
        except Exception:
            _report("redact")
            return  # never export what the hook was meant to redact
        if exported is not None:
            attributes[key] = exported

    # -- end ---------------------------------------------------------------------------------

    def close(self, error: BaseException | None = None) -> None:
        """End the run's spans, exactly once, whatever ended it.

        ``error`` is the exception that left the run, if any: closing the generator early
        (``GeneratorExit``) and cancellation are recorded as ``toolwire.ended_early``, anything
        else also as the span's error.
        """
        if self.closed:
            return
        self.closed = True
        span = self._span
        try:
            self._flush_pending()
            counts = self._counts
            span.set_attributes(
                {
                    "toolwire.tool_calls.ok": counts["ok"],
                    "toolwire.tool_calls.repaired": counts["repaired"],
                    "toolwire.tool_calls.rejected": counts["rejected"],
                    "toolwire.tool_calls.unjudged": counts["unjudged"],
                    "toolwire.provider_errors": self._provider_errors,
                    "toolwire.ended_early": not self._saw_end,
                }
            )
            if error is not None and not _is_early_exit(error):
                error_type = type(error).__qualname__
                span.set_attribute("error.type", error_type)
                span.record_exception(error)
                span.set_status(Status(StatusCode.ERROR, error_type))
            elif self._fatal_error is not None:
                span.set_attribute("error.type", self._fatal_error)
                span.set_status(Status(StatusCode.ERROR, "provider error"))
        except Exception:
            _report("close")
        finally:
            try:
                span.end()
            except Exception:
                _report("end")


def _unknown(observer: TurnObserver, event: Event) -> None:
    """First sight of an event type: learn whether it derives from a known one."""
    for known, handler in list(_HANDLERS.items()):
        if handler is not None and handler is not _unknown and isinstance(event, known):
            _HANDLERS[type(event)] = handler
            handler(observer, event)
            return
    _HANDLERS[type(event)] = None


_Handler = Callable[[TurnObserver, Any], None]
_HANDLERS: dict[type[Event], _Handler | None] = {
    # The hot path: per-token events telemetry does not look at.
    TextDelta: None,
    ReasoningDelta: None,
    ToolCallArgumentsDelta: None,
    ToolCallStarted: None,
    ResponseInfo: TurnObserver._on_info,
    Usage: TurnObserver._on_usage,
    Finish: TurnObserver._on_finish,
    ProviderError: TurnObserver._on_error,
    StreamEnd: TurnObserver._on_end,
    ToolCallComplete: TurnObserver._on_complete,
    ToolCallReady: TurnObserver._on_judged,
    ToolCallRepaired: TurnObserver._on_judged,
    ToolCallRejected: TurnObserver._on_judged,
}
