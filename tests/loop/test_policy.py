"""Stop policies (``stop_on``), the repair-loop guard, and the stop reason of a whole run."""

from __future__ import annotations

from typing import Any

import pytest
from data_paths import STREAMS

from toolwire.api import collect, stream
from toolwire.core.errors import ConfigurationError
from toolwire.core.events import Finish, StreamEnd, TurnStopped
from toolwire.core.turn import CallRecord, Turn
from toolwire.loop import RunStop, dispatch, run_stop_reason
from toolwire.stages.policy import RepairLoopGuard, normalize_stop_on

from ._turns import ScriptedJudge, calls_body, chat_chunk, sse

pytestmark = pytest.mark.anyio

CUT_WRITE = STREAMS / "llama-cpp-python/write_max_tokens_24_cut_mid_string.real.sse"

WRITE_TOOL = {
    "type": "function",
    "function": {
        "name": "write",
        "parameters": {
            "type": "object",
            "properties": {"path": {"type": "string"}, "content": {"type": "string"}},
            "required": ["path", "content"],
        },
    },
}


async def scripted(body: bytes, **options: Any) -> Turn:
    options.setdefault("stages", [ScriptedJudge()])
    return await collect(body, judge=False, **options)


async def ran_by(turn: Turn) -> list[str]:
    ran: list[str] = []

    async def run_tool(call: CallRecord) -> str:
        ran.append(call.id)
        return "ok"

    results = [result async for result in dispatch(turn, run_tool)]
    assert [r.call_id for r in results] == [c.id for c in turn.calls]
    return ran


# -- names --------------------------------------------------------------------------------------


def test_normalize_stop_on() -> None:
    assert normalize_stop_on(None) == frozenset()
    assert normalize_stop_on(()) == frozenset()
    assert normalize_stop_on(["length", "repair_loop"]) == {"length", "repair_loop"}


@pytest.mark.parametrize("bad", [{"lenght"}, {"length", "timeout"}, "length"])
def test_unknown_stop_on_is_a_configuration_error(bad: Any) -> None:
    with pytest.raises(ConfigurationError):
        normalize_stop_on(bad)


async def test_collect_refuses_an_unknown_stop_on(anyio_backend: str) -> None:
    with pytest.raises(ConfigurationError, match="lenght"):
        await collect(b"", stop_on={"lenght"})


async def test_stream_refuses_an_unknown_stop_on(anyio_backend: str) -> None:
    with pytest.raises(ConfigurationError):
        async for _ in stream(b"", stop_on={"malformed"}):
            pass


async def test_collect_refuses_an_unknown_truncated_calls_choice(anyio_backend: str) -> None:
    with pytest.raises(ConfigurationError):
        await collect(b"", truncated_calls="maybe")  # type: ignore[arg-type]


def test_repair_loop_limit_below_one_is_a_configuration_error() -> None:
    with pytest.raises(ConfigurationError):
        RepairLoopGuard(limit=0)


# -- each condition ------------------------------------------------------------------------------


async def test_stop_on_is_recorded_on_the_turn_and_stops_nothing_by_default(
    anyio_backend: str,
) -> None:
    turn = await scripted(CUT_WRITE.read_bytes())
    assert turn.stop_on == frozenset()
    assert turn.stopped_by == ()
    assert not turn.stopped
    turn = await scripted(CUT_WRITE.read_bytes(), stop_on={"malformed_tool_call", "length"})
    assert turn.stop_on == {"malformed_tool_call", "length"}


async def test_length_stops_a_cut_turn_and_nothing_runs(anyio_backend: str) -> None:
    # The first call is complete (closed by the next call); the second is cut at the limit.
    body = calls_body(
        ("c0", "read", '{"path": "x"}'), ("c1", "write", '{"path": "y", "con'),
        finish_reason="length",
    )
    free = await scripted(body)
    assert free.stopped_by == ()
    assert [c.outcome for c in free.calls] == ["ok", "rejected"]
    assert await ran_by(free) == ["c0"]  # without stop_on the complete call runs

    stopped = await scripted(body, stop_on={"length"})
    assert stopped.stopped_by == ("length",)
    assert await ran_by(stopped) == []


