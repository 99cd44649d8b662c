"""The ``--workers`` supervisor (``toolwire.cli.workers``) on its own: its policies, its core count.

:func:`supervise` forks, so it runs in a child Python process of the test (a fork inside pytest
would copy the test runner), with small workers that fail or hang on purpose; the real command
with real workers is ``tests/serve/test_serve_workers.py``.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
import uuid
from pathlib import Path

import psutil
import pytest

from toolwire.cli.workers import available_cores

pytestmark = pytest.mark.skipif(not hasattr(os, "fork"), reason="workers need os.fork")

#: A script that runs ``supervise`` with the worker body given in place of ``{worker}``, and
#: prints what it returned. A marker in its command line finds any process it leaves behind.
SCRIPT = """\
import signal, socket, sys
from toolwire.cli.workers import supervise

listening = socket.socket()
listening.bind(("127.0.0.1", 0))
listening.listen()

def serve(index, ready):
{worker}

print(repr(supervise(2, listening, serve, stop_timeout=1.0)), flush=True)
"""


def _supervised(worker: str) -> tuple[subprocess.Popen[str], str]:
    marker = f"toolwire-workers-test-{uuid.uuid4()}"
    source = SCRIPT.format(worker=textwrap.indent(textwrap.dedent(worker), "    "))
    process = subprocess.Popen(
        [sys.executable, "-c", source, marker],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    return process, marker


def _left_behind(marker: str) -> list[int]:
    """Processes still alive (not zombies) whose command line holds ``marker``."""
    alive = []
    for process in psutil.process_iter(["cmdline", "status"]):
        if marker in (process.info["cmdline"] or []) and (
            process.info["status"] != psutil.STATUS_ZOMBIE
        ):
            alive.append(process.pid)
    return alive


def test_a_worker_that_keeps_dying_before_serving_is_retried_while_another_serves() -> None:
    # Issue 29, L1: it stopped the whole server (exit 1), cutting the other worker's streams.
    process, marker = _supervised(
        """
        if index == 1:
            raise SystemExit(3)
        ready()
        print("worker 0 serving", flush=True)
        signal.pause()
        """
    )
    assert process.stderr is not None
    lines = [process.stderr.readline() for _ in range(2)]
    assert "worker 1 (pid " in lines[0]
    assert "exited with code 3 before it was serving; starting it again in 0.5 s" in lines[0]
    assert "worker 1 started again" in lines[1]
    # The next death waits twice as long: the parent does not spin on a worker that cannot start.
    assert "starting it again in 1 s" in process.stderr.readline()
    assert process.poll() is None  # still serving, on worker 0
    process.send_signal(signal.SIGTERM)
    out, _ = process.communicate(timeout=30)
    assert out.splitlines() == ["worker 0 serving", "<Signals.SIGTERM: 15>"]
    assert _left_behind(marker) == []


def test_a_replacement_that_dies_once_before_serving_is_started_again_and_serves(
    tmp_path: Path,
) -> None:
    failed_once = tmp_path / "failed-once"
    process, marker = _supervised(
        f"""
        import os
        if index == 1 and not os.path.exists({str(failed_once)!r}):
            open({str(failed_once)!r}, "w").close()
            raise SystemExit(3)
        ready()
        print(f"worker {{index}} serving", flush=True)
        signal.pause()
        """
    )
    assert process.stdout is not None
    serving = {process.stdout.readline().strip() for _ in range(2)}
    assert serving == {"worker 0 serving", "worker 1 serving"}
    process.send_signal(signal.SIGTERM)
    out, err = process.communicate(timeout=30)
    assert out.strip() == "<Signals.SIGTERM: 15>"
    assert "before it was serving; starting it again in 0.5 s" in err
    assert _left_behind(marker) == []


def test_the_server_stops_only_when_no_worker_can_start_at_all() -> None:
    process, marker = _supervised(
        """
        raise SystemExit(3)
        """
    )
    out, err = process.communicate(timeout=30)
    assert out.strip() == "1"
    assert "no other worker is serving or starting; stopping" in err
    assert _left_behind(marker) == []


def test_an_exception_in_a_worker_is_reported_and_counts_as_a_failed_start() -> None:
    process, marker = _supervised(
        """
        raise RuntimeError("no app for you")
        """
    )
    out, err = process.communicate(timeout=30)
    assert out.strip() == "1"
    assert "RuntimeError: no app for you" in err
    assert _left_behind(marker) == []


def test_a_worker_still_alive_after_the_stop_timeout_is_killed() -> None:
    process, marker = _supervised(
        """
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        ready()
        while True:
            signal.pause()
        """
    )
    assert process.stdout is not None
    _wait_for_children(process.pid, 2)
    time.sleep(0.3)  # both workers past ready()
    started = time.monotonic()
    process.send_signal(signal.SIGTERM)
    out, _ = process.communicate(timeout=30)
    # Returned the stop signal (for the command to end by it), once the workers were killed.
    assert out.strip() == "<Signals.SIGTERM: 15>"
    assert 1.0 <= time.monotonic() - started < 10
    assert _left_behind(marker) == []


def test_ready_tells_the_parent_once_and_never_touches_the_descriptor_again() -> None:
    process, marker = _supervised(
        """
        import os
        ready()
        # The lowest free descriptors: the announcing pipe's, just closed, are reused.
        read, write = os.pipe()
        ready()  # uvicorn calls it again every 30 s
        os.write(write, b"x")
        print(f"worker {index} read {os.read(read, 8)!r}", flush=True)
        signal.pause()
        """
    )
    _wait_for_children(process.pid, 2)
    time.sleep(0.5)
    process.send_signal(signal.SIGTERM)
    out, err = process.communicate(timeout=30)
    assert "worker 0 read b'x'" in out, err
    assert "worker 1 read b'x'" in out, err
    assert out.strip().endswith("<Signals.SIGTERM: 15>")
    assert _left_behind(marker) == []


def _wait_for_children(pid: int, count: int) -> None:
    deadline = time.monotonic() + 15
    while len(psutil.Process(pid).children()) < count:
        assert time.monotonic() < deadline, "the workers never started"
        time.sleep(0.05)


@pytest.mark.parametrize(
    ("cpu_max", "expected"),
    [
        ("max 100000\n", None),  # no quota: the affinity
        ("100000 100000\n", 1),
        ("150000 100000\n", 2),  # 1.5 cores: 2 workers
        ("20000 100000\n", 1),  # under a core: still one
        ("garbled\n", None),
    ],
)
def test_auto_is_the_cores_this_process_may_use_under_its_cgroup_quota(
    tmp_path: Path, cpu_max: str, expected: int | None
) -> None:
    affinity = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    assert affinity is not None
    path = tmp_path / "cpu.max"
    path.write_text(cpu_max)
    assert available_cores(path) == (affinity if expected is None else min(affinity, expected))
    assert available_cores(tmp_path / "absent") == affinity
