"""Judging a costly call in a worker process, within a time budget (issue 29, H2).

A call's schema check is priced before it runs (``SchemaChecker.estimate_ns``). Past
:data:`ON_LOOP_CHECK_NS` it is not run on the event loop, nor in a worker thread:
``jsonschema-rs`` holds the GIL for the whole of one validation (measured: a thread validating
for 1.4 s held the loop 1.4 s), so a thread would stall every other stream just the same. It
runs in a worker process (``toolwire.judge._worker``), where it can be stopped:

- at most :func:`worker_slots` checks run at once per event loop (one fewer than the CPUs, at
  least one), so that the process serving the clients keeps a CPU; the workers run at a lower
  priority too;
- a call waits at most ``budget`` seconds for a slot, then its check runs at most ``budget``
  seconds; past either, the worker is killed (a check in native code cannot be interrupted
  otherwise) and the call is rejected as ``unchecked``, whose message says that toolwire could
  not finish the check and that nothing was found wrong: the model is not blamed;
- starting a worker (about 0.3 s: a new interpreter importing toolwire) is not counted in the
  budget; idle workers are kept for :data:`IDLE_LIMIT` seconds and ended when the program
  exits.

The workers are plain subprocesses driven through blocking pipes in worker threads, not
``anyio.to_process`` or ``multiprocessing``: both re-run the program's ``__main__`` file in each
worker (an agent script without a ``__main__`` guard would run again; ``python -m toolwire.cli``
fails there), and ``concurrent.futures`` cannot kill one running task.
"""

from __future__ import annotations

import atexit
import os
import pickle
import subprocess
import sys
import threading
import time
from math import inf

import anyio
import anyio.to_thread
from anyio.lowlevel import RunVar

from ..core.errors import ConfigurationError
from ..core.verdict import Verdict
from ..judge._worker import READY, UncheckedWhy, WorkerRequest, read_frame, write_frame

__all__ = [
    "DEFAULT_CHECK_BUDGET",
    "IDLE_LIMIT",
    "ON_LOOP_CHECK_NS",
    "ask_worker",
    "checked_budget",
    "worker_slots",
]

#: How long a costly call may wait for a worker, and then how long its check may run, in seconds.
DEFAULT_CHECK_BUDGET = 2.0
#: Checks priced above this (5 ms) leave the event loop: every other stream would wait for them.
ON_LOOP_CHECK_NS = 5_000_000


def checked_budget(budget: object, name: str = "check_budget") -> float | None:
    """``budget`` when it is a finite number of seconds above 0, or ``None`` (no budget: such
    calls are judged in a worker thread); else a ``ConfigurationError`` naming the option
    ``name`` (``check_budget`` of a ``JudgeStage``, ``judge_budget`` of a ``Pipeline``, a
    ``HealingTransport`` or ``toolwire serve``), so that a bad value fails where it is set."""
    if budget is None:
        return None
    if isinstance(budget, bool) or not isinstance(budget, int | float) or not 0 < budget < inf:
        raise ConfigurationError(f"{name} must be a number of seconds > 0, or None; got {budget!r}")
    return float(budget)


#: An idle worker is ended after this many seconds.
IDLE_LIMIT = 300.0
#: How long a new worker may take to say it is ready.
_START_LIMIT = 20.0
#: Not ``-m``: the module is imported with toolwire, and must be one module in the worker too.
_COMMAND = (sys.executable, "-c", "from toolwire.judge._worker import main; main()")