async def test_length_holds_on_the_recorded_cut_write(anyio_backend: str) -> None:
    # llama-cpp-python hides its length finish; its profile knows, a generic server's does not.
    body = CUT_WRITE.read_bytes()
    turn = await collect(
        body, "llama-cpp", judge=False, stages=[ScriptedJudge()], stop_on={"length"}
    )
    assert turn.stopped_by == ("length",)
    assert turn.truncated
    unknown = await scripted(body, stop_on={"length"})
    assert unknown.stopped_by == ()
    assert (unknown.truncated, unknown.cut_by) == (True, "unknown")


async def test_malformed_tool_call(anyio_backend: str) -> None:
    good = calls_body(("c0", "read", '{"path": "x"}'), ("c1", "read", '{"path": "y"}'))
    bad = calls_body(("c0", "read", '{"path": "x"}'), ("c1", "read", "{path: y"))
    assert (await scripted(good, stop_on={"malformed_tool_call"})).stopped_by == ()
    turn = await scripted(bad, stop_on={"malformed_tool_call"})
    assert turn.stopped_by == ("malformed_tool_call",)
    assert await ran_by(turn) == []


async def test_content_filter(anyio_backend: str) -> None:
    body = sse([chat_chunk({"content": "I can"}), chat_chunk(finish_reason="content_filter")])
    assert (await scripted(body)).stopped_by == ()
    turn = await scripted(body, stop_on={"content_filter"})
    assert turn.stop_reason == "content_filter"
    assert turn.stopped_by == ("content_filter",)


async def test_every_condition_that_held_is_listed(anyio_backend: str) -> None:
    body = calls_body(("c0", "write", '{"path": "y", "con'), finish_reason="length")
    everything = {"length", "malformed_tool_call", "content_filter", "repair_loop"}
    turn = await scripted(body, stop_on=everything)
    assert set(turn.stopped_by) == {"length", "malformed_tool_call"}


async def test_turn_stopped_comes_right_after_finish(anyio_backend: str) -> None:
    body = calls_body(("c0", "read", "{oops"))
    events = [
        event
        async for event in stream(
            body, judge=False, stages=[ScriptedJudge()], stop_on={"malformed_tool_call"}
        )
    ]
    kinds = [type(event) for event in events]
    assert kinds[-3:] == [Finish, TurnStopped, StreamEnd]
    assert kinds.count(TurnStopped) == 1


async def test_no_turn_stopped_event_when_nothing_held(anyio_backend: str) -> None:
    body = calls_body(("c0", "read", "{}"))
    events = [
        event
        async for event in stream(body, judge=False, stages=[ScriptedJudge()], stop_on={"length"})
    ]
    assert not any(isinstance(event, TurnStopped) for event in events)


# -- the repair-loop guard -----------------------------------------------------------------------


async def test_repair_loop_across_turns_with_a_shared_guard(anyio_backend: str) -> None:
    guard = RepairLoopGuard()
    bad = calls_body(("c", "write", '{"path": '), finish_reason="length")
    stopped = []
    for _ in range(4):
        turn = await scripted(bad, stop_on={"repair_loop"}, loop_guard=guard)
        stopped.append(turn.stopped_by)
    assert stopped == [(), (), ("repair_loop",), ("repair_loop",)]
    assert guard.streak("write") == 4
    assert guard.stuck_tools() == ["write"]


async def test_a_passing_call_resets_the_streak(anyio_backend: str) -> None:
    guard = RepairLoopGuard(limit=2)
    bad = calls_body(("c", "write", "{nope"))
    good = calls_body(("c", "write", '{"path": "a", "content": "b"}'))
    outcomes = []
    for body in (bad, good, bad, bad):
        turn = await scripted(body, stop_on={"repair_loop"}, loop_guard=guard)
        outcomes.append(turn.stopped_by)
    assert outcomes == [(), (), (), ("repair_loop",)]


async def test_streaks_are_counted_per_tool(anyio_backend: str) -> None:
    guard = RepairLoopGuard(limit=2)
    for body in (
        calls_body(("a", "write", "{x"), ("b", "read", '{"path": "p"}')),
        calls_body(("a", "read", "{x"), ("b", "write", "{x")),
    ):
        turn = await scripted(body, stop_on={"repair_loop"}, loop_guard=guard)
    assert turn.stopped_by == ("repair_loop",)
    assert guard.stuck_tools() == ["write"]
    assert guard.streak("read") == 1


