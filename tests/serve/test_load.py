"""The load test, bounded: 500 concurrent streamed requests through ``toolwire serve`` (healing
and bare), on loopback, every stream whole, no error. ``bench/bench_serve_load.py`` is the
measurement (latency percentiles, memory per stream); this test holds it to its zero errors.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow  # see docs/development.md

BENCH = Path(__file__).resolve().parents[2] / "bench" / "bench_serve_load.py"


def test_500_concurrent_streams_through_the_proxy_end_whole_with_no_error() -> None:
    done = subprocess.run(
        [
            sys.executable,
            str(BENCH),
            *("--streams", "500", "--rounds", "1", "--chunks", "20"),
            "--json",
        ],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    result = json.loads(done.stdout)
    for mode in ("bare", "heal"):
        assert result[mode]["errors"] == 0, result[mode]["error_kinds"]
        # Every stream's 20 stamped chunks arrived (500 streams, one round).
        assert result[mode]["chunks_received"] == 500 * 20
