"""The stage protocol: how anyone plugs a step into a toolwire pipeline.

A stage is any object with ``__call__(events) -> events`` over async iterators, so a plain
``async def stage(events): ... yield`` generator qualifies. The contract every stage keeps (the
conformance kit in :mod:`toolwire.testing` checks it):

1. Keep order: events leave in the order they arrived, except events the stage itself emits.
2. Pass unknown events through untouched (a stage only acts on the event types it knows).
3. Flush state when the input ends: whatever was held back is emitted before the stage ends.
4. Keep per-run state in locals (or in the object :meth:`SyncStage.start` returns), so one stage
   object is reusable configuration, safe to use in concurrent runs.
5. Never catch cancellation; never hold a task group, a cancel scope or a current span across a
   ``yield`` (both break on early exit, on asyncio and on trio).
6. When closed early, close the upstream iterator (``aclose``) before returning.

For the common 1:1 / 1:n case, subclass :class:`SyncStage` (or decorate a function with
:func:`event_stage`): the runner fuses consecutive synchronous stages into one loop with no async
hop per event, which is also the fast path.

A synchronous step may also take a whole batch (the events of one read) with a
``feed_batch(events: list) -> list`` method; the fused loop then calls it instead of ``feed``
per event (the text-call stage passes a batch of ordinary text as it is, after one search).
It must give what ``feed`` event by event would, at the same read (pieces may be merged).

A synchronous step whose work on some events can take long (the judge on a very large call)
may say so with an ``is_heavy(event) -> bool`` method: those events are then fed to it in a
worker thread (``anyio.to_thread``), so that one turn never stalls the other streams of the
process. Every other event stays on the fast path. Such a step may also have ``feed_batch`` and
an ``any_heavy(events: list) -> bool`` method: a batch with no heavy event then goes to
``feed_batch`` whole, as any other step's (the judge: a batch of text or argument pieces holds
no call to judge), instead of event by event. A step that knows better where its heavy work
should run (the judge sends a call whose schema check is costly to a worker process, because
the native validator holds the GIL and a thread would still stall the loop) has an async
``feed_heavy(event) -> list`` method, awaited instead of the worker thread.
"""

from __future__ import annotations

import abc
from collections.abc import AsyncGenerator, AsyncIterator, Awaitable, Callable, Iterable
from typing import Protocol, runtime_checkable

import anyio.to_thread

from .events import Event

__all__ = [
    "EventStep",
    "FunctionStage",
    "Stage",
    "SyncStage",
    "aclose_quietly",
    "event_stage",
    "feed_step",
    "heavy_batch_check",
    "heavy_check",
]


@runtime_checkable
class Stage(Protocol):
    """Anything that turns an async stream of events into another."""

    def __call__(self, events: AsyncIterator[Event], /) -> AsyncIterator[Event]:
        """Consume ``events`` and yield the stage's output, keeping the contract above."""
        ...


class EventStep(Protocol):
    """The per-run state of a synchronous stage."""

    def feed(self, event: Event, /) -> Iterable[Event]:
        """Take one event, return what to emit now (often just the event itself)."""
        ...

    def finish(self) -> Iterable[Event]:
        """The input ended: return whatever was held back."""
        ...


HeavyCheck = Callable[[Event], bool]
HeavyBatchCheck = Callable[[list[Event]], bool]


def heavy_check(step: EventStep) -> HeavyCheck | None:
    """The step's ``is_heavy`` method, when it has one (see the module docstring)."""
    check: HeavyCheck | None = getattr(step, "is_heavy", None)
    return check


def heavy_batch_check(step: EventStep) -> HeavyBatchCheck | None:
    """The step's ``any_heavy`` method, when it has one (see the module docstring)."""
    check: HeavyBatchCheck | None = getattr(step, "any_heavy", None)
    return check


async def feed_step(step: EventStep, heavy: HeavyCheck | None, event: Event) -> Iterable[Event]:
    """``step.feed(event)``, in a worker thread when ``heavy`` says the event is costly (or in
    the step's own ``feed_heavy``, when it has one)."""
    if heavy is not None and heavy(event):
        feed_heavy: Callable[[Event], Awaitable[list[Event]]] | None = getattr(
            step, "feed_heavy", None
        )
        if feed_heavy is not None:
            return await feed_heavy(event)
        return await anyio.to_thread.run_sync(_feed_listed, step, event)
    return step.feed(event)


def _feed_listed(step: EventStep, event: Event) -> list[Event]:
    return list(step.feed(event))


async def aclose_quietly(iterator: object) -> None:
    """Close an upstream async iterator if it can be closed (async generators, SDK streams)."""
    aclose = getattr(iterator, "aclose", None)
    if aclose is not None:
        await aclose()


class SyncStage(abc.ABC):
    """A stage whose work per event is synchronous; fused by the runner, usable anywhere."""

    @abc.abstractmethod
    def start(self) -> EventStep:
        """Create the state for one run."""

    def __call__(self, events: AsyncIterator[Event], /) -> AsyncIterator[Event]:
        """Run as an ordinary async stage (when it cannot be fused)."""
        return drive_step(self.start(), events)


async def drive_step(step: EventStep, events: AsyncIterator[Event]) -> AsyncGenerator[Event]:
    """Drive one synchronous step over an async stream, closing upstream on every exit."""
    heavy = heavy_check(step)
    try:
        async for event in events:
            for produced in await feed_step(step, heavy, event):
                yield produced
        for produced in step.finish():
            yield produced
    finally:
        await aclose_quietly(events)


EventFunction = Callable[[Event], Iterable[Event]]


class _FunctionStep:
    __slots__ = ("_function",)

    def __init__(self, function: EventFunction) -> None:
        self._function = function

    def feed(self, event: Event) -> Iterable[Event]:
        return self._function(event)

    def finish(self) -> Iterable[Event]:
        return ()


class FunctionStage(SyncStage):
    """A stateless stage made of a function ``event -> iterable of events``."""

    def __init__(self, function: EventFunction) -> None:
        self.function = function

    def start(self) -> EventStep:
        """Stateless: every run shares the function."""
        return _FunctionStep(self.function)

    def __repr__(self) -> str:
        return f"FunctionStage({self.function!r})"


def event_stage(function: EventFunction) -> FunctionStage:
    """Make a stage of ``function``, which returns the events to emit for each event.

    Return ``(event,)`` to pass an event through, ``()`` to drop it, several to expand it.
    """
    return FunctionStage(function)
