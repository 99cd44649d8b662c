"""``collect`` and ``stream``: the two ways to run a provider stream through toolwire.

Both take the same arguments and build the same pipeline (see :mod:`toolwire.pipeline.runner`
for the order); every argument is checked before the first byte is read, so a typo fails at the
call, not somewhere inside an ``async for``.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator, Iterable, Sequence
from typing import Any, Literal

from opentelemetry.metrics import MeterProvider
from opentelemetry.trace import TracerProvider

from ..adapters.base import ProviderMapper
from ..adapters.registry import open_mapper
from ..stages.judge import JudgeStage
from .events import Event, StopCondition
from .observing import observed_batches, observed_events
from .policy import RepairLoopGuard, StopPolicyStage, normalize_stop_on
from .runner import Source, flatten, run_pipeline
from .stage import Stage, SyncStage
from .telemetry import NullObserver, Redactor, TurnObserver, observe_turn
from .turn import Turn, TurnBuilder

__all__ = ["TruncatedCalls", "collect", "stream"]

#: What to do with a call cut off at the token limit whose arguments happen to parse:
#: ``reject`` it with the token-limit message (default: its last field may be missing or
#: short), or ``allow`` it to run as parsed (it stays marked ``truncated``).
TruncatedCalls = Literal["reject", "allow"]


class _Plan:
    """Everything one run needs, built and checked eagerly from the caller's arguments."""

    __slots__ = ("conditions", "mapper", "stages", "telemetry")

    def __init__(
        self,
        provider: str,
        *,
        max_tokens: int | None,
        tools: Sequence[Any] | None,
        policy: Any,
        judge: bool,
        truncated_calls: TruncatedCalls,
        stop_on: Iterable[str] | None,
        loop_guard: RepairLoopGuard | None,
        stages: Sequence[Stage | SyncStage],
        argument_deltas: bool,
    ) -> None:
        self.conditions: frozenset[StopCondition] = normalize_stop_on(stop_on)
        self.mapper: ProviderMapper = open_mapper(
            provider, max_tokens, argument_deltas=argument_deltas
        )
        composed: list[Stage | SyncStage] = list(stages)
        if judge:
            composed.append(JudgeStage(tools=tools, policy=policy, truncated_calls=truncated_calls))
        if self.conditions or loop_guard is not None:
            composed.append(StopPolicyStage(self.conditions, loop_guard))
        self.stages = composed


def _observe(
    plan: _Plan,
    max_tokens: int | None,
    tracer_provider: TracerProvider | None,
    meter_provider: MeterProvider | None,
    capture_content: bool | None,
    redact: Redactor | None,
    request_model: str | None,
) -> TurnObserver | NullObserver:
    return observe_turn(
        plan.mapper.provider_name,
        max_tokens=max_tokens,
        tracer_provider=tracer_provider,
        meter_provider=meter_provider,
        capture_content=capture_content,
        redact=redact,
        request_model=request_model,
    )


def stream(
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
    request_model: str | None = None,
) -> AsyncGenerator[Event]:
    """Yield the typed events of one provider stream, every tool call judged.

    ``source`` is what the provider sent (see :data:`toolwire.pipeline.runner.Source`);
    ``max_tokens`` is the request's output limit, when known, so that usage at the limit counts
    as truncation evidence; ``tools`` are the tool definitions offered to the model (OpenAI or
    Anthropic style dicts, JSON Schemas, pydantic models) used to validate every call;
    ``policy`` picks the repairs (``toolwire.DEFAULT_POLICY``, ``toolwire.STRICT_POLICY``);
    ``truncated_calls`` decides whether a cut call whose text parses may run;
    ``stop_on`` names the conditions that stop the turn (a ``TurnStopped`` event after
    ``Finish``); ``loop_guard`` counts repeated rejections across the turns of a run;
    ``stages`` run after the adapter and before the judge, in the order given. Close the
    generator early with ``contextlib.aclosing`` to release the source at once.

    Telemetry (``docs/observability.md``): one span per turn and one per repair or rejection,
    and the repair-rate metrics, go to ``tracer_provider`` / ``meter_provider`` (the global ones
    by default); ``request_model`` names the requested model on them. Raw arguments and
    messages are captured only with ``capture_content=True`` (or
    ``OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=true`` when it is ``None``), through
    ``redact`` and capped. A telemetry failure never breaks the stream.
    """
    plan = _Plan(
        provider,
        max_tokens=max_tokens,
        tools=tools,
        policy=policy,
        judge=judge,
        truncated_calls=truncated_calls,
        stop_on=stop_on,
        loop_guard=loop_guard,
        stages=stages,
        argument_deltas=True,
    )
    return _stream(
        source,
        plan,
        _observe(
            plan,
            max_tokens,
            tracer_provider,
            meter_provider,
            capture_content,
            redact,
            request_model,
        ),
    )


async def _stream(
    source: Source, plan: _Plan, observer: TurnObserver | NullObserver
) -> AsyncGenerator[Event]:
    events = observed_events(flatten(run_pipeline(source, plan.mapper, plan.stages)), observer)
    try:
        async for event in events:
            yield event
    finally:
        await events.aclose()


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
    request_model: str | None = None,
) -> Turn:
    """Read a whole provider stream and return the :class:`Turn`, every call judged.

    Takes the same arguments as :func:`stream`. Bad model output never raises: a malformed call
    is a rejected call on the turn, an in-band provider error is in ``Turn.errors`` with
    ``stop_reason == "error"``, a connection that drops is a ``transport`` error with
    ``stop_reason == "disconnected"``. ``stop_on`` is recorded on the turn, and
    ``Turn.stopped_by`` says which conditions held.
    """
    plan = _Plan(
        provider,
        max_tokens=max_tokens,
        tools=tools,
        policy=policy,
        judge=judge,
        truncated_calls=truncated_calls,
        stop_on=stop_on,
        loop_guard=loop_guard,
        stages=stages,
        # Nothing but the Turn reads argument pieces unless the caller plugged in stages.
        argument_deltas=bool(stages),
    )
    observer = _observe(
        plan, max_tokens, tracer_provider, meter_provider, capture_content, redact, request_model
    )
    builder = TurnBuilder(provider=plan.mapper.provider_name, stop_on=plan.conditions)
    add = builder.add
    batches = observed_batches(run_pipeline(source, plan.mapper, plan.stages), observer)
    try:
        async for batch in batches:
            for event in batch:
                add(event)
    finally:
        await batches.aclose()
    return builder.build()
