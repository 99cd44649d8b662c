"""Start a local model server on a free loopback port, and always stop it.

:class:`LocalServer` is a context manager for either kind of server (llama-cpp-python's or
llama.cpp's ``llama-server``: :mod:`.server_kinds` holds what differs, as data): it starts the
server in its own process group (so a Ctrl-C in the terminal reaches the demo, which then stops
the server, and never leaves it half-killed), with its output in a temporary log file, waits
until ``GET /v1/models`` answers, and on every way out (an error, Ctrl-C, SIGTERM, SIGHUP: see
:mod:`.stopping`) sends the group SIGTERM, then SIGKILL after a grace period. On Linux the
server is also told to die with the demo (``PR_SET_PDEATHSIG``), so even a demo killed with
SIGKILL leaves no server behind.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import httpx

from .server_kinds import LLAMA_CPP_PYTHON, Launch, ServerKind

__all__ = ["LocalServer", "ServerFailed", "free_port"]

_HOST = "127.0.0.1"
_PR_SET_PDEATHSIG = 1


class ServerFailed(Exception):
    """The server did not start or stopped answering; the message says what and where to look."""


def free_port() -> int:
    """A TCP port on the loopback interface that nothing listens on right now."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind((_HOST, 0))
        port: int = probe.getsockname()[1]
        return port


def _die_with_parent() -> None:  # pragma: no cover - runs in the child, between fork and exec
    """Ask Linux to send the server SIGTERM when the demo dies, however it dies."""
    with contextlib.suppress(OSError, AttributeError):
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(_PR_SET_PDEATHSIG, signal.SIGTERM, 0, 0, 0)


def server_command(
    model_file: Path,
    port: int,
    *,
    verbose: bool,
    model_name: str,
    chat_format: str | None = None,
    kind: ServerKind = LLAMA_CPP_PYTHON,
) -> list[str]:
    """The command line that starts a ``kind`` server (``docs/local-servers.md``).

    ``chat_format``: one of ``kind.chat_formats`` (default: its tool-aware one). Without a tool
    parser (llama-cpp-python's plain ``chatml``, llama-server's ``model``), the model's calls
    arrive as text (the text-call tests).
    """
    chosen = kind.default_chat_format if chat_format is None else chat_format
    if chosen not in kind.chat_formats:
        raise ValueError(
            f"{kind.name} has no chat format {chosen!r}: one of {', '.join(kind.chat_formats)}"
        )
    return kind.command(Launch(model_file, _HOST, port, model_name, verbose, chosen))


class LocalServer:
    """``with LocalServer(model_file) as server:`` — ``server.base_url`` ends with ``/v1``."""

    def __init__(
        self,
        model_file: Path,
        *,
        model_name: str,
        start_timeout: float = 180.0,
        verbose: bool = False,
        log_path: Path | None = None,
        check_stop: Callable[[], None] = lambda: None,
        chat_format: str | None = None,
        kind: ServerKind = LLAMA_CPP_PYTHON,
    ) -> None:
        self.kind = kind
        self.model_file = model_file
        #: Called between the start-up polls; raises to abandon the start (a stop signal).
        self.check_stop = check_stop
        self.model_name = model_name
        self.start_timeout = start_timeout
        self.verbose = verbose
        self.port = free_port()
        self.base_url = f"http://{_HOST}:{self.port}/v1"
        if log_path is None:
            handle, name = tempfile.mkstemp(prefix=f"toolwire-{kind.name}-", suffix=".log")
            os.close(handle)
            log_path = Path(name)
        self.log_path = log_path
        self.command = server_command(
            model_file,
            self.port,
            verbose=verbose,
            model_name=model_name,
            chat_format=chat_format,
            kind=kind,
        )
        self._process: subprocess.Popen[bytes] | None = None

    def __enter__(self) -> LocalServer:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def start(self) -> None:
        """Start the server and wait until ``/v1/models`` answers (``ServerFailed`` if not)."""
        with self.log_path.open("wb") as log:
            self._process = subprocess.Popen(
                self.command,
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                env=self.kind.environment(os.environ),
                start_new_session=True,
                preexec_fn=_die_with_parent if sys.platform == "linux" else None,
            )
        try:
            self._wait_until_ready()
        except BaseException:
            self.stop()
            raise

    def _wait_until_ready(self) -> None:
        deadline = time.monotonic() + self.start_timeout
        with httpx.Client(timeout=2.0) as client:
            while True:
                self.check_stop()
                code = self.returncode()
                if code is not None:
                    raise ServerFailed(
                        f"{self.kind.name} exited with code {code} while starting: "
                        f"{self.last_log_line()} (log: {self.log_path})"
                    )
                with contextlib.suppress(httpx.HTTPError):
                    if client.get(f"{self.base_url}/models").status_code == 200:
                        return
                if time.monotonic() > deadline:
                    raise ServerFailed(
                        f"{self.kind.name} did not answer within "
                        f"{self.start_timeout:g} s (log: {self.log_path})"
                    )
                time.sleep(0.2)

    def returncode(self) -> int | None:
        """The server's exit code, or ``None`` while it runs (or before it started)."""
        return None if self._process is None else self._process.poll()

    def last_log_line(self) -> str:
        """The last non-empty line the server wrote (for one-line errors)."""
        try:
            lines = self.log_path.read_text(encoding="utf-8", errors="replace").splitlines()
        except OSError:
            return "(no log)"
        lines = [line.strip() for line in lines if line.strip()]
        return lines[-1][:300] if lines else "(the log is empty)"

    def stop(self, grace: float = 5.0) -> None:
        """SIGTERM to the server's process group, SIGKILL after ``grace`` seconds; idempotent."""
        process = self._process
        if process is None or process.poll() is not None:
            return
        for sig, wait in ((signal.SIGTERM, grace), (signal.SIGKILL, grace)):
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(process.pid, sig)
            try:
                process.wait(timeout=wait)
                return
            except subprocess.TimeoutExpired:
                continue
