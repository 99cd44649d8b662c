"""``toolwire serve --workers 2``: the real command, two worker processes on one port.

Which worker serves a connection is read from the outside, honestly: the worker process that
holds the other end of the client's socket (psutil), never something the proxy says about
itself. Each connection is kept alive, so every request on it goes to the same worker.
"""

from __future__ import annotations

import signal
import socket
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import psutil
import pytest
from _toolwire_testdata import load_stream
from e2e.server import tool_calls_reply
from heal.client import GOOD_WRITE
from heal.upstream import HealUpstream, Reply, running_upstream

from .proxy import (
    Proxy,
    answer,
    one_connection_per_worker,
    post_chat,
    running_proxy,
    workers_of,
)

pytestmark = pytest.mark.slow  # each test runs a proxy of three processes

CUT = "llama-cpp-python/write_max_tokens_24_cut_mid_string.real.sse"


@pytest.fixture
def upstream() -> Iterator[HealUpstream]:
    with running_upstream() as scripted:
        yield scripted


@contextmanager
def _twoworkers_of(upstream: HealUpstream) -> Iterator[Proxy]:
    arguments = ("--upstream", upstream.base_url, "--provider", "llama-cpp", "--workers", "2")
    with running_proxy(*arguments) as proxy:
        assert "; 2 workers" in proxy.log
        _wait_for(lambda: len(workers_of(proxy)) == 2, "two workers")
        yield proxy


def _wait_for(condition: object, what: str, timeout: float = 15.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():  # type: ignore[operator]
        if time.monotonic() > deadline:
            raise AssertionError(f"no {what} after {timeout} s")
        time.sleep(0.05)


def _gone(pids: list[int]) -> bool:
    return not any(
        psutil.pid_exists(pid) and psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
        for pid in pids
    )


def test_every_worker_answers_health_and_heals_a_cut_call(upstream: HealUpstream) -> None:
    with _twoworkers_of(upstream) as proxy, one_connection_per_worker(proxy) as connections:
        for connection in connections.values():
            upstream.script(
                Reply(load_stream(CUT)), Reply(tool_calls_reply(("call_ok", "write", GOOD_WRITE)))
            )
            post_chat(connection)
            body = answer(connection)
            # The cut call never reached the client; the retry's good call did, whole.
            assert b"call_ok" in body
            assert b"[DONE]" in body
    assert upstream.refused == []
    assert len(upstream.requests) == 2 * len(connections)


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT], ids=["SIGTERM", "SIGINT"])
def test_a_stop_signal_lets_every_worker_finish_its_stream_and_leaves_no_process(
    upstream: HealUpstream, sig: signal.Signals
) -> None:
    with _twoworkers_of(upstream) as proxy, one_connection_per_worker(proxy) as connections:
        workers = list(connections)
        for connection in connections.values():
            upstream.script(Reply(tool_calls_reply(("call_ok", "write", GOOD_WRITE)), pause=0.15))
            post_chat(connection)
        _wait_for(lambda: len(upstream.requests) == len(connections), "stream in flight")
        proxy.process.send_signal(sig)
        bodies = [answer(connection) for connection in connections.values()]
        # The supervisor ends by the signal it received, once every worker is done.
        assert proxy.process.wait(30) == -sig
    for body in bodies:
        assert b"call_ok" in body
        assert b"[DONE]" in body
    assert _gone(workers)


def test_a_worker_that_dies_is_started_again_and_the_other_streams_are_untouched(
    upstream: HealUpstream,
) -> None:
    with _twoworkers_of(upstream) as proxy:
        with one_connection_per_worker(proxy) as connections:
            (killed, _), (kept, streaming) = connections.items()
            upstream.script(Reply(tool_calls_reply(("call_ok", "write", GOOD_WRITE)), pause=0.1))
            post_chat(streaming)
            _wait_for(lambda: len(upstream.requests) == 1, "stream in flight")
            psutil.Process(killed).kill()
            assert b"call_ok" in answer(streaming)
        _wait_for(lambda: "started it again" in proxy.log, "restart")
        assert f"worker 0 (pid {killed}) was ended by SIGKILL" in proxy.log or (
            f"worker 1 (pid {killed}) was ended by SIGKILL" in proxy.log
        )
        _wait_for(lambda: len(workers_of(proxy)) == 2, "replacement")
        replacement = {worker.pid for worker in workers_of(proxy)} - {kept}
        assert killed not in replacement
        with one_connection_per_worker(proxy) as connections:
            assert set(connections) == {kept, *replacement}
        workers = [worker.pid for worker in workers_of(proxy)]
        assert proxy.stop() == -signal.SIGTERM
    assert _gone(workers)


def test_a_killed_supervisor_leaves_no_worker_behind(upstream: HealUpstream) -> None:
    with _twoworkers_of(upstream) as proxy:
        workers = [worker.pid for worker in workers_of(proxy)]
        proxy.process.kill()
        proxy.process.wait(10)
        # Each worker asked the kernel for SIGTERM when its parent dies (PR_SET_PDEATHSIG).
        _wait_for(lambda: _gone(workers), "end of the orphaned workers")


@pytest.mark.parametrize("problem", ["port taken", "bad setting"])
def test_a_server_that_cannot_start_leaves_no_process(tmp_path: Path, problem: str) -> None:
    # A marker in the command line, which forked workers share, finds any process left behind.
    marker = f"http://127.0.0.1:9/{uuid.uuid4()}/v1"
    config = tmp_path / "serve.toml"
    config.write_text("workers = 0\n" if problem == "bad setting" else "workers = 2\n")
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        command = [sys.executable, "-m", "toolwire.cli", "serve", "--upstream", marker]
        command += ["--config", str(config), "--port", str(taken.getsockname()[1])]
        done = subprocess.run(
            command,
            capture_output=True,
            text=True,
            timeout=30,
        )
    if problem == "bad setting":
        assert done.returncode == 2
        assert "workers: must be a whole number of at least 1" in done.stderr
    else:
        assert done.returncode == 1
        assert "cannot listen on" in done.stderr
    assert done.stderr.count("\n") == 1
    left = [
        process.pid
        for process in psutil.process_iter(["cmdline"])
        if marker in (process.info["cmdline"] or [])
    ]
    assert left == []
