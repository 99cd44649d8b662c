"""The demo's agent loop: one :class:`toolwire.Pipeline` per run, built like any agent's.

A run is one task at one ``max_tokens`` budget, in a fresh sandbox. Each turn:

1. the request names the tool of the current step of the task's plan in ``tool_choice``
   (llama-cpp-python streams tool calls only then), or ``"none"`` for the final answer;
2. ``pipeline.collect`` reads the stream and judges every call;
3. ``toolwire.dispatch`` runs the calls that passed, in the sandbox; a rejected call never runs
   and is answered with the judge's message;
4. ``pipeline.next_messages`` appends the assistant turn and one result per call, in the form the
   provider's profile says the model reads (llama-cpp: a user message naming the call);
5. ``pipeline.check_history`` must find nothing wrong, and ``toolwire.run_stop_reason`` says
   whether the run is over. A step is done when a call of its tool ran; the same tool
   rejected three times in a row ends the run (``repair_loop``, the pipeline's loop guard).

Alongside, :func:`toolwire.cli.demo.plain.plain_loop` says what a plain loop would have done
with the very same calls.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import msgspec

from ...api import Pipeline
from ...core.results import ToolResult
from ...core.turn import CallRecord, Turn
from ...loop import answer_every_call, dispatch, run_stop_reason
from ...stages.policy import RepairLoopGuard
from .plain import PlainCall, plain_loop
from .sandbox import TOOLS, Sandbox
from .tasks import SYSTEM_PROMPT, Task
from .transport import Transport

__all__ = ["CallOutcome", "RunOutcome", "TurnOutcome", "run_task"]

#: How many times in a row one tool may be rejected before the run ends (``repair_loop``).
REPAIR_LIMIT = 3
#: The longest a result is kept in the report.
_RESULT_CAP = 500


class CallOutcome(msgspec.Struct, kw_only=True):
    """One call: what arrived, what toolwire decided and did, what a plain loop would do."""

    key: str
    run: str
    task: str
    budget: int
    turn: int
    index: int
    id: str
    name: str
    arguments_raw: str
    outcome: str
    repairs: list[str]
    reason: str | None
    message: str | None
    truncated: bool
    arguments: dict[str, Any] | None
    executed: bool
    result_status: str
    result: str
    plain: PlainCall


class TurnOutcome(msgspec.Struct, kw_only=True):
    """One turn: the request's step, how the stream ended, and its calls (by key)."""

    run: str
    turn: int
    tool_choice: str
    max_tokens: int
    stop_reason: str
    finish_raw: str | None
    truncated: bool
    truncation_evidence: list[str]
    cut_by: str | None
    text: str
    errors: list[str]
    stopped_by: list[str]
    calls: list[str]
    plain_crashed: bool
    history_problems: list[str]


class RunOutcome(msgspec.Struct, kw_only=True):
    """One task at one budget, from the first request to the reason it stopped."""

    name: str
    task: str
    budget: int
    stop: str = ""
    stop_detail: str = ""
    steps_done: int = 0
    steps: int = 0
    turns: list[TurnOutcome] = msgspec.field(default_factory=list)
    calls: list[CallOutcome] = msgspec.field(default_factory=list)


def run_name(task: Task, budget: int) -> str:
    """``task@budget``: how a run is named in the report and in recordings."""
    return f"{task.name}@{budget}"


def _request(
    model: str, messages: list[dict[str, Any]], tool: str | None, budget: int
) -> dict[str, Any]:
    choice: Any = {"type": "function", "function": {"name": tool}} if tool else "none"
    return {
        "model": model,
        "messages": list(messages),
        "tools": TOOLS,
        "tool_choice": choice,
        "max_tokens": budget,
        "stream": True,
        "temperature": 0,
        "seed": 7,
    }


