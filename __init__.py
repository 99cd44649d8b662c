"""toolwire: make LLM tool calls safe to stream.

Provider streams become typed events that flow through composable stages; every complete tool
call is judged (ready, repaired, or rejected with a true message); truncation is detected from
every evidence there is; a rejected call never runs. Build a :class:`Pipeline` once and call
``await pipeline.collect(source)`` every turn (or :func:`collect` / :func:`stream` for a single
turn); :func:`dispatch` runs what passed and ``pipeline.next_messages`` continues the history.
:class:`HealingTransport` heals the tool calls of any httpx client (``docs/healing.md``); it
needs ``httpx``, so it is imported on first use.

The public surface comes in tiers (``docs/design.md``): the names an agent loop uses every day
are here; every event class is in :mod:`toolwire.events`; the machinery for extending toolwire
(the stage protocol, the mapper port, the judge stage, the turn builder) is in
:mod:`toolwire.lowlevel`; the conformance kits are in :mod:`toolwire.testing`.
"""

from typing import TYPE_CHECKING

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
from .core.turn import CallRecord as CallRecord
from .core.turn import Turn as Turn
from .core.verdict import Verdict as Verdict
from .core.version import __version__ as __version__
from .judge import DEFAULT_POLICY as DEFAULT_POLICY
from .judge import STRICT_POLICY as STRICT_POLICY
from .judge import Policy as Policy
from .judge import parse_arguments as parse_arguments
from .loop import RunStop as RunStop
from .loop import RunStopReason as RunStopReason
from .loop import ToolResult as ToolResult
from .loop import answer_every_call as answer_every_call
from .loop import dispatch as dispatch
from .loop import run_stop_reason as run_stop_reason
from .stages.policy import RepairLoopGuard as RepairLoopGuard

if TYPE_CHECKING:
    from .heal.transport import HealingTransport as HealingTransport

__all__ = [
    "DEFAULT_POLICY",
    "STRICT_POLICY",
    "CallRecord",
    "ConfigurationError",
    "HealingTransport",
    "HistoryError",
    "Pipeline",
    "PipelineOptions",
    "Policy",
    "ProviderStreamError",
    "RepairLoopGuard",
    "RunStop",
    "RunStopReason",
    "SourceTypeError",
    "ToolResult",
    "ToolwireError",
    "Turn",
    "Verdict",
    "__version__",
    "answer_every_call",
    "collect",
    "dispatch",
    "parse_arguments",
    "provider_names",
    "run_stop_reason",
    "stream",
]


def __getattr__(name: str) -> object:
    # httpx is an optional dependency (the [http] extra): the transport is imported on first use.
    if name == "HealingTransport":
        from .heal.transport import HealingTransport

        return HealingTransport
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
