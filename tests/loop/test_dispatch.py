"""``dispatch`` and the synthesized results: what may run, in what order, and what never runs."""

from __future__ import annotations

from contextlib import aclosing
from typing import Any

import anyio
import anyio.lowlevel
import msgspec
import pytest

from toolwire.core.errors import ConfigurationError, HistoryError
from toolwire.core.turn import CallRecord, Turn
from toolwire.loop import (
    ToolResult,
    answer_every_call,
    dispatch,
    not_run_result,
    rejected_result,
    results_in_order,
)

from ._turns import ok, rejected, repaired, turn_of

pytestmark = pytest.mark.anyio


class Spy:
    """An async tool (or approver) that records every call it receives."""

    def __init__(self, answer: Any = "done") -> None:
        self.seen: list[CallRecord] = []
        self.answer = answer

    async def __call__(self, call: CallRecord) -> Any:
        self.seen.append(call)
        return self.answer


async def run_all(turn: Turn, *args: Any, **kwargs: Any) -> list[ToolResult]:
    return [result async for result in dispatch(turn, *args, **kwargs)]


def mixed_turn() -> Turn:
    return turn_of(
        ok("c0", "read", '{"path": "a"}', 0),
        rejected("c1", "write", '{"path": "b", "content": ', 1, reason="truncated"),
        repaired("c2", "write", '{"path": "c", "content": "x",}', {"path": "c", "content": "x"}, 2),
        rejected("c3", "nope", "{}", 3, reason="unknown_tool"),
    )


async def test_rejected_calls_never_reach_approve_or_run_tool(anyio_backend: str) -> None:
    run_tool, approve = Spy(), Spy(answer=True)
    results = await run_all(mixed_turn(), run_tool, approve)
    assert [call.id for call in approve.seen] == ["c0", "c2"]
    assert sorted(call.id for call in run_tool.seen) == ["c0", "c2"]
    assert [(r.call_id, r.status) for r in results] == [
        ("c0", "ok"), ("c1", "rejected"), ("c2", "ok"), ("c3", "rejected"),
    ]


async def test_run_tool_receives_name_id_and_parsed_arguments(anyio_backend: str) -> None:
    run_tool = Spy()
    await run_all(mixed_turn(), run_tool)
    by_id = {call.id: call for call in run_tool.seen}
    assert by_id["c0"].name == "read"
    assert by_id["c0"].arguments == {"path": "a"}
    assert by_id["c2"].arguments == {"path": "c", "content": "x"}


async def test_rejected_result_carries_the_judge_message(anyio_backend: str) -> None:
    turn = turn_of(rejected("c1", "write", "{", message="the call to `write` was cut off"))
    (result,) = await run_all(turn, Spy())
    assert result.content == "the call to `write` was cut off"
    assert result.is_error
    assert result.name == "write"


async def test_unjudged_calls_never_run(anyio_backend: str) -> None:
    turn = turn_of(CallRecord(call_id="c0", name="read", index=0, arguments_raw="{}"))
    run_tool = Spy()
    (result,) = await run_all(turn, run_tool)
    assert run_tool.seen == []
    assert result.status == "rejected"


async def test_results_in_call_order_when_later_calls_finish_first(anyio_backend: str) -> None:
    calls = [ok(f"c{i}", "t", f'{{"n": {i}}}', i) for i in range(4)]
    finished: list[str] = []
    released = [anyio.Event() for _ in calls]

    async def run_tool(call: CallRecord) -> int:
        number = call.arguments["n"] if call.arguments else 0
        if number + 1 < len(calls):
            await released[number + 1].wait()  # each call waits for the one after it
        finished.append(call.id)
        released[number].set()
        return number

    results = await run_all(turn_of(*calls), run_tool)
    assert finished == ["c3", "c2", "c1", "c0"]
    assert [r.call_id for r in results] == ["c0", "c1", "c2", "c3"]
    assert [r.value for r in results] == [0, 1, 2, 3]
    assert [r.content for r in results] == ["0", "1", "2", "3"]


@pytest.mark.parametrize(("max_parallel", "expected"), [(1, 1), (2, 2), (None, 6)])
async def test_max_parallel_is_honoured(
    anyio_backend: str, max_parallel: int | None, expected: int
) -> None:
    active = peak = 0

    async def run_tool(call: CallRecord) -> None:
        nonlocal active, peak
        active += 1
        peak = max(peak, active)
        await anyio.sleep(0.01)
        active -= 1

    turn = turn_of(*(ok(f"c{i}", "t", "{}", i) for i in range(6)))
    results = await run_all(turn, run_tool, max_parallel=max_parallel)
    assert peak == expected
    assert [r.status for r in results] == ["ok"] * 6


