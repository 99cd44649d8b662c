"""Helpers for the telemetry tests: read metric points and spans, build judged events."""

from __future__ import annotations

import json
from typing import Any

import msgspec
from opentelemetry.sdk.metrics.export import InMemoryMetricReader
from opentelemetry.sdk.trace import ReadableSpan

from toolwire.core.events import (
    Event,
    ToolCallComplete,
    ToolCallReady,
    ToolCallRejected,
    ToolCallRepaired,
)
from toolwire.core.stage import FunctionStage, event_stage
from toolwire.core.verdict import RejectReason, RepairKind, Verdict


def points(reader: InMemoryMetricReader, name: str) -> list[Any]:
    """Every data point of the metric ``name`` collected so far."""
    data = reader.get_metrics_data()
    found: list[Any] = []
    if data is None:
        return found
    for resource in data.resource_metrics:
        for scope in resource.scope_metrics:
            for metric in scope.metrics:
                if metric.name == name:
                    found.extend(metric.data.data_points)
    return found


def counts(reader: InMemoryMetricReader, name: str, *keys: str) -> dict[tuple[Any, ...], int]:
    """Sum of a counter by the values of ``keys`` (``None`` where an attribute is absent)."""
    totals: dict[tuple[Any, ...], int] = {}
    for point in points(reader, name):
        key = tuple(point.attributes.get(k) for k in keys)
        totals[key] = totals.get(key, 0) + int(point.value)
    return totals


def by_name(spans: tuple[ReadableSpan, ...] | list[ReadableSpan], name: str) -> list[ReadableSpan]:
    return [span for span in spans if span.name == name]


def complete(
    name: str, arguments: str, *, call_id: str | None = None, index: int = 0,
    truncated: bool = False,
) -> ToolCallComplete:
    return ToolCallComplete(
        call_id=call_id or f"call_{name}_{index}", name=name, index=index,
        arguments_raw=arguments, truncated=truncated,
    )


def judge_by_hand(call: ToolCallComplete, spec: Verdict) -> Event:
    """The event the judge would emit for ``call`` with verdict ``spec`` (its lengths filled)."""
    verdict = msgspec.structs.replace(
        spec, raw_length=len(call.arguments_raw), truncated=spec.truncated or call.truncated
    )
    if verdict.outcome == "repaired":
        return ToolCallRepaired(call=call, verdict=verdict)
    if verdict.outcome == "rejected":
        return ToolCallRejected(call=call, verdict=verdict)
    return ToolCallReady(call=call, verdict=verdict)


def repaired(*kinds: RepairKind) -> Verdict:
    return Verdict(outcome="repaired", arguments={"ok": True}, repairs=kinds)


def rejected(reason: RejectReason, *, position: int | None = None) -> Verdict:
    return Verdict(
        outcome="rejected", arguments=None, reason=reason, position=position,
        message=f"The arguments were rejected ({reason}); send the call again.",
        detail=f"parser stopped ({reason})",
    )


OK = Verdict(outcome="ok", arguments={"ok": True})


def hand_judge(verdicts: dict[str, Verdict]) -> FunctionStage:
    """A user stage standing in for the judge: each complete call gets its tool's verdict."""

    def step(event: Event) -> tuple[Event, ...]:
        if isinstance(event, ToolCallComplete):
            return (judge_by_hand(event, verdicts.get(event.name, OK)),)
        return (event,)

    return event_stage(step)


def tool_call_stream(
    calls: list[tuple[str, list[str]]],
    *,
    finish_reason: str | None = "tool_calls",
    model: str = "gpt-test",
    usage: dict[str, int] | None = None,
    done: bool = True,
) -> bytes:
    """A Chat Completions SSE body with the given calls, each as (name, argument pieces)."""
    chunks: list[dict[str, Any]] = [chat_chunk({"role": "assistant", "content": None}, model=model)]
    for index, (name, pieces) in enumerate(calls):
        head = {"index": index, "id": f"call_{name}_{index}", "type": "function",
                "function": {"name": name, "arguments": ""}}
        chunks.append(chat_chunk({"tool_calls": [head]}, model=model))
        for piece in pieces:
            fragment = {"index": index, "function": {"arguments": piece}}
            chunks.append(chat_chunk({"tool_calls": [fragment]}, model=model))
    if finish_reason is not None:
        chunks.append(chat_chunk({}, finish_reason, model=model))
    if usage is not None:
        chunks.append({**chat_chunk(model=model), "choices": [], "usage": usage})
    return sse_body(chunks, done=done)


def chat_chunk(delta: dict[str, Any] | None = None, finish_reason: str | None = None,
               *, model: str = "gpt-test") -> dict[str, Any]:
    return {
        "id": "chatcmpl-telemetry", "object": "chat.completion.chunk", "created": 1727346178,
        "model": model,
        "choices": [{"index": 0, "delta": delta or {}, "logprobs": None,
                     "finish_reason": finish_reason}],
    }


def sse_body(chunks: list[dict[str, Any]], *, done: bool = True) -> bytes:
    body = b"".join(b"data: " + json.dumps(chunk).encode() + b"\n\n" for chunk in chunks)
    return body + (b"data: [DONE]\n\n" if done else b"")
