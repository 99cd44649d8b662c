"""Run a turn's tool calls with the guarantees an agent needs, and answer every call once.

- A rejected call never reaches ``approve`` or ``run_tool``, and is never batched with the other
  calls of its turn: it is answered with the judge's message as an error result.
- A turn stopped by ``stop_on`` runs nothing: every call is answered "not run" (a rejected call,
  with its rejection).
- A tool that raises becomes an error result (exception type and message, no traceback); so does
  a returned value that cannot be turned into text (a list that contains itself, an object whose
  ``__str__`` raises). The other calls of the turn are not affected. Cancellation is never caught.
- Results come back in call order, exactly one per call. They are kept by the call's position in
  ``turn.calls``, never by its id: a provider may repeat an id within a turn, and a rejected call
  must never be answered with the result of another call that carries the same id.

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

from ..core.errors import ConfigurationError, HistoryError
from ..core.results import ToolResult, rejected_result
from ..core.turn import CallRecord, Turn

__all__ = [
    "answer_every_call",
    "dispatch",
    "not_run_result",
    "rejected_result",
    "results_in_order",
]

RunTool = Callable[[CallRecord], Awaitable[Any]]
Approve = Callable[[CallRecord], Awaitable[bool]]


def not_run_result(call: CallRecord, why: str) -> ToolResult:
    """The synthesized result of a call that was dropped (stopped or cancelled turn)."""
    content = f"Tool call {call.call_id} to `{call.name}` was not run: {why}."
    return ToolResult(call_id=call.call_id, name=call.name, content=content, status="not_run")


def _denied_result(call: CallRecord) -> ToolResult:
    content = f"Tool call {call.call_id} to `{call.name}` was not approved and was not run."
    return ToolResult(call_id=call.call_id, name=call.name, content=content, status="denied")


def _stop_text(turn: Turn) -> str:
    return "the turn was stopped by the stop policy (" + ", ".join(turn.stopped_by) + ")"


def _content_of(value: Any) -> str:
    """The text the model reads for ``value``: itself for a string, else JSON, else ``str()``.

    ``str()`` is the fallback only for a type JSON has no form for (msgspec's ``TypeError``); a
    value JSON refuses for its shape (a list that contains itself: ``RecursionError``) or whose
    ``str()`` raises lets its exception through, for :func:`_returned_result` to report.
    """
    if isinstance(value, str):
        return value
    try:
        return msgspec.json.encode(value).decode()
    except (TypeError, msgspec.EncodeError):
        return str(value)


def _exception_text(error: BaseException) -> str:
    """``Type: message``, or the type alone when the message is empty or cannot be read.

    A user's exception may have a ``__str__`` that raises; reporting a failure must not fail.
    """
    name = type(error).__name__
    try:
        message = str(error)
    except Exception:
        return name
    return f"{name}: {message}" if message else name


def _failed_result(call: CallRecord, error: Exception) -> ToolResult:
    """The error result of a tool that raised: type and message, no traceback."""
    return ToolResult(
        call_id=call.call_id,
        name=call.name,
        content=f"Tool `{call.name}` failed: {_exception_text(error)}",
        status="error",
    )


def _returned_result(call: CallRecord, value: Any) -> ToolResult:
    """The result of a tool that returned ``value``; an error result when it has no text.

    The conversion runs user code (``__str__``, ``__repr__``, ``__class__``) and must never end
    the turn: any exception becomes this call's error result. It has no checkpoint, so there is no
    cancellation to let through, and ``KeyboardInterrupt`` / ``SystemExit`` are not caught. The
    text says the tool ran, because a model that reads only "failed" may run it a second time.
    """
    try:
        content = _content_of(value)
    except Exception as error:
        return ToolResult(
            call_id=call.call_id,
            name=call.name,
            content=(
                f"Tool `{call.name}` ran, but the value it returned could not be turned into "
                f"text ({type(error).__name__})."
            ),
            status="error",
            value=value,
        )
    return ToolResult(
        call_id=call.call_id, name=call.name, content=content, status="ok", value=value
    )


async def _result_of_run(call: CallRecord, run_tool: RunTool) -> ToolResult:
    """Run one call; a failing tool is a result, not the end of the turn."""
    try:
        value = await run_tool(call)
    except Exception as error:
        return _failed_result(call, error)
    return _returned_result(call, value)


async def _run_calls(
    calls: Sequence[CallRecord], run_tool: RunTool, max_parallel: int | None
) -> list[ToolResult]:
    """Run ``calls`` concurrently (``max_parallel`` at a time); one result each, in their order.

    The task group is opened and closed here, never across a ``yield`` of :func:`dispatch`.
    """
    limiter = anyio.CapacityLimiter(max_parallel or max(1, len(calls)))
    answers: dict[int, ToolResult] = {}

    async def run_one(position: int) -> None:
        async with limiter:
            answers[position] = await _result_of_run(calls[position], run_tool)

    if calls:
        async with anyio.create_task_group() as group:
            for position in range(len(calls)):
                group.start_soon(run_one, position)
    return [answers[position] for position in range(len(calls))]


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
    gives a ``denied`` result. A tool that raises, or returns a value that cannot be turned into
    text, gives an ``error`` result. Cancellation is never caught, and an exception raised by
    ``approve`` is not a tool's failure: it propagates.
    """
    if max_parallel is not None and max_parallel < 1:
        raise ConfigurationError(f"max_parallel must be at least 1, got {max_parallel}")
    if turn.stopped:
        why = _stop_text(turn)
        for call in turn.calls:
            yield rejected_result(call) if call.outcome == "rejected" else not_run_result(call, why)
        return

    answers: dict[int, ToolResult] = {}
    to_run: list[int] = []
    for position, call in enumerate(turn.calls):
        if not call.may_run:
            answers[position] = rejected_result(call)
        elif approve is not None and not await approve(call):
            answers[position] = _denied_result(call)
        else:
            to_run.append(position)

    ran = await _run_calls([turn.calls[position] for position in to_run], run_tool, max_parallel)
    answers.update(zip(to_run, ran, strict=True))
    for position in range(len(turn.calls)):
        yield answers[position]


def answer_every_call(
    turn: Turn, results: Iterable[ToolResult], why: str = "the turn was cancelled"
) -> list[ToolResult]:
    """Complete ``results`` so that every call of ``turn`` has exactly one, in call order.

    Use it when a turn was cancelled or partly dispatched and the history must continue: the
    missing calls get a "not run" result (a rejected call, its rejection). Results are matched to
    calls by id; when several calls share an id (a provider that repeats one), each result goes
    to the first of them still unanswered that it may answer. A result whose status is not
    ``rejected`` may not answer a rejected call (it would look as if the call ran), so it skips
    those and is a :class:`HistoryError` when only rejected calls are left. A result for an
    unknown call id, or more results for an id than calls that carry it, is a
    :class:`HistoryError` too.
    """
    answers = _match_results(turn.calls, results)
    return [
        answers[position] if position in answers else _missing(call, turn, why)
        for position, call in enumerate(turn.calls)
    ]


def _match_results(
    calls: Sequence[CallRecord], results: Iterable[ToolResult]
) -> dict[int, ToolResult]:
    """Each result, keyed by the position in ``calls`` of the call it answers."""
    positions_by_id: dict[str, list[int]] = {}
    for position, call in enumerate(calls):
        positions_by_id.setdefault(call.call_id, []).append(position)
    answers: dict[int, ToolResult] = {}
    for result in results:
        positions = positions_by_id.get(result.call_id)
        if positions is None:
            raise HistoryError(f"a result for call id {result.call_id!r}, which this turn lacks")
        unanswered = [position for position in positions if position not in answers]
        answers[_position_answered_by(result, calls, unanswered)] = result
    return answers


def _position_answered_by(
    result: ToolResult, calls: Sequence[CallRecord], unanswered: Sequence[int]
) -> int:
    """The first of the ``unanswered`` positions (calls with ``result``'s id) it may answer."""
    if not unanswered:
        raise HistoryError(f"more results for call id {result.call_id!r} than calls with that id")
    if result.status == "rejected":
        return unanswered[0]
    for position in unanswered:
        if calls[position].outcome != "rejected":
            return position
    raise HistoryError(
        f"a result of status {result.status!r} for call id {result.call_id!r}, which was "
        "rejected and never ran; answer it with its rejection (rejected_result)"
    )


def _missing(call: CallRecord, turn: Turn, why: str) -> ToolResult:
    if call.outcome == "rejected":
        return rejected_result(call)
    return not_run_result(call, _stop_text(turn) if turn.stopped else why)


def results_in_order(turn: Turn, results: Sequence[ToolResult]) -> bool:
    """True when ``results`` answers the calls of ``turn`` one each, in call order.

    Comparing the id sequences stays right when two calls share an id: each position is checked.
    """
    return [result.call_id for result in results] == [call.call_id for call in turn.calls]
