"""The benches of ``bench/`` as the tests of their checks reach them: imported, or run."""

from __future__ import annotations

import importlib
import os
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from types import ModuleType

BENCH_DIR = Path(__file__).resolve().parents[2] / "bench"


@contextmanager
def imported(name: str) -> Iterator[ModuleType]:
    """The bench module ``name``, with ``bench/`` on the path while it is in use."""
    sys.path.insert(0, str(BENCH_DIR))
    try:
        yield importlib.import_module(name)
    finally:
        sys.path.remove(str(BENCH_DIR))


def run_bench(script: str, *args: str) -> subprocess.CompletedProcess[str]:
    """``bench/<script> args...`` run to its end (2 minutes at most), its output captured."""
    return subprocess.run(
        [sys.executable, str(BENCH_DIR / script), *args],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "PYTHONPATH": str(BENCH_DIR)},
    )
