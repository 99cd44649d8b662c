"""``toolwire serve`` under the network's faults: the proxy's ``read_timeout`` ends a stall once,
and what the healing answers (``docs/healing.md``, "Faults of the network") reaches the client
with its headers: a whole exchange's ``x-should-retry: false`` included.

The upstream is the fault table's (``tests/heal/faults.py``); the client is plain httpx.
"""

from __future__ import annotations

import time
from pathlib import Path

import httpx
import pytest

from heal.faults import FORMATS, faulty_upstream

from .proxy import running_proxy

#: The proxy's read timeout: what ends a stall.
READ_TIMEOUT = 0.3

pytestmark = pytest.mark.slow  # a proxy process per test


def _config(tmp_path: Path) -> str:
    config = tmp_path / "serve.toml"
    config.write_text(f"read_timeout = {READ_TIMEOUT}\n")
    return str(config)


def test_a_stall_ends_at_the_proxy_s_first_read_timeout(tmp_path: Path) -> None:
    case = FORMATS["Chat"]
    with faulty_upstream(case, "stall", True) as upstream:
        arguments = ("--upstream", f"{upstream.base_url}/v1", "--config", _config(tmp_path))
        with running_proxy(*arguments) as proxy, httpx.Client(timeout=10) as http:
            started = time.perf_counter()
            response = http.post(f"{proxy.base_url}/chat/completions", json=case.request(True))
            seconds = time.perf_counter() - started
    assert response.status_code == 200
    assert b'"code":"upstream_timeout"' in response.content
    assert len(upstream.requests) == 1
    assert READ_TIMEOUT <= seconds < 3 * READ_TIMEOUT + 2  # once, not once per retry


def test_a_whole_exchange_that_dropped_twice_says_not_to_send_it_again(tmp_path: Path) -> None:
    case = FORMATS["Chat"]
    with faulty_upstream(case, "drop", False) as upstream:
        arguments = ("--upstream", f"{upstream.base_url}/v1", "--config", _config(tmp_path))
        with running_proxy(*arguments) as proxy, httpx.Client(timeout=10) as http:
            response = http.post(f"{proxy.base_url}/chat/completions", json=case.request(False))
    assert response.status_code == 502
    assert response.headers["x-should-retry"] == "false"
    assert response.json()["error"]["code"] == "upstream_dropped"
    assert len(upstream.requests) == 2
