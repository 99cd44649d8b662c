"""Content capture (opt-in, capped, redacted) and telemetry failures that never break a stream."""

from __future__ import annotations

import logging
from typing import Any

import pytest
from opentelemetry import metrics, trace
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

import toolwire
from toolwire.core.errors import ConfigurationError
from toolwire.core.events import Finish, StreamEnd
from toolwire.stages.telemetry.observer import (
    _METER_PLACEHOLDER,
    CAPTURE_CONTENT_ENV,
    NullObserver,
    Telemetry,
    capture_content_from_env,
    observe_turn,
    start_observer,
)

from ._telemetry_helpers import by_name, complete, hand_judge, judge_by_hand, rejected, repaired

RAW = "{path: 'secret.txt', content: 'token=abc123'}"
BODY = (
    b'data: {"id":"c","model":"m","choices":[{"index":0,"delta":{"tool_calls":[{"index":0,'
    b'"id":"call_1","type":"function","function":{"name":"write","arguments":'
    b'"{path: \'secret.txt\', content: \'token=abc123\'}"}}]}}]}\n\n'
    b'data: {"id":"c","model":"m","choices":[{"index":0,"delta":{},'
    b'"finish_reason":"tool_calls"}]}\n\ndata: [DONE]\n\n'
)
REJECT_WRITE = hand_judge({"write": rejected("schema")})
REPAIR_WRITE = hand_judge({"write": repaired("bare_keys", "single_quoted_keys")})


def _one_turn(
    tracer_provider: TracerProvider, meter_provider: MeterProvider, **options: Any
) -> None:
    observer = Telemetry(
        tracer_provider=tracer_provider, meter_provider=meter_provider, **options
    ).start("openai")
    observer.observe(judge_by_hand(complete("write", RAW), rejected("schema")))
    observer.observe(Finish(reason="tool_calls", raw="tool_calls"))
    observer.observe(StreamEnd())
    observer.close()


def _reject_attributes(exporter: InMemorySpanExporter) -> dict[str, Any]:
    (span,) = by_name(exporter.get_finished_spans(), "toolwire.reject write")
    return dict(span.attributes or {})


