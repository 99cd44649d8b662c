"""Reading one source into a mapper: every kind of source, closed on every path, errors capped.

What a source may be (:data:`Source`): one body (``bytes``/``str``), an async iterable of reads
(``httpx.Response.aiter_bytes()``) or of SDK chunk objects (the ``openai`` SDK's
``AsyncStream``), an ``httpx.Response`` itself, or an in-memory iterable of any of those.

The guarantees, each from a way a real turn was lost before:

- A source that fails while being read does not lose the turn: the failure is a fatal
  ``transport`` ProviderError, and the mapper finishes with what it has (``disconnected``).
- An ``httpx.Response`` with a non-2xx status is never read as a stream: its body is quoted
  (capped) in an ``http_status`` error and the turn ends in ``error``, so that a 500 on a bad
  history is not retried forever as a "dropped connection". A body the mapper knows as its
  server's tool-parser failure is the model's broken call instead (``ReadsErrorBody``).
- Nothing after the provider's terminator (``[DONE]``, ``message_stop``...) is read into the
  turn, and a server that holds the body open after it cannot hang the turn: it gets
  :data:`DRAIN_GRACE` seconds to end the body, then the source is closed.
- The source is closed on every exit (``aclose``, or ``close`` for sync generators); a close
  that raises after a complete read is recorded as a non-fatal ``transport`` error, never
  allowed to lose the turn. Cancellation and other ``BaseException`` pass through.
- Events keep their order: whatever the runner adds (a failure, a failed close) comes before
  the ``Finish``, so ``Finish`` and ``StreamEnd`` stay last.
"""

from __future__ import annotations

import inspect
from collections.abc import AsyncGenerator, AsyncIterable, AsyncIterator, Iterable, Mapping
from typing import Any, Protocol

import anyio

from .errors import SourceTypeError
from .events import Event, Finish, ProviderError
from .mapper import ProviderMapper, ReadsErrorBody, cap_text

__all__ = ["BatchSteps", "Source", "mapped_batches"]

#: What ``collect`` and ``stream`` read (see the module docstring).
Source = bytes | bytearray | str | AsyncIterable[Any] | Iterable[Any]

#: Seconds a source may take to end by itself after the provider's terminator.
DRAIN_GRACE = 0.5
#: Reads taken after the terminator at most (whatever they hold is not used).
_DRAIN_READS = 64
#: How much of a non-2xx HTTP body is read to quote it.
_ERROR_BODY_CAP = 64 * 1024


def _feed(mapper: ProviderMapper, item: object) -> list[Event]:
    if isinstance(item, bytes):
        return mapper.feed_bytes(item)
    if isinstance(item, bytearray | memoryview):
        return mapper.feed_bytes(bytes(item))
    if isinstance(item, str):
        return mapper.feed_bytes(item.encode())
    return mapper.feed_object(item)


def _is_http_response(source: object) -> bool:
    """An ``httpx.Response`` (duck-typed: httpx is optional and never imported here)."""
    return (
        hasattr(source, "status_code")
        and hasattr(source, "headers")
        and hasattr(source, "aiter_bytes")
        and hasattr(source, "aclose")
    )


async def _read_error_body(response: Any) -> bytes:
    body = bytearray()
    async for piece in response.aiter_bytes():
        body += piece
        if len(body) >= _ERROR_BODY_CAP:
            break
    return bytes(body[:_ERROR_BODY_CAP])


async def _http_status_error(response: Any) -> tuple[ProviderError, bytes]:
    status = response.status_code
    try:
        body = await _read_error_body(response)
    except Exception as error:  # the body could not be read either: say so, keep the status
        body = f"(the body could not be read: {type(error).__name__})".encode()
    phrase = getattr(response, "reason_phrase", "") or ""
    status_error = ProviderError(
        message=f"HTTP {status} {phrase}".rstrip() + f": {cap_text(body, 300)}",
        kind="http_status",
        code=str(status),
        raw=cap_text(body),
        fatal=True,
    )
    return status_error, body


class BatchSteps(Protocol):
    """Steps the runner fuses into the reading loop (its leading synchronous stages)."""

    async def apply(self, batch: list[Event]) -> list[Event]:
        """Run one batch of events through the steps."""
        ...

    def finish(self) -> list[Event]:
        """The input ended: what the steps held back."""
        ...


