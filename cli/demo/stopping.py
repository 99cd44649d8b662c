"""Ctrl-C, SIGTERM and SIGHUP stop the demo at a safe point, and the local server with it.

Why not raise ``KeyboardInterrupt`` from the signal handler, as Python does for Ctrl-C: the
handler runs between any two bytecodes of the main thread, so the exception lands wherever the
demo happens to be, inside the event loop's own bookkeeping, a lock held by rich's refresh
thread, an async generator being closed. It was so before (SIGTERM and SIGHUP raised there,
and Ctrl-C cancelled the asyncio task from the handler while nothing did so on trio), and a
demo told to stop on a loaded machine once never exited (issue 16). Here the handler only
records the signal:

- in the event loop, :func:`until_stopped` sees it within :data:`POLL` seconds and cancels the
  run through its own cancel scope, the way anyio cancels anything (asyncio and trio alike);
- in synchronous code, the demo asks :meth:`StopSignals.check` at its own points (while the
  server starts, after the run), which raises ``KeyboardInterrupt`` there, so every ``finally``
  runs and the server is stopped; the command exits 130.

The handlers are installed before the server starts and stay until it is stopped, so no
signal falls in a gap between two handlers. A second signal raises at once, as a second
Ctrl-C does in asyncio: whoever presses twice wants out now (``PR_SET_PDEATHSIG`` still takes
the server down, see :mod:`.server`).
"""

from __future__ import annotations

import signal
import threading
from collections.abc import Awaitable, Callable
from types import FrameType, TracebackType
from typing import Any, TypeVar

import anyio

__all__ = ["POLL", "StopSignals", "until_stopped"]

T = TypeVar("T")

#: How often the event loop looks at the recorded signal, in seconds.
POLL = 0.05

_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)


class StopSignals:
    """``with StopSignals() as stop:`` — the stop signals are recorded in ``stop.received``."""

    def __init__(self) -> None:
        self.received: int | None = None
        self._previous: dict[int, Any] = {}

    def __enter__(self) -> StopSignals:
        # Python allows signal handlers only in the main thread; elsewhere nothing changes.
        if threading.current_thread() is threading.main_thread():
            for stop in _SIGNALS:
                self._previous[stop] = signal.signal(stop, self._record)
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        for stop, handler in self._previous.items():
            signal.signal(stop, handler if handler is not None else signal.SIG_DFL)
        self._previous.clear()

    def _record(self, signum: int, frame: FrameType | None) -> None:
        if self.received is not None:
            raise KeyboardInterrupt  # the second signal: out now
        self.received = signum

    def check(self) -> None:
        """Raise ``KeyboardInterrupt`` here if a stop signal came: a safe point of the caller."""
        if self.received is not None:
            raise KeyboardInterrupt


async def until_stopped(stop: StopSignals, work: Callable[[], Awaitable[T]]) -> T | None:
    """``await work()``, cancelled when a stop signal comes: ``None`` then (the caller checks).

    An exception of ``work`` is raised as itself (not in an exception group), so the caller
    catches, say, ``httpx.HTTPError`` as it would without the watcher.
    """
    result: list[T] = []
    failure: list[Exception] = []
    async with anyio.create_task_group() as group:

        async def watch() -> None:
            # A poll, not an anyio.Event: the handler runs between any two bytecodes, maybe
            # inside the event loop itself, where setting an Event is not safe.
            while stop.received is None:  # noqa: ASYNC110
                await anyio.sleep(POLL)
            group.cancel_scope.cancel()

        async def run() -> None:
            try:
                result.append(await work())
            except Exception as error:
                failure.append(error)
            finally:
                group.cancel_scope.cancel()  # done (or failed): the watcher stops too

        group.start_soon(watch)
        group.start_soon(run)
    if failure:
        raise failure[0]
    return result[0] if result else None
