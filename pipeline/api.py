"""``collect`` and ``stream``: the two ways to run a provider stream through toolwire."""

from __future__ import annotations

from collections.abc import AsyncGenerator, Iterable, Sequence
from typing import Any, Literal

from opentelemetry.metrics import MeterProvider
from opentelemetry.trace import TracerProvider

from ..adapters.registry import open_mapper
from .events import Event
from .policy import RepairLoopGuard, StopPolicyStage, normalize_stop_on
from .runner import Source, run_pipeline
from .stage import Stage, SyncStage
from .telemetry import Redactor, observe_turn
from .turn import Turn, TurnBuilder

__all__ = ["TruncatedCalls", "collect", "stream"]

#: What to do with a call cut off at the token limit whose arguments happen to parse:
#: ``reject`` it with the token-limit message (default: its last field may be missing or
#: short), or ``allow`` it to run as parsed (it stays marked ``truncated``).
TruncatedCalls = Literal["reject", "allow"]


def _stages(
    stages: Sequence[Stage | SyncStage],
    *,
    tools: Any,
    policy: Any,
    judge: bool,
    truncated_calls: TruncatedCalls,
    stop_on: Iterable[str] | None,
    loop_guard: RepairLoopGuard | None,
) -> list[Stage | SyncStage]:
    composed: list[Stage | SyncStage] = list(stages)
    if judge:
        from ..stages.judge import JudgeStage

        composed.append(JudgeStage(tools=tools, policy=policy, truncated_calls=truncated_calls))
    stop = StopPolicyStage(stop_on, loop_guard)
    if stop.stop_on or loop_guard is not None:
        composed.append(stop)
    return composed


async def stream(
    source: Source,
    provider: str = "openai-chat",
    *,
    max_tokens: int | None = None,
    tools: Sequence[Any] | None = None,
    policy: Any = None,
    judge: bool = True,
    truncated_calls: TruncatedCalls = "reject",
    stop_on: Iterable[str] | None = None,
    loop_guard: RepairLoopGuard | None = None,
    stages: Sequence[Stage | SyncStage] = (),
    tracer_provider: TracerProvider | None = None,
    meter_provider: MeterProvider | None = None,
    capture_content: bool | None = None,
    redact: Redactor | None = None,
) -> AsyncGenerator[Event]:
    """Yield the typed events of one provider stream, every tool call judged.

    ``source`` is what the provider sent (see :data:`toolwire.pipeline.runner.Source`);
    ``max_tokens`` is the request's output limit, when known, so that usage at the limit counts
    as truncation evidence; ``tools`` are the tool definitions offered to the model (OpenAI or
    Anthropic style dicts, JSON Schemas, pydantic models) used to validate every call;
    ``policy`` picks the repairs (``toolwire.DEFAULT_POLICY``, ``toolwire.STRICT_POLICY``);
    ``stop_on`` names the conditions that stop the turn (a ``TurnStopped`` event after
    ``Finish``); ``loop_guard`` counts repeated rejections across the turns of a run;
    ``stages`` run after the adapter and before the judge, in the order given. Close the
    generator early with ``contextlib.aclosing`` to release the source at once.

    Telemetry (``docs/observability.md``): one span per turn and one per repair or rejection,
    and the repair-rate metrics, go to ``tracer_provider`` / ``meter_provider`` (the global ones
    by default). Raw arguments and messages are captured only with ``capture_content=True`` (or
    ``OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=true`` when it is ``None``), through
    ``redact`` and capped. A telemetry failure never breaks the stream.
    """
    normalize_stop_on(stop_on)
    mapper = open_mapper(provider, max_tokens)
    composed = _stages(
        stages,
        tools=tools,
        policy=policy,
        judge=judge,
        truncated_calls=truncated_calls,
        stop_on=stop_on,
        loop_guard=loop_guard,
    )
    batches = run_pipeline(source, mapper, composed)
    observer = observe_turn(
        mapper.provider_name,
        max_tokens=max_tokens,
        tracer_provider=tracer_provider,
        meter_provider=meter_provider,
        capture_content=capture_content,
        redact=redact,
    )
    observe = observer.observe
    escaped: BaseException | None = None
    try:
        async for batch in batches:
            for event in batch:
                observe(event)
                yield event
    except BaseException as error:  # recorded, never swallowed
        escaped = error
        raise
    finally:
        try:
            await batches.aclose()
        finally:
            observer.close(escaped)


async def collect(
    source: Source,
    provider: str = "openai-chat",
    *,
    max_tokens: int | None = None,
    tools: Sequence[Any] | None = None,
    policy: Any = None,
    judge: bool = True,
    truncated_calls: TruncatedCalls = "reject",
    stop_on: Iterable[str] | None = None,
    loop_guard: RepairLoopGuard | None = None,
    stages: Sequence[Stage | SyncStage] = (),
    tracer_provider: TracerProvider | None = None,
    meter_provider: MeterProvider | None = None,
    capture_content: bool | None = None,
    redact: Redactor | None = None,
) -> Turn:
    """Read a whole provider stream and return the :class:`Turn`, every call judged.

    Takes the same arguments as :func:`stream`. Bad model output never raises: a malformed call
    is a rejected call on the turn, an in-band provider error is in ``Turn.errors`` with
    ``stop_reason == "error"``. ``stop_on`` is recorded on the turn, and ``Turn.stopped_by``
    says which conditions held.
    """
    conditions = normalize_stop_on(stop_on)
    # Nothing but the Turn reads argument pieces unless the caller plugged in stages.
    mapper = open_mapper(provider, max_tokens, argument_deltas=bool(stages))
    composed = _stages(
        stages,
        tools=tools,
        policy=policy,
        judge=judge,
        truncated_calls=truncated_calls,
        stop_on=conditions,
        loop_guard=loop_guard,
    )
    builder = TurnBuilder(provider=mapper.provider_name, stop_on=conditions)
    add = builder.add
    batches = run_pipeline(source, mapper, composed)
    observer = observe_turn(
        mapper.provider_name,
        max_tokens=max_tokens,
        tracer_provider=tracer_provider,
        meter_provider=meter_provider,
        capture_content=capture_content,
        redact=redact,
    )
    observe = observer.observe
    escaped: BaseException | None = None
    try:
        async for batch in batches:
            for event in batch:
                observe(event)
                add(event)
    except BaseException as error:  # recorded, never swallowed
        escaped = error
        raise
    finally:
        try:
            await batches.aclose()
        finally:
            observer.close(escaped)
    return builder.build()
