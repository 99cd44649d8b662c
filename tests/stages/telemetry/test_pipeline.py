"""Telemetry through ``collect`` and ``stream``: every way a run can end, on asyncio and trio."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import aclosing
from typing import Any

import anyio
import pytest
from _toolwire_testdata import stream_path
from opentelemetry import metrics, trace
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import StatusCode

import toolwire
from toolwire.core.events import Event, ToolCallRepaired
from toolwire.core.stage import event_stage

from ._telemetry_helpers import by_name, counts, hand_judge, rejected, repaired, tool_call_stream

pytestmark = pytest.mark.anyio

#: Three calls: a repaired ``write``, a rejected ``read``, an ok ``list``.
THREE_CALLS = tool_call_stream(
    [
        ("write", ['{path: "a.txt", ', 'content: "hi"}']),
        ("read", ['{"path": ', '"b.txt"']),
        ("list", ['{"dir": "."}']),
    ],
    usage={"prompt_tokens": 12, "completion_tokens": 30, "total_tokens": 42},
)
CUT_RECORDING = stream_path("llama-cpp-python/write_max_tokens_12_cut_mid_string.real.sse")
JUDGE = hand_judge({"write": repaired("bare_keys"), "read": rejected("not_json", position=17)})


def _turn_span(exporter: InMemorySpanExporter) -> ReadableSpan:
    (turn,) = by_name(exporter.get_finished_spans(), "toolwire.turn")
    return turn


async def test_collect_reports_repairs_and_rejections(
    tracer_provider: TracerProvider,
    meter_provider: MeterProvider,
    span_exporter: InMemorySpanExporter,
    metric_reader: InMemoryMetricReader,
) -> None:
    turn = await toolwire.collect(
        THREE_CALLS, "vllm", judge=False, stages=[JUDGE],
        tracer_provider=tracer_provider, meter_provider=meter_provider,
    )
    assert [call.outcome for call in turn.calls] == ["repaired", "rejected", "ok"]
    spans = span_exporter.get_finished_spans()
    assert sorted(span.name for span in spans) == [
        "toolwire.reject read", "toolwire.repair write", "toolwire.turn"
    ]
    attributes = dict(_turn_span(span_exporter).attributes or {})
    assert attributes["gen_ai.provider.name"] == "vllm"
    assert attributes["gen_ai.response.model"] == "gpt-test"
    assert attributes["gen_ai.response.finish_reasons"] == ("tool_calls",)
    assert attributes["gen_ai.usage.input_tokens"] == 12
    assert attributes["gen_ai.usage.output_tokens"] == 30
    assert attributes["toolwire.stop_reason"] == "tool_calls"
    assert attributes["toolwire.ended_early"] is False
    assert (
        attributes["toolwire.tool_calls.ok"],
        attributes["toolwire.tool_calls.repaired"],
        attributes["toolwire.tool_calls.rejected"],
    ) == (1, 1, 1)
    (reject,) = by_name(spans, "toolwire.reject read")
    assert (reject.attributes or {})["gen_ai.tool.call.id"] == "call_read_1"
    assert (reject.attributes or {})["toolwire.parse.position"] == 17
    assert reject.status.status_code is StatusCode.ERROR
    assert counts(metric_reader, "toolwire.tool_calls", "toolwire.outcome", "gen_ai.tool.name",
                  "gen_ai.provider.name") == {
        ("repaired", "write", "vllm"): 1, ("rejected", "read", "vllm"): 1,
        ("ok", "list", "vllm"): 1,
    }


async def test_stream_reports_the_same(
    tracer_provider: TracerProvider,
    meter_provider: MeterProvider,
    span_exporter: InMemorySpanExporter,
) -> None:
    seen: list[str] = []
    async with aclosing(
        toolwire.stream(THREE_CALLS, judge=False, stages=[JUDGE],
                        tracer_provider=tracer_provider, meter_provider=meter_provider)
    ) as events:
        async for event in events:
            # The turn span is never current in the consumer's code (nor across a yield).
            assert trace.get_current_span() is trace.INVALID_SPAN
            seen.append(type(event).__name__)
    assert "ToolCallRepaired" in seen
    assert "ToolCallRejected" in seen
    assert len(span_exporter.get_finished_spans()) == 3
    assert (_turn_span(span_exporter).attributes or {})["toolwire.ended_early"] is False


async def test_turn_span_is_a_child_of_the_callers_span(
    tracer_provider: TracerProvider,
    meter_provider: MeterProvider,
    span_exporter: InMemorySpanExporter,
) -> None:
    tracer = tracer_provider.get_tracer("app")
    with tracer.start_as_current_span("agent step") as parent:
        await toolwire.collect(THREE_CALLS, judge=False, stages=[JUDGE],
                               tracer_provider=tracer_provider, meter_provider=meter_provider)
    turn = _turn_span(span_exporter)
    assert turn.parent is not None
    assert turn.parent.span_id == parent.get_span_context().span_id


async def test_never_sets_a_global_provider(
    tracer_provider: TracerProvider, meter_provider: MeterProvider
) -> None:
    before = (trace.get_tracer_provider(), metrics.get_meter_provider())
    await toolwire.collect(THREE_CALLS, judge=False, stages=[JUDGE],
                           tracer_provider=tracer_provider, meter_provider=meter_provider)
    assert (trace.get_tracer_provider(), metrics.get_meter_provider()) == before


async def test_early_break_ends_the_span_once(
    tracer_provider: TracerProvider,
    meter_provider: MeterProvider,
    span_exporter: InMemorySpanExporter,
) -> None:
    async with aclosing(
        toolwire.stream(THREE_CALLS, judge=False, stages=[JUDGE],
                        tracer_provider=tracer_provider, meter_provider=meter_provider)
    ) as events:
        async for event in events:
            if isinstance(event, ToolCallRepaired):
                break
    turn = _turn_span(span_exporter)
    assert (turn.attributes or {})["toolwire.ended_early"] is True
    assert (turn.attributes or {})["toolwire.tool_calls.repaired"] == 1
    assert turn.status.status_code is StatusCode.UNSET
    assert "error.type" not in (turn.attributes or {})
    assert len(by_name(span_exporter.get_finished_spans(), "toolwire.repair write")) == 1


async def _consume(api: str, source: AsyncIterator[bytes], **options: Any) -> None:
    """Run ``source`` to its end through ``collect`` or through ``stream``."""
    if api == "collect":
        await toolwire.collect(source, **options)
        return
    async with aclosing(toolwire.stream(source, **options)) as events:
        async for _ in events:
            pass


async def _hanging_source(first: bytes) -> AsyncIterator[bytes]:
    yield first
    await anyio.sleep_forever()


@pytest.mark.parametrize("api", ["collect", "stream"])
async def test_cancellation_ends_the_span_once(
    api: str,
    tracer_provider: TracerProvider,
    meter_provider: MeterProvider,
    span_exporter: InMemorySpanExporter,
) -> None:
    head = THREE_CALLS[: THREE_CALLS.index(b'"list"')]
    head = head[: head.rindex(b"data: ")]
    with anyio.move_on_after(0.2) as scope:
        await _consume(api, _hanging_source(head), judge=False, stages=[JUDGE],
                       tracer_provider=tracer_provider, meter_provider=meter_provider)
    assert scope.cancelled_caught
    turn = _turn_span(span_exporter)
    assert (turn.attributes or {})["toolwire.ended_early"] is True
    assert turn.status.status_code is StatusCode.UNSET
    # The repaired ``write`` was closed by the ``read`` opening: its span is there.
    assert len(by_name(span_exporter.get_finished_spans(), "toolwire.repair write")) == 1


class ProviderDropped(Exception):
    pass


async def _failing_source(first: bytes) -> AsyncIterator[bytes]:
    yield first
    raise ProviderDropped("connection reset by peer")


@pytest.mark.parametrize("api", ["collect", "stream"])
async def test_dropped_provider_stream_marks_the_turn(
    api: str,
    tracer_provider: TracerProvider,
    meter_provider: MeterProvider,
    span_exporter: InMemorySpanExporter,
) -> None:
    """A source failing mid-read is a fatal ``transport`` provider error: the turn is an error."""
    await _consume(api, _failing_source(THREE_CALLS[:200]), judge=False,
                   tracer_provider=tracer_provider, meter_provider=meter_provider)
    turn = _turn_span(span_exporter)
    assert turn.status.status_code is StatusCode.ERROR
    attributes = dict(turn.attributes or {})
    assert attributes["error.type"] == "ProviderDropped"
    assert attributes["toolwire.provider_errors"] == len(turn.events)
    kinds = [dict(event.attributes or {}) for event in turn.events]
    assert {"toolwire.provider_error.kind": "transport", "toolwire.provider_error.fatal": True,
            "toolwire.provider_error.code": "ProviderDropped"} in kinds


class StageBug(Exception):
    pass


def _raising_stage(event: Event) -> tuple[Event, ...]:
    if isinstance(event, ToolCallRepaired):
        raise StageBug("a user stage failed")
    return (event,)


@pytest.mark.parametrize("api", ["collect", "stream"])
async def test_escaping_exception_is_recorded_and_raised(
    api: str,
    tracer_provider: TracerProvider,
    meter_provider: MeterProvider,
    span_exporter: InMemorySpanExporter,
) -> None:
    with pytest.raises(StageBug):
        await _consume(api, _aiter_reads(THREE_CALLS), judge=False,
                       stages=[JUDGE, event_stage(_raising_stage)],
                       tracer_provider=tracer_provider, meter_provider=meter_provider)
    turn = _turn_span(span_exporter)
    assert turn.status.status_code is StatusCode.ERROR
    assert (turn.attributes or {})["error.type"] == "StageBug"
    assert (turn.attributes or {})["toolwire.ended_early"] is True
    assert [event.name for event in turn.events] == ["exception"]


async def _aiter_reads(body: bytes) -> AsyncIterator[bytes]:
    for start in range(0, len(body), 64):
        yield body[start : start + 64]


async def test_in_band_provider_error_marks_the_turn(
    tracer_provider: TracerProvider,
    meter_provider: MeterProvider,
    span_exporter: InMemorySpanExporter,
) -> None:
    body = (
        b'data: {"id":"x","model":"m","choices":[{"index":0,"delta":{"content":"Hi"}}]}\n\n'
        b'data: {"error":{"message":"The server is overloaded","type":"server_error",'
        b'"code":"overloaded"}}\n\n'
    )
    turn = await toolwire.collect(body, judge=False, tracer_provider=tracer_provider,
                                  meter_provider=meter_provider)
    assert turn.stop_reason == "error"
    span = _turn_span(span_exporter)
    assert span.status.status_code is StatusCode.ERROR
    attributes = dict(span.attributes or {})
    assert attributes["error.type"] == "overloaded"
    assert attributes["toolwire.provider_errors"] == 1
    (event,) = span.events
    assert event.name == "toolwire.provider_error"
    assert dict(event.attributes or {}) == {
        "toolwire.provider_error.kind": "error_payload",
        "toolwire.provider_error.fatal": True,
        "toolwire.provider_error.code": "overloaded",
    }


async def test_truncated_turn_is_counted(
    tracer_provider: TracerProvider,
    meter_provider: MeterProvider,
    span_exporter: InMemorySpanExporter,
    metric_reader: InMemoryMetricReader,
) -> None:
    body = tool_call_stream([("write", ['{"path": "a", "content": "lo'])],
                            finish_reason="length", model="small-model")
    turn = await toolwire.collect(
        body, "llama-cpp", judge=False, stages=[hand_judge({"write": rejected("truncated")})],
        tracer_provider=tracer_provider, meter_provider=meter_provider,
    )
    assert turn.truncated
    assert counts(metric_reader, "toolwire.truncated_turns", "gen_ai.provider.name",
                  "gen_ai.response.model", "toolwire.truncation.evidence") == {
        ("llama.cpp", "small-model", "arguments_unterminated,finish_reason"): 1
    }
    (reject,) = by_name(span_exporter.get_finished_spans(), "toolwire.reject write")
    attributes = dict(reject.attributes or {})
    assert attributes["toolwire.truncated"] is True
    assert attributes["toolwire.truncation.evidence"] == ("finish_reason", "arguments_unterminated")
    assert attributes["toolwire.call.closed_by"] == "finish"


async def test_default_global_providers_are_used(
    span_exporter: InMemorySpanExporter, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With no provider given, the global one (whatever it is when the run starts) is used."""
    from opentelemetry.sdk.trace import TracerProvider as SDKTracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor

    provider = SDKTracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(span_exporter))
    monkeypatch.setattr(trace, "get_tracer_provider", lambda: provider)
    await toolwire.collect(THREE_CALLS, judge=False, stages=[JUDGE])
    provider.shutdown()
    assert len(span_exporter.get_finished_spans()) == 3


