"""The telemetry stage for hand-built pipelines, and request_model on collect."""

from __future__ import annotations

from collections.abc import AsyncIterator

import anyio
import pytest
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

import toolwire
import toolwire.events
from toolwire.core.events import Event
from toolwire.stages.telemetry import TelemetryStage
from toolwire.testing import check_stage

from ._telemetry_helpers import chat_chunk, sse_body

pytestmark = pytest.mark.anyio

BAD = sse_body(
    [
        chat_chunk(
            {
                "tool_calls": [
                    {"index": 0, "id": "c1", "function": {"name": "read", "arguments": "{path:1"}}
                ]
            }
        ),
        chat_chunk({}, "tool_calls"),
    ]
)


def _events(body: bytes) -> AsyncIterator[Event]:
    # The stream itself (an async generator): the stage must close it when it is closed.
    return toolwire.stream(body, tracer_provider=TracerProvider(), meter_provider=MeterProvider())


async def test_the_stage_reports_a_rejection_as_a_child_of_its_own_turn_span(
    tracer_provider: TracerProvider,
    span_exporter: InMemorySpanExporter,
    meter_provider: MeterProvider,
) -> None:
    stage = TelemetryStage(
        "llama.cpp",
        tracer_provider=tracer_provider,
        meter_provider=meter_provider,
        request_model="smollm2",
    )
    events = [event async for event in stage(_events(BAD))]
    assert any(isinstance(event, toolwire.events.ToolCallRejected) for event in events)
    spans = span_exporter.get_finished_spans()
    (turn,) = [span for span in spans if span.name == "toolwire.turn"]
    (reject,) = [span for span in spans if span.name == "toolwire.reject read"]
    assert reject.parent is not None
    assert reject.parent.span_id == turn.context.span_id
    assert turn.attributes is not None
    assert turn.attributes["gen_ai.provider.name"] == "llama.cpp"
    assert turn.attributes["gen_ai.request.model"] == "smollm2"


async def test_the_stage_ends_its_span_once_on_early_close(
    tracer_provider: TracerProvider, span_exporter: InMemorySpanExporter
) -> None:
    stage = TelemetryStage(tracer_provider=tracer_provider)
    output = stage(_events(BAD))
    await output.__anext__()
    await output.aclose()  # type: ignore[attr-defined]
    (turn,) = [s for s in span_exporter.get_finished_spans() if s.name == "toolwire.turn"]
    assert turn.end_time is not None


async def test_the_stage_passes_the_conformance_kit(tracer_provider: TracerProvider) -> None:
    await check_stage(TelemetryStage(tracer_provider=tracer_provider))


async def test_collect_names_the_requested_model(
    tracer_provider: TracerProvider, span_exporter: InMemorySpanExporter
) -> None:
    await toolwire.collect(BAD, tracer_provider=tracer_provider, request_model="gpt-x")
    (turn,) = [s for s in span_exporter.get_finished_spans() if s.name == "toolwire.turn"]
    assert turn.attributes is not None
    assert turn.attributes["gen_ai.request.model"] == "gpt-x"


async def test_a_bad_redact_hook_fails_when_the_stage_is_made() -> None:
    with pytest.raises(toolwire.ConfigurationError):
        TelemetryStage(redact="nope")  # type: ignore[arg-type]


async def test_cancellation_through_the_stage_ends_the_span(
    tracer_provider: TracerProvider, span_exporter: InMemorySpanExporter
) -> None:
    async def hanging() -> AsyncIterator[Event]:
        yield toolwire.events.TextDelta(text="x")
        await anyio.sleep_forever()

    with anyio.move_on_after(0.05):
        async for _ in TelemetryStage(tracer_provider=tracer_provider)(hanging()):
            pass
    (turn,) = [s for s in span_exporter.get_finished_spans() if s.name == "toolwire.turn"]
    assert turn.end_time is not None
