"""``bench/process_cpu.py``: the CPU time of another process, finer than psutil's clock ticks.

The serve benches' CPU ratios rest on it (issue 20): a 100-request series of ~1.3 ms requests
is ~130 ms of CPU, and a 10 ms tick was up to 8% of that.
"""

from __future__ import annotations

import subprocess
import sys
import time
from collections.abc import Iterator
from types import ModuleType

import psutil
import pytest

from .bench_scripts import imported

SPIN = "import time\nend = time.process_time() + 0.15\nwhile time.process_time() < end: pass\n"


@pytest.fixture
def process_cpu() -> Iterator[ModuleType]:
    with imported("process_cpu") as module:
        yield module


def test_another_process_cpu_is_read_finer_than_a_clock_tick(process_cpu: ModuleType) -> None:
    child = subprocess.Popen([sys.executable, "-c", SPIN + "time.sleep(30)\n"])
    try:
        watched = psutil.Process(child.pid)
        deadline = time.monotonic() + 20
        readings: list[float] = []
        while time.monotonic() < deadline:
            readings.append(process_cpu.cpu_seconds(watched))
            if readings[-1] >= 0.15:
                break
            time.sleep(0.001)
        assert readings[-1] >= 0.15, "the child spun 0.15 s of CPU"
        assert readings == sorted(readings), "CPU time never goes back"
        if sys.platform.startswith("linux"):
            # Ticks would give multiples of 10 ms; the process's CPU clock gives nanoseconds.
            fractions = {round(value * 1000, 3) % 10 for value in readings if value}
            assert any(0.01 < fraction < 9.99 for fraction in fractions), readings[-5:]
        time.sleep(0.05)
        idle = process_cpu.cpu_seconds(watched)
        assert idle - readings[-1] < 0.05, "a sleeping process uses (almost) no CPU"
    finally:
        child.kill()
        child.wait()
    assert process_cpu.cpu_seconds(watched) >= 0.0  # gone: psutil's fallback, no error