async def test_the_guard_counts_even_when_repair_loop_does_not_stop(anyio_backend: str) -> None:
    """A caller that escalates instead of stopping reads the guard itself."""
    guard = RepairLoopGuard(limit=1)
    turn = await scripted(calls_body(("a", "write", "{x")), loop_guard=guard)
    assert turn.stopped_by == ()
    assert guard.stuck_tools() == ["write"]


async def test_without_a_shared_guard_the_count_covers_one_turn(anyio_backend: str) -> None:
    body = calls_body(("a", "write", "{x"), ("b", "write", "{y"), ("c", "write", "{z"))
    turn = await scripted(body, stop_on={"repair_loop"})
    assert turn.stopped_by == ("repair_loop",)
    one = calls_body(("a", "write", "{x"))
    for _ in range(3):
        assert (await scripted(one, stop_on={"repair_loop"})).stopped_by == ()


# -- the real judge: the documented truncated_calls option ---------------------------------------


async def test_truncated_calls_reject_is_the_default(anyio_backend: str) -> None:
    # Complete JSON, but usage at max_tokens says the call was cut: its last field may be short.
    body = sse([
        chat_chunk({"tool_calls": [{"index": 0, "id": "c0", "type": "function", "function": {
            "name": "write", "arguments": '{"path": "a", "content": "b"}'}}]}),
        chat_chunk(finish_reason="length"),
    ])
    turn = await collect(body, tools=[WRITE_TOOL])
    (call,) = turn.calls
    assert call.truncated
    assert call.outcome == "rejected"
    assert call.verdict is not None
    assert call.verdict.reason == "truncated"
    allowed = await collect(body, tools=[WRITE_TOOL], truncated_calls="allow")
    (call,) = allowed.calls
    assert call.truncated
    assert call.may_run
    assert call.arguments == {"path": "a", "content": "b"}


async def test_the_cut_text_is_never_allowed_to_run(anyio_backend: str) -> None:
    turn = await collect(CUT_WRITE.read_bytes(), "llama-cpp", tools=[WRITE_TOOL],
                         truncated_calls="allow")
    (call,) = turn.calls
    assert call.outcome == "rejected"
    assert await ran_by(turn) == []


# -- the stop reason of a whole run --------------------------------------------------------------


def run(**facts: Any) -> RunStop | None:
    defaults: dict[str, Any] = {
        "stopped_by": (), "stop_reason": "tool_calls", "has_calls": True, "step": 1,
        "max_steps": 10,
    }
    return run_stop_reason(**{**defaults, **facts})


@pytest.mark.parametrize(
    ("facts", "reason"),
    [
        pytest.param({}, None, id="go-on"),
        pytest.param({"has_calls": False, "stop_reason": "end_turn"}, "done", id="done"),
        pytest.param({"step": 10}, "max_steps", id="max-steps"),
        pytest.param({"stopped_by": ("length",)}, "length", id="length"),
        pytest.param({"stopped_by": ("malformed_tool_call",)}, "malformed_tool_call", id="mtc"),
        pytest.param({"stopped_by": ("repair_loop",)}, "repair_loop", id="repair-loop"),
        pytest.param({"stopped_by": ("content_filter",)}, "error", id="content-filter"),
        pytest.param({"stop_reason": "error"}, "error", id="provider-error"),
        pytest.param({"stop_reason": "disconnected"}, "error", id="disconnected"),
        pytest.param({"stopped_by": ("repair_loop",), "step": 10}, "repair_loop", id="policy-wins"),
    ],
)
def test_run_stop_reason(facts: dict[str, Any], reason: str | None) -> None:
    stop = run(**facts)
    assert (stop.reason if stop is not None else None) == reason


def test_is_truncated() -> None:
    assert RunStop("length").is_truncated
    for reason in ("done", "max_steps", "malformed_tool_call", "repair_loop", "timeout", "error"):
        assert not RunStop(reason).is_truncated  # type: ignore[arg-type]


def test_a_run_whose_last_text_was_cut_is_not_done() -> None:
    """A final answer cut at the token limit ended the run because of ``length``, not ``done``.

    Today a turn with no calls always gives ``done``, so ``is_truncated`` is false for a run
    whose answer stops mid-sentence.
    """
    stop = run(has_calls=False, stop_reason="length")
    assert stop is not None
    assert stop.reason == "length"
    assert stop.is_truncated
