"""The demo's report: every call once, and the figures computed from those very calls.

:func:`build_report` returns the object ``--json`` writes. Its ``calls`` list holds each call
exactly once (``key`` is ``task@budget/turn/index``); every figure under ``summary`` is counted
from that list and from ``runs[].turns`` (which name their calls by key), so anyone can recount
them: ``tests/demo/`` does.

``summary`` holds:

- ``calls``, ``by_outcome``, ``by_budget`` (``{budget: {ok, repaired, rejected}}``);
- ``repairs_by_kind`` and ``rejections_by_reason``;
- ``executed`` (calls a tool ran for: only ok and repaired ones) and ``never_executed``;
- ``truncations``: the turns cut before the model ended them, by evidence (a turn may have
  several pieces of evidence) and by what cut them, and the calls cut;
- ``plain_loop``: what ``json.loads(arguments or "{}") or {}`` does with the same calls:
  calls by action, ``crashed_turns`` (turns that would have crashed a plain loop), and
  ``ran_with_bad_arguments`` (tools it runs with made-up or partial arguments);
- ``runs_by_stop``: how the runs ended.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from typing import Any

import msgspec

from ...core.version import __version__
from .agent import CallOutcome, RunOutcome

__all__ = ["build_report", "summarize"]

_OUTCOMES = ("ok", "repaired", "rejected")
_PLAIN_ACTIONS = ("ran_same", "ran_bad", "crashed", "not_reached")


def _sorted_counts(counter: Counter[str]) -> dict[str, int]:
    return dict(sorted(counter.items(), key=lambda item: (-item[1], item[0])))


def summarize(runs: Sequence[RunOutcome]) -> dict[str, Any]:
    """The ``summary`` object, counted from the runs' calls and turns."""
    calls: list[CallOutcome] = [call for run in runs for call in run.calls]
    turns = [turn for run in runs for turn in run.turns]
    by_outcome = Counter({outcome: 0 for outcome in _OUTCOMES})
    by_outcome.update(call.outcome for call in calls)
    budgets = sorted({run.budget for run in runs})
    by_budget: dict[str, dict[str, int]] = {
        str(budget): {outcome: 0 for outcome in _OUTCOMES} for budget in budgets
    }
    for call in calls:
        by_budget[str(call.budget)][call.outcome] += 1
    repairs: Counter[str] = Counter(kind for call in calls for kind in call.repairs)
    reasons: Counter[str] = Counter(call.reason for call in calls if call.reason)
    cut_turns = [turn for turn in turns if turn.truncated]
    evidence: Counter[str] = Counter(e for turn in cut_turns for e in turn.truncation_evidence)
    cut_by: Counter[str] = Counter(turn.cut_by or "unknown" for turn in cut_turns)
    plain = Counter({action: 0 for action in _PLAIN_ACTIONS})
    plain.update(call.plain.action for call in calls)
    return {
        "runs": len(runs),
        "turns": len(turns),
        "calls": len(calls),
        "by_outcome": dict(by_outcome),
        "by_budget": by_budget,
        "repairs_by_kind": _sorted_counts(repairs),
        "rejections_by_reason": _sorted_counts(reasons),
        "executed": sum(call.executed for call in calls),
        "never_executed": sum(not call.executed for call in calls),
        "truncations": {
            "turns": len(cut_turns),
            "turns_with_calls": sum(bool(turn.calls) for turn in cut_turns),
            "calls": sum(call.truncated for call in calls),
            "by_evidence": _sorted_counts(evidence),
            "by_cut_by": _sorted_counts(cut_by),
        },
        "plain_loop": {
            "rule": 'arguments = json.loads(raw or "{}") or {}; tool(**arguments)',
            "calls_by_action": dict(plain),
            "crashed_turns": sum(turn.plain_crashed for turn in turns),
            "ran_with_bad_arguments": plain["ran_bad"],
        },
        "runs_by_stop": _sorted_counts(Counter(run.stop for run in runs)),
    }


def build_report(
    runs: Sequence[RunOutcome],
    *,
    mode: str,
    provider: str,
    model: str,
    budgets: Sequence[int],
    tasks: Sequence[str],
    server: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """The whole report: settings, the summary, every run with its turns, every call once."""
    return {
        "toolwire_version": __version__,
        "mode": mode,
        "provider": provider,
        "model": model,
        "server": server,
        "budgets": list(budgets),
        "tasks": list(tasks),
        "summary": summarize(runs),
        "runs": [
            {
                "name": run.name,
                "task": run.task,
                "budget": run.budget,
                "stop": run.stop,
                "stop_detail": run.stop_detail,
                "steps_done": run.steps_done,
                "steps": run.steps,
                "turns": msgspec.to_builtins(run.turns),
            }
            for run in runs
        ],
        "calls": [msgspec.to_builtins(call) for run in runs for call in run.calls],
    }
