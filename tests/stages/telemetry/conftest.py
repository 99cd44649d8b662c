"""Telemetry fixtures: SDK providers with in-memory exporters, never installed globally."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from opentelemetry.context import Context
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader
from opentelemetry.sdk.trace import ReadableSpan, Span, SpanProcessor, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from toolwire.stages.telemetry import observer as telemetry


@pytest.fixture(params=[pytest.param("asyncio", id="asyncio"), pytest.param("trio", id="trio")])
def anyio_backend(request: pytest.FixtureRequest) -> str:
    """Both backends; a missing trio fails the test (no importorskip)."""
    backend: str = request.param
    if backend == "trio":
        import trio  # noqa: F401
    return backend


@pytest.fixture
def span_exporter() -> InMemorySpanExporter:
    return InMemorySpanExporter()


class EndCounter(SpanProcessor):
    """Counts every start and end per span, to check that each span ends exactly once."""

    def __init__(self) -> None:
        self.started: dict[int, str] = {}
        self.ended: dict[int, int] = {}

    def on_start(self, span: Span, parent_context: Context | None = None) -> None:
        self.started[span.context.span_id] = span.name

    def on_end(self, span: ReadableSpan) -> None:
        assert span.context is not None
        self.ended[span.context.span_id] = self.ended.get(span.context.span_id, 0) + 1


@pytest.fixture
def tracer_provider(
    span_exporter: InMemorySpanExporter, caplog: pytest.LogCaptureFixture
) -> Iterator[TracerProvider]:
    """An SDK provider; at teardown, every span it started must have ended exactly once."""
    provider = TracerProvider()
    counter = EndCounter()
    provider.add_span_processor(counter)
    provider.add_span_processor(SimpleSpanProcessor(span_exporter))
    yield provider
    provider.shutdown()
    never_ended = [name for key, name in counter.started.items() if key not in counter.ended]
    assert not never_ended, f"spans never ended: {never_ended}"
    assert all(count == 1 for count in counter.ended.values()), counter.ended
    # The SDK ignores a second end() but logs it: no such record may exist.
    assert not [r for r in caplog.records if "ended span" in r.getMessage()]


@pytest.fixture
def metric_reader() -> InMemoryMetricReader:
    return InMemoryMetricReader()


@pytest.fixture
def meter_provider(metric_reader: InMemoryMetricReader) -> Iterator[MeterProvider]:
    provider = MeterProvider(metric_readers=[metric_reader])
    yield provider
    provider.shutdown()


@pytest.fixture(autouse=True)
def _fresh_failure_log() -> Iterator[None]:
    """Each test sees the "logged once" failure sites afresh."""
    telemetry._reported.clear()
    yield
    telemetry._reported.clear()