async def test_real_judge_on_a_real_cut_recording(
    tracer_provider: TracerProvider,
    meter_provider: MeterProvider,
    span_exporter: InMemorySpanExporter,
    metric_reader: InMemoryMetricReader,
) -> None:
    body = CUT_RECORDING.read_bytes()
    turn = await toolwire.collect(body, "llama-cpp", max_tokens=12,
                                  tracer_provider=tracer_provider, meter_provider=meter_provider)
    assert [(call.name, call.outcome) for call in turn.calls] == [("write", "rejected")]
    (reject,) = by_name(span_exporter.get_finished_spans(), "toolwire.reject write")
    attributes = dict(reject.attributes or {})
    assert attributes["toolwire.reject.reason"] == "truncated"
    assert attributes["toolwire.truncated"] is True
    assert attributes["toolwire.arguments.length"] == len(turn.calls[0].arguments_raw)
    assert attributes["toolwire.truncation.evidence"] == turn.truncation_evidence != ()
    assert counts(metric_reader, "toolwire.tool_calls", "toolwire.reject.reason",
                  "gen_ai.response.model") == {("truncated", "smollm2-135m"): 1}


@pytest.mark.parametrize(
    ("provider", "cut_by", "stop_reason"),
    [("llama-cpp", "token_limit", "length"), ("openai-compatible", "unknown", "tool_calls")],
)
async def test_the_turn_span_says_what_cut_the_output(
    tracer_provider: TracerProvider,
    span_exporter: InMemorySpanExporter,
    provider: str,
    cut_by: str,
    stop_reason: str,
) -> None:
    # The same cut call: the llama-cpp profile names the limit; a generic server does not.
    await toolwire.collect(CUT_RECORDING.read_bytes(), provider, tracer_provider=tracer_provider)
    attributes = _turn_span(span_exporter).attributes or {}
    assert attributes["toolwire.truncated"] is True
    assert attributes["toolwire.cut_by"] == cut_by
    assert attributes["toolwire.stop_reason"] == stop_reason
