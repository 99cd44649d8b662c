"""``toolwire serve --workers N``: N server processes on one port, and what keeps them.

Why a small supervisor of our own rather than uvicorn's ``workers=`` (``uvicorn.supervisors.
Multiprocess``, 0.54): uvicorn *spawns* its workers, so the app must be an import string and
its settings travel through the environment, every worker imports the whole library again, and
the parent returns normally on SIGTERM (exit 0) where ``toolwire serve`` ends by the signal it
received (143), as a supervisor expects. Here the settings are checked and the port is bound
once, in the parent, then the parent forks: each worker inherits the checked settings and
builds what must not cross a fork itself: its app, its upstream connection pool, its
OpenTelemetry providers (their export threads).

The sockets are the caller's (``cli/serve.py``). On Linux each worker listens on a socket of
its own bound to the port with ``SO_REUSEPORT`` (the parent keeps one bound, not listening,
to hold the port for a worker started again), and the kernel spreads new connections over
them by a hash of their addresses: evenly, whatever the timing. Workers accepting from one
shared socket were measured far from even: all are woken, and asyncio's accept loop takes
every queued connection at once, so one worker took 35 of 40 connections opened one by one
and 39 of 40 opened at once; kept-alive connections (an SDK's pool, a balancer's) then stay
where they landed. The hash ignores load, and the connections queued at a worker that dies
are reset (unless ``net.ipv4.tcp_migrate_req`` is set): both are what replicas behind a
balancer do too. Elsewhere (macOS and the BSDs give every connection to one such socket) the
workers share the parent's socket.

What the parent does, and nothing else:

- **Stop.** SIGTERM or SIGINT: it closes its socket (once the workers close theirs, new
  connections are refused) and sends SIGTERM to every worker, which stops accepting and
  lets its in-flight responses finish (``graceful_shutdown_seconds``), as one process does. A
  second signal is passed on as it is (a second SIGINT makes uvicorn cut the drain short).
  When every worker is gone it ends by the first signal (130 / 143). A worker still alive
  ``stop_timeout`` seconds after the stop is killed.
- **A worker that dies** after it was serving (killed by the OOM killer, a crash) is started
  again at once, under the same number: the other workers and their streams are untouched,
  and a health check that reaches another worker never sees the gap. A worker that dies
  *before* it was serving is started again after a pause that doubles with each such death in
  a row (0.5 s, 1 s, 2 s... up to 30 s): memory short for a moment, a descriptor limit
  reached, would otherwise stop the whole server while its other workers serve (issue 29, L1:
  their streams were cut at the shutdown limit). The server stops, and exits 1 for the
  orchestrator to see, only when no worker can start at all: one died before it was serving
  while no other worker was alive, serving or starting.
- **No orphans.** On Linux each worker asks the kernel for SIGTERM when the parent dies
  (``PR_SET_PDEATHSIG``), so even a parent killed by SIGKILL leaves no worker serving.
"""

from __future__ import annotations

import contextlib
import ctypes
import gc
import math
import os
import select
import signal
import socket
import sys
import time
import traceback
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path

__all__ = ["WorkerStartup", "available_cores", "supervise"]

#: What a worker runs: ``serve(index, ready)`` serves until stopped, and calls ``ready()`` once
#: it accepts connections. It runs in the forked process; whatever it raises ends that process.
WorkerStartup = Callable[[int, Callable[[], None]], None]

_STOP_SIGNALS = (signal.SIGTERM, signal.SIGINT)
_WATCHED = frozenset({*_STOP_SIGNALS, signal.SIGCHLD})
#: ``prctl`` option numbers (``linux/prctl.h``).
_PR_SET_PDEATHSIG = 1
#: The longest the parent sleeps without looking at its workers.
_POLL_SECONDS = 1.0
#: The pause before starting again a worker that died before it was serving, doubled with each
#: such death in a row, up to the second figure.
_BACKOFF_FIRST_SECONDS = 0.5
_BACKOFF_MOST_SECONDS = 30.0


#: cgroup v2's CPU limit of this process's group: ``"<quota> <period>"`` or ``"max <period>"``.
CGROUP_CPU_MAX = Path("/sys/fs/cgroup/cpu.max")


def available_cores(cpu_max: Path = CGROUP_CPU_MAX) -> int:
    """The cores this process may use: ``--workers auto``.

    The CPUs it may be scheduled on (its affinity: ``taskset``, a cpuset, what Python 3.13's
    ``os.process_cpu_count`` reads), lowered to a cgroup v2 CPU quota rounded up (a container
    run with ``--cpus 2`` on a 64-core host: 2, not 64 workers of 70 MB each).
    """
    if hasattr(os, "sched_getaffinity"):
        cores = len(os.sched_getaffinity(0))
    else:  # pragma: no cover (macOS, Windows)
        cores = os.cpu_count() or 1
    try:
        quota, period = cpu_max.read_text(encoding="ascii").split()
        if quota != "max":
            cores = min(cores, max(1, math.ceil(int(quota) / int(period))))
    except (OSError, ValueError):
        pass  # no cgroup v2 here, or no limit
    return cores


