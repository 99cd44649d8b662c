"""Recount a ``toolwire demo --json`` report from its own calls: every figure must agree."""

from __future__ import annotations

import json
from collections import Counter
from typing import Any

OUTCOMES = ("ok", "repaired", "rejected")
PLAIN_ACTIONS = ("ran_same", "ran_bad", "crashed", "not_reached")


def _plain_action(raw: str, call: dict[str, Any]) -> str:
    """The plain loop's rule, written again here from its definition, independently."""
    try:
        arguments = json.loads(raw or "{}") or {}
    except ValueError:
        return "crashed"
    if not isinstance(arguments, dict):
        return "crashed"
    if call["outcome"] == "rejected":
        return "ran_bad"
    return "ran_same" if arguments == call["arguments"] else "ran_bad"


def check_report(report: dict[str, Any]) -> None:
    """Every call accounted for exactly once; every figure recounted from ``calls``."""
    calls = report["calls"]
    summary = report["summary"]
    keys = [call["key"] for call in calls]
    assert len(keys) == len(set(keys)), "a call is listed twice"
    by_key = {call["key"]: call for call in calls}

    # Each call belongs to exactly one turn, and each turn's calls exist.
    listed: list[str] = []
    turns = []
    for run in report["runs"]:
        assert run["stop"], f"run {run['name']} has no stop reason"
        for turn in run["turns"]:
            turns.append(turn)
            listed.extend(turn["calls"])
            for key in turn["calls"]:
                assert by_key[key]["run"] == run["name"]
                assert by_key[key]["turn"] == turn["turn"]
            assert turn["history_problems"] == [], turn
    assert sorted(listed) == sorted(keys), "calls and turns disagree"

    assert summary["calls"] == len(calls)
    assert summary["turns"] == len(turns)
    assert summary["runs"] == len(report["runs"])
    assert summary["by_outcome"] == {o: sum(c["outcome"] == o for c in calls) for o in OUTCOMES}
    assert sum(summary["by_outcome"].values()) == len(calls)
    per_budget = {
        str(b): {o: sum(c["outcome"] == o and c["budget"] == b for c in calls) for o in OUTCOMES}
        for b in report["budgets"]
    }
    assert summary["by_budget"] == per_budget
    assert sum(sum(v.values()) for v in summary["by_budget"].values()) == len(calls)
    assert summary["repairs_by_kind"] == dict(Counter(k for c in calls for k in c["repairs"]))
    reasons = Counter(c["reason"] for c in calls if c["reason"])
    assert summary["rejections_by_reason"] == dict(reasons)

    # Only calls that passed ran; a rejected call never did.
    for call in calls:
        if call["outcome"] == "rejected":
            assert not call["executed"], call
            assert call["result_status"] == "rejected"
            assert call["arguments"] is None
        else:
            assert call["executed"] or call["result_status"] == "not_run", call
    assert summary["executed"] == sum(c["executed"] for c in calls)
    assert summary["executed"] + summary["never_executed"] == len(calls)

    cut = [t for t in turns if t["truncated"]]
    assert summary["truncations"]["turns"] == len(cut)
    assert summary["truncations"]["calls"] == sum(c["truncated"] for c in calls)
    assert all(t["truncation_evidence"] for t in cut), "a cut turn without its evidence"
    assert summary["truncations"]["by_evidence"] == dict(
        Counter(e for t in cut for e in t["truncation_evidence"])
    )

    # The plain loop's figures come from the same calls, recomputed from their raw text.
    plain = summary["plain_loop"]
    assert plain["calls_by_action"] == {
        a: sum(c["plain"]["action"] == a for c in calls) for a in PLAIN_ACTIONS
    }
    assert sum(plain["calls_by_action"].values()) == len(calls)
    assert plain["ran_with_bad_arguments"] == plain["calls_by_action"]["ran_bad"]
    for turn in turns:
        crashed = False
        for key in turn["calls"]:
            call = by_key[key]
            expected = "not_reached" if crashed else _plain_action(call["arguments_raw"], call)
            assert call["plain"]["action"] == expected, call
            crashed = crashed or expected == "crashed"
        assert turn["plain_crashed"] == crashed
    assert plain["crashed_turns"] == sum(t["plain_crashed"] for t in turns)
