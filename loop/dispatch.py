"""Run a turn's tool calls with the guarantees an agent needs, and answer every call id once.

- A rejected call never reaches ``approve`` or ``run_tool``, and is never batched with the other
  calls of its turn: it is answered with the judge's message as an error result.
- A turn stopped by ``stop_on`` runs nothing: every call is answered "not run".
- A tool that raises becomes an error result (exception type and message, no traceback); the
  other calls of the turn are not affected. Cancellation is never caught.
- Results come back in call order, with their ids, exactly one per call.

The calls that may run are run concurrently (``max_parallel`` at a time) inside one task group
that is opened and closed *before* the first result is yielded: a task group held across a
``yield`` breaks on early exit, on asyncio and on trio. The price is that results arrive once the
whole batch is done, which is also the order-preserving contract.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator, Awaitable, Callable, Iterable, Sequence
from typing import Any

import anyio
import msgspec

from ..pipeline.errors import ConfigurationError, HistoryError
from ..pipeline.results import ToolResult
from ..pipeline.turn import CallRecord, Turn

__all__ = [
    "answer_every_call",
    "dispatch",
    "not_run_result",
    "rejected_result",
    "results_in_order",
]

RunTool = Callable[[CallRecord], Awaitable[Any]]
Approve = Callable[[CallRecord], Awaitable[bool]]


def rejected_result(call: CallRecord) -> ToolResult:
    """The synthesized error result of a rejected (or unjudged) call."""
    verdict = call.verdict
    if verdict is not None and verdict.message:
        content = verdict.message
    else:
        content = (
            f"Tool call {call.call_id} to `{call.name}` was not checked by toolwire and was not "
            "run. Send the call again."
        )
    return ToolResult(call_id=call.call_id, name=call.name, content=content, status="rejected")


def not_run_result(call: CallRecord, why: str) -> ToolResult:
    """The synthesized result of a call that was dropped (stopped or cancelled turn)."""
    content = f"Tool call {call.call_id} to `{call.name}` was not run: {why}."
    return ToolResult(call_id=call.call_id, name=call.name, content=content, status="not_run")


def _stop_text(turn: Turn) -> str:
    return "the turn was stopped by the stop policy (" + ", ".join(turn.stopped_by) + ")"


def _content_of(value: Any) -> str:
    if isinstance(value, str):
        return value
    try:
        return msgspec.json.encode(value).decode()
    except (TypeError, msgspec.EncodeError):
        return str(value)


async def dispatch(
    turn: Turn,
    run_tool: RunTool,
    approve: Approve | None = None,
    *,
    max_parallel: int | None = None,
) -> AsyncGenerator[ToolResult]:
    """Run the calls of ``turn`` that may run and yield one result per call, in call order.

    ``run_tool`` receives the judged call (``name``, ``id``, parsed ``arguments``); ``approve``,
    when given, is asked first for each call that may run, in call order, and a ``False`` answer
    gives a ``denied`` result.
    """
    if max_parallel is not None and max_parallel < 1:
        raise ConfigurationError(f"max_parallel must be at least 1, got {max_parallel}")
    if turn.stopped:
        why = _stop_text(turn)
        for call in turn.calls:
            yield rejected_result(call) if call.outcome == "rejected" else not_run_result(call, why)
        return

    results: dict[str, ToolResult] = {}
    to_run: list[CallRecord] = []
    for call in turn.calls:
        if not call.may_run:
            results[call.call_id] = rejected_result(call)
        elif approve is not None and not await approve(call):
            results[call.call_id] = ToolResult(
                call_id=call.call_id,
                name=call.name,
                content=(
                    f"Tool call {call.call_id} to `{call.name}` was not approved and was not run."
                ),
                status="denied",
            )
        else:
            to_run.append(call)

    limiter = anyio.CapacityLimiter(max_parallel or max(1, len(to_run)))

    async def run_one(call: CallRecord) -> None:
        async with limiter:
            try:
                value = await run_tool(call)
            except Exception as error:  # a failing tool is a result, not the end of the turn
                text = f"{type(error).__name__}: {error}" if str(error) else type(error).__name__
                results[call.call_id] = ToolResult(
                    call_id=call.call_id,
                    name=call.name,
                    content=f"Tool `{call.name}` failed: {text}",
                    status="error",
                )
            else:
                results[call.call_id] = ToolResult(
                    call_id=call.call_id,
                    name=call.name,
                    content=_content_of(value),
                    status="ok",
                    value=value,
                )

    if to_run:
        async with anyio.create_task_group() as group:
            for call in to_run:
                group.start_soon(run_one, call)
    for call in turn.calls:
        yield results[call.call_id]


def answer_every_call(
    turn: Turn, results: Iterable[ToolResult], why: str = "the turn was cancelled"
) -> list[ToolResult]:
    """Complete ``results`` so that every call of ``turn`` has exactly one, in call order.

    Use it when a turn was cancelled or partly dispatched and the history must continue: the
    missing calls get a "not run" result. A result for an unknown call id, or two results for
    one id, is a :class:`HistoryError`.
    """
    by_id: dict[str, ToolResult] = {}
    known = {call.call_id for call in turn.calls}
    for result in results:
        if result.call_id not in known:
            raise HistoryError(f"a result for call id {result.call_id!r}, which this turn lacks")
        if result.call_id in by_id:
            raise HistoryError(f"two results for call id {result.call_id!r}")
        by_id[result.call_id] = result
    return [by_id.get(call.call_id) or _missing(call, turn, why) for call in turn.calls]


def _missing(call: CallRecord, turn: Turn, why: str) -> ToolResult:
    if call.outcome == "rejected":
        return rejected_result(call)
    return not_run_result(call, _stop_text(turn) if turn.stopped else why)


def results_in_order(turn: Turn, results: Sequence[ToolResult]) -> bool:
    """True when ``results`` answers the calls of ``turn`` one each, in call order."""
    return [result.call_id for result in results] == [call.call_id for call in turn.calls]
