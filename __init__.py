"""toolwire: make LLM tool calls safe to stream.

Provider streams become typed events (:mod:`toolwire.core.events`) that flow through
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
from .core.errors import ConfigurationError as ConfigurationError
from .core.errors import HistoryError as HistoryError
from .core.errors import ProviderStreamError as ProviderStreamError
from .core.errors import SourceTypeError as SourceTypeError
from .core.errors import ToolwireError as ToolwireError
from .core.events import Event as Event
from .core.events import Finish as Finish
from .core.events import ProviderError as ProviderError
from .core.events import ReasoningDelta as ReasoningDelta
from .core.events import ResponseInfo as ResponseInfo
from .core.events import StopCondition as StopCondition
from .core.events import StopReason as StopReason
from .core.events import StreamEnd as StreamEnd
from .core.events import TextDelta as TextDelta
from .core.events import ToolCallArgumentsDelta as ToolCallArgumentsDelta
from .core.events import ToolCallComplete as ToolCallComplete
from .core.events import ToolCallReady as ToolCallReady
from .core.events import ToolCallRejected as ToolCallRejected
from .core.events import ToolCallRepaired as ToolCallRepaired
from .core.events import ToolCallStarted as ToolCallStarted
from .core.events import TruncationEvidence as TruncationEvidence
from .core.events import TurnStopped as TurnStopped
from .core.events import Usage as Usage
from .core.stage import EventStep as EventStep
from .core.stage import Stage as Stage
from .core.stage import SyncStage as SyncStage
from .core.stage import event_stage as event_stage
from .core.turn import CallRecord as CallRecord
from .core.turn import Turn as Turn
from .core.turn import TurnBuilder as TurnBuilder
from .core.verdict import Verdict as Verdict
from .core.version import __version__ as __version__
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