@dataclass
class _Worker:
    index: int
    pid: int
    #: The read end of the pipe the worker writes one byte to once it is serving.
    ready_pipe: int | None
    ready: bool = False


def supervise(
    count: int, listening: socket.socket, serve: WorkerStartup, *, stop_timeout: float
) -> int | signal.Signals:
    """Run ``count`` workers on ``listening`` until stopped (see the module docstring).

    Returns the signal that stopped them (for the caller to end the process by it), or the exit
    code 1 when a worker could not start. Every worker has exited when it returns.
    """
    return _Supervisor(listening, serve, stop_timeout).run(count)


class _Supervisor:
    def __init__(self, listening: socket.socket, serve: WorkerStartup, stop_timeout: float):
        self._listening = listening
        self._serve = serve
        self._stop_timeout = stop_timeout
        self._workers: dict[int, _Worker] = {}
        #: Workers to start again (by number) once their pause is over: when.
        self._pending: dict[int, float] = {}
        #: Deaths before serving in a row, by worker number.
        self._failures: dict[int, int] = {}
        self._stopped_by: signal.Signals | None = None
        self._failed = False
        self._kill_at = float("inf")
        self._wake_read, self._wake_write = socket.socketpair()

    def run(self, count: int) -> int | signal.Signals:
        for end in (self._wake_read, self._wake_write):
            end.setblocking(False)
        previous_wakeup = signal.set_wakeup_fd(self._wake_write.fileno(), warn_on_full_buffer=False)
        # A handler that does nothing: the signal's number arrives on the wake-up socket, read
        # in the loop below, so nothing races with the loop's own state.
        previous = {sig: signal.signal(sig, _noted) for sig in _WATCHED}
        try:
            # Objects alive now stay shared with the workers: a collection in a worker does not
            # write to their pages (Python's advice for fork without exec).
            gc.freeze()
            for index in range(count):
                if self._stopped_by is None and not self._failed:
                    self._start(index)
            while self._workers or self._pending:
                self._wait()
        finally:
            for sig, handler in previous.items():
                signal.signal(sig, handler)
            signal.set_wakeup_fd(previous_wakeup)
            self._wake_read.close()
            self._wake_write.close()
            self._stop_listening()
        if self._failed:
            return 1
        assert self._stopped_by is not None
        return self._stopped_by

    # -- the parent's loop -----------------------------------------------------------------

    def _wait(self) -> None:
        pipes = {w.ready_pipe: w for w in self._workers.values() if w.ready_pipe is not None}
        # SIGCHLD and the pipes wake the loop; the timeout is a safety net, and the deadlines.
        due = min(self._pending.values(), default=float("inf"))
        timeout = min(_POLL_SECONDS, max(min(self._kill_at, due) - time.monotonic(), 0.0))
        readable, _, _ = select.select([self._wake_read.fileno(), *pipes], [], [], timeout)
        for fd in readable:
            if fd in pipes:
                self._read_ready(pipes[fd])
        for signum in _drained(self._wake_read):
            if signum in _STOP_SIGNALS:
                self._on_stop(signal.Signals(signum))
        self._reap()
        self._start_due()
        if time.monotonic() >= self._kill_at:
            self._kill_at = float("inf")  # once; their SIGCHLD wakes the loop
            self._signal_all(signal.SIGKILL)

    def _read_ready(self, worker: _Worker) -> None:
        assert worker.ready_pipe is not None
        if os.read(worker.ready_pipe, 16):
            worker.ready = True
            self._failures.pop(worker.index, None)
        else:  # the worker's end closed: it has exited, or is exiting (reaped on SIGCHLD)
            os.close(worker.ready_pipe)
            worker.ready_pipe = None

    def _on_stop(self, sig: signal.Signals) -> None:
        if self._stopped_by is not None or self._failed:
            self._signal_all(sig)  # passed on as it is: a second SIGINT cuts the drain short
            return
        self._stopped_by = sig
        self._stop_all()

    def _stop_all(self) -> None:
        self._pending.clear()
        self._stop_listening()
        self._kill_at = time.monotonic() + self._stop_timeout
        self._signal_all(signal.SIGTERM)

    def _signal_all(self, sig: signal.Signals) -> None:
        for worker in self._workers.values():
            _signal(worker.pid, sig)

    def _stop_listening(self) -> None:
        if self._listening.fileno() != -1:
            self._listening.close()

    def _reap(self) -> None:
        for worker in list(self._workers.values()):
            pid, status = os.waitpid(worker.pid, os.WNOHANG)
            if pid == 0:
                continue
            del self._workers[worker.pid]
            if worker.ready_pipe is not None:
                if not worker.ready:  # the byte may have come just before the end
                    worker.ready = bool(_read_nonblocking(worker.ready_pipe))
                os.close(worker.ready_pipe)
            if self._stopped_by is not None or self._failed:
                continue
            ended = _how_it_ended(status)
            if not worker.ready:
                self._after_failed_start(worker, ended)
                continue
            replacement = self._start(worker.index)
            _say(
                f"worker {worker.index} (pid {worker.pid}) {ended}; started it again "
                f"(pid {replacement.pid})"
            )

    def _after_failed_start(self, worker: _Worker, ended: str) -> None:
        """``worker`` died before it was serving: start it again after a pause, or stop when
        no worker is alive to serve meanwhile (none can start at all)."""
        if not self._workers:
            _say(
                f"worker {worker.index} (pid {worker.pid}) {ended} before it was serving, and "
                "no other worker is serving or starting; stopping"
            )
            self._failed = True
            self._stop_all()
            return
        failures = self._failures.get(worker.index, 0) + 1
        self._failures[worker.index] = failures
        pause = min(_BACKOFF_FIRST_SECONDS * 2 ** (failures - 1), _BACKOFF_MOST_SECONDS)
        self._pending[worker.index] = time.monotonic() + pause
        _say(
            f"worker {worker.index} (pid {worker.pid}) {ended} before it was serving; "
            f"starting it again in {pause:g} s"
        )

    def _start_due(self) -> None:
        now = time.monotonic()
        for index, due in sorted(self._pending.items()):
            if due <= now and self._stopped_by is None and not self._failed:
                del self._pending[index]
                started = self._start(index)
                _say(f"worker {index} started again (pid {started.pid})")

    # -- one worker ------------------------------------------------------------------------

    def _start(self, index: int) -> _Worker:
        ready_read, ready_write = os.pipe()
        parent = os.getpid()
        sys.stdout.flush()  # or the worker would write what is buffered again
        sys.stderr.flush()
        # Blocked across the fork, so no signal reaches the parent's handler in the child.
        mask = signal.pthread_sigmask(signal.SIG_BLOCK, _WATCHED)
        pid = os.fork()
        if pid == 0:  # pragma: no cover (the worker; its tests see it from outside)
            self._become_worker(index, parent, mask, ready_read, ready_write)
        signal.pthread_sigmask(signal.SIG_SETMASK, mask)
        os.close(ready_write)
        worker = _Worker(index, pid, ready_read)
        self._workers[pid] = worker
        return worker

    def _become_worker(
        self,
        index: int,
        parent: int,
        mask: Iterable[int],
        ready_read: int,
        ready_write: int,
    ) -> None:  # pragma: no cover
        code = 1
        try:
            signal.set_wakeup_fd(-1)
            for sig in _WATCHED:
                signal.signal(sig, signal.SIG_DFL)
            for fd in [ready_read, *(w.ready_pipe for w in self._workers.values())]:
                if fd is not None:
                    os.close(fd)
            self._wake_read.close()
            self._wake_write.close()
            _stop_with(parent)
            signal.pthread_sigmask(signal.SIG_SETMASK, mask)
            self._serve(index, _announcer(ready_write))
            code = 0
        except SystemExit as exiting:
            code = exiting.code if isinstance(exiting.code, int) else int(exiting.code is not None)
        except BaseException:
            traceback.print_exc()
        finally:
            with contextlib.suppress(Exception):
                sys.stdout.flush()
                sys.stderr.flush()
            os._exit(code)


