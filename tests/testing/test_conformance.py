"""Every built-in stage passes the conformance kit that third-party stages are checked with."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterable

import anyio
import pytest

from toolwire.core.events import Event, TextDelta
from toolwire.core.stage import EventStep, SyncStage
from toolwire.lowlevel import JudgeStage, event_stage
from toolwire.stages.policy import RepairLoopGuard, StopPolicyStage
from toolwire.testing import Probe, check_stage, sample_events

pytestmark = pytest.mark.anyio


def _shout(event: Event) -> Iterable[Event]:
    if isinstance(event, TextDelta):
        return (TextDelta(text=event.text.upper()),)
    return (event,)


class _HoldText(SyncStage):
    """Holds every text delta until the end: the kit must see them flushed."""

    def start(self) -> EventStep:
        held: list[Event] = []

        class Step:
            def feed(self, event: Event) -> Iterable[Event]:
                if isinstance(event, TextDelta):
                    held.append(event)
                    return ()
                return (event,)

            def finish(self) -> Iterable[Event]:
                return tuple(held)

        return Step()


async def _async_passthrough(events: AsyncIterator[Event]) -> AsyncIterator[Event]:
    try:
        async for event in events:
            yield event
    finally:
        await events.aclose()  # type: ignore[attr-defined]


@pytest.mark.parametrize(
    "stage",
    [
        JudgeStage(),
        JudgeStage(tools=[{"name": "lookup", "input_schema": {"type": "object"}}]),
        StopPolicyStage({"length", "malformed_tool_call"}),
        StopPolicyStage({"repair_loop"}, RepairLoopGuard(limit=2)),
        event_stage(_shout),
        _HoldText(),
        _async_passthrough,
    ],
    ids=["judge", "judge-tools", "stop", "stop-loop", "function", "hold", "async-gen"],
)
async def test_builtin_and_example_stages_conform(stage: object) -> None:
    await check_stage(stage)  # type: ignore[arg-type]


async def test_the_judge_replaces_the_complete_call_and_keeps_the_rest() -> None:
    out: list[Event] = []

    async def source() -> AsyncIterator[Event]:
        for event in sample_events():
            yield event

    async for event in JudgeStage()(source()):
        out.append(event)
    kinds = [type(event).__name__ for event in out]
    assert "ToolCallComplete" not in kinds
    assert kinds.count("ToolCallReady") == 1
    assert [e.number for e in out if isinstance(e, Probe)] == [0, 1, 2, 3, 4]


class _DropsProbes(SyncStage):
    def start(self) -> EventStep:
        class Step:
            def feed(self, event: Event) -> Iterable[Event]:
                return () if isinstance(event, Probe) else (event,)

            def finish(self) -> Iterable[Event]:
                return ()

        return Step()


class _KeepsStateOnSelf(SyncStage):
    def __init__(self) -> None:
        self.count = 0

    def start(self) -> EventStep:
        stage = self

        class Step:
            def feed(self, event: Event) -> Iterable[Event]:
                stage.count += 1
                if isinstance(event, Probe):
                    return (Probe(number=event.number + stage.count),)
                return (event,)

            def finish(self) -> Iterable[Event]:
                return ()

        return Step()


async def _never_closes_upstream(events: AsyncIterator[Event]) -> AsyncIterator[Event]:
    async for event in events:
        yield event


async def _swallows_cancellation(events: AsyncIterator[Event]) -> AsyncIterator[Event]:
    try:
        async for event in events:
            yield event
    except anyio.get_cancelled_exc_class():
        return
    finally:
        await events.aclose()  # type: ignore[attr-defined]


@pytest.mark.parametrize(
    ("stage", "rule"),
    [
        (_DropsProbes(), "order"),
        (_KeepsStateOnSelf(), "order"),
        (_never_closes_upstream, "early_close"),
        (_swallows_cancellation, "cancellation"),
    ],
    ids=["drops-unknown", "state-on-self", "no-upstream-close", "swallows-cancel"],
)
async def test_the_kit_catches_broken_stages(stage: object, rule: str) -> None:
    with pytest.raises(AssertionError, match=rule):
        await check_stage(stage)  # type: ignore[arg-type]
