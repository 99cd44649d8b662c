"""The public entry points: a configured :class:`Pipeline`, and ``collect`` / ``stream``.

A :class:`Pipeline` is built once per agent (or per model and tool set) and used for every turn:
every setting is checked when it is built, nothing about it changes afterwards, and it holds no
per-run state, so one object serves any number of concurrent turns on any task. ``collect`` and
``stream`` are one-line conveniences that build one for a single turn.

Every setting is declared once, in :class:`PipelineOptions`; the pipeline's fixed order is drawn in
:mod:`toolwire.pipeline.runner`.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator, Iterable, Mapping, Sequence
from types import MappingProxyType
from typing import Any, Literal, NoReturn, TypedDict, Unpack

from opentelemetry.metrics import MeterProvider
from opentelemetry.trace import TracerProvider

from .adapters.history import HistoryFormat, HistoryProblem
from .adapters.registry import history_format, open_mapper
from .judge import Policy, Toolset
from .loop.history import check_history, ensure_well_formed, next_messages
from .pipeline.errors import ConfigurationError
from .pipeline.events import Event, StopCondition
from .pipeline.mapper import ProviderMapper
from .pipeline.results import ToolResult
from .pipeline.runner import Source, flatten, run_pipeline
from .pipeline.stage import Stage, SyncStage
from .pipeline.turn import Turn, TurnBuilder
from .stages.judge import JudgeStage
from .stages.policy import RepairLoopGuard, StopPolicyStage, normalize_stop_on
from .stages.telemetry.observer import (
    NullObserver,
    Redactor,
    Telemetry,
    TurnObserver,
    start_observer,
)
from .stages.telemetry.observing import observed_batches, observed_events

__all__ = ["Pipeline", "PipelineOptions", "TruncatedCalls", "collect", "stream"]

#: What to do with a call cut off at the token limit whose arguments happen to parse:
#: ``reject`` it with the token-limit message (default: its last field may be missing or
#: short), or ``allow`` it to run as parsed (it stays marked ``truncated``).
TruncatedCalls = Literal["reject", "allow"]


class PipelineOptions(TypedDict, total=False):
    """Every setting of a :class:`Pipeline` (and of ``collect`` / ``stream``), all optional.

    - ``max_tokens``: the request's output limit, when known, so that usage at the limit counts
      as truncation evidence.
    - ``tools``: the tool definitions offered to the model (OpenAI or Anthropic style dicts, JSON
      Schemas, pydantic models, or a :class:`toolwire.Toolset`), used to validate every call.
    - ``policy``: the repairs allowed (``toolwire.DEFAULT_POLICY``, ``toolwire.STRICT_POLICY``).
    - ``judge``: ``False`` leaves calls unjudged (``ToolCallComplete``, never runnable).
    - ``truncated_calls``: whether a cut call whose text parses may run (:data:`TruncatedCalls`).
    - ``stop_on``: the conditions that stop a turn (a ``TurnStopped`` event after ``Finish``).
    - ``loop_guard``: counts repeated rejections across the turns of one agent run.
    - ``stages``: your stages, run after the adapter and before the judge, in the order given.
    - ``tracer_provider`` / ``meter_provider``: where spans and metrics go (the global ones by
      default; toolwire never sets a global provider).
    - ``capture_content``: export raw arguments and messages (off by default; ``None`` reads
      ``OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT``), through ``redact``, capped.
    - ``request_model``: the requested model, named on spans and metrics.
    """

    max_tokens: int | None
    tools: Sequence[Any] | Toolset | None
    policy: Policy | None
    judge: bool
    truncated_calls: TruncatedCalls
    stop_on: Iterable[str] | None
    loop_guard: RepairLoopGuard | None
    stages: Sequence[Stage | SyncStage]
    tracer_provider: TracerProvider | None
    meter_provider: MeterProvider | None
    capture_content: bool | None
    redact: Redactor | None
    request_model: str | None


_OPTION_NAMES = frozenset(PipelineOptions.__annotations__)


class Pipeline:
    """One provider's stream handling, configured once and shared by every turn.

    ``Pipeline(provider, **options)`` checks every option at once (a typo fails here, not in the
    middle of a turn) and compiles the tool schemas once. It is immutable: derive a changed copy
    with :meth:`replace` (``p.replace(max_tokens=2048)`` for a retry). It keeps no per-run state,
    so concurrent turns may share it; a ``loop_guard`` is shared on purpose, so give each agent
    run its own pipeline (``p.replace(loop_guard=RepairLoopGuard())``) when you use one.
    """

    __slots__ = (
        "_conditions",
        "_history",
        "_judge_stage",
        "_options",
        "_provider",
        "_stages",
        "_telemetry",
    )

    _provider: str
    _options: Mapping[str, Any]
    _conditions: frozenset[StopCondition]
    _stages: tuple[Stage | SyncStage, ...]
    _judge_stage: JudgeStage | None
    _telemetry: Telemetry
    _history: HistoryFormat

    def __init__(self, provider: str = "openai-chat", **options: Unpack[PipelineOptions]) -> None:
        unknown = sorted(set(options) - _OPTION_NAMES)
        if unknown:
            raise ConfigurationError(
                f"unknown Pipeline option(s) {unknown}; expected some of {sorted(_OPTION_NAMES)}"
            )
        max_tokens = options.get("max_tokens")
        # Opening one mapper checks the provider name and max_tokens the way every run will.
        open_mapper(provider, max_tokens)
        judge = options.get("judge", True)
        if not isinstance(judge, bool):
            raise ConfigurationError(f"judge must be True or False, got {judge!r}")
        user_stages = _checked_stages(options.get("stages", ()))
        conditions = normalize_stop_on(options.get("stop_on"))
        loop_guard = options.get("loop_guard")
        if loop_guard is not None and not isinstance(loop_guard, RepairLoopGuard):
            raise ConfigurationError(f"loop_guard must be a RepairLoopGuard, got {loop_guard!r}")
        judge_stage = (
            JudgeStage(
                tools=options.get("tools"),
                policy=options.get("policy"),
                truncated_calls=options.get("truncated_calls", "reject"),
            )
            if judge
            else None
        )
        composed: list[Stage | SyncStage] = list(user_stages)
        if judge_stage is not None:
            composed.append(judge_stage)
        if conditions or loop_guard is not None:
            composed.append(StopPolicyStage(conditions, loop_guard))
        request_model = options.get("request_model")
        if request_model is not None and not isinstance(request_model, str):
            raise ConfigurationError(f"request_model must be a str, got {request_model!r}")
        set_slot = object.__setattr__
        set_slot(self, "_provider", provider)
        set_slot(self, "_options", MappingProxyType(dict(options)))
        set_slot(self, "_conditions", conditions)
        set_slot(self, "_stages", tuple(composed))
        set_slot(self, "_judge_stage", judge_stage)
        set_slot(
            self,
            "_telemetry",
            Telemetry(
                tracer_provider=options.get("tracer_provider"),
                meter_provider=options.get("meter_provider"),
                capture_content=options.get("capture_content"),
                redact=options.get("redact"),
            ),
        )
        set_slot(self, "_history", history_format(provider))

    def __setattr__(self, name: str, value: object) -> NoReturn:
        raise AttributeError(f"a Pipeline is immutable; use .replace({name}=...) for a copy")

    def __delattr__(self, name: str) -> NoReturn:
        raise AttributeError("a Pipeline is immutable")

    def __repr__(self) -> str:
        settings = "".join(f", {name}={value!r}" for name, value in sorted(self._options.items()))
        return f"Pipeline({self._provider!r}{settings})"

    # -- configuration -----------------------------------------------------------------------

    @property
    def provider(self) -> str:
        """The provider name this pipeline reads (``openai-chat``, ``llama-cpp``...)."""
        return self._provider

    @property
    def options(self) -> Mapping[str, Any]:
        """The options it was built with, read-only (defaults are not filled in)."""
        return self._options

    @property
    def stop_on(self) -> frozenset[StopCondition]:
        """The checked ``stop_on`` conditions."""
        return self._conditions

    def replace(self, **changes: Unpack[PipelineOptions]) -> Pipeline:
        """A copy with some options changed (checked like a new pipeline); ``self`` is untouched."""
        merged: dict[str, Any] = {**self._options, **changes}
        return Pipeline(self._provider, **merged)

    # -- one turn ----------------------------------------------------------------------------

    def stream(self, source: Source) -> AsyncGenerator[Event]:
        """Yield the typed events of one provider stream, every tool call judged.

        ``source`` is what the provider sent (see :data:`toolwire.pipeline.runner.Source`). Close
        the generator early with ``contextlib.aclosing`` to release the source at once.
        """
        mapper = open_mapper(self._provider, self._options.get("max_tokens"), argument_deltas=True)
        return self._stream(source, mapper)

    async def _stream(self, source: Source, mapper: ProviderMapper) -> AsyncGenerator[Event]:
        # The observer starts with the first read, so a generator never iterated leaves no span.
        observer = self._observer(mapper.provider_name)
        events = observed_events(flatten(run_pipeline(source, mapper, self._stages)), observer)
        try:
            async for event in events:
                yield event
        finally:
            await events.aclose()

    async def collect(self, source: Source) -> Turn:
        """Read a whole provider stream and return the :class:`Turn`, every call judged.

        Bad model output never raises: a malformed call is a rejected call on the turn, an
        in-band provider error is in ``Turn.errors`` with ``stop_reason == "error"``, a
        connection that drops is a ``transport`` error with ``stop_reason == "disconnected"``.
        """
        # Nothing but the Turn reads argument pieces unless the caller plugged in stages.
        mapper = open_mapper(
            self._provider,
            self._options.get("max_tokens"),
            argument_deltas=bool(self._options.get("stages")),
        )
        observer = self._observer(mapper.provider_name)
        builder = TurnBuilder(provider=mapper.provider_name, stop_on=self._conditions)
        add = builder.add
        batches = observed_batches(run_pipeline(source, mapper, self._stages), observer)
        try:
            async for batch in batches:
                for event in batch:
                    add(event)
        finally:
            await batches.aclose()
        return builder.build()

    def _observer(self, provider_name: str) -> TurnObserver | NullObserver:
        return start_observer(
            self._telemetry,
            provider_name,
            max_tokens=self._options.get("max_tokens"),
            request_model=self._options.get("request_model"),
        )

    # -- the history, in this provider's format ----------------------------------------------

    def next_messages(self, turn: Turn, results: Sequence[ToolResult]) -> list[dict[str, Any]]:
        """The messages to append after ``turn``: the assistant message, then every result."""
        return next_messages(turn, results, self._provider)

    def check_history(self, messages: Sequence[Mapping[str, Any]]) -> list[HistoryProblem]:
        """Every way ``messages`` is not well formed for this provider (empty: it is)."""
        return check_history(messages, self._provider)

    def ensure_well_formed(self, messages: Sequence[Mapping[str, Any]]) -> None:
        """Raise :class:`toolwire.HistoryError` listing the problems, if there are any."""
        ensure_well_formed(messages, self._provider)


def _checked_stages(stages: object) -> tuple[Stage | SyncStage, ...]:
    if isinstance(stages, str | bytes) or not isinstance(stages, Sequence | tuple):
        raise ConfigurationError(f"stages must be a sequence of stages, got {stages!r}")
    for stage in stages:
        if not isinstance(stage, SyncStage) and not callable(stage):
            raise ConfigurationError(
                f"{stage!r} is not a stage: a stage is a SyncStage or a callable "
                "events -> events (see toolwire.Stage)"
            )
    return tuple(stages)


def stream(
    source: Source, provider: str = "openai-chat", **options: Unpack[PipelineOptions]
) -> AsyncGenerator[Event]:
    """One turn's events: ``Pipeline(provider, **options).stream(source)``.

    Every option is checked before the first byte is read. For an agent loop that runs many
    turns, build one :class:`Pipeline` and reuse it.
    """
    return Pipeline(provider, **options).stream(source)


async def collect(
    source: Source, provider: str = "openai-chat", **options: Unpack[PipelineOptions]
) -> Turn:
    """One whole turn: ``await Pipeline(provider, **options).collect(source)``.

    Takes the options of :class:`PipelineOptions`. For an agent loop that runs many turns, build
    one :class:`Pipeline` and reuse it.
    """
    return await Pipeline(provider, **options).collect(source)
