"""``toolwire serve`` as the tests run it: the real command, real uvicorn, a free loopback port.

:func:`running_proxy` starts ``python -m toolwire.cli serve ... --port 0`` in its own process,
reads the line that says where it listens, and stops it (SIGTERM, then SIGKILL) on the way out.
Everything the process wrote to stderr is kept in :attr:`Proxy.log`, to assert what it never
logs (an Authorization header).
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field

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
def running_proxy(*arguments: str, startup: float = 20.0) -> Iterator[Proxy]:
    """Start ``toolwire serve --port 0 *arguments``; stop it when the block ends."""
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    env.pop("OTEL_EXPORTER_OTLP_ENDPOINT", None)
    process = subprocess.Popen(
        [sys.executable, "-m", "toolwire.cli", "serve", "--port", "0", *arguments],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        env=env,
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
