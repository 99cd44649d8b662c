"""History entry points: what to append after a judged turn, and whether a history is sound.

The per-provider formats live with their adapters (:mod:`toolwire.adapters`); these functions pick
the format by provider name and keep the rule every format shares: every call gets exactly one
result, in call order.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from ..adapters.history import HistoryProblem, HistoryRepair
from ..adapters.registry import history_format
from ..core.errors import HistoryError
from ..core.results import ToolResult
from ..core.turn import Turn
from .dispatch import results_in_order

__all__ = ["check_history", "ensure_well_formed", "next_messages", "repair_history"]


def next_messages(
    turn: Turn, results: Sequence[ToolResult], provider: str = "openai-chat"
) -> list[dict[str, Any]]:
    """The messages to append after ``turn``: the assistant message, then every result.

    Raises :class:`HistoryError` unless ``results`` answers every call of the turn once, in order
    (use :func:`toolwire.answer_every_call` to fill in calls that were not run).
    """
    if not results_in_order(turn, results):
        raise HistoryError(
            "results must answer every call of the turn exactly once, in call order; got "
            f"{[result.call_id for result in results]} for {[c.call_id for c in turn.calls]}"
        )
    form = history_format(provider)
    return [*form.assistant_messages(turn), *form.tool_result_messages(results)]


def check_history(
    messages: Sequence[Mapping[str, Any]], provider: str = "openai-chat"
) -> list[HistoryProblem]:
    """Every way ``messages`` is not well formed for ``provider`` (an empty list: it is)."""
    return history_format(provider).problems(messages)


def repair_history(
    messages: Sequence[Mapping[str, Any]], provider: str = "openai-chat"
) -> HistoryRepair:
    """``messages`` with every call whose arguments a server refuses written as a rejected call
    (``{}`` and an error result), in ``provider``'s format; what changed in ``changes``.

    Raises :class:`HistoryError` for a message nested past Python's recursion limit: the repair
    copies each message, and ``deepcopy`` recurses.
    """
    try:
        return history_format(provider).repair(messages)
    except RecursionError:
        raise HistoryError(
            "a message of the history nests too deeply to copy (past Python's recursion limit)"
        ) from None


def ensure_well_formed(
    messages: Sequence[Mapping[str, Any]], provider: str = "openai-chat"
) -> None:
    """Raise :class:`HistoryError` listing the problems, if ``messages`` has any."""
    problems = check_history(messages, provider)
    if problems:
        listed = "; ".join(
            f"message {problem.index}: {problem.kind} ({problem.call_id}): {problem.detail}"
            for problem in problems
        )
        raise HistoryError(f"history is not well formed: {listed}")
