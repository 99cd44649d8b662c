"""The turn observer fed events directly: spans, attributes and metrics of one turn."""

from __future__ import annotations

import pytest
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import SpanKind, StatusCode

from toolwire.core.events import (
    Finish,
    ResponseInfo,
    StreamEnd,
    TextDelta,
    ToolCallArgumentsDelta,
    ToolCallStarted,
    Usage,
)
from toolwire.stages.telemetry.metrics import OTHER, UNKNOWN_MODEL, Instruments
from toolwire.stages.telemetry.observer import Telemetry, TurnObserver

from ._telemetry_helpers import (
    OK,
    by_name,
    complete,
    counts,
    judge_by_hand,
    points,
    rejected,
    repaired,
)


def _observer(
    tracer_provider: TracerProvider, meter_provider: MeterProvider, **options: object
) -> TurnObserver:
    telemetry = Telemetry(
        tracer_provider=tracer_provider, meter_provider=meter_provider, **options  # type: ignore[arg-type]
    )
    return telemetry.start("openai", max_tokens=64, request_model="gpt-req")


def _full_turn(observer: TurnObserver) -> None:
    observer.observe(ResponseInfo(model="gpt-test", response_id="resp-1"))
    observer.observe(TextDelta(text="Writing."))
    observer.observe(ToolCallStarted(call_id="c0", name="write", index=0))
    observer.observe(ToolCallArgumentsDelta(call_id="c0", index=0, delta="{path: 'a'}"))
    observer.observe(judge_by_hand(complete("write", "{path: 'a'}", call_id="c0"),
                                   repaired("bare_keys", "single_quoted_keys")))
    observer.observe(judge_by_hand(complete("read", '{"p": 1}', call_id="c1", index=1), OK))
    cut = complete("write", '{"path": "b", "content": "ab', call_id="c2", index=2, truncated=True)
    observer.observe(judge_by_hand(cut, rejected("truncated", position=27)))
    observer.observe(Usage(input_tokens=10, output_tokens=64, total_tokens=74, reasoning_tokens=3))
    observer.observe(Finish(reason="length", raw="length", truncated=True,
                            evidence=("finish_reason", "usage_at_max_tokens")))
    observer.observe(StreamEnd(terminated=True))


def test_turn_span_attributes(
    tracer_provider: TracerProvider,
    meter_provider: MeterProvider,
    span_exporter: InMemorySpanExporter,
) -> None:
    observer = _observer(tracer_provider, meter_provider)
    _full_turn(observer)
    assert span_exporter.get_finished_spans() != ()  # children end as soon as they can
    observer.close()
    (turn,) = by_name(span_exporter.get_finished_spans(), "toolwire.turn")
    assert turn.kind is SpanKind.INTERNAL
    assert turn.status.status_code is StatusCode.UNSET
    attributes = dict(turn.attributes or {})
    assert attributes == {
        "gen_ai.provider.name": "openai",
        "gen_ai.request.model": "gpt-req",
        "gen_ai.request.max_tokens": 64,
        "gen_ai.response.model": "gpt-test",
        "gen_ai.response.id": "resp-1",
        "gen_ai.usage.input_tokens": 10,
        "gen_ai.usage.output_tokens": 64,
        "gen_ai.usage.reasoning.output_tokens": 3,
        "gen_ai.response.finish_reasons": ("length",),
        "toolwire.stop_reason": "length",
        "toolwire.truncated": True,
        "toolwire.truncation.evidence": ("finish_reason", "usage_at_max_tokens"),
        "toolwire.stream.terminated": True,
        "toolwire.tool_calls.ok": 1,
        "toolwire.tool_calls.repaired": 1,
        "toolwire.tool_calls.rejected": 1,
        "toolwire.tool_calls.unjudged": 0,
        "toolwire.provider_errors": 0,
        "toolwire.ended_early": False,
    }


def test_one_child_span_per_repair_and_rejection(
    tracer_provider: TracerProvider,
    meter_provider: MeterProvider,
    span_exporter: InMemorySpanExporter,
) -> None:
    observer = _observer(tracer_provider, meter_provider)
    _full_turn(observer)
    observer.close()
    spans = span_exporter.get_finished_spans()
    assert sorted(span.name for span in spans) == [
        "toolwire.reject write", "toolwire.repair write", "toolwire.turn"
    ]
    (turn,) = by_name(spans, "toolwire.turn")
    (repair,) = by_name(spans, "toolwire.repair write")
    (reject,) = by_name(spans, "toolwire.reject write")
    for child in (repair, reject):
        assert child.parent is not None
        assert child.parent.span_id == turn.context.span_id
        assert child.context.trace_id == turn.context.trace_id
        assert child.kind is SpanKind.INTERNAL
    assert dict(repair.attributes or {}) == {
        "gen_ai.tool.name": "write",
        "gen_ai.tool.call.id": "c0",
        "gen_ai.tool.type": "function",
        "gen_ai.provider.name": "openai",
        "gen_ai.response.model": "gpt-test",
        "toolwire.outcome": "repaired",
        "toolwire.repair.kinds": ("bare_keys", "single_quoted_keys"),
        "toolwire.arguments.length": len("{path: 'a'}"),
        "toolwire.arguments.form": "string",
        "toolwire.call.index": 0,
        "toolwire.call.closed_by": "finish",
        "toolwire.call.id_synthesized": False,
        "toolwire.call.origin": "structured",
        "toolwire.truncated": False,
    }
    assert repair.status.status_code is StatusCode.UNSET
    attributes = dict(reject.attributes or {})
    assert attributes["toolwire.reject.reason"] == "truncated"
    assert attributes["error.type"] == "truncated"
    assert attributes["toolwire.parse.position"] == 27
    assert attributes["toolwire.truncated"] is True
    # The cut call's span waited for the Finish, so it names the turn's evidence.
    assert attributes["toolwire.truncation.evidence"] == ("finish_reason", "usage_at_max_tokens")
    assert reject.status.status_code is StatusCode.ERROR
    assert reject.status.description == "truncated"
    # Content is off by default.
    for span in spans:
        assert "gen_ai.tool.call.arguments" not in (span.attributes or {})
        assert "toolwire.reject.message" not in (span.attributes or {})