@pytest.mark.parametrize("max_parallel", [0, -1])
async def test_max_parallel_below_one_is_a_configuration_error(
    anyio_backend: str, max_parallel: int
) -> None:
    with pytest.raises(ConfigurationError):
        await run_all(mixed_turn(), Spy(), max_parallel=max_parallel)


async def test_a_raising_tool_is_an_error_result_and_the_others_still_run(
    anyio_backend: str,
) -> None:
    ran: list[str] = []

    async def run_tool(call: CallRecord) -> str:
        await anyio.lowlevel.checkpoint()
        if call.id == "c1":
            raise ValueError("disk full")
        if call.id == "c2":
            raise KeyError  # no message at all
        ran.append(call.id)
        return "fine"

    turn = turn_of(*(ok(f"c{i}", "t", "{}", i) for i in range(4)))
    results = await run_all(turn, run_tool)
    assert sorted(ran) == ["c0", "c3"]
    assert [r.status for r in results] == ["ok", "error", "error", "ok"]
    assert "ValueError" in results[1].content
    assert "disk full" in results[1].content
    assert "Traceback" not in results[1].content
    assert "KeyError" in results[2].content
    assert all(r.is_error for r in results[1:3])


async def test_approve_false_denies_without_running(anyio_backend: str) -> None:
    run_tool = Spy()

    async def approve(call: CallRecord) -> bool:
        return call.id != "c0"

    results = await run_all(mixed_turn(), run_tool, approve)
    assert [call.id for call in run_tool.seen] == ["c2"]
    assert [r.status for r in results] == ["denied", "rejected", "ok", "rejected"]
    assert results[0].is_error


async def test_cancellation_propagates_and_leaves_no_task(anyio_backend: str) -> None:
    started = 0
    cleaned_up = 0
    all_started = anyio.Event()
    after_dispatch = False

    async def run_tool(call: CallRecord) -> None:
        nonlocal started, cleaned_up
        started += 1
        if started == 3:
            all_started.set()
        try:
            await anyio.sleep_forever()
        finally:
            cleaned_up += 1

    turn = turn_of(*(ok(f"c{i}", "t", "{}", i) for i in range(3)))
    received: list[ToolResult] = []
    async with anyio.create_task_group() as group:

        async def consume() -> None:
            nonlocal after_dispatch
            async for result in dispatch(turn, run_tool):
                received.append(result)
            after_dispatch = True

        group.start_soon(consume)
        await all_started.wait()
        group.cancel_scope.cancel()
    assert group.cancel_scope.cancelled_caught
    assert not after_dispatch
    assert received == []
    # Every tool task ran its cleanup before dispatch returned control: no task is left.
    assert cleaned_up == 3


async def test_a_tool_catching_exception_does_not_swallow_cancellation(
    anyio_backend: str,
) -> None:
    async def run_tool(call: CallRecord) -> str:
        try:
            await anyio.sleep_forever()
        except Exception:  # a careless tool; cancellation is not an Exception
            return "swallowed"
        return "unreachable"

    with anyio.move_on_after(0.05) as scope:
        await run_all(turn_of(ok("c0", "t", "{}")), run_tool)
    assert scope.cancelled_caught


async def test_closing_dispatch_early_is_clean(anyio_backend: str) -> None:
    turn = turn_of(*(ok(f"c{i}", "t", "{}", i) for i in range(3)))
    async with aclosing(dispatch(turn, Spy())) as results:
        async for result in results:
            assert result.call_id == "c0"
            break


async def test_stopped_turn_runs_nothing_and_answers_every_id(anyio_backend: str) -> None:
    base = mixed_turn()
    turn = turn_of(*base.calls, stopped_by=("length",), stop_on=frozenset({"length"}))
    run_tool, approve = Spy(), Spy(answer=True)
    results = await run_all(turn, run_tool, approve)
    assert run_tool.seen == []
    assert approve.seen == []
    assert [(r.call_id, r.status) for r in results] == [
        ("c0", "not_run"), ("c1", "rejected"), ("c2", "not_run"), ("c3", "rejected"),
    ]
    assert "length" in results[0].content
    assert results_in_order(turn, results)


async def test_a_turn_without_calls_yields_nothing(anyio_backend: str) -> None:
    assert await run_all(turn_of(text="hello"), Spy()) == []


def test_answer_every_call_fills_in_missing_results() -> None:
    turn = mixed_turn()
    given = [ToolResult(call_id="c2", name="write", content="ok", status="ok")]
    answered = answer_every_call(turn, given)
    assert [(r.call_id, r.status) for r in answered] == [
        ("c0", "not_run"), ("c1", "rejected"), ("c2", "ok"), ("c3", "rejected"),
    ]
    assert "cancelled" in answered[0].content
    assert results_in_order(turn, answered)


