"""The pipeline runner: a provider source in, typed events out, through the stages in order.

Order of composition (fixed and documented, like Starlette's middleware)::

    source ─► adapter (frames + maps + accumulates + finish) ─► user stages, in the order given
           ─► judge (unless judge=False) ─► observers (telemetry, the Turn builder)

Consecutive synchronous stages are fused into the adapter's loop, so a pipeline with no async
stage has exactly one async hop per *read*, not per event. Everything the runner opens it
closes, on normal end, early exit and cancellation alike; reading and closing the source is
:mod:`toolwire.core.reading`.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator, AsyncIterator, Callable, Iterable, Sequence

from .events import Event
from .mapper import ProviderMapper
from .reading import Source, mapped_batches
from .stage import (
    EventStep,
    Stage,
    SyncStage,
    aclose_quietly,
    drive_step,
    feed_step,
    heavy_batch_check,
    heavy_check,
)

__all__ = ["Source", "run_pipeline"]


class FusedSteps:
    """Several synchronous steps applied in order to each event, as one step."""

    __slots__ = ("_any_heavy", "_batch", "_heavy", "_steps", "may_offload")

    def __init__(self, steps: Sequence[EventStep]) -> None:
        self._steps = tuple(steps)
        self._heavy = tuple(heavy_check(step) for step in self._steps)
        self._any_heavy = tuple(heavy_batch_check(step) for step in self._steps)
        #: A step may take a whole batch at once (``feed_batch(list) -> list``): its fast path.
        self._batch: tuple[Callable[[list[Event]], list[Event]] | None, ...] = tuple(
            getattr(step, "feed_batch", None) for step in self._steps
        )
        #: Some step may move costly events to a worker thread: use :meth:`feed_many_offloading`.
        self.may_offload = any(check is not None for check in self._heavy)

    def feed_many(self, events: Iterable[Event]) -> list[Event]:
        """Run a batch of events through every step (a step's ``feed_batch``, when it has one)."""
        return self._feed_from(0, events)

    def _feed_from(self, first: int, events: Iterable[Event]) -> list[Event]:
        """:meth:`feed_many` through the steps from position ``first`` on."""
        current: Iterable[Event] = events
        for step, batch in zip(self._steps[first:], self._batch[first:], strict=True):
            if batch is not None:
                current = batch(current if isinstance(current, list) else list(current))
                continue
            produced: list[Event] = []
            extend = produced.extend
            feed = step.feed
            for event in current:
                extend(feed(event))
            current = produced
        return current if isinstance(current, list) else list(current)

    async def feed_many_offloading(self, events: Iterable[Event]) -> list[Event]:
        """:meth:`feed_many`, with the events a step calls heavy fed to it in a worker thread."""
        current: Iterable[Event] = events
        for step, heavy, any_heavy, batch in zip(
            self._steps, self._heavy, self._any_heavy, self._batch, strict=True
        ):
            if batch is not None:
                listed = current if isinstance(current, list) else list(current)
                if heavy is None or (any_heavy is not None and not any_heavy(listed)):
                    current = batch(listed)
                    continue
                current = listed
            produced: list[Event] = []
            feed = step.feed
            for event in current:
                if heavy is not None and heavy(event):
                    produced.extend(await feed_step(step, heavy, event))
                else:
                    produced.extend(feed(event))  # no coroutine per event on the common path
            current = produced
        return current if isinstance(current, list) else list(current)

    async def apply(self, batch: list[Event]) -> list[Event]:
        """One batch through every step (:class:`~toolwire.core.reading.BatchSteps`)."""
        if self.may_offload:
            return await self.feed_many_offloading(batch)
        return self.feed_many(batch)

    def finish(self) -> list[Event]:
        """Flush every step in order; what step k flushes still goes through the steps after it."""
        out: list[Event] = []
        for position, step in enumerate(self._steps):
            out.extend(self._feed_from(position + 1, step.finish()))
        return out


async def flatten(batches: AsyncGenerator[list[Event]]) -> AsyncGenerator[Event]:
    try:
        async for batch in batches:
            for event in batch:
                yield event
    finally:
        await batches.aclose()


async def _batch(events: AsyncIterator[Event]) -> AsyncGenerator[list[Event]]:
    try:
        async for event in events:
            yield [event]
    finally:
        await aclose_quietly(events)


def run_pipeline(
    source: Source, mapper: ProviderMapper, stages: Sequence[Stage | SyncStage]
) -> AsyncGenerator[list[Event]]:
    """Compose the pipeline and return its output as batches of events.

    The leading run of synchronous stages is fused into the adapter loop; after the first async
    stage, every stage runs as an async stage (a synchronous stage through :func:`drive_step`).
    """
    leading: list[EventStep] = []
    rest_index = 0
    for stage in stages:
        if not isinstance(stage, SyncStage):
            break
        leading.append(stage.start())
        rest_index += 1
    head = mapped_batches(source, mapper, FusedSteps(leading) if leading else None)
    rest = stages[rest_index:]
    if not rest:
        return head
    events: AsyncIterator[Event] = flatten(head)
    for stage in rest:
        events = (
            drive_step(stage.start(), events) if isinstance(stage, SyncStage) else stage(events)
        )
    return _batch(events)
