"""The telemetry stage: the spans and metrics of ``collect``/``stream``, for hand-built pipelines.

``collect`` and ``stream`` observe their output already; this stage is for callers who compose
their own chain of stages (or run a second observer elsewhere in it). It observes every event
that passes, unchanged, and ends the turn span exactly once: at the end of the input, on early
close, on cancellation, or when an exception passes through. Nothing is made current across a
``yield``.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator, AsyncIterator

from opentelemetry import metrics, trace

from ...core.events import Event
from .observer import Redactor, Telemetry, observe_turn
from .observing import observed_events

__all__ = ["TelemetryStage"]


class TelemetryStage:
    """Observe a run's events with OpenTelemetry; the events pass through untouched."""

    def __init__(
        self,
        provider: str = "openai",
        *,
        tracer_provider: trace.TracerProvider | None = None,
        meter_provider: metrics.MeterProvider | None = None,
        capture_content: bool | None = None,
        redact: Redactor | None = None,
        max_tokens: int | None = None,
        request_model: str | None = None,
    ) -> None:
        # Checked now (a bad redact hook fails here, not in the middle of a run).
        Telemetry(capture_content=capture_content, redact=redact)
        self.provider = provider
        self.max_tokens = max_tokens
        self.request_model = request_model
        self.tracer_provider = tracer_provider
        self.meter_provider = meter_provider
        self.capture_content = capture_content
        self.redact = redact

    def __call__(self, events: AsyncIterator[Event], /) -> AsyncIterator[Event]:
        """Observe ``events`` (one run); a fresh turn span per call."""
        return self._observe(events)

    async def _observe(self, events: AsyncIterator[Event]) -> AsyncGenerator[Event]:
        observer = observe_turn(
            self.provider,
            max_tokens=self.max_tokens,
            request_model=self.request_model,
            tracer_provider=self.tracer_provider,
            meter_provider=self.meter_provider,
            capture_content=self.capture_content,
            redact=self.redact,
        )
        observing = observed_events(events, observer)
        try:
            async for event in observing:
                yield event
        finally:
            await observing.aclose()
