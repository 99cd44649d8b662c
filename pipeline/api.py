"""``collect`` and ``stream``: the two ways to run a provider stream through toolwire."""

from __future__ import annotations

from collections.abc import AsyncGenerator, Sequence
from typing import Any

from ..adapters.registry import open_mapper
from .events import Event
from .runner import Source, run_pipeline
from .stage import Stage, SyncStage
from .turn import Turn, TurnBuilder

__all__ = ["collect", "stream"]


def _stages(
    stages: Sequence[Stage | SyncStage], tools: Any, policy: Any, judge: bool
) -> list[Stage | SyncStage]:
    composed: list[Stage | SyncStage] = list(stages)
    if judge:
        from ..stages.judge import JudgeStage

        composed.append(JudgeStage(tools=tools, policy=policy))
    return composed


async def stream(
    source: Source,
    provider: str = "openai-chat",
    *,
    max_tokens: int | None = None,
    tools: Sequence[Any] | None = None,
    policy: Any = None,
    judge: bool = True,
    stages: Sequence[Stage | SyncStage] = (),
) -> AsyncGenerator[Event]:
    """Yield the typed events of one provider stream, every tool call judged.

    ``source`` is what the provider sent (see :data:`toolwire.pipeline.runner.Source`);
    ``max_tokens`` is the request's output limit, when known, so that usage at the limit counts
    as truncation evidence; ``tools`` are the tool definitions offered to the model (OpenAI or
    Anthropic style dicts, JSON Schemas, pydantic models) used to validate every call; ``stages``
    run after the adapter and before the judge, in the order given. Close the generator early
    with ``contextlib.aclosing`` to release the source at once.
    """
    mapper = open_mapper(provider, max_tokens)
    batches = run_pipeline(source, mapper, _stages(stages, tools, policy, judge))
    try:
        async for batch in batches:
            for event in batch:
                yield event
    finally:
        await batches.aclose()


async def collect(
    source: Source,
    provider: str = "openai-chat",
    *,
    max_tokens: int | None = None,
    tools: Sequence[Any] | None = None,
    policy: Any = None,
    judge: bool = True,
    stages: Sequence[Stage | SyncStage] = (),
) -> Turn:
    """Read a whole provider stream and return the :class:`Turn`, every call judged.

    Takes the same arguments as :func:`stream`. Bad model output never raises: a malformed call
    is a rejected call on the turn, an in-band provider error is in ``Turn.errors`` with
    ``stop_reason == "error"``.
    """
    mapper = open_mapper(provider, max_tokens)
    builder = TurnBuilder(provider=mapper.provider_name)
    add = builder.add
    batches = run_pipeline(source, mapper, _stages(stages, tools, policy, judge))
    try:
        async for batch in batches:
            for event in batch:
                add(event)
    finally:
        await batches.aclose()
    return builder.build()