async def mapped_batches(
    source: Source, mapper: ProviderMapper, steps: BatchSteps | None = None
) -> AsyncGenerator[list[Event]]:
    """Read ``source`` and yield the events of each read, ending with the mapper's finish.

    With ``steps``, each batch goes through them first (an empty result is not yielded) and
    their tail comes last: in this loop, so that an event crosses one async generator, not two
    (issue 20: each costs about a microsecond per read).
    """
    if isinstance(source, Mapping):
        raise SourceTypeError(
            "source is a mapping; pass the response body (bytes) or the stream, not a decoded "
            "JSON object (wrap one decoded chunk in a list to feed it as an SDK-like object)"
        )
    if isinstance(source, bytes | bytearray | str):
        source = [source]
    if _is_error_response(source):
        ended = await _failed_response(source, mapper)
    else:
        # Only a source read by awaiting can be waited on; a sync one cannot hold the loop
        # (nor be cut off by a timer: the read blocks), so its drain needs no timer.
        awaited = _is_http_response(source) or isinstance(source, AsyncIterable)
        iterator = _iterator(source)
        added: list[Event] = []
        last: list[Event] = []
        try:
            while True:
                # Only reading the source is guarded: a bug in a mapper or a stage must not
                # look like a dropped connection.
                try:
                    item = await anext(iterator)
                except StopAsyncIteration:
                    break
                except Exception as error:
                    added.append(_transport_error(error))
                    break
                batch = _feed(mapper, item)
                if mapper.done:
                    # The terminator: nothing after it is read. A server that holds the body
                    # open after it gets a short grace to end it, then the source is closed.
                    last = batch
                    await _drain(iterator, timed=awaited)
                    break
                if batch and steps is not None:
                    batch = await steps.apply(batch)
                if batch:
                    yield batch
        finally:
            closing = await _close_quietly(iterator)
            if iterator is not source:
                closing += await _close_quietly(source)
        ended = _before_finish([*last, *added, *mapper.finish(failed=bool(added))], closing)
    if steps is None:
        yield ended
        return
    ended = await steps.apply(ended)
    if ended:
        yield ended
    tail = steps.finish()
    if tail:
        yield tail


def _is_error_response(source: Any) -> bool:
    return _is_http_response(source) and not 200 <= source.status_code < 300


async def _failed_response(response: Any, mapper: ProviderMapper) -> list[Event]:
    """The events of an HTTP response with a non-2xx status: its body quoted, never read as a
    stream (or, for a server's tool-parser error body, the model's broken call)."""
    try:
        error, body = await _http_status_error(response)
    finally:
        closing = await _close_quietly(response)
    if isinstance(mapper, ReadsErrorBody):
        ended = mapper.fail_response(error, response.status_code, body)
    else:
        ended = mapper.fail(error)
    return _before_finish(ended, closing)


def _iterator(source: Source) -> AsyncIterator[Any]:
    """What reading ``source`` iterates: an ``httpx.Response``'s bytes, or the source itself."""
    if _is_http_response(source):
        response: Any = source
        return aiter(response.aiter_bytes())
    if isinstance(source, AsyncIterable):
        return aiter(source)
    if isinstance(source, Iterable):
        return _from_sync(source)
    raise SourceTypeError(
        "source must be bytes, an httpx.Response, an async iterable of bytes (httpx "
        "aiter_bytes()), an async iterable of SDK chunk objects, or an iterable of those; "
        f"got {type(source).__name__}"
    )


def _before_finish(events: list[Event], extra: list[Event]) -> list[Event]:
    """``events`` with ``extra`` placed before its ``Finish``, so Finish and StreamEnd stay last."""
    if not extra:
        return events
    for position, event in enumerate(events):
        if isinstance(event, Finish):
            return [*events[:position], *extra, *events[position:]]
    return [*events, *extra]


async def _drain(iterator: AsyncIterator[Any], *, timed: bool = True) -> None:
    """Let a source end by itself after the terminator, within :data:`DRAIN_GRACE` and a size.

    A normal server closes right after its terminator: draining lets the transport's own
    generators finish cleanly (closing them half-read leaves them to the garbage collector).
    A server that holds the body open, or keeps sending, is cut off. ``timed=False`` for a
    source in memory or read synchronously: no timer could cut it off, and setting one costs a
    cancel scope (about a tenth of healing a whole completion, ``docs/serve.md``).
    """
    if not timed:
        await _drain_reads(iterator)
        return
    with anyio.move_on_after(DRAIN_GRACE):
        await _drain_reads(iterator)


async def _drain_reads(iterator: AsyncIterator[Any]) -> None:
    for _ in range(_DRAIN_READS):
        try:
            await anext(iterator)
        except StopAsyncIteration:
            return
        except Exception:  # a failure after the terminator changes nothing
            return


async def _from_sync(items: Iterable[Any]) -> AsyncGenerator[Any]:
    """An in-memory iterable as an async one; a sync generator is closed with it."""
    try:
        for item in items:
            yield item
    finally:
        close = getattr(items, "close", None)
        if close is not None and not inspect.iscoroutinefunction(close):
            close()


async def _close_quietly(source: object) -> list[Event]:
    """Close ``source`` if it can be closed; a failure to close becomes a non-fatal error."""
    try:
        aclose = getattr(source, "aclose", None)
        if aclose is not None:
            await aclose()
        else:
            close = getattr(source, "close", None)
            if close is not None:
                result = close()
                if inspect.isawaitable(result):
                    await result
    except Exception as error:
        return [
            ProviderError(
                message=f"closing the source failed after reading it: {type(error).__name__}: "
                f"{error}",
                kind="transport",
                code=type(error).__name__,
            )
        ]
    return []


def _transport_error(error: Exception) -> ProviderError:
    text = str(error)
    name = type(error).__name__
    return ProviderError(
        message=f"the stream failed while being read: {name}: {text}" if text else name,
        kind="transport",
        code=name,
        fatal=True,
    )
