"""A conformance kit that any stage, built-in or plugged in, can be checked with.

Call ``await check_stage(stage)`` from a test (on every anyio backend you support); it raises
``AssertionError`` naming the broken rule of the stage contract (see
:mod:`toolwire.pipeline.stage`). The checks:

- ``order``: unknown events pass through untouched and in order;
- ``flush``: the stage's output ends once its input ends, with nothing of the input lost;
- ``early_close``: closing the stage's output early closes the upstream iterator;
- ``cancellation``: a cancelled run propagates the cancellation and closes upstream;
- ``no_task_left``: no task outlives a run;
- ``reusable``: two concurrent runs of the same stage object give the same output as one.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator, AsyncIterator, Sequence

import anyio

from .pipeline.events import (
    Event,
    Finish,
    StreamEnd,
    TextDelta,
    ToolCallArgumentsDelta,
    ToolCallComplete,
    ToolCallStarted,
)
from .pipeline.stage import Stage, SyncStage

__all__ = ["Probe", "check_stage", "sample_events"]


class Probe(Event, frozen=True, tag="toolwire.testing.probe"):
    """An event type no stage knows: it must pass through every stage untouched."""

    number: int


def sample_events() -> list[Event]:
    """A short, ordinary run: text, one complete call, a finish; probes in between."""
    return [
        Probe(number=0),
        TextDelta(text="Looking it up."),
        Probe(number=1),
        ToolCallStarted(call_id="call_1", name="lookup", index=0),
        ToolCallArgumentsDelta(call_id="call_1", index=0, delta='{"q": '),
        Probe(number=2),
        ToolCallArgumentsDelta(call_id="call_1", index=0, delta='"x"}'),
        ToolCallComplete(call_id="call_1", name="lookup", index=0, arguments_raw='{"q": "x"}'),
        Probe(number=3),
        Finish(reason="tool_calls", raw="tool_calls"),
        StreamEnd(),
        Probe(number=4),
    ]


class _Upstream:
    """An async iterator over fixed events that records whether it was closed."""

    def __init__(self, events: Sequence[Event], hang: bool = False) -> None:
        self.closed = False
        self.sent = 0
        self._events = events
        self._hang = hang

    async def generate(self) -> AsyncGenerator[Event]:
        try:
            for event in self._events:
                self.sent += 1
                yield event
            if self._hang:
                await anyio.sleep_forever()
        finally:
            self.closed = True


def _run(stage: Stage | SyncStage, events: AsyncIterator[Event]) -> AsyncIterator[Event]:
    return stage(events)


async def _drain(stage: Stage | SyncStage, events: Sequence[Event]) -> list[Event]:
    upstream = _Upstream(events)
    output = _run(stage, upstream.generate())
    collected = [event async for event in output]
    aclose = getattr(output, "aclose", None)
    if aclose is not None:
        await aclose()
    return collected


async def check_stage(
    stage: Stage | SyncStage, events: Sequence[Event] | None = None, *, limit_seconds: float = 5.0
) -> None:
    """Check ``stage`` against the stage contract; raise ``AssertionError`` on the first breach.

    ``events`` is an ordinary run to feed it (default :func:`sample_events`); it should contain
    :class:`Probe` events, which the stage must not know.
    """
    run = list(events) if events is not None else sample_events()
    tasks_before = len(anyio.get_running_tasks())

    with anyio.fail_after(limit_seconds):
        first = await _drain(stage, run)
    probes_in = [event for event in run if isinstance(event, Probe)]
    probes_out = [event for event in first if isinstance(event, Probe)]
    assert probes_out == probes_in, (
        f"order: unknown events must pass through untouched and in order; sent {probes_in}, "
        f"got {probes_out}"
    )
    assert any(isinstance(event, StreamEnd) for event in first) == any(
        isinstance(event, StreamEnd) for event in run
    ), "flush: the stream end must reach the output"

    # early_close: take one event, then close the output.
    upstream = _Upstream(run, hang=True)
    generator = upstream.generate()
    output = _run(stage, generator)
    with anyio.fail_after(limit_seconds):
        await output.__anext__()
        aclose = getattr(output, "aclose", None)
        assert aclose is not None, "early_close: a stage's output must be closable (aclose)"
        await aclose()
    closed = upstream.closed
    await generator.aclose()  # the kit cleans up after a broken stage either way
    assert closed, "early_close: closing the stage's output must close its upstream"

    # cancellation: upstream never ends; cancel the consumer.
    upstream = _Upstream(run, hang=True)
    generator = upstream.generate()
    output = _run(stage, generator)
    with anyio.move_on_after(0.05) as scope:
        async for _ in output:
            pass
    cancelled = scope.cancelled_caught
    aclose = getattr(output, "aclose", None)
    if aclose is not None:
        await aclose()
    closed = upstream.closed
    await generator.aclose()
    assert cancelled, "cancellation: the cancellation must propagate out of the stage"
    assert closed, "cancellation: a cancelled stage must close its upstream"

    # reusable: concurrent runs of the same object give the same output as one run.
    results: list[list[Event]] = [[], []]

    async def run_into(slot: int) -> None:
        results[slot] = await _drain(stage, run)

    with anyio.fail_after(limit_seconds):
        async with anyio.create_task_group() as group:
            group.start_soon(run_into, 0)
            group.start_soon(run_into, 1)
    reusable = "reusable: per-run state must live in the run, not on the stage object"
    assert results[0] == first, reusable
    assert results[1] == first, reusable

    assert len(anyio.get_running_tasks()) == tasks_before, "no_task_left: a task outlived the run"
