"""Feeding a run's events to its telemetry observer, and closing it exactly once.

Three ways to consume a run need the same guarantee (the turn span ends once, on every path):
``stream`` (per event, so an early break records only what the consumer got), ``collect`` (per
batch, the fast path) and :class:`toolwire.stages.telemetry.TelemetryStage`.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator, AsyncIterator, Callable

from ...core.events import Event
from ...core.stage import aclose_quietly
from .observer import NullObserver, TurnObserver

__all__ = ["ObserverScope", "observed_batches", "observed_events", "observed_events_of_batches"]


class ObserverScope:
    """Closes an observer exactly once when a run ends, however it ends.

    ``with ObserverScope(observer):`` around the loop that feeds it: the exception that ends the
    block (``GeneratorExit`` on early close, cancellation, an error) is passed to
    ``observer.close``, which records early exits as such and errors as errors; nothing is
    swallowed.
    """

    __slots__ = ("_observer",)

    def __init__(self, observer: TurnObserver | NullObserver) -> None:
        self._observer = observer

    def __enter__(self) -> TurnObserver | NullObserver:
        return self._observer

    def __exit__(self, kind: object, error: BaseException | None, traceback: object) -> None:
        self._observer.close(error)


async def observed_events(
    events: AsyncIterator[Event], observer: TurnObserver | NullObserver
) -> AsyncGenerator[Event]:
    """Pass ``events`` through one by one, each shown to ``observer`` as it is handed on.

    Per event, so that a consumer that stops early is recorded as such, with only what it got.
    """
    with ObserverScope(observer) as observing:
        observe = observing.observe
        try:
            async for event in events:
                observe(event)
                yield event
        finally:
            await aclose_quietly(events)


async def observed_events_of_batches(
    open_batches: Callable[[], AsyncGenerator[list[Event]]],
    start: Callable[[], TurnObserver | NullObserver],
) -> AsyncGenerator[Event]:
    """``observed_events(flatten(open_batches()), start())`` in one hop per event, not three.

    Nothing is opened before the first read: the observer is ``start()``-ed, then the batches
    opened, so a generator never iterated leaves no span. Each event is shown to the observer
    as it is handed on (see :func:`observed_events`). The path ``Pipeline.stream`` runs per
    event: every async generator an event passes through costs about a microsecond (issue 20).
    """
    with ObserverScope(start()) as observing:
        observe = observing.observe
        batches = open_batches()
        try:
            async for batch in batches:
                for event in batch:
                    observe(event)
                    yield event
        finally:
            await batches.aclose()


async def observed_batches(
    open_batches: Callable[[], AsyncGenerator[list[Event]]],
    start: Callable[[], TurnObserver | NullObserver],
) -> AsyncGenerator[list[Event]]:
    """For a consumer that takes every batch whole (``collect``, ``Pipeline.stream_batches``):
    each batch is shown to the observer as it is handed on. Nothing is opened before the first
    read (see :func:`observed_events_of_batches`)."""
    with ObserverScope(start()) as observing:
        observe_many = observing.observe_many
        batches = open_batches()
        try:
            async for batch in batches:
                observe_many(batch)
                yield batch
        finally:
            await batches.aclose()