class _Worker:
    """One worker process and its pipes (blocking: used from worker threads)."""

    __slots__ = ("idle_since", "process")

    def __init__(self) -> None:
        self.process = subprocess.Popen(
            _COMMAND, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL
        )
        self.idle_since = 0.0

    def wait_ready(self) -> bool:
        """Block until the worker says it is ready; ``False`` when it ended first."""
        assert self.process.stdout is not None
        return self.process.stdout.read(len(READY)) == READY

    def ask(self, request: WorkerRequest) -> Verdict | None:
        """Send one call and block for its verdict; ``None`` when the worker ended first."""
        assert self.process.stdin is not None
        assert self.process.stdout is not None
        try:
            write_frame(self.process.stdin, request)
        except (BrokenPipeError, ValueError):  # ended, or closed by ``close``
            return None
        frame = read_frame(self.process.stdout)
        if frame is None:
            return None
        verdict = pickle.loads(frame)
        assert type(verdict) is Verdict
        return verdict

    def close(self) -> None:
        """Kill the process, reap it and close its pipes (a blocked ``ask`` then returns)."""
        self.process.kill()
        self.process.wait()
        for pipe in (self.process.stdin, self.process.stdout):
            if pipe is not None:
                pipe.close()


_lock = threading.Lock()
_idle: list[_Worker] = []
_slots: RunVar[anyio.CapacityLimiter] = RunVar("toolwire_judge_worker_slots")


def worker_slots() -> anyio.CapacityLimiter:
    """This event loop's limit on checks running at once: one fewer than the CPUs, at least one."""
    try:
        return _slots.get()
    except LookupError:
        slots = anyio.CapacityLimiter(max(1, (os.cpu_count() or 2) - 1))
        _slots.set(slots)
        return slots


def _take_idle() -> tuple[_Worker | None, list[_Worker]]:
    """A live idle worker (or ``None``), and the workers to end (gone stale or dead)."""
    now = time.monotonic()
    found: _Worker | None = None
    stale: list[_Worker] = []
    with _lock:
        while _idle:
            worker = _idle.pop()
            if worker.process.poll() is not None or now - worker.idle_since > IDLE_LIMIT:
                stale.append(worker)
            elif found is None:
                found = worker
            else:
                _idle.insert(0, worker)
                break
    return found, stale


def _put_back(worker: _Worker) -> None:
    worker.idle_since = time.monotonic()
    with _lock:
        _idle.append(worker)


@atexit.register
def _end_idle_workers() -> None:
    """End every idle worker when the program exits (they would end anyway: their input
    closes with this process; this reaps them)."""
    with _lock:
        workers = list(_idle)
        _idle.clear()
    for worker in workers:
        worker.close()


async def _close(worker: _Worker) -> None:
    with anyio.CancelScope(shield=True):
        await anyio.to_thread.run_sync(worker.close)


async def _started() -> _Worker | None:
    """An idle worker, or a new one once it is ready (``None`` when none could start)."""
    worker, stale = _take_idle()
    for old in stale:
        await _close(old)
    if worker is not None:
        return worker
    try:
        worker = await anyio.to_thread.run_sync(_Worker)
    except OSError:
        return None
    ready = False
    try:
        with anyio.move_on_after(_START_LIMIT):
            ready = await anyio.to_thread.run_sync(worker.wait_ready, abandon_on_cancel=True)
    finally:
        if not ready:
            await _close(worker)
    return worker if ready else None


async def ask_worker(request: WorkerRequest, budget: float) -> Verdict | UncheckedWhy:
    """The verdict of a worker process on ``request``, or why there is none within ``budget``.

    The budget is counted twice, once for waiting for a slot (``"busy"``) and once for the
    check itself (``"slow"``); ``"broken"``: no worker could start, or it ended without an
    answer. A worker past its budget, or whose caller was cancelled, is killed.
    """
    slots = worker_slots()
    with anyio.move_on_after(budget) as waiting:
        await slots.acquire()
    if waiting.cancelled_caught:
        return "busy"
    try:
        worker = await _started()
        if worker is None:
            return "broken"
        answer: Verdict | None = None
        answered = False
        try:
            with anyio.move_on_after(budget):
                answer = await anyio.to_thread.run_sync(worker.ask, request, abandon_on_cancel=True)
                answered = True
        finally:
            if answered and answer is not None:
                _put_back(worker)
            else:
                await _close(worker)
        if not answered:
            return "slow"
        return "broken" if answer is None else answer
    finally:
        slots.release()
