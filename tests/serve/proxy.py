"""``toolwire serve`` as the tests run it: the real command, real uvicorn, a free loopback port.

:func:`running_proxy` starts ``python -m toolwire.cli serve ... --port 0`` in its own process,
reads the line that says where it listens, and stops it (SIGTERM, then SIGKILL) on the way out.
Everything the process wrote to stderr is kept in :attr:`Proxy.log`, to assert what it never
logs (an Authorization header).

With ``--workers``, :func:`one_connection_per_worker` opens kept-alive connections until each
worker holds one; which worker holds a connection is read from the outside (the process that
holds the other end of the client's socket), never from something the proxy says.
"""

from __future__ import annotations

import http.client
import json
import os
import re
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field

import psutil
from heal.client import request

#: New connections :func:`one_connection_per_worker` may open (the kernel hashes each to a
#: worker: all 64 on one of two workers has odds of 2**-63).
TRIES = 64
_LISTENING = re.compile(r"toolwire serve: .* at (http://[^ ;]+/v1)")


@dataclass
class Proxy:
    """A running ``toolwire serve``: its base URL (``.../v1``), its process, its stderr."""

    base_url: str
    process: subprocess.Popen[bytes]
    lines: list[str] = field(default_factory=list)

    @property
    def log(self) -> str:
        return "".join(self.lines)

    @property
    def root(self) -> str:
        return self.base_url.removesuffix("/v1")

    def stop(self, sig: int = signal.SIGTERM, timeout: float = 15.0) -> int:
        """Signal the server and wait for it; its exit code."""
        if self.process.poll() is None:
            self.process.send_signal(sig)
        try:
            return self.process.wait(timeout)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
            raise


def _pump(process: subprocess.Popen[bytes], lines: list[str], ready: threading.Event) -> None:
    assert process.stderr is not None
    for raw in process.stderr:
        lines.append(raw.decode("utf-8", "replace"))
        ready.set()
    ready.set()


@contextmanager
def running_proxy(
    *arguments: str, startup: float = 20.0, preexec: Callable[[], None] | None = None
) -> Iterator[Proxy]:
    """Start ``toolwire serve --port 0 *arguments``; stop it when the block ends.

    ``preexec`` runs in the child before it becomes the proxy (to set its resource limits)."""
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    env.pop("OTEL_EXPORTER_OTLP_ENDPOINT", None)
    process = subprocess.Popen(
        [sys.executable, "-m", "toolwire.cli", "serve", "--port", "0", *arguments],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        env=env,
        preexec_fn=preexec,
    )
    lines: list[str] = []
    ready = threading.Event()
    pump = threading.Thread(target=_pump, args=(process, lines, ready), daemon=True)
    pump.start()
    deadline = time.monotonic() + startup
    base_url = None
    try:
        while base_url is None:
            if time.monotonic() > deadline:
                raise AssertionError(f"toolwire serve did not start: {''.join(lines)}")
            if process.poll() is not None and not any(_LISTENING.search(x) for x in lines):
                time.sleep(0.1)
                raise AssertionError(f"toolwire serve exited: {''.join(lines)}")
            for line in list(lines):
                found = _LISTENING.search(line)
                if found:
                    base_url = found.group(1)
            time.sleep(0.02)
        proxy = Proxy(base_url=base_url, process=process, lines=lines)
        _wait_until_serving(proxy.root, deadline)
        yield proxy
    finally:
        if process.poll() is None:
            process.send_signal(signal.SIGTERM)
            try:
                process.wait(15)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
        pump.join(5)
        assert process.stderr is not None
        process.stderr.close()


def _wait_until_serving(root: str, deadline: float) -> None:
    import httpx

    while True:
        try:
            if httpx.get(f"{root}/healthz", timeout=2).status_code == 200:
                return
        except httpx.HTTPError:
            pass
        if time.monotonic() > deadline:
            raise AssertionError("toolwire serve never answered /healthz")
        time.sleep(0.05)


# -- --workers ---------------------------------------------------------------------------------


def workers_of(proxy: Proxy) -> list[psutil.Process]:
    """The worker processes of a proxy started with ``--workers``."""
    return psutil.Process(proxy.process.pid).children()


def worker_of(connection: http.client.HTTPConnection, workers: list[psutil.Process]) -> int:
    """The pid of the worker holding the other end of ``connection``."""
    assert connection.sock is not None
    port = connection.sock.getsockname()[1]
    for worker in workers:
        for held in worker.net_connections(kind="tcp"):
            if held.raddr and held.raddr.port == port:
                return worker.pid
    raise AssertionError(f"no worker holds the connection from port {port}")


def health(connection: http.client.HTTPConnection) -> dict[str, object]:
    """``/healthz`` on ``connection``: its JSON answer (it must be a 200)."""
    connection.request("GET", "/healthz")
    response = connection.getresponse()
    assert response.status == 200
    body: dict[str, object] = json.loads(response.read())
    return body


@contextmanager
def one_connection_per_worker(proxy: Proxy) -> Iterator[dict[int, http.client.HTTPConnection]]:
    """A kept-alive connection on each worker, each of which answered ``/healthz`` on it."""
    host, port = proxy.root.removeprefix("http://").split(":")
    workers = workers_of(proxy)
    found: dict[int, http.client.HTTPConnection] = {}
    opened = []
    try:
        for _ in range(TRIES):
            connection = http.client.HTTPConnection(host, int(port), timeout=20)
            opened.append(connection)
            assert health(connection) == {"status": "ok", "healing": True}
            found.setdefault(worker_of(connection, workers), connection)
            if len(found) == len(workers):
                break
        assert len(found) == len(workers), f"every connection went to {set(found)}"
        yield found
    finally:
        for connection in opened:
            connection.close()


def post_chat(connection: http.client.HTTPConnection, *, stream: bool = True) -> None:
    """Send one Chat request with tools (its answer is read by :func:`answer`)."""
    body = json.dumps(request(stream=stream)).encode()
    connection.request("POST", "/v1/chat/completions", body, {"content-type": "application/json"})


def answer(connection: http.client.HTTPConnection) -> bytes:
    """The whole body of the answer to the request sent on ``connection`` (it must be a 200)."""
    response = connection.getresponse()
    body = response.read()
    assert response.status == 200, body
    return body
