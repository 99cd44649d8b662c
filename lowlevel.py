"""The lower tier: what you need to extend toolwire, not to use it.

The names an agent loop uses every day are at the top (:mod:`toolwire`), the events in
:mod:`toolwire.events`. This tier, like ``trio.lowlevel``, holds the machinery underneath, for
people who build on toolwire rather than with it:

- **Stages** (``docs/custom-stage.md``): the :class:`Stage` protocol, whose contract is written in
  its docstring; :class:`SyncStage` and :class:`EventStep` for a stage with per-run state, and
  :func:`event_stage` for a 1:1 / 1:n function (both fused into the adapter loop); the built-in
  :class:`JudgeStage` and :class:`TelemetryStage`, for chains composed by hand. Check a stage
  with :func:`toolwire.testing.check_stage`.
- **The mapper port**: :class:`ProviderMapper` is what a provider adapter implements (sans-I/O:
  ``feed_bytes``, ``feed_object``, ``finish``), opened by a :data:`MapperFactory` with
  :class:`MapperSettings`; :data:`Source` is every kind of stream a pipeline reads. Check an
  adapter with :func:`toolwire.testing.check_mapper`.
- **The healing ports** (the write side of a format, ``docs/healing.md``): :class:`WireFormat`
  knows a format's requests and whole bodies (a :class:`HealPlan` says what goes upstream) and
  opens a :class:`HealEncoder`, which writes one client response event by event; its
  ``constrained`` writes a re-ask that forces one tool, a :class:`Constraint` (what
  ``Pipeline.constrained_request`` gives too).
- **The history port**: :class:`HistoryFormat` writes and checks one provider's history, the
  :class:`HistoryProblem` entries are what it finds, a :class:`HistoryRepair` what
  ``Pipeline.repair_history`` gives; :func:`history_format` gives a built-in
  provider's. (``Pipeline.next_messages`` / ``check_history`` / ``ensure_well_formed`` are the
  daily spelling.)
- **Tool-parser error readers** (``docs/design.md``, "Tool-parser errors"): a
  :data:`ParserErrorReader` reads one server family's error body into
  :class:`ParserErrorFacts`, so that a server's failure to parse the model's call is that call,
  rejected or recovered, not an outage; :func:`register_parser_error` adds one.
- **Turns and results by hand**, for frameworks that run their own tools or read events
  themselves: :class:`TurnBuilder` folds events into a :class:`toolwire.Turn`;
  :func:`rejected_result` and :func:`not_run_result` are the results ``toolwire.dispatch`` gives a
  call that must not run.
- **Calls left in the text** (``docs/text-calls.md``): :class:`TextCallReader` is one family's
  reader (it answers :class:`TextCallFound`, :class:`TextCallSkip`, ``None`` or
  :data:`TEXT_CALL_NEED_MORE`, with :class:`TextCall` items, given a :class:`TextCallContext`);
  :func:`register_text_call_reader` adds one, :func:`text_call_families` lists them;
  :class:`TextCallStage` is the stage, for chains composed by hand.
- **The judge's parts**: :class:`Toolset` (tool definitions compiled once, accepted as
  ``tools=``) and :func:`render_message`, the model-facing message of a rejected verdict.
"""

from .adapters.history import HistoryFormat as HistoryFormat
from .adapters.history import HistoryProblem as HistoryProblem
from .adapters.history import HistoryRepair as HistoryRepair
from .adapters.parser_errors import register_parser_error as register_parser_error
from .adapters.registry import history_format as history_format
from .core.mapper import MapperFactory as MapperFactory
from .core.mapper import MapperSettings as MapperSettings
from .core.mapper import ProviderMapper as ProviderMapper
from .core.parser_errors import ParserErrorFacts as ParserErrorFacts
from .core.parser_errors import ParserErrorReader as ParserErrorReader
from .core.reading import Source as Source
from .core.stage import EventStep as EventStep
from .core.stage import Stage as Stage
from .core.stage import SyncStage as SyncStage
from .core.stage import event_stage as event_stage
from .core.turn import TurnBuilder as TurnBuilder
from .core.wire import Constraint as Constraint
from .core.wire import HealEncoder as HealEncoder
from .core.wire import HealPlan as HealPlan
from .core.wire import WireFormat as WireFormat
from .judge import Toolset as Toolset
from .judge import render_message as render_message
from .loop import not_run_result as not_run_result
from .loop import rejected_result as rejected_result
from .stages.judge import JudgeStage as JudgeStage
from .stages.telemetry import TelemetryStage as TelemetryStage
from .stages.text_calls import TEXT_CALL_NEED_MORE as TEXT_CALL_NEED_MORE
from .stages.text_calls import TextCall as TextCall
from .stages.text_calls import TextCallContext as TextCallContext
from .stages.text_calls import TextCallFound as TextCallFound
from .stages.text_calls import TextCallReader as TextCallReader
from .stages.text_calls import TextCallSkip as TextCallSkip
from .stages.text_calls import TextCallStage as TextCallStage
from .stages.text_calls import register_text_call_reader as register_text_call_reader
from .stages.text_calls import text_call_families as text_call_families

__all__ = [
    "TEXT_CALL_NEED_MORE",
    "Constraint",
    "EventStep",
    "HealEncoder",
    "HealPlan",
    "HistoryFormat",
    "HistoryProblem",
    "HistoryRepair",
    "JudgeStage",
    "MapperFactory",
    "MapperSettings",
    "ParserErrorFacts",
    "ParserErrorReader",
    "ProviderMapper",
    "Source",
    "Stage",
    "SyncStage",
    "TelemetryStage",
    "TextCall",
    "TextCallContext",
    "TextCallFound",
    "TextCallReader",
    "TextCallSkip",
    "TextCallStage",
    "Toolset",
    "TurnBuilder",
    "WireFormat",
    "event_stage",
    "history_format",
    "not_run_result",
    "register_parser_error",
    "register_text_call_reader",
    "rejected_result",
    "render_message",
    "text_call_families",
]