@pytest.fixture
def no_env(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(CAPTURE_CONTENT_ENV, raising=False)


# -- content -----------------------------------------------------------------------------------


@pytest.mark.usefixtures("no_env")
def test_content_is_off_by_default(
    tracer_provider: TracerProvider, meter_provider: MeterProvider,
    span_exporter: InMemorySpanExporter,
) -> None:
    _one_turn(tracer_provider, meter_provider)
    attributes = _reject_attributes(span_exporter)
    assert not {"gen_ai.tool.call.arguments", "toolwire.reject.message",
                "toolwire.verdict.detail"} & set(attributes)
    assert not any("abc123" in str(value) for value in attributes.values())


@pytest.mark.usefixtures("no_env")
def test_content_opt_in_by_parameter(
    tracer_provider: TracerProvider, meter_provider: MeterProvider,
    span_exporter: InMemorySpanExporter,
) -> None:
    _one_turn(tracer_provider, meter_provider, capture_content=True)
    attributes = _reject_attributes(span_exporter)
    assert attributes["gen_ai.tool.call.arguments"] == RAW
    assert attributes["toolwire.reject.message"].startswith("The arguments were rejected")
    assert attributes["toolwire.verdict.detail"] == "parser stopped (schema)"


@pytest.mark.parametrize(
    ("value", "expected"),
    [("true", True), ("TRUE", True), ("SPAN_ONLY", True), ("false", False), ("", False),
     ("NO_CONTENT", False)],
)
def test_content_environment_variable(value: str, expected: bool) -> None:
    assert capture_content_from_env({CAPTURE_CONTENT_ENV: value}) is expected


def test_content_opt_in_by_environment_and_parameter_wins(
    tracer_provider: TracerProvider, meter_provider: MeterProvider,
    span_exporter: InMemorySpanExporter, monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv(CAPTURE_CONTENT_ENV, "true")
    _one_turn(tracer_provider, meter_provider)
    assert _reject_attributes(span_exporter)["gen_ai.tool.call.arguments"] == RAW
    span_exporter.clear()
    _one_turn(tracer_provider, meter_provider, capture_content=False)
    assert "gen_ai.tool.call.arguments" not in _reject_attributes(span_exporter)


def test_content_is_capped(
    tracer_provider: TracerProvider, meter_provider: MeterProvider,
    span_exporter: InMemorySpanExporter,
) -> None:
    _one_turn(tracer_provider, meter_provider, capture_content=True, content_cap=10)
    assert _reject_attributes(span_exporter)["gen_ai.tool.call.arguments"] == (
        f"{RAW[:10]}… ({len(RAW)} characters)"
    )


def test_redaction_hook(
    tracer_provider: TracerProvider, meter_provider: MeterProvider,
    span_exporter: InMemorySpanExporter,
) -> None:
    def redact(text: str) -> str | None:
        if text.startswith("parser"):
            return None  # drop the detail altogether
        return text.replace("abc123", "[REDACTED]")

    _one_turn(tracer_provider, meter_provider, capture_content=True, redact=redact)
    attributes = _reject_attributes(span_exporter)
    assert attributes["gen_ai.tool.call.arguments"] == RAW.replace("abc123", "[REDACTED]")
    assert "toolwire.verdict.detail" not in attributes


@pytest.mark.anyio
async def test_failing_redaction_drops_content_and_logs_once(
    tracer_provider: TracerProvider, meter_provider: MeterProvider,
    span_exporter: InMemorySpanExporter, caplog: pytest.LogCaptureFixture,
) -> None:
    def redact(text: str) -> str:
        raise ValueError("redactor bug")

    for _ in range(2):
        turn = await toolwire.collect(
            BODY, judge=False, stages=[REJECT_WRITE], capture_content=True, redact=redact,
            tracer_provider=tracer_provider, meter_provider=meter_provider,
        )
        assert turn.calls[0].outcome == "rejected"
    for span in by_name(span_exporter.get_finished_spans(), "toolwire.reject write"):
        assert not any("abc123" in str(value) for value in (span.attributes or {}).values())
    logged = [r for r in caplog.records if r.name == "toolwire.telemetry"]
    assert len(logged) == 1
    assert "redact" in logged[0].getMessage()


def test_bad_configuration_raises() -> None:
    with pytest.raises(ConfigurationError):
        Telemetry(redact="not callable")  # type: ignore[arg-type]
    with pytest.raises(ConfigurationError):
        Telemetry(capture_content="yes")  # type: ignore[arg-type]
    with pytest.raises(ConfigurationError):
        Telemetry(content_cap=-1)


# -- failures inside OpenTelemetry -------------------------------------------------------------


class BrokenTracerProvider(trace.NoOpTracerProvider):
    def get_tracer(self, *args: Any, **kwargs: Any) -> trace.Tracer:
        raise RuntimeError("tracer provider bug")


class _BrokenSpan(trace.NonRecordingSpan):
    def set_attribute(self, key: str, value: Any) -> None:
        raise RuntimeError("span bug")

    def set_attributes(self, attributes: Any) -> None:
        raise RuntimeError("span bug")

    def end(self, end_time: int | None = None) -> None:
        raise RuntimeError("end bug")


class _BrokenTracer(trace.NoOpTracer):
    def start_span(self, *args: Any, **kwargs: Any) -> trace.Span:
        return _BrokenSpan(trace.INVALID_SPAN_CONTEXT)


class BrokenSpansProvider(trace.NoOpTracerProvider):
    def get_tracer(self, *args: Any, **kwargs: Any) -> trace.Tracer:
        return _BrokenTracer()


class _BrokenCounter(metrics.NoOpCounter):
    def add(self, amount: int | float, attributes: Any = None, context: Any = None) -> None:
        raise RuntimeError("counter bug")


class _BrokenMeter(metrics.NoOpMeter):
    def create_counter(self, name: str, unit: str = "", description: str = "") -> metrics.Counter:
        return _BrokenCounter(name)


class BrokenMeterProvider(metrics.NoOpMeterProvider):
    def get_meter(self, name: str, *args: Any, **kwargs: Any) -> metrics.Meter:
        return _BrokenMeter(name)


class RaisingMeterProvider(metrics.NoOpMeterProvider):
    def get_meter(self, name: str, *args: Any, **kwargs: Any) -> metrics.Meter:
        raise RuntimeError("meter provider bug")


@pytest.fixture
def telemetry_log(caplog: pytest.LogCaptureFixture) -> pytest.LogCaptureFixture:
    caplog.set_level(logging.ERROR, logger="toolwire.telemetry")
    return caplog


@pytest.mark.anyio
@pytest.mark.parametrize(
    ("tracer_provider_", "meter_provider_", "site"),
    [
        (BrokenTracerProvider(), None, "start"),
        (BrokenSpansProvider(), None, "observe"),
        (None, BrokenMeterProvider(), "observe"),
        (None, RaisingMeterProvider(), "metrics"),
    ],
    ids=["get_tracer raises", "spans raise", "counters raise", "get_meter raises"],
)
async def test_telemetry_failure_never_breaks_the_stream(
    tracer_provider_: trace.TracerProvider | None,
    meter_provider_: metrics.MeterProvider | None,
    site: str,
    telemetry_log: pytest.LogCaptureFixture,
) -> None:
    for _ in range(3):
        turn = await toolwire.collect(
            BODY, judge=False, stages=[REPAIR_WRITE], capture_content=True,
            tracer_provider=tracer_provider_ or trace.NoOpTracerProvider(),
            meter_provider=meter_provider_ or metrics.NoOpMeterProvider(),
        )
        assert [call.outcome for call in turn.calls] == ["repaired"]
        events = [
            event async for event in toolwire.stream(
                BODY, judge=False, stages=[REPAIR_WRITE],
                tracer_provider=tracer_provider_ or trace.NoOpTracerProvider(),
                meter_provider=meter_provider_ or metrics.NoOpMeterProvider(),
            )
        ]
        assert type(events[-1]).__name__ == "StreamEnd"
    logged = [r.getMessage() for r in telemetry_log.records if r.name == "toolwire.telemetry"]
    assert logged, "a telemetry failure is logged"
    assert any(site in message for message in logged)
    assert len(logged) == len(set(logged)), "each kind of failure is logged once"


def test_observe_turn_falls_back_to_a_null_observer() -> None:
    observer = observe_turn("openai", tracer_provider=BrokenTracerProvider())
    assert isinstance(observer, NullObserver)
    observer.observe(StreamEnd())
    observer.close(None)


# -- providers that record nothing -------------------------------------------------------------


class _NoTracer(trace.NoOpTracerProvider):
    """A no-op provider by type, which counts how often it is asked for a tracer."""

    asked = 0

    def get_tracer(self, *args: Any, **kwargs: Any) -> trace.Tracer:
        type(self).asked += 1
        return super().get_tracer(*args, **kwargs)


def test_a_run_that_nothing_could_record_makes_no_opentelemetry_call(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """No provider set anywhere, or the API's own no-op ones: no span is opened, no tracer or
    meter asked for (issue 20: ~25 µs of a healed request); the run sees a NullObserver."""

    asked: list[object] = []

    def no_call(*args: Any, **kwargs: Any) -> Any:
        asked.append(args)  # (an exception would be caught: telemetry never breaks a run)
        raise RuntimeError("OpenTelemetry was asked for a tracer or a meter")

    # The global providers as the API hands them out while no application has set one.
    monkeypatch.setattr(trace, "get_tracer_provider", trace.ProxyTracerProvider)
    monkeypatch.setattr(metrics, "get_meter_provider", _METER_PLACEHOLDER)
    monkeypatch.setattr(trace, "get_tracer", no_call)
    monkeypatch.setattr(trace.NoOpTracerProvider, "get_tracer", no_call)
    monkeypatch.setattr(trace.ProxyTracerProvider, "get_tracer", no_call)
    for settings in (
        Telemetry(),  # the global providers, while no application has set one
        Telemetry(
            tracer_provider=trace.NoOpTracerProvider(), meter_provider=metrics.NoOpMeterProvider()
        ),
    ):
        assert not settings.records()
        assert isinstance(start_observer(settings, "openai"), NullObserver)
    assert asked == []


def test_any_provider_that_may_record_is_used(monkeypatch: pytest.MonkeyPatch) -> None:
    """A real tracer provider, a real meter provider, a subclass of a no-op provider (it may do
    anything), or a global provider set by the application: the run is observed."""
    _NoTracer.asked = 0
    assert Telemetry(tracer_provider=TracerProvider()).records()
    assert Telemetry(meter_provider=MeterProvider()).records()
    subclass = Telemetry(tracer_provider=_NoTracer(), meter_provider=metrics.NoOpMeterProvider())
    assert subclass.records()
    assert not isinstance(start_observer(subclass, "openai"), NullObserver)
    assert _NoTracer.asked == 1
    monkeypatch.setattr(trace, "get_tracer_provider", TracerProvider)  # set after it was built
    assert Telemetry().records()


def test_a_placeholder_provider_records_once_a_global_one_is_set(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The API's placeholder providers, passed in, hand everything to the global providers
    once an application sets them: silent before, recording after."""
    placeholder: Any = _METER_PLACEHOLDER
    assert placeholder is not None
    settings = Telemetry(tracer_provider=trace.ProxyTracerProvider(), meter_provider=placeholder())
    monkeypatch.setattr(trace, "get_tracer_provider", trace.ProxyTracerProvider)
    monkeypatch.setattr(metrics, "get_meter_provider", placeholder)
    assert not settings.records()
    monkeypatch.setattr(trace, "get_tracer_provider", TracerProvider)
    assert settings.records()
    monkeypatch.setattr(trace, "get_tracer_provider", trace.ProxyTracerProvider)
    monkeypatch.setattr(metrics, "get_meter_provider", MeterProvider)
    assert settings.records()
