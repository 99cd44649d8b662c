"""Stop policies: when a turn (or a whole agent run) must stop instead of dispatching tools.

Training rollouts want a cut-off or malformed turn to end the episode, not to be "fixed" by a
retry the policy never learned; interactive agents want the opposite. So the default stops
nothing, and ``stop_on`` names the conditions that stop a turn:

- ``length``: the output was cut at the token limit (``Finish.reason == "length"``: any
  evidence but a stream that merely stopped, which is ``disconnected``);
- ``malformed_tool_call``: at least one call was rejected;
- ``content_filter``: the provider filtered the output;
- ``repair_loop``: the same tool was rejected ``limit`` times in a row (default 3), counted
  across turns by a :class:`RepairLoopGuard` the caller keeps for the run (models answer a
  bounced call by adding another brace, forever).

A stopped turn dispatches nothing; :func:`toolwire.dispatch` answers each of its calls with a
synthesized "not run" result so that the history can still continue if the caller wants.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import get_args

from ..core.errors import ConfigurationError
from ..core.events import (
    Event,
    Finish,
    StopCondition,
    ToolCallReady,
    ToolCallRejected,
    ToolCallRepaired,
    TurnStopped,
)
from ..core.stage import EventStep, SyncStage

__all__ = [
    "RepairLoopGuard",
    "StopCondition",
    "StopPolicyStage",
    "TurnStopped",
    "normalize_stop_on",
]

_CONDITIONS: frozenset[str] = frozenset(get_args(StopCondition))


def normalize_stop_on(stop_on: Iterable[str] | None) -> frozenset[StopCondition]:
    """Check the names in ``stop_on``; a typo must fail loudly, not silently stop nothing."""
    if stop_on is None:
        return frozenset()
    if isinstance(stop_on, str):
        raise ConfigurationError(f"stop_on must be a set of names, not the string {stop_on!r}")
    names = frozenset(stop_on)
    unknown = names - _CONDITIONS
    if unknown:
        raise ConfigurationError(
            f"unknown stop_on condition(s) {sorted(unknown)}; expected some of "
            f"{sorted(_CONDITIONS)}"
        )
    return names  # type: ignore[return-value]  # checked against the literal's values above


class RepairLoopGuard:
    """Counts consecutive rejections per tool across the turns of one agent run.

    A tool's count grows by one for each rejected call of that tool and goes back to zero as soon
    as one of its calls passes. Keep one guard per agent run and pass it to every ``collect``.
    """

    def __init__(self, limit: int = 3) -> None:
        if limit < 1:
            raise ConfigurationError(f"repair-loop limit must be at least 1, got {limit}")
        self.limit = limit
        self._streak: dict[str, int] = {}

    def record(self, tool: str, rejected: bool) -> None:
        """Record one judged call of ``tool``."""
        if rejected:
            self._streak[tool] = self._streak.get(tool, 0) + 1
        else:
            self._streak.pop(tool, None)

    def stuck_tools(self) -> list[str]:
        """The tools rejected ``limit`` times in a row, sorted."""
        return sorted(tool for tool, count in self._streak.items() if count >= self.limit)

    def streak(self, tool: str) -> int:
        """How many times in a row ``tool`` was rejected."""
        return self._streak.get(tool, 0)


class _StopPolicyStep:
    __slots__ = ("_filter", "_guard", "_rejected", "_stop_on")

    def __init__(self, stop_on: frozenset[StopCondition], guard: RepairLoopGuard) -> None:
        self._stop_on = stop_on
        self._guard = guard
        self._rejected = False

    def feed(self, event: Event) -> Iterable[Event]:
        if isinstance(event, ToolCallRejected):
            self._rejected = True
            self._guard.record(event.call.name, rejected=True)
        elif isinstance(event, ToolCallReady | ToolCallRepaired):
            self._guard.record(event.call.name, rejected=False)
        elif isinstance(event, Finish):
            held = self._conditions(event)
            if held:
                return (event, TurnStopped(conditions=held))
        return (event,)

    def _conditions(self, finish: Finish) -> tuple[StopCondition, ...]:
        held: list[StopCondition] = []
        stop_on = self._stop_on
        # A dropped stream is "disconnected", not "length": only the token limit counts here.
        if "length" in stop_on and finish.reason == "length":
            held.append("length")
        if "malformed_tool_call" in stop_on and self._rejected:
            held.append("malformed_tool_call")
        if "content_filter" in stop_on and finish.reason == "content_filter":
            held.append("content_filter")
        if "repair_loop" in stop_on and self._guard.stuck_tools():
            held.append("repair_loop")
        return tuple(held)

    def finish(self) -> Iterable[Event]:
        return ()


class StopPolicyStage(SyncStage):
    """Watches judged calls and the finish; emits :class:`TurnStopped` when ``stop_on`` holds.

    Without a shared ``guard`` the repair-loop count covers this turn only.
    """

    def __init__(self, stop_on: Iterable[str] | None, guard: RepairLoopGuard | None = None) -> None:
        self.stop_on = normalize_stop_on(stop_on)
        self.guard = guard

    def start(self) -> EventStep:
        """Per-run state; the guard, when given, is shared on purpose across turns."""
        return _StopPolicyStep(self.stop_on, self.guard or RepairLoopGuard())