def _noted(signum: int, frame: object) -> None:
    """The parent's signal handler: the wake-up socket carries the signal (see ``run``)."""


def _drained(wake: socket.socket) -> bytes:
    received = b""
    while True:
        try:
            piece = wake.recv(4096)
        except BlockingIOError:
            return received
        if not piece:
            return received
        received += piece


def _read_nonblocking(fd: int) -> bytes:
    os.set_blocking(fd, False)
    try:
        return os.read(fd, 16)
    except BlockingIOError:
        return b""


def _announcer(ready_write: int) -> Callable[[], None]:
    """``ready()``: tell the parent, once, that this worker accepts connections.

    Once only: the pipe is closed after its byte, and its descriptor number is soon another
    socket's (uvicorn calls its notify callback again every 30 s; a second write and close
    went to a client's connection, behind asyncio's back).
    """
    pending = [ready_write]

    def ready() -> None:
        if pending:
            fd = pending.pop()
            with contextlib.suppress(OSError):
                os.write(fd, b"1")
            os.close(fd)

    return ready


def _stop_with(parent: int) -> None:  # pragma: no cover (runs in the worker)
    """Have the kernel send SIGTERM to this worker when its parent dies (Linux)."""
    if not sys.platform.startswith("linux"):
        return
    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_PDEATHSIG, signal.SIGTERM)
    if os.getppid() != parent:  # it died before the request took effect
        os._exit(1)


def _signal(pid: int, sig: signal.Signals) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, sig)


def _how_it_ended(status: int) -> str:
    if os.WIFSIGNALED(status):
        return f"was ended by {signal.Signals(os.WTERMSIG(status)).name}"
    return f"exited with code {os.WEXITSTATUS(status)}"


def _say(message: str) -> None:
    sys.stderr.write(f"toolwire serve: {message}\n")
    sys.stderr.flush()
