"""The pipeline runner: a provider source in, typed events out, through the stages in order.

Order of composition (fixed and documented, like Starlette's middleware)::

    source ─► adapter (frames + maps + accumulates + finish) ─► user stages, in the order given
           ─► judge (unless judge=False) ─► observers (telemetry, the Turn builder)

Consecutive synchronous stages are fused into the adapter's loop, so a pipeline with no async
stage has exactly one async hop per *read*, not per event. Everything the runner opens it
closes, on normal end, early exit and cancellation alike; the source is closed too (``aclose``).
"""

from __future__ import annotations

import inspect
from collections.abc import (
    AsyncGenerator,
    AsyncIterable,
    AsyncIterator,
    Iterable,
    Mapping,
    Sequence,
)
from typing import Any

from .errors import SourceTypeError
from .events import Event, ProviderError
from .mapper import ProviderMapper
from .stage import EventStep, Stage, SyncStage, aclose_quietly, drive_step

__all__ = ["Source", "run_pipeline"]

#: What ``collect`` and ``stream`` read: one ``bytes`` body, an async iterable of ``bytes``
#: (``httpx.Response.aiter_bytes()``), an async iterable of SDK chunk objects (the ``openai``
#: SDK's ``AsyncStream``), or an in-memory iterable of either (for tests and replays).
Source = bytes | bytearray | str | AsyncIterable[Any] | Iterable[Any]


def _feed(mapper: ProviderMapper, item: object) -> list[Event]:
    if isinstance(item, bytes):
        return mapper.feed_bytes(item)
    if isinstance(item, bytearray | memoryview):
        return mapper.feed_bytes(bytes(item))
    if isinstance(item, str):
        return mapper.feed_bytes(item.encode())
    return mapper.feed_object(item)


async def _close_source(source: object) -> None:
    if hasattr(source, "aclose"):
        await aclose_quietly(source)
        return
    close = getattr(source, "close", None)
    if close is not None and inspect.iscoroutinefunction(close):
        await close()


async def mapped_batches(source: Source, mapper: ProviderMapper) -> AsyncGenerator[list[Event]]:
    """Read ``source`` and yield the events of each read, ending with the mapper's finish.

    A source that fails while being read (``httpx.RemoteProtocolError`` on a dropped connection,
    a read timeout) does not lose the turn: the failure becomes a fatal ``ProviderError`` of kind
    ``transport`` and the mapper finishes with what it has (a dropped stream: ``disconnected``,
    the open call marked ``truncated``). Cancellation and other ``BaseException`` pass through.
    """
    if isinstance(source, Mapping):
        raise SourceTypeError(
            "source is a mapping; pass the response body (bytes) or the stream, not a decoded "
            "JSON object (wrap one decoded chunk in a list to feed it as an SDK-like object)"
        )
    if isinstance(source, bytes | bytearray | str):
        yield _feed(mapper, source)
        yield mapper.finish()
        return
    if isinstance(source, AsyncIterable):
        iterator: AsyncIterator[Any] = aiter(source)
    elif isinstance(source, Iterable):
        iterator = _from_sync(source)
    else:
        raise SourceTypeError(
            "source must be bytes, an async iterable of bytes (httpx aiter_bytes()), an async "
            f"iterable of SDK chunk objects, or an iterable of those; got {type(source).__name__}"
        )
    failure: ProviderError | None = None
    try:
        while True:
            # Only reading the source is guarded: a bug in a mapper or a stage must not look
            # like a dropped connection.
            try:
                item = await anext(iterator)
            except StopAsyncIteration:
                break
            except Exception as error:
                failure = _transport_error(error)
                break
            batch = _feed(mapper, item)
            if batch:
                yield batch
    finally:
        await _close_source(iterator)
        if iterator is not source:
            await _close_source(source)
    if failure is not None:
        yield [failure, *mapper.finish(failed=True)]
    else:
        yield mapper.finish()


async def _from_sync(items: Iterable[Any]) -> AsyncGenerator[Any]:
    """An in-memory iterable as an async one (lists of reads or chunk objects, in tests)."""
    for item in items:
        yield item


def _transport_error(error: Exception) -> ProviderError:
    text = str(error)
    name = type(error).__name__
    return ProviderError(
        message=f"the stream failed while being read: {name}: {text}" if text else name,
        kind="transport",
        code=name,
        fatal=True,
    )


class FusedSteps:
    """Several synchronous steps applied in order to each event, as one step."""

    __slots__ = ("_steps",)

    def __init__(self, steps: Sequence[EventStep]) -> None:
        self._steps = tuple(steps)

    def feed_many(self, events: Iterable[Event]) -> list[Event]:
        """Run a batch of events through every step."""
        current: Iterable[Event] = events
        for step in self._steps:
            produced: list[Event] = []
            extend = produced.extend
            feed = step.feed
            for event in current:
                extend(feed(event))
            current = produced
        return current if isinstance(current, list) else list(current)

    def finish(self) -> list[Event]:
        """Flush every step in order; what step k flushes still goes through the steps after it."""
        out: list[Event] = []
        for position, step in enumerate(self._steps):
            later = FusedSteps(self._steps[position + 1 :])
            out.extend(later.feed_many(step.finish()))
        return out


async def _fused_head(
    source: Source, mapper: ProviderMapper, steps: FusedSteps | None
) -> AsyncGenerator[list[Event]]:
    batches = mapped_batches(source, mapper)
    try:
        async for batch in batches:
            if steps is None:
                yield batch
            else:
                out = steps.feed_many(batch)
                if out:
                    yield out
        if steps is not None:
            tail = steps.finish()
            if tail:
                yield tail
    finally:
        await batches.aclose()


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
    head = _fused_head(source, mapper, FusedSteps(leading) if leading else None)
    rest = stages[rest_index:]
    if not rest:
        return head
    events: AsyncIterator[Event] = flatten(head)
    for stage in rest:
        events = (
            drive_step(stage.start(), events) if isinstance(stage, SyncStage) else stage(events)
        )
    return _batch(events)