def test_metrics_of_a_turn(
    tracer_provider: TracerProvider,
    meter_provider: MeterProvider,
    metric_reader: InMemoryMetricReader,
) -> None:
    observer = _observer(tracer_provider, meter_provider)
    _full_turn(observer)
    observer.close()
    keys = ("toolwire.outcome", "gen_ai.tool.name", "toolwire.repair.kind",
            "toolwire.reject.reason", "gen_ai.provider.name", "gen_ai.response.model")
    assert counts(metric_reader, "toolwire.tool_calls", *keys) == {
        ("repaired", "write", "bare_keys", None, "openai", "gpt-test"): 1,
        ("ok", "read", None, None, "openai", "gpt-test"): 1,
        ("rejected", "write", None, "truncated", "openai", "gpt-test"): 1,
    }
    assert counts(metric_reader, "toolwire.tool_call.repairs", "toolwire.repair.kind") == {
        ("bare_keys",): 1, ("single_quoted_keys",): 1
    }
    assert counts(metric_reader, "toolwire.truncated_turns", "toolwire.truncation.evidence",
                  "gen_ai.response.model") == {("finish_reason,usage_at_max_tokens", "gpt-test"): 1}
    sizes = points(metric_reader, "toolwire.tool_call.arguments.size")
    assert sum(point.count for point in sizes) == 3
    assert sum(point.sum for point in sizes) == len("{path: 'a'}") + len('{"p": 1}') + len(
        '{"path": "b", "content": "ab'
    )
    for name in ("toolwire.tool_calls", "toolwire.tool_call.repairs",
                 "toolwire.tool_call.arguments.size"):
        for point in points(metric_reader, name):
            assert "gen_ai.tool.call.id" not in point.attributes
            assert all(len(str(value)) <= 128 for value in point.attributes.values())


def test_model_is_unknown_before_response_info(
    tracer_provider: TracerProvider,
    meter_provider: MeterProvider,
    metric_reader: InMemoryMetricReader,
) -> None:
    observer = _observer(tracer_provider, meter_provider)
    observer.observe(judge_by_hand(complete("write", "{}"), rejected("schema")))
    observer.observe(ResponseInfo(model="late-model"))
    observer.observe(judge_by_hand(complete("write", "{}", index=1), rejected("schema")))
    observer.close()
    assert counts(metric_reader, "toolwire.tool_calls", "gen_ai.response.model") == {
        (UNKNOWN_MODEL,): 1, ("late-model",): 1
    }


def test_unjudged_calls_are_counted(
    tracer_provider: TracerProvider,
    meter_provider: MeterProvider,
    metric_reader: InMemoryMetricReader,
    span_exporter: InMemorySpanExporter,
) -> None:
    observer = _observer(tracer_provider, meter_provider)
    observer.observe(complete("write", '{"a": 1}'))
    observer.close()
    assert counts(metric_reader, "toolwire.tool_calls", "toolwire.outcome") == {("unjudged",): 1}
    (turn,) = span_exporter.get_finished_spans()
    assert (turn.attributes or {})["toolwire.tool_calls.unjudged"] == 1
    assert (turn.attributes or {})["toolwire.ended_early"] is True  # no StreamEnd seen


def test_tool_and_model_names_are_bounded(
    meter_provider: MeterProvider, metric_reader: InMemoryMetricReader
) -> None:
    instruments = Instruments(meter_provider.get_meter("bounded-test"), max_distinct=2)
    for number in range(5):
        instruments.record_call(outcome="ok", verdict=OK, tool=f"tool_{number}", provider="openai",
                                model=f"model_{number}", raw_length=2)
    instruments.record_call(outcome="ok", verdict=OK, tool="tool_0", provider="openai",
                            model="model_1", raw_length=2)
    assert counts(metric_reader, "toolwire.tool_calls", "gen_ai.tool.name",
                  "gen_ai.response.model") == {
        ("tool_0", "model_0"): 1, ("tool_1", "model_1"): 1, (OTHER, OTHER): 3,
        ("tool_0", "model_1"): 1,
    }


def test_truncated_call_without_finish_is_flushed_at_close(
    tracer_provider: TracerProvider,
    meter_provider: MeterProvider,
    span_exporter: InMemorySpanExporter,
) -> None:
    observer = _observer(tracer_provider, meter_provider)
    cut = complete("write", '{"path": "b', truncated=True)
    observer.observe(judge_by_hand(cut, rejected("truncated")))
    assert span_exporter.get_finished_spans() == ()  # waiting for the Finish's evidence
    observer.close()
    (reject,) = by_name(span_exporter.get_finished_spans(), "toolwire.reject write")
    assert (reject.attributes or {})["toolwire.truncation.evidence"] == ("arguments_unterminated",)


def test_close_is_idempotent(
    tracer_provider: TracerProvider,
    meter_provider: MeterProvider,
    span_exporter: InMemorySpanExporter,
    caplog: pytest.LogCaptureFixture,
) -> None:
    observer = _observer(tracer_provider, meter_provider)
    _full_turn(observer)
    observer.close()
    observer.close()
    observer.close(RuntimeError("late"))
    assert len(by_name(span_exporter.get_finished_spans(), "toolwire.turn")) == 1
    assert not caplog.records  # the SDK would warn about a second end()
