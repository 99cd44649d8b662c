"""The CPU time another process has used, to the nanosecond where the system allows.

``psutil.Process.cpu_times()`` counts in clock ticks (10 ms here): over 100 requests of about
1.3 ms each, one tick is 8% of the total, and a ratio of two such totals was off by up to twice
that. Linux gives every process a CPU-time clock (``clock_getcpuclockid``) read to the
nanosecond, all its threads together; this reads it, and falls back to psutil elsewhere.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import time

import psutil

_libc = ctypes.CDLL(ctypes.util.find_library("c") or None, use_errno=True)
_getcpuclockid = getattr(_libc, "clock_getcpuclockid", None)


def cpu_seconds(process: psutil.Process) -> float:
    """``process``'s user and system CPU time so far, in seconds (0.0 once it is gone)."""
    if _getcpuclockid is not None:
        clock = ctypes.c_int()
        if _getcpuclockid(process.pid, ctypes.byref(clock)) == 0:
            try:
                return time.clock_gettime(clock.value)
            except OSError:
                pass  # it ended between the two calls: psutil says so below
    try:
        times = process.cpu_times()
    except psutil.NoSuchProcess:
        return 0.0
    return float(times.user + times.system)