def test_answer_every_call_on_a_stopped_turn_says_why() -> None:
    turn = turn_of(ok("c0", "t", "{}"), stopped_by=("repair_loop",))
    (result,) = answer_every_call(turn, [])
    assert result.status == "not_run"
    assert "repair_loop" in result.content


def test_answer_every_call_refuses_unknown_and_duplicate_ids() -> None:
    turn = mixed_turn()
    result = ToolResult(call_id="c0", name="read", content="x", status="ok")
    with pytest.raises(HistoryError):
        answer_every_call(turn, [result, result])
    with pytest.raises(HistoryError):
        answer_every_call(turn, [ToolResult(call_id="zz", name="t", content="", status="ok")])


def test_synthesized_results() -> None:
    call = ok("c0", "read", "{}")
    result = not_run_result(call, "the run timed out")
    assert result.status == "not_run"
    assert result.content.endswith("the run timed out.")
    assert rejected_result(rejected("c1", "w", "{", message="bad")).content == "bad"
    assert not ToolResult(call_id="c", name="t", content="", status="ok").is_error


def test_results_in_order_detects_wrong_order() -> None:
    turn = mixed_turn()
    results = answer_every_call(turn, [])
    assert results_in_order(turn, results)
    assert not results_in_order(turn, results[::-1])
    assert not results_in_order(turn, results[:-1])


def test_the_loop_api_is_public_in_its_tiers() -> None:
    """The issue names ``toolwire.dispatch``; frameworks running their own tools need the rest.

    The daily names are at the top, the parts for frameworks that run their own tools in
    ``toolwire.lowlevel``; the history is written and checked by the ``Pipeline`` methods.
    """
    import toolwire
    import toolwire.lowlevel

    for name in (
        "dispatch",
        "ToolResult",
        "answer_every_call",
        "RepairLoopGuard",
        "RunStop",
        "run_stop_reason",
        "Turn",
        "CallRecord",
        "HistoryError",
        "ConfigurationError",
    ):
        assert hasattr(toolwire, name), f"toolwire.{name} is not exported"
    for name in ("not_run_result", "rejected_result", "history_format"):
        assert hasattr(toolwire.lowlevel, name), f"toolwire.lowlevel.{name} is not exported"
    for name in ("next_messages", "check_history", "ensure_well_formed"):
        assert hasattr(toolwire.Pipeline, name), f"toolwire.Pipeline.{name} is missing"


class StrRaises:
    """A returned value JSON cannot encode and whose ``str()`` raises."""

    def __str__(self) -> str:
        raise ValueError("no text for you")


class StrAndReprRaise(StrRaises):
    def __repr__(self) -> str:
        raise LookupError("no repr either")


class ReprRaises:
    """``str()`` falls back to ``__repr__``, which raises."""

    def __repr__(self) -> str:
        raise LookupError("no repr")


class Plain:
    def __str__(self) -> str:
        return "a plain object"


def recursive_list() -> list[Any]:
    value: list[Any] = []
    value.append(value)
    return value


@pytest.mark.parametrize(
    ("make_value", "error_type"),
    [
        pytest.param(recursive_list, "RecursionError", id="recursive-list"),
        pytest.param(StrRaises, "ValueError", id="str-raises"),
        pytest.param(StrAndReprRaise, "ValueError", id="str-and-repr-raise"),
        pytest.param(ReprRaises, "LookupError", id="repr-raises"),
    ],
)
async def test_a_value_without_text_is_an_error_result_and_the_others_are_kept(
    anyio_backend: str, make_value: Any, error_type: str
) -> None:
    returned = make_value()

    async def run_tool(call: CallRecord) -> Any:
        await anyio.lowlevel.checkpoint()
        return returned if call.id == "c1" else {"n": call.index}

    turn = turn_of(*(ok(f"c{i}", "t", "{}", i) for i in range(3)))
    results = await run_all(turn, run_tool)
    assert [(r.call_id, r.status) for r in results] == [("c0", "ok"), ("c1", "error"), ("c2", "ok")]
    assert [results[0].content, results[2].content] == ['{"n":0}', '{"n":2}']
    failed = results[1]
    assert failed.content == (
        f"Tool `t` ran, but the value it returned could not be turned into text ({error_type})."
    )
    assert failed.value is returned


async def test_a_value_json_cannot_encode_is_sent_as_its_str(anyio_backend: str) -> None:
    (result,) = await run_all(turn_of(ok("c0", "t", "{}")), Spy(answer=Plain()))
    assert (result.status, result.content) == ("ok", "a plain object")


