"""Whether an agent run ends after a turn, and why: the one decision every agent loop makes.

The stop *policy* (``stop_on``, :mod:`toolwire.stages.policy`) decides about one turn while it
streams; this decides about the run, from a finished turn, so that every loop ends for the same
reasons and says them the same way.
"""

from __future__ import annotations

from typing import Literal

import msgspec

from ..core.events import StopCondition

__all__ = ["RunStop", "RunStopReason", "run_stop_reason"]

#: Why a whole agent run ended.
RunStopReason = Literal[
    "done", "max_steps", "length", "malformed_tool_call", "repair_loop", "timeout", "error"
]


class RunStop(msgspec.Struct, frozen=True):
    """Why an agent run ended, with a line of detail for logs."""

    reason: RunStopReason
    detail: str = ""

    @property
    def is_truncated(self) -> bool:
        """True when the run ended because output was cut off at the token limit."""
        return self.reason == "length"


def run_stop_reason(
    *,
    stopped_by: tuple[StopCondition, ...],
    stop_reason: str,
    has_calls: bool,
    step: int,
    max_steps: int | None,
) -> RunStop | None:
    """Whether an agent run ends after this turn, and why (``None``: go on with the tools).

    The first condition that holds wins, in this order: a policy stop (its first condition;
    ``content_filter`` counts as ``error``), a provider ``error`` or dropped stream, a turn with
    no tool calls (``done``, or ``length`` when that answer was cut off), ``max_steps`` reached.
    """
    if stopped_by:
        first = stopped_by[0]
        reason: RunStopReason = "error" if first == "content_filter" else first
        return RunStop(reason, f"stop_on condition(s) held: {', '.join(stopped_by)}")
    if stop_reason in ("error", "disconnected"):
        return RunStop("error", f"the provider stream ended with {stop_reason!r}")
    if not has_calls:
        if stop_reason == "length":
            return RunStop("length", "the final answer was cut off at the token limit")
        return RunStop("done")
    if max_steps is not None and step >= max_steps:
        return RunStop("max_steps", f"{step} steps taken, the limit is {max_steps}")
    return None