def _call_outcome(
    run: RunOutcome, turn_number: int, call: CallRecord, result: ToolResult, plain: PlainCall
) -> CallOutcome:
    verdict = call.verdict
    return CallOutcome(
        key=f"{run.name}/{turn_number}/{call.index}",
        run=run.name,
        task=run.task,
        budget=run.budget,
        turn=turn_number,
        index=call.index,
        id=call.call_id,
        name=call.name,
        arguments_raw=call.arguments_raw,
        outcome=call.outcome,
        repairs=list(verdict.repairs) if verdict is not None else [],
        reason=verdict.reason if verdict is not None else None,
        message=verdict.message if verdict is not None else None,
        truncated=call.truncated,
        arguments=call.arguments,
        executed=result.status in ("ok", "error"),
        result_status=result.status,
        result=result.content[:_RESULT_CAP],
        plain=plain,
    )


def _turn_outcome(
    run: RunOutcome, number: int, tool: str | None, budget: int, turn: Turn
) -> TurnOutcome:
    return TurnOutcome(
        run=run.name,
        turn=number,
        tool_choice=tool or "none",
        max_tokens=budget,
        stop_reason=turn.stop_reason,
        finish_raw=turn.finish_raw,
        truncated=turn.truncated,
        truncation_evidence=list(turn.truncation_evidence),
        cut_by=turn.cut_by,
        text=turn.text,
        errors=[error.message for error in turn.errors],
        stopped_by=list(turn.stopped_by),
        calls=[],
        plain_crashed=False,
        history_problems=[],
    )


async def run_task(
    task: Task,
    budget: int,
    transport: Transport,
    *,
    provider: str,
    model: str,
    on_turn: Callable[[RunOutcome, TurnOutcome], None] | None = None,
) -> RunOutcome:
    """Run ``task`` at ``budget`` through ``transport``; every turn is reported to ``on_turn``."""
    run = RunOutcome(
        name=run_name(task, budget), task=task.name, budget=budget, steps=len(task.plan)
    )
    pipeline = Pipeline(
        provider,
        tools=TOOLS,
        max_tokens=budget,
        stop_on={"repair_loop"},
        loop_guard=RepairLoopGuard(limit=REPAIR_LIMIT),
    )
    messages: list[dict[str, Any]] = [
        {"role": "system", "content": SYSTEM_PROMPT},
        {"role": "user", "content": task.prompt},
    ]
    max_turns = len(task.plan) * REPAIR_LIMIT + 1
    with Sandbox() as sandbox:

        async def run_tool(call: CallRecord) -> str:
            assert call.arguments is not None  # dispatch runs only calls that passed
            return sandbox.run_tool(call.name, call.arguments)

        for number in range(1, max_turns + 1):
            tool = task.plan[run.steps_done] if run.steps_done < len(task.plan) else None
            request = _request(model, messages, tool, budget)
            async with transport.exchange(run.name, number, request) as source:
                turn = await pipeline.collect(source, request=request)
            results = [result async for result in dispatch(turn, run_tool)]
            results = answer_every_call(turn, results)
            messages += pipeline.next_messages(turn, results)
            outcome = _turn_outcome(run, number, tool, budget, turn)
            outcome.history_problems = [
                f"{problem.kind}: {problem.detail}" for problem in pipeline.check_history(messages)
            ]
            plain = plain_loop(turn.calls)
            outcome.plain_crashed = any(item.action == "crashed" for item in plain)
            for call, result, action in zip(turn.calls, results, plain, strict=True):
                call_outcome = _call_outcome(run, number, call, result, action)
                run.calls.append(call_outcome)
                outcome.calls.append(call_outcome.key)
            run.turns.append(outcome)
            if tool is not None and any(c.may_run and c.name == tool for c in turn.calls):
                run.steps_done += 1
            if on_turn is not None:
                on_turn(run, outcome)
            stop = run_stop_reason(
                stopped_by=turn.stopped_by,
                stop_reason=turn.stop_reason,
                has_calls=bool(turn.calls),
                step=number,
                max_steps=max_turns,
            )
            if outcome.history_problems:
                run.stop, run.stop_detail = "error", "; ".join(outcome.history_problems)
                break
            if tool is None:  # the final answer
                stop_reason = stop.reason if stop is not None else "done"
                run.stop, run.stop_detail = stop_reason, stop.detail if stop else ""
                break
            if stop is not None:
                run.stop, run.stop_detail = stop.reason, stop.detail
                break
    return run
