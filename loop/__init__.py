"""The agent-loop helpers: run a judged turn's calls, answer every call id, continue the history.

Everything an agent loop does between two turns: :func:`dispatch` (a rejected call never runs),
:func:`answer_every_call`, the history entry points and :func:`run_stop_reason`.
"""

from ..core.results import ResultStatus as ResultStatus
from ..core.results import ToolResult as ToolResult
from .dispatch import answer_every_call as answer_every_call
from .dispatch import dispatch as dispatch
from .dispatch import not_run_result as not_run_result
from .dispatch import rejected_result as rejected_result
from .dispatch import results_in_order as results_in_order
from .history import check_history as check_history
from .history import ensure_well_formed as ensure_well_formed
from .history import next_messages as next_messages
from .reask import constrained_request as constrained_request
from .run_stop import RunStop as RunStop
from .run_stop import RunStopReason as RunStopReason
from .run_stop import run_stop_reason as run_stop_reason

__all__ = [
    "ResultStatus",
    "RunStop",
    "RunStopReason",
    "ToolResult",
    "answer_every_call",
    "check_history",
    "constrained_request",
    "dispatch",
    "ensure_well_formed",
    "next_messages",
    "not_run_result",
    "rejected_result",
    "results_in_order",
    "run_stop_reason",
]
