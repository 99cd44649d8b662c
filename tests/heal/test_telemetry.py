"""Healing's telemetry: a span per healed call and per retry, counters, content off by default.

SDK providers with in-memory exporters are passed to the transport (never installed globally);
every span started must end exactly once, on every path, the client going away included.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import anyio
import httpx
import pytest
from e2e.server import chat_chunk, cut_write_reply, sse, text_reply, tool_calls_reply
from opentelemetry import metrics, trace
from opentelemetry.context import Context
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader
from opentelemetry.sdk.trace import ReadableSpan, Span, SpanProcessor, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import StatusCode

import toolwire
from toolwire.core.errors import ConfigurationError
from toolwire.heal import HealTelemetry
from toolwire.heal import telemetry as heal_telemetry

from .client import GOOD_WRITE, SDK_ON_TRIO_LEAK, request
from .upstream import HealUpstream, Reply, Stall, running_upstream, upstream_went_away

pytestmark = [pytest.mark.anyio, pytest.mark.filterwarnings(SDK_ON_TRIO_LEAK)]


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
def upstream() -> Iterator[HealUpstream]:
    with running_upstream() as scripted:
        yield scripted


@pytest.fixture
def spans() -> Iterator[tuple[TracerProvider, InMemorySpanExporter]]:
    provider = TracerProvider()
    counter = EndCounter()
    exporter = InMemorySpanExporter()
    provider.add_span_processor(counter)
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    yield provider, exporter
    provider.shutdown()
    never_ended = [name for key, name in counter.started.items() if key not in counter.ended]
    assert not never_ended, f"spans never ended: {never_ended}"
    assert all(count == 1 for count in counter.ended.values()), counter.ended


@pytest.fixture
def metric_reader() -> Iterator[InMemoryMetricReader]:
    reader = InMemoryMetricReader()
    return reader


@pytest.fixture(autouse=True)
def _fresh_failure_log() -> Iterator[None]:
    heal_telemetry._reported.clear()
    return


def _points(reader: InMemoryMetricReader, name: str) -> dict[tuple[tuple[str, Any], ...], int]:
    """``sorted attributes -> value`` of every data point of the counter ``name``."""
    data = reader.get_metrics_data()
    found: dict[tuple[tuple[str, Any], ...], int] = {}
    if data is None:
        return found
    for resource in data.resource_metrics:
        for scope in resource.scope_metrics:
            for metric in scope.metrics:
                if metric.name == name:
                    for point in metric.data.data_points:  # type: ignore[union-attr]
                        found[tuple(sorted(point.attributes.items()))] = point.value  # type: ignore[union-attr]
    return found


def _by_name(exporter: InMemorySpanExporter) -> dict[str, list[ReadableSpan]]:
    found: dict[str, list[ReadableSpan]] = {}
    for span in exporter.get_finished_spans():
        found.setdefault(span.name, []).append(span)
    return found


def _with_usage(body: bytes, prompt: int, completion: int) -> bytes:
    usage = {
        **chat_chunk(),
        "choices": [],
        "usage": {
            "prompt_tokens": prompt,
            "completion_tokens": completion,
            "total_tokens": prompt + completion,
        },
    }
    return body.replace(b"data: [DONE]\n\n", sse([usage]))


async def _exchange(
    upstream: HealUpstream,
    *,
    provider: str = "llama-cpp",
    close_after: int | None = None,
    **options: Any,
) -> bytes:
    transport = toolwire.HealingTransport(
        wrapped=httpx.AsyncHTTPTransport(), provider=provider, **options
    )
    async with httpx.AsyncClient(transport=transport, base_url=upstream.base_url) as http:
        async with http.stream("POST", "/chat/completions", json=request()) as response:
            body = b""
            async for piece in response.aiter_bytes():
                body += piece
                if close_after is not None and len(body) >= close_after:
                    break
    return body


async def test_a_healed_call_and_its_retry_each_get_a_span(
    anyio_backend: str,
    upstream: HealUpstream,
    spans: tuple[TracerProvider, InMemorySpanExporter],
    metric_reader: InMemoryMetricReader,
) -> None:
    tracer_provider, exporter = spans
    upstream.script(
        Reply(cut_write_reply()),
        Reply(_with_usage(tool_calls_reply(("call_fixed", "write", GOOD_WRITE)), 150, 16)),
    )
    await _exchange(
        upstream,
        tracer_provider=tracer_provider,
        meter_provider=MeterProvider(metric_readers=[metric_reader]),
        max_tokens_ceiling=48,
    )
    found = _by_name(exporter)
    (heal,) = found["toolwire.heal"]
    (call,) = found["toolwire.heal.call write"]
    (retry,) = found["toolwire.heal.retry"]
    assert len(found["toolwire.turn"]) == 2  # the pipeline's span of each response
    assert call.parent is not None
    assert call.parent.span_id == heal.context.span_id
    assert retry.parent is not None
    assert retry.parent.span_id == heal.context.span_id
    assert dict(heal.attributes or {}) == {
        "gen_ai.provider.name": "llama.cpp",
        "toolwire.heal.outcome": "healed",
        "toolwire.heal.retries": 1,
        "toolwire.heal.retry.input_tokens": 150,
        "toolwire.heal.retry.output_tokens": 16,
    }
    call_attributes = dict(call.attributes or {})
    assert call_attributes["toolwire.heal.outcome"] == "healed"
    assert call_attributes["toolwire.heal.cause"] == "token_limit"
    assert call_attributes["toolwire.reject.reason"] == "truncated"
    assert call_attributes["toolwire.cut_by"] == "token_limit"
    assert call_attributes["gen_ai.tool.call.id"].startswith("call__0_write")
    assert "toolwire.heal.message" not in call_attributes  # content is off by default
    assert call.status.status_code != StatusCode.ERROR
    retry_attributes = dict(retry.attributes or {})
    assert retry_attributes["toolwire.heal.cause"] == "token_limit"
    assert retry_attributes["toolwire.heal.retry.outcome"] == "accepted"
    assert retry_attributes["gen_ai.request.max_tokens"] == 48
    assert retry_attributes["gen_ai.usage.output_tokens"] == 16
    calls = _points(metric_reader, "toolwire.heal.tool_calls")
    assert list(calls.values()) == [1]
    assert dict(next(iter(calls)))["toolwire.heal.outcome"] == "healed"
    retries = _points(metric_reader, "toolwire.heal.retries")
    assert [dict(key)["toolwire.heal.cause"] for key in retries] == ["token_limit"]
    tokens = {
        dict(key)["gen_ai.token.type"]: value
        for key, value in _points(metric_reader, "toolwire.heal.retry.tokens").items()
    }
    assert tokens == {"input": 150, "output": 16}


async def test_an_exchange_with_nothing_rejected_has_no_heal_span(
    anyio_backend: str,
    upstream: HealUpstream,
    spans: tuple[TracerProvider, InMemorySpanExporter],
    metric_reader: InMemoryMetricReader,
) -> None:
    tracer_provider, exporter = spans
    upstream.script(Reply(tool_calls_reply(("call_ok", "write", GOOD_WRITE))))
    await _exchange(
        upstream,
        tracer_provider=tracer_provider,
        meter_provider=MeterProvider(metric_readers=[metric_reader]),
    )
    assert set(_by_name(exporter)) == {"toolwire.turn"}
    calls = _points(metric_reader, "toolwire.heal.tool_calls")
    assert [dict(key)["toolwire.heal.outcome"] for key in calls] == ["passed_through"]


async def test_a_failed_healing_says_so(
    anyio_backend: str,
    upstream: HealUpstream,
    spans: tuple[TracerProvider, InMemorySpanExporter],
    metric_reader: InMemoryMetricReader,
) -> None:
    tracer_provider, exporter = spans
    bad = tool_calls_reply(("call_bad", "write", '{"path": "notes.txt"}'))
    upstream.script(Reply(bad), Reply(bad), Reply(bad))
    body = await _exchange(
        upstream,
        provider="openai-chat",
        tracer_provider=tracer_provider,
        meter_provider=MeterProvider(metric_readers=[metric_reader]),
    )
    assert b"toolwire_heal_failed" in body
    found = _by_name(exporter)
    outcomes = [
        dict(s.attributes or {})["toolwire.heal.outcome"]
        for s in sorted(found["toolwire.heal.call write"], key=lambda s: s.start_time or 0)
    ]
    assert outcomes == ["rejected_again", "rejected_again", "failed"]
    (heal,) = found["toolwire.heal"]
    assert heal.status.status_code == StatusCode.ERROR
    assert dict(heal.attributes or {})["toolwire.heal.outcome"] == "failed"
    assert [
        dict(s.attributes or {})["toolwire.heal.retry.outcome"]
        for s in found["toolwire.heal.retry"]
    ] == ["rejected", "rejected"]
    calls = _points(metric_reader, "toolwire.heal.tool_calls")
    assert {dict(key)["toolwire.heal.outcome"]: value for key, value in calls.items()} == {
        "failed": 1
    }
    assert sum(_points(metric_reader, "toolwire.heal.retries").values()) == 2


async def test_content_is_captured_only_when_asked_and_through_redact(
    anyio_backend: str,
    upstream: HealUpstream,
    spans: tuple[TracerProvider, InMemorySpanExporter],
) -> None:
    tracer_provider, exporter = spans
    upstream.script(Reply(cut_write_reply()), Reply(text_reply("Too big.")))
    await _exchange(
        upstream,
        tracer_provider=tracer_provider,
        capture_content=True,
        redact=lambda text: text.replace("user_name", "[user]"),
    )
    (call,) = _by_name(exporter)["toolwire.heal.call write"]
    message = dict(call.attributes or {})["toolwire.heal.message"]
    assert "cut off at the output-token limit" in message
    assert "[user]" in message
    assert "user_name" not in message
    # The retry answered in words: no call took the cut call's place.
    assert dict(call.attributes or {})["toolwire.heal.outcome"] == "no_call"


async def test_every_span_ends_when_the_client_goes_away_mid_retry(
    anyio_backend: str,
    upstream: HealUpstream,
    spans: tuple[TracerProvider, InMemorySpanExporter],
) -> None:
    tracer_provider, exporter = spans
    upstream.script(Reply(cut_write_reply()), Stall(text_reply("Thinking about it..."), events=2))
    transport = toolwire.HealingTransport(
        wrapped=httpx.AsyncHTTPTransport(), provider="llama-cpp", tracer_provider=tracer_provider
    )
    async with httpx.AsyncClient(transport=transport, base_url=upstream.base_url) as http:
        with anyio.move_on_after(0.5):
            async with http.stream("POST", "/chat/completions", json=request()) as response:
                async for _ in response.aiter_bytes():
                    pass
    assert await upstream_went_away(upstream)
    found = _by_name(exporter)
    (heal,) = found["toolwire.heal"]
    assert dict(heal.attributes or {})["toolwire.heal.outcome"] == "cancelled"
    (retry,) = found["toolwire.heal.retry"]
    assert dict(retry.attributes or {})["toolwire.heal.retry.outcome"] == "cancelled"
    (call,) = found["toolwire.heal.call write"]
    assert dict(call.attributes or {})["toolwire.heal.outcome"] == "cancelled"


class _BrokenTracerProvider:
    def get_tracer(self, *args: Any, **kwargs: Any) -> Any:
        raise RuntimeError("tracing is broken")


async def test_broken_telemetry_never_breaks_the_exchange(
    anyio_backend: str, upstream: HealUpstream, caplog: pytest.LogCaptureFixture
) -> None:
    upstream.script(
        Reply(cut_write_reply()), Reply(tool_calls_reply(("call_fixed", "write", GOOD_WRITE)))
    )
    body = await _exchange(upstream, tracer_provider=_BrokenTracerProvider())  # type: ignore[arg-type]
    calls = [
        fragment
        for line in body.split(b"\n\n")
        if line.startswith(b"data: {")
        for choice in json.loads(line[6:]).get("choices", ())
        for fragment in choice["delta"].get("tool_calls") or ()
    ]
    assert [c["id"] for c in calls] == ["call_fixed"]
    assert any("toolwire heal telemetry failed" in r.getMessage() for r in caplog.records)


@pytest.mark.parametrize(
    ("option", "value"),
    [("redact", "not callable"), ("capture_content", "yes"), ("content_cap", -1)],
)
def test_heal_telemetry_checks_its_settings_as_the_pipeline_does(
    option: str, value: object
) -> None:
    with pytest.raises(ConfigurationError, match=option):
        HealTelemetry(**{option: value})  # type: ignore[arg-type]


def test_an_exchange_nothing_could_record_gets_the_null_observer(
    spans: tuple[TracerProvider, InMemorySpanExporter],
) -> None:
    """The API's own no-op providers record nothing: the exchange skips OpenTelemetry (issue
    20); a provider that records gets the exchange's observer."""
    silent = HealTelemetry(
        tracer_provider=trace.NoOpTracerProvider(), meter_provider=metrics.NoOpMeterProvider()
    )
    assert isinstance(silent.start("openai"), heal_telemetry.NullHealObserver)
    recording = HealTelemetry(tracer_provider=spans[0], meter_provider=metrics.NoOpMeterProvider())
    assert isinstance(recording.start("openai"), heal_telemetry.HealRun)