async def test_an_exception_whose_str_raises_is_still_an_error_result(
    anyio_backend: str,
) -> None:
    class Unprintable(Exception):
        def __str__(self) -> str:
            raise RuntimeError("cannot print")

    async def run_tool(call: CallRecord) -> str:
        if call.id == "c0":
            raise Unprintable
        return "fine"

    results = await run_all(turn_of(ok("c0", "t", "{}", 0), ok("c1", "t", "{}", 1)), run_tool)
    assert [(r.status, r.content) for r in results] == [
        ("error", "Tool `t` failed: Unprintable"), ("ok", "fine"),
    ]


def rejected_and_ok_sharing_an_id(rejected_first: bool) -> Turn:
    bad = rejected("c0", "write", '{"path": ', reason="truncated")
    good = ok("c0", "read", '{"path": "a"}')
    calls = (bad, good) if rejected_first else (good, bad)
    return turn_of(*(msgspec.structs.replace(call, index=i) for i, call in enumerate(calls)))


@pytest.mark.parametrize("rejected_first", [True, False], ids=["rejected-first", "ok-first"])
async def test_a_rejected_call_sharing_an_id_keeps_its_rejection(
    anyio_backend: str, rejected_first: bool
) -> None:
    turn = rejected_and_ok_sharing_an_id(rejected_first)
    run_tool = Spy(answer="read it")
    results = await run_all(turn, run_tool)
    assert [call.name for call in run_tool.seen] == ["read"]
    by_name = {result.name: result for result in results}
    assert [r.name for r in results] == [call.name for call in turn.calls]
    assert (by_name["write"].status, by_name["write"].content) == (
        "rejected", "`write` was rejected: truncated.",
    )
    assert (by_name["read"].status, by_name["read"].content) == ("ok", "read it")
    assert results_in_order(turn, results)
    assert answer_every_call(turn, results) == results


async def test_calls_sharing_an_id_each_keep_their_own_result(anyio_backend: str) -> None:
    turn = turn_of(*(ok("same", "t", f'{{"n": {i}}}', i) for i in range(3)))

    async def run_tool(call: CallRecord) -> int:
        number: int = call.arguments["n"] if call.arguments else -1
        await anyio.sleep(0.01 * (3 - number))  # the last call finishes first
        return number

    results = await run_all(turn, run_tool)
    assert [r.value for r in results] == [0, 1, 2]
    assert results_in_order(turn, results)


def test_answer_every_call_matches_shared_ids_in_order() -> None:
    turn = turn_of(ok("c0", "t", "{}", 0), ok("c0", "t", "{}", 1), ok("c1", "t", "{}", 2))
    first = ToolResult(call_id="c0", name="t", content="first", status="ok")
    second = ToolResult(call_id="c0", name="t", content="second", status="error")
    answered = answer_every_call(turn, [second, first])
    assert answered[:2] == [second, first]
    assert answered[2].status == "not_run"
    partial = answer_every_call(turn, [first])
    assert partial[0] is first
    assert [r.status for r in partial] == ["ok", "not_run", "not_run"]
    assert results_in_order(turn, partial)


def test_answer_every_call_gives_a_run_result_to_the_call_that_may_run() -> None:
    turn = rejected_and_ok_sharing_an_id(rejected_first=True)
    ran = ToolResult(call_id="c0", name="read", content="read it", status="ok")
    answered = answer_every_call(turn, [ran])
    assert [(r.name, r.status) for r in answered] == [("write", "rejected"), ("read", "ok")]
    assert answered[1] is ran


@pytest.mark.parametrize("status", ["ok", "error", "denied", "not_run"])
def test_answer_every_call_refuses_a_run_result_for_a_rejected_call(status: Any) -> None:
    alone = turn_of(rejected("c0", "write", "{"))
    result = ToolResult(call_id="c0", name="write", content="written", status=status)
    with pytest.raises(HistoryError, match="rejected and never ran"):
        answer_every_call(alone, [result])
    shared = rejected_and_ok_sharing_an_id(rejected_first=False)
    with pytest.raises(HistoryError, match="rejected and never ran"):
        answer_every_call(shared, [result, result])


def test_answer_every_call_accepts_the_rejection_of_a_rejected_call() -> None:
    turn = rejected_and_ok_sharing_an_id(rejected_first=True)
    given = rejected_result(turn.calls[0])
    assert answer_every_call(turn, [given])[0] is given


def test_answer_every_call_refuses_more_results_than_calls_sharing_the_id() -> None:
    turn = turn_of(ok("c0", "t", "{}", 0), ok("c0", "t", "{}", 1))
    result = ToolResult(call_id="c0", name="t", content="x", status="ok")
    assert len(answer_every_call(turn, [result, result])) == 2
    with pytest.raises(HistoryError, match="more results for call id 'c0'"):
        answer_every_call(turn, [result, result, result])
