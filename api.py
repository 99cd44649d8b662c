"""The public entry points: a configured :class:`Pipeline`, and ``collect`` / ``stream``.

A :class:`Pipeline` is built once per agent (or per model and tool set) and used for every turn:
every setting is checked when it is built, nothing about it changes afterwards, and it holds no
per-run state, so one object serves any number of concurrent turns on any task. ``collect`` and
``stream`` are one-line conveniences that build one for a single turn.

Every setting is declared once, in :class:`PipelineOptions`; the pipeline's fixed order is drawn in
:mod:`toolwire.core.runner`.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator, Callable, Iterable, Mapping, Sequence
from types import MappingProxyType
from typing import Any, Literal, NoReturn, TypedDict, Unpack

import msgspec
from opentelemetry.metrics import MeterProvider
from opentelemetry.trace import TracerProvider

from .adapters.history import HistoryFormat, HistoryProblem, HistoryRepair
from .adapters.parser_errors import parser_error_readers
from .adapters.registry import (
    adapt_messages,
    check_max_tokens,
    history_format,
    open_mapper,
    provider,
    read_request,
)
from .core.errors import ConfigurationError
from .core.events import Event, StopCondition
from .core.mapper import MapperSettings
from .core.reading import Source
from .core.request import RequestFacts
from .core.results import ToolResult
from .core.runner import run_pipeline
from .core.stage import Stage, SyncStage
from .core.turn import Turn, TurnBuilder
from .core.wire import Constraint
from .judge import DEFAULT_POLICY, Policy, Toolset
from .loop.history import check_history, ensure_well_formed, next_messages, repair_history
from .loop.reask import constrained_request
from .stages.judge import JudgeStage
from .stages.judge_cache import JudgeStageCache
from .stages.judge_process import DEFAULT_CHECK_BUDGET, checked_budget
from .stages.policy import RepairLoopGuard, StopPolicyStage, normalize_stop_on
from .stages.telemetry.observer import (
    NullObserver,
    Redactor,
    Telemetry,
    TurnObserver,
    start_observer,
)
from .stages.telemetry.observing import observed_batches, observed_events_of_batches
from .stages.text_calls import TextCallReader, TextCallStage

__all__ = ["Pipeline", "PipelineOptions", "TextCalls", "TruncatedCalls", "collect", "stream"]

#: What to do with a call cut off at the token limit whose arguments happen to parse:
#: ``reject`` it with the token-limit message (default: its last field may be missing or
#: short), or ``allow`` it to run as parsed (it stays marked ``truncated``).
TruncatedCalls = Literal["reject", "allow"]

#: Whether calls left in the text are read (``docs/text-calls.md``): ``auto`` as the provider's
#: profile says (on for local servers, off for hosted APIs), ``off``, or the families to read
#: (names, or :class:`toolwire.lowlevel.TextCallReader` objects).
TextCalls = Literal["auto", "off"] | Sequence[str | TextCallReader]


class PipelineOptions(TypedDict, total=False):
    """Every setting of a :class:`Pipeline` (and of ``collect`` / ``stream``), all optional.

    - ``max_tokens``: the request's output limit, when known, so that usage at the limit counts
      as truncation evidence.
    - ``tools``: the tool definitions offered to the model (OpenAI or Anthropic style dicts, JSON
      Schemas, pydantic models, or a :class:`toolwire.lowlevel.Toolset`), used to validate every
      call.
    - ``policy``: the repairs allowed (``toolwire.DEFAULT_POLICY``, ``toolwire.STRICT_POLICY``).
    - ``judge``: ``False`` leaves calls unjudged (``ToolCallComplete``, never runnable).
    - ``truncated_calls``: whether a cut call whose text parses may run (:data:`TruncatedCalls`).
    - ``judge_budget``: seconds a call whose schema check is too costly for the event loop may
      wait for a worker process, then as many for its check; past either it is rejected as
      ``unchecked``, blaming no one (2.0; ``None``: such calls are checked in a worker thread
      with no budget, holding the event loop while they run; ``docs/repairs.md``).
    - ``stop_on``: the conditions that stop a turn (a ``TurnStopped`` event after ``Finish``).
    - ``loop_guard``: counts repeated rejections across the turns of one agent run.
    - ``stages``: your stages, run after the adapter and before the judge, in the order given.
    - ``text_calls``: read calls the server left in the text (:data:`TextCalls`; ``auto``:
      on for the local servers' profiles, off for hosted APIs), before your stages.
    - ``tracer_provider`` / ``meter_provider``: where spans and metrics go (the global ones by
      default; toolwire never sets a global provider).
    - ``capture_content``: export raw arguments and messages (off by default; ``None`` reads
      ``OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT``), through ``redact``, capped.
    - ``request_model``: the requested model, named on spans and metrics.
    - ``request``: the request body that was sent (a mapping, or its JSON bytes), in the
      provider's shape; ``max_tokens``, stop sequences, ``tools`` and ``model`` are read from
      it. Usually given per turn: ``pipeline.collect(source, request=body)``.
    """

    max_tokens: int | None
    tools: Sequence[Any] | Toolset | None
    policy: Policy | None
    judge: bool
    truncated_calls: TruncatedCalls
    judge_budget: float | None
    stop_on: Iterable[str] | None
    loop_guard: RepairLoopGuard | None
    stages: Sequence[Stage | SyncStage]
    text_calls: TextCalls
    tracer_provider: TracerProvider | None
    meter_provider: MeterProvider | None
    capture_content: bool | None
    redact: Redactor | None
    request_model: str | None
    request: Mapping[str, Any] | bytes | str | None


_OPTION_NAMES = frozenset(PipelineOptions.__annotations__)


class _Run(msgspec.Struct, frozen=True):
    """What one turn runs with: the pipeline's settings with the request's facts applied."""

    settings: MapperSettings
    stages: tuple[Stage | SyncStage, ...]
    request_model: str | None


class Pipeline:
    """One provider's stream handling, configured once and shared by every turn.

    ``Pipeline(provider, **options)`` checks every option at once (a typo fails here, not in the
    middle of a turn) and compiles the tool schemas once. It is immutable: derive a changed copy
    with :meth:`replace` (``p.replace(max_tokens=2048)`` for a retry). It keeps no per-run state,
    so concurrent turns may share it; a ``loop_guard`` is shared on purpose, so give each agent
    run its own pipeline (``p.replace(loop_guard=RepairLoopGuard())``) when you use one.

    ``request`` (an option, or per turn on :meth:`collect` / :meth:`stream`) is the request body
    that was sent, in the provider's shape: toolwire reads from it the output limit, the stop
    sequences, the tools and the model, so that what it says about a cut call is true (a stop
    sequence is not the token limit). What the request says wins over the options for that turn,
    except ``tools``: tools given as an option (compiled once) are used when both are given.
    """

    __slots__ = (
        "_conditions",
        "_default_run",
        "_history",
        "_judge_stages",
        "_options",
        "_policy_stage",
        "_provider",
        "_telemetry",
        "_text_calls",
        "_user_stages",
    )

    _provider: str
    _options: Mapping[str, Any]
    _conditions: frozenset[StopCondition]
    _user_stages: tuple[Stage | SyncStage, ...]
    _policy_stage: StopPolicyStage | None
    _default_run: _Run
    _telemetry: Telemetry
    _history: HistoryFormat
    _judge_stages: JudgeStageCache
    _text_calls: TextCallStage | None

    def __init__(self, provider: str = "openai-chat", **options: Unpack[PipelineOptions]) -> None:
        unknown = sorted(set(options) - _OPTION_NAMES)
        if unknown:
            raise ConfigurationError(
                f"unknown Pipeline option(s) {unknown}; expected some of {sorted(_OPTION_NAMES)}"
            )
        check_max_tokens(options.get("max_tokens"))
        history = history_format(provider)  # checks the provider name
        judge = options.get("judge", True)
        if not isinstance(judge, bool):
            raise ConfigurationError(f"judge must be True or False, got {judge!r}")
        user_stages = _checked_stages(options.get("stages", ()))
        conditions = normalize_stop_on(options.get("stop_on"))
        loop_guard = options.get("loop_guard")
        if loop_guard is not None and not isinstance(loop_guard, RepairLoopGuard):
            raise ConfigurationError(f"loop_guard must be a RepairLoopGuard, got {loop_guard!r}")
        request_model = options.get("request_model")
        if request_model is not None and not isinstance(request_model, str):
            raise ConfigurationError(f"request_model must be a str, got {request_model!r}")
        budget = checked_budget(options.get("judge_budget", DEFAULT_CHECK_BUDGET), "judge_budget")
        set_slot = object.__setattr__
        set_slot(self, "_provider", provider)
        set_slot(self, "_options", MappingProxyType(dict(options)))
        set_slot(
            self,
            "_judge_stages",
            JudgeStageCache(
                options.get("policy"),
                options.get("truncated_calls", "reject"),
                check_budget=budget,
            ),
        )
        set_slot(self, "_conditions", conditions)
        set_slot(self, "_user_stages", user_stages)
        set_slot(
            self,
            "_policy_stage",
            StopPolicyStage(conditions, loop_guard) if conditions or loop_guard else None,
        )
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
        set_slot(self, "_history", history)
        set_slot(self, "_text_calls", _text_call_stage(provider, options.get("text_calls", "auto")))
        default_request = options.get("request")
        facts = read_request(provider, default_request) if default_request is not None else None
        # The judge stage (and its compiled tool schemas) is built once, here: from the tools
        # option, or else from the default request's tools.
        tools = options.get("tools")
        if tools is None and facts is not None:
            tools = facts.tools
        judge_stage = self._judge_stage(tools) if judge else None
        set_slot(self, "_default_run", self._plan(facts, judge_stage))

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

    def with_provider(self, provider: str) -> Pipeline:
        """The same options for another provider (a proxy judges each endpoint's format)."""
        return Pipeline(provider, **self._options)

    def _judge_stage(self, tools: Any) -> JudgeStage:
        return JudgeStage(
            tools=tools,
            policy=self._options.get("policy"),
            truncated_calls=self._options.get("truncated_calls", "reject"),
            check_budget=self._options.get("judge_budget", DEFAULT_CHECK_BUDGET),
        )

    def _plan(self, facts: RequestFacts | None, judge_stage: JudgeStage | None) -> _Run:
        options = self._options
        stages: list[Stage | SyncStage] = list(self._user_stages)
        text_calls = self._text_calls
        if judge_stage is not None:
            stages.append(judge_stage)
        if self._policy_stage is not None:
            stages.append(self._policy_stage)
        policy = options.get("policy") or DEFAULT_POLICY
        max_tokens = options.get("max_tokens")
        stop_sequences: tuple[str, ...] | None = None
        request_model = options.get("request_model")
        if facts is not None:
            max_tokens = facts.max_tokens if facts.max_tokens is not None else max_tokens
            stop_sequences = facts.stop_sequences
            request_model = request_model or facts.model
        if text_calls is not None:
            # Only the offered names count: the judge's tools, compiled once.
            tools: Any = judge_stage.toolset if judge_stage is not None else options.get("tools")
            if tools is None and facts is not None:
                tools = facts.tools
            stage = text_calls.for_turn(tools, max_tokens=max_tokens, stop_sequences=stop_sequences)
            if stage.active:
                stages.insert(0, stage)
        return _Run(
            MapperSettings(
                max_tokens=max_tokens,
                stop_sequences=stop_sequences,
                max_argument_chars=policy.max_bytes,
                parser_errors=parser_error_readers(self._provider),
            ),
            tuple(stages),
            request_model,
        )

    def _run_for(self, request: Any, judge_stage: JudgeStage | None = None) -> _Run:
        """The plan of one turn: the default one, or one with ``request``'s facts applied.

        ``judge_stage``: the stage of ``request``'s own tools when the caller already holds it
        (the healing transport finds it while planning the request, so the tools' digest is
        not taken a second time for the response); it stands in for looking them up.
        """
        if request is None:
            return self._default_run
        facts = read_request(self._provider, _request_body(request))
        default = self._default_run
        stage: JudgeStage | None = None
        if self._options.get("judge", True):
            tools = self._options.get("tools")
            if tools is None and facts.tools is not None:
                stage = (
                    judge_stage
                    if judge_stage is not None
                    else self._judge_stages.stage_for(facts.tools)
                )
            else:
                stage = next(
                    (stage for stage in default.stages if isinstance(stage, JudgeStage)), None
                )
        return self._plan(facts, stage)

    # -- one turn ----------------------------------------------------------------------------

    def stream(self, source: Source, *, request: Any = None) -> AsyncGenerator[Event]:
        """Yield the typed events of one provider stream, every tool call judged.

        ``source`` is what the provider sent (see :data:`toolwire.lowlevel.Source`);
        ``request`` the body that was sent, when known. Close the generator early with
        ``contextlib.aclosing`` to release the source at once.
        """
        # The observer starts with the first read, so a generator never iterated leaves no span.
        return observed_events_of_batches(*self._opened(source, request))

    def stream_batches(self, source: Source, *, request: Any = None) -> AsyncGenerator[list[Event]]:
        """:meth:`stream`, handed on a batch at a time: the events of each read of ``source``
        together (never an empty batch), for a consumer that passes each read on whole (the
        healing proxy writes one piece per read, not one per event). The turn's span sees each
        batch as it is handed on: a consumer that stops inside a batch stopped after it.
        """
        return observed_batches(*self._opened(source, request))

    def _judged_batches(
        self, source: Source, request: Any, judge_stage: JudgeStage | None
    ) -> AsyncGenerator[list[Event]]:
        """:meth:`stream_batches` with ``request``'s judge stage given (see :meth:`_run_for`)."""
        return observed_batches(*self._opened(source, request, judge_stage))

    def _opened(
        self, source: Source, request: Any, judge_stage: JudgeStage | None = None
    ) -> tuple[
        Callable[[], AsyncGenerator[list[Event]]], Callable[[], TurnObserver | NullObserver]
    ]:
        """How one turn's batches are opened, and its observer started (both at the first read)."""
        run = self._run_for(request, judge_stage)
        mapper = open_mapper(self._provider, run.settings)
        return (
            lambda: run_pipeline(source, mapper, run.stages),
            lambda: self._observer(mapper.provider_name, run),
        )

    async def collect(self, source: Source, *, request: Any = None) -> Turn:
        """Read a whole provider stream and return the :class:`Turn`, every call judged.

        Bad model output never raises: a malformed call is a rejected call on the turn; an
        in-band provider error, an HTTP error status or a body that is no stream is in
        ``Turn.errors`` with ``stop_reason == "error"``; a connection that drops is a
        ``transport`` error with ``stop_reason == "disconnected"``.
        """
        run = self._run_for(request)
        # Nothing but the Turn reads argument pieces unless the caller plugged in stages.
        settings = msgspec.structs.replace(run.settings, argument_deltas=bool(self._user_stages))
        mapper = open_mapper(self._provider, settings)
        observer = self._observer(mapper.provider_name, run)
        builder = TurnBuilder(provider=mapper.provider_name, stop_on=self._conditions)
        add_many = builder.add_many
        batches = observed_batches(
            lambda: run_pipeline(source, mapper, run.stages), lambda: observer
        )
        try:
            async for batch in batches:
                add_many(batch)
        finally:
            await batches.aclose()
        turn = builder.build()
        if isinstance(request, Constraint) and request.applied:
            turn = msgspec.structs.replace(turn, constrained_to=request.tool)
        return turn

    def _observer(self, provider_name: str, run: _Run) -> TurnObserver | NullObserver:
        return start_observer(
            self._telemetry,
            provider_name,
            max_tokens=run.settings.max_tokens,
            request_model=run.request_model,
        )

    # -- the history, in this provider's format ----------------------------------------------

    def next_messages(self, turn: Turn, results: Sequence[ToolResult]) -> list[dict[str, Any]]:
        """The messages to append after ``turn``: the assistant message, then every result."""
        return next_messages(turn, results, self._provider)

    def constrained_request(
        self,
        request: Mapping[str, Any],
        turn: Turn,
        *,
        unconstrained_tools: Iterable[str] = (),
    ) -> Constraint:
        """``request``, the re-ask after ``turn`` (its history holds ``next_messages``),
        asking this provider's server for a call to the tool of ``turn``'s rejected call whose
        arguments its own engine keeps to the tool's schema; the request unchanged when it
        cannot be (``skipped`` says why). Send its ``body``; pass it as ``request=`` to
        :meth:`collect` and the turn says ``constrained_to`` (``docs/agent-loop.md``)."""
        return constrained_request(
            request, turn, self._provider, unconstrained_tools=unconstrained_tools
        )

    def adapt_messages(self, messages: Sequence[Any]) -> list[Any]:
        """``messages`` rewritten into the form this provider's server accepts (a new list).

        What the openai SDK hands back (an assistant ``content: null`` next to tool calls,
        ``role: tool`` results) becomes what the server's profile needs: for ``llama-cpp``,
        ``""`` and user messages naming the call, as :meth:`next_messages` writes them. The
        proxy and the transport do the same on the way in (``docs/providers.md``); a loop of
        your own calls this before each request. Messages that need nothing are passed as
        they are; the input is not modified.
        """
        return adapt_messages(self._provider, messages)

    def check_history(self, messages: Sequence[Mapping[str, Any]]) -> list[HistoryProblem]:
        """Every way ``messages`` is not well formed for this provider (empty: it is)."""
        return check_history(messages, self._provider)

    def repair_history(self, messages: Sequence[Mapping[str, Any]]) -> HistoryRepair:
        """``messages`` with every earlier call a server would refuse written as a rejected call.

        llama-server, vLLM (up to 0.28) and Ollama's ``/v1`` parse every earlier call's
        arguments, and one that is not JSON (cut, unescaped quotes, markup) fails every later
        request. Each such call (``check_history``: ``arguments_not_json``,
        ``arguments_not_object``, ``arguments_markup``) is written as ``next_messages`` writes
        a rejected call: safe arguments (``{}``) and a result that says what was wrong, the
        result it had kept after it, results still paired. ``HistoryRepair.messages`` is the
        new history (``messages`` is not changed), ``HistoryRepair.changes`` each call rewritten.
        """
        return repair_history(messages, self._provider)

    def ensure_well_formed(self, messages: Sequence[Mapping[str, Any]]) -> None:
        """Raise :class:`toolwire.HistoryError` listing the problems, if there are any."""
        ensure_well_formed(messages, self._provider)


def _text_call_stage(provider_name: str, choice: object) -> TextCallStage | None:
    """The text-call stage ``text_calls`` asks for (no tools yet), or ``None``."""
    if choice == "auto":
        return TextCallStage() if provider(provider_name).reads_text_calls else None
    if choice == "off":
        return None
    if isinstance(choice, str | bytes) or not isinstance(choice, Sequence):
        raise ConfigurationError(
            f"text_calls must be 'auto', 'off' or a list of families, got {choice!r}"
        )
    return TextCallStage(choice) if choice else None


def _request_body(request: Any) -> Any:
    """The body a ``request=`` stands for: itself, or a constrained re-ask's body."""
    if not isinstance(request, Constraint):
        return request
    if request.body is None:
        raise ConfigurationError(
            "request= was given a Constraint with no body (a healing session's, not "
            "Pipeline.constrained_request's): pass the request that was sent"
        )
    return request.body


def _checked_stages(stages: object) -> tuple[Stage | SyncStage, ...]:
    if isinstance(stages, str | bytes) or not isinstance(stages, Sequence | tuple):
        raise ConfigurationError(f"stages must be a sequence of stages, got {stages!r}")
    for stage in stages:
        if not isinstance(stage, SyncStage) and not callable(stage):
            raise ConfigurationError(
                f"{stage!r} is not a stage: a stage is a SyncStage or a callable "
                "events -> events (see toolwire.lowlevel.Stage)"
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

    Takes the options of :class:`PipelineOptions` (``request=body`` among them). For an agent
    loop that runs many turns, build one :class:`Pipeline` and reuse it.
    """
    return await Pipeline(provider, **options).collect(source)
