"""toolwire: make LLM tool calls safe to stream.

Provider streams become typed events (:mod:`toolwire.pipeline.events`) that flow through
composable stages; every complete tool call is judged (ready, repaired, or rejected with a true
message); truncation is detected from every evidence there is; a rejected call never runs.
Build a :class:`Pipeline` once and call ``await pipeline.collect(source)`` every turn (or
:func:`collect` / :func:`stream` for a single turn). :class:`HealingTransport` heals the Chat
Completions calls of any httpx client (``docs/healing.md``); it needs ``httpx``, so it is
imported on first use.
"""

from typing import TYPE_CHECKING

from .adapters.history import HistoryFormat as HistoryFormat
from .adapters.history import HistoryProblem as HistoryProblem
from .adapters.registry import history_format as history_format
from .adapters.registry import provider_names as provider_names
from .api import Pipeline as Pipeline
from .api import PipelineOptions as PipelineOptions
from .api import collect as collect
from .api import stream as stream
from .judge import DEFAULT_POLICY as DEFAULT_POLICY
from .judge import STRICT_POLICY as STRICT_POLICY
from .judge import Policy as Policy
from .judge import Toolset as Toolset
from .judge import parse_arguments as parse_arguments
from .judge import render_message as render_message
from .loop import RunStop as RunStop
from .loop import RunStopReason as RunStopReason
from .loop import ToolResult as ToolResult
from .loop import answer_every_call as answer_every_call
from .loop import check_history as check_history
from .loop import dispatch as dispatch
from .loop import ensure_well_formed as ensure_well_formed
from .loop import next_messages as next_messages
from .loop import not_run_result as not_run_result
from .loop import rejected_result as rejected_result
from .loop import run_stop_reason as run_stop_reason
from .pipeline.errors import ConfigurationError as ConfigurationError
from .pipeline.errors import HistoryError as HistoryError
from .pipeline.errors import ProviderStreamError as ProviderStreamError
from .pipeline.errors import SourceTypeError as SourceTypeError
from .pipeline.errors import ToolwireError as ToolwireError
from .pipeline.events import Event as Event
from .pipeline.events import Finish as Finish
from .pipeline.events import ProviderError as ProviderError
from .pipeline.events import ReasoningDelta as ReasoningDelta
from .pipeline.events import ResponseInfo as ResponseInfo
from .pipeline.events import StopCondition as StopCondition
from .pipeline.events import StopReason as StopReason
from .pipeline.events import StreamEnd as StreamEnd
from .pipeline.events import TextDelta as TextDelta
from .pipeline.events import ToolCallArgumentsDelta as ToolCallArgumentsDelta
from .pipeline.events import ToolCallComplete as ToolCallComplete
from .pipeline.events import ToolCallReady as ToolCallReady
from .pipeline.events import ToolCallRejected as ToolCallRejected
from .pipeline.events import ToolCallRepaired as ToolCallRepaired
from .pipeline.events import ToolCallStarted as ToolCallStarted
from .pipeline.events import TruncationEvidence as TruncationEvidence
from .pipeline.events import TurnStopped as TurnStopped
from .pipeline.events import Usage as Usage
from .pipeline.stage import EventStep as EventStep
from .pipeline.stage import Stage as Stage
from .pipeline.stage import SyncStage as SyncStage
from .pipeline.stage import event_stage as event_stage
from .pipeline.turn import CallRecord as CallRecord
from .pipeline.turn import Turn as Turn
from .pipeline.turn import TurnBuilder as TurnBuilder
from .pipeline.verdict import Verdict as Verdict
from .pipeline.version import __version__ as __version__
from .stages.judge import JudgeStage as JudgeStage
from .stages.policy import RepairLoopGuard as RepairLoopGuard
from .stages.telemetry import TelemetryStage as TelemetryStage

if TYPE_CHECKING:
    from .heal.transport import HealingTransport as HealingTransport

__all__ = [
    "DEFAULT_POLICY",
    "STRICT_POLICY",
    "CallRecord",
    "ConfigurationError",
    "Event",
    "EventStep",
    "Finish",
    "HealingTransport",
    "HistoryError",
    "HistoryFormat",
    "HistoryProblem",
    "JudgeStage",
    "Pipeline",
    "PipelineOptions",
    "Policy",
    "ProviderError",
    "ProviderStreamError",
    "ReasoningDelta",
    "RepairLoopGuard",
    "ResponseInfo",
    "RunStop",
    "RunStopReason",
    "SourceTypeError",
    "Stage",
    "StopCondition",
    "StopReason",
    "StreamEnd",
    "SyncStage",
    "TelemetryStage",
    "TextDelta",
    "ToolCallArgumentsDelta",
    "ToolCallComplete",
    "ToolCallReady",
    "ToolCallRejected",
    "ToolCallRepaired",
    "ToolCallStarted",
    "ToolResult",
    "Toolset",
    "TruncationEvidence",
    "Turn",
    "TurnBuilder",
    "TurnStopped",
    "Usage",
    "Verdict",
    "__version__",
    "answer_every_call",
    "check_history",
    "collect",
    "dispatch",
    "ensure_well_formed",
    "history_format",
    "next_messages",
    "not_run_result",
    "parse_arguments",
    "provider_names",
    "rejected_result",
    "run_stop_reason",
    "stream",
]


def __getattr__(name: str) -> object:
    # httpx is an optional dependency (the [http] extra): the transport is imported on first use.
    if name == "HealingTransport":
        from .heal.transport import HealingTransport

        return HealingTransport
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
