"""A call whose schema check is costly is judged in a worker process, within a time budget.

``jsonschema-rs`` holds the GIL for a whole validation: in a worker thread, a 200 KB argument
against ``a\\w{1000}c`` still stalled the proxy's event loop 35 s (issue 29, H2). These tests
check where a call is judged and what happens past the budget, not how long anything takes.
"""

from __future__ import annotations

import json
import random
import sys
from typing import Any

import anyio
import pytest

from toolwire.core.errors import ConfigurationError
from toolwire.core.events import ToolCallComplete, ToolCallRejected
from toolwire.judge import parse_arguments
from toolwire.judge._schema import SchemaChecker
from toolwire.stages import judge_process
from toolwire.stages.judge import JudgeStage

pytestmark = pytest.mark.anyio

#: At the repetition bound: on text of two letters the regex engine's lazy DFA gives up and its
#: slower search costs microseconds per character.
SCHEMA = {"type": "object", "properties": {"s": {"type": "string", "pattern": "a\\w{256}c"}},
          "required": ["s"]}  # fmt: skip
TOOLS = [{"type": "function", "function": {"name": "grep", "parameters": SCHEMA}}]


def _call(size: int, *, seed: int = 1) -> ToolCallComplete:
    rng = random.Random(seed)
    text = "".join(rng.choice("ab") for _ in range(size))
    raw = json.dumps({"s": text, "extra": 1})
    return ToolCallComplete(index=0, call_id="c1", name="grep", arguments_raw=raw)


@pytest.fixture
def not_in_this_process(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Fails a schema check made in this process (the worker's is not patched); records it."""
    checked: list[str] = []
    original = SchemaChecker.problems

    def refuse(self: SchemaChecker, arguments: dict[str, Any]) -> list[str]:
        checked.append("here")
        return original(self, arguments)

    monkeypatch.setattr(SchemaChecker, "problems", refuse)
    return checked


async def test_a_costly_call_is_judged_in_a_worker_process(not_in_this_process: list[str]) -> None:
    stage = JudgeStage(tools=TOOLS)
    call = _call(4_000)
    step = stage.start()
    assert step.is_heavy(call)  # type: ignore[attr-defined]
    judged = await step.feed_heavy(call)  # type: ignore[attr-defined]
    assert not_in_this_process == []
    expected = parse_arguments(call.arguments_raw, tool="grep", schema=SCHEMA, call_id="c1")
    assert len(judged) == 1
    assert isinstance(judged[0], ToolCallRejected)
    assert judged[0].verdict == expected
    assert judged[0].verdict.reason == "schema"


async def test_a_cheap_call_stays_on_the_loop(not_in_this_process: list[str]) -> None:
    stage = JudgeStage(tools=TOOLS)
    call = _call(50)
    step = stage.start()
    assert not step.is_heavy(call)  # type: ignore[attr-defined]
    judged = list(step.feed(call))  # type: ignore[attr-defined]
    assert not_in_this_process == ["here"]
    assert judged[0].verdict.reason == "schema"  # type: ignore[attr-defined]


async def test_without_a_budget_a_costly_call_is_judged_in_a_thread(
    not_in_this_process: list[str],
) -> None:
    stage = JudgeStage(tools=TOOLS, check_budget=None)
    call = _call(4_000)
    step = stage.start()
    assert not step.is_heavy(call)  # type: ignore[attr-defined]
    assert not stage.checks_elsewhere(call)
    judged = await step.feed_heavy(call)  # type: ignore[attr-defined]
    assert not_in_this_process == ["here"]
    assert judged[0].verdict.reason == "schema"


async def test_past_the_budget_the_call_is_unchecked_and_the_next_one_is_checked() -> None:
    stage = JudgeStage(tools=TOOLS, check_budget=0.02)
    step = stage.start()
    judged = await step.feed_heavy(_call(400_000))  # type: ignore[attr-defined]
    verdict = judged[0].verdict
    assert (verdict.outcome, verdict.reason) == ("rejected", "unchecked")
    assert verdict.detail == "the check did not finish within toolwire's 0.02 s budget"
    assert "Nothing was found wrong with them." in verdict.message
    # The worker that ran out of time was killed; a new one judges the next call.
    patient = JudgeStage(tools=TOOLS).start()
    again = await patient.feed_heavy(_call(4_000, seed=2))  # type: ignore[attr-defined]
    assert again[0].verdict.reason == "schema"


async def test_a_call_that_waits_for_a_worker_past_the_budget_is_unchecked_as_busy() -> None:
    slots = judge_process.worker_slots()
    holders = [object() for _ in range(int(slots.total_tokens))]
    for holder in holders:
        await slots.acquire_on_behalf_of(holder)
    try:
        step: Any = JudgeStage(tools=TOOLS, check_budget=0.05).start()
        judged = await step.feed_heavy(_call(4_000))
    finally:
        for holder in holders:
            slots.release_on_behalf_of(holder)
    assert judged[0].verdict.reason == "unchecked"
    assert judged[0].verdict.detail.startswith("no worker was free to check them")


async def test_a_worker_that_cannot_start_leaves_the_call_unchecked(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(judge_process, "_idle", [])
    monkeypatch.setattr(judge_process, "_COMMAND", (sys.executable, "-c", "pass"))
    judged = await JudgeStage(tools=TOOLS).start().feed_heavy(_call(4_000))  # type: ignore[attr-defined]
    assert judged[0].verdict.reason == "unchecked"
    assert judged[0].verdict.detail.startswith("the worker process that checks costly calls failed")


async def test_a_cancelled_caller_kills_its_worker() -> None:
    stage = JudgeStage(tools=TOOLS, check_budget=60)
    before = set(map(id, judge_process._idle))
    with anyio.move_on_after(0.3):
        await stage.start().feed_heavy(_call(900_000))  # type: ignore[attr-defined]
    # No worker left behind running the abandoned check: every idle worker is one from before.
    assert {id(worker) for worker in judge_process._idle} <= before


@pytest.mark.parametrize("budget", [0, -1, float("inf"), float("nan"), "2", True])
def test_check_budget_is_checked(budget: Any) -> None:
    with pytest.raises(ConfigurationError, match="check_budget"):
        JudgeStage(check_budget=budget)
