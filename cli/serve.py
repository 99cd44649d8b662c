"""``toolwire serve``: run the healing proxy (:mod:`toolwire.serve`) with uvicorn.

The socket is bound here, before the server starts, so ``--port 0`` works and the line that
says where the proxy listens names the real port. uvicorn handles SIGINT and SIGTERM: it stops
accepting, lets in-flight responses finish (``graceful_shutdown_seconds``), closes the upstream
connections, then ends the process by that same signal (a shell sees 130 or 143), as a
supervisor expects. With ``--workers N`` the same happens in N processes forked to serve the one
port, kept by :mod:`toolwire.cli.workers`.
"""

from __future__ import annotations

import argparse
import ctypes
import gc
import os
import signal
import socket
import sys
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from ..core.errors import ConfigurationError

if TYPE_CHECKING:
    from ..serve.settings import ServeSettings

__all__ = ["add_serve_parser"]

EXAMPLES = """\
examples:
  toolwire serve --upstream http://127.0.0.1:8080/v1 --provider llama-server
  toolwire serve --upstream http://127.0.0.1:8000/v1 --provider llama-cpp  # llama-cpp-python
  toolwire serve --upstream https://api.openai.com/v1 --port 8000 --max-retries 2
  toolwire serve --config serve.toml --no-heal        # a bare pass-through proxy
  toolwire serve --upstream http://vllm:8000/v1 --workers auto   # one process per core
  then point any client at it: OPENAI_BASE_URL=http://127.0.0.1:8000/v1

exit codes:
  130/143  stopped by Ctrl-C / SIGTERM, after in-flight responses finished
  1    the server could not start (the port is taken, uvicorn is not installed, no worker
       could start)
  2    usage error (a bad option or --config value)
"""


#: Whether the kernel spreads connections over sockets sharing a port (Linux's SO_REUSEPORT;
#: the BSDs' and macOS's give them all to one).
_KERNEL_BALANCES = sys.platform.startswith("linux") and hasattr(socket, "SO_REUSEPORT")
#: glibc's ``mallopt`` parameter number (``malloc.h``).
_M_MMAP_THRESHOLD = -3
#: The most descriptors asked for when the hard limit is unlimited (macOS refuses more than
#: its ``kern.maxfilesperproc``, 10,240 by default... or whatever it is: asked, then lowered).
_SANE_DESCRIPTORS = 65536
#: Descriptors a process needs beyond its connections: the listening socket, the interpreter's
#: files, telemetry's and the event loop's own, worker threads' pipes.
_SPARE_DESCRIPTORS = 64


def add_serve_parser(commands: Any) -> None:
    """Register ``toolwire serve``."""
    parser = commands.add_parser(
        "serve",
        help="run the healing proxy in front of an OpenAI-compatible server",
        description="A proxy that speaks the upstream's own API (/v1/chat/completions, "
        "/v1/messages, /v1/responses, /v1/models...) and heals every tool call on the way: "
        "a client never receives a call toolwire rejected.",
        epilog=EXAMPLES,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--upstream", help="the upstream's base URL, /v1 included")
    parser.add_argument("--config", type=Path, help="a TOML file of settings (docs/serve.md)")
    parser.add_argument("--host", help="the address to listen on (default 127.0.0.1)")
    parser.add_argument("--port", type=int, help="the port (default 8000; 0: any free one)")
    parser.add_argument(
        "--provider",
        help="what kind of server the upstream is, for every endpoint (llama-server, vllm, "
        "sglang, ollama, lmstudio, llama-cpp...; default openai-chat): on a local server, "
        "calls left in the text are read on all of them",
    )
    parser.add_argument("--max-retries", type=int, help="retries per healed request (default 2)")
    parser.add_argument(
        "--max-tokens-ceiling", type=int, help="how far a retry after a cut may raise max_tokens"
    )
    parser.add_argument(
        "--max-tokens-factor",
        type=float,
        help="with --max-tokens-ceiling: a retry after a cut asks for at most this many times "
        "the client's max_tokens",
    )
    parser.add_argument(
        "--no-constrain",
        action="store_true",
        help="re-ask a rejected call freely, never constrained to its tool's schema",
    )
    parser.add_argument(
        "--unconstrained-tool",
        action="append",
        metavar="NAME",
        help="a tool whose re-ask is never constrained (repeat for more)",
    )
    parser.add_argument(
        "--judge-budget",
        type=float,
        metavar="SECONDS",
        help="how long a call too costly to check on the event loop may wait for a worker "
        "process, then be checked there, before it is rejected as unchecked (default 2)",
    )
    parser.add_argument(
        "--no-heal", action="store_true", help="pass everything through (a bare proxy)"
    )
    parser.add_argument("--otlp-endpoint", help="an OTLP/HTTP collector for spans and metrics")
    parser.add_argument("--log-level", help="uvicorn's log level (default info)")
    parser.add_argument(
        "--workers",
        type=_worker_count,
        metavar="N|auto",
        help="server processes on the one port (default 1; auto: one per available core)",
    )
    parser.set_defaults(handler=run_serve)


def run_serve(args: argparse.Namespace) -> int:
    """Check the settings, bind the socket, serve until stopped (in ``--workers`` processes)."""
    from ..serve.settings import load_settings

    settings = load_settings(
        args.config,
        upstream=args.upstream,
        host=args.host,
        port=args.port,
        provider=args.provider,
        max_retries=args.max_retries,
        max_tokens_ceiling=args.max_tokens_ceiling,
        max_tokens_factor=args.max_tokens_factor,
        constrain=False if args.no_constrain else None,
        unconstrained_tools=tuple(args.unconstrained_tool) if args.unconstrained_tool else None,
        judge_budget=args.judge_budget,
        heal=False if args.no_heal else None,
        otlp_endpoint=args.otlp_endpoint,
        log_level=args.log_level,
        workers=args.workers,
    )
    try:
        import uvicorn  # noqa: F401 (the [serve] extra; each worker imports it again, cached)
    except ImportError:
        sys.stderr.write("toolwire: serve needs uvicorn: pip install 'toolwire[serve]'\n")
        return 1
    from ..serve.telemetry import check_otlp_sdk, otlp_endpoint
    from .workers import available_cores, supervise

    endpoint = otlp_endpoint(settings.otlp_endpoint)
    if endpoint:
        check_otlp_sdk(endpoint)
    workers = available_cores() if settings.workers == "auto" else settings.workers
    settings = _fitted_to_descriptors(settings)
    if workers > 1 and not hasattr(os, "fork"):
        raise ConfigurationError("--workers above 1 needs os.fork (Linux, macOS, the BSDs)")
    # Linux spreads the connections of one port over the sockets bound to it with SO_REUSEPORT
    # evenly (cli/workers.py says why each worker has its own); elsewhere they share one.
    own_sockets = workers > 1 and _KERNEL_BALANCES
    try:
        bound = _bound_socket(settings.host, settings.port, reuse_port=own_sockets)
        if not own_sockets:
            bound.listen()
    except OSError as error:
        sys.stderr.write(
            f"toolwire: cannot listen on {settings.host}:{settings.port}: "
            f"{error.strerror or error}\n"
        )
        return 1
    host, port = bound.getsockname()[:2]
    mode = "healing" if settings.heal else "passing through (no healing)"
    sys.stderr.write(
        f"toolwire serve: {mode} {_without_password(settings.upstream)} at http://{host}:{port}/v1"
        + (f"; {workers} workers" if workers > 1 else "")
        + (f"; telemetry to {endpoint}" if endpoint else "")
        + "\n"
    )
    sys.stderr.flush()
    _return_large_buffers()
    if workers == 1:
        try:
            _serve(settings, endpoint, bound, 0, None)
        finally:
            bound.close()
        return 0

    def worker_socket() -> socket.socket:
        if not own_sockets:
            return bound
        bound.close()  # the parent's, which holds the port for the workers started again
        own = _bound_socket(host, port, reuse_port=True)
        own.listen()
        return own

    stopped = supervise(
        workers,
        bound,
        lambda index, ready: _serve(settings, endpoint, worker_socket(), index, ready),
        # The drain, then the app's shutdown (telemetry flushed), then a margin.
        stop_timeout=settings.graceful_shutdown_seconds + 30,
    )
    if not isinstance(stopped, signal.Signals):
        return stopped
    # As one process does (uvicorn re-raises it): the shell sees 130 / 143. As PID 1 of a
    # container the kernel ignores it, and the exit code says the same.
    signal.signal(stopped, signal.SIG_DFL)
    signal.raise_signal(stopped)
    return 128 + stopped


def _serve(
    settings: ServeSettings,
    endpoint: str | None,
    listening: socket.socket,
    worker: int,
    ready: Callable[[], None] | None,
) -> None:
    """Serve on ``listening`` until stopped: the one process, or one worker after the fork.

    Everything that must not cross a fork is made here: the app (its upstream connections) and
    the telemetry providers (their export threads), named after this worker.
    """
    import uvicorn

    from ..serve.app import create_app
    from ..serve.connections import ClientConnections, guarded_h11_protocol
    from ..serve.telemetry import otlp_providers

    providers = None
    if endpoint:
        providers = otlp_providers(
            endpoint,
            attributes={
                "service.instance.id": str(uuid.uuid4()),
                "toolwire.worker": worker,
                "process.pid": os.getpid(),
            },
        )
    connections = ClientConnections(settings.max_client_connections)
    # The providers are flushed at the app's shutdown, before uvicorn ends the process by the
    # signal that stopped it (nothing after ``run`` would run then).
    app = create_app(
        settings,
        tracer_provider=providers[0] if providers else None,
        meter_provider=providers[1] if providers else None,
        on_shutdown=providers[2] if providers else None,
        client_connections=connections,
    )

    async def started() -> None:
        # uvicorn calls it on its first tick once serving, then every ``timeout_notify``.
        if ready is not None:
            ready()

    config = uvicorn.Config(
        app,
        # uvicorn's h11 protocol with the deadlines it lacks (serve/connections.py): the head,
        # each write, the connections counted against the cap. httptools, uvicorn's other
        # protocol, is not used even where it is installed.
        http=guarded_h11_protocol(
            connections,
            head_timeout=settings.head_timeout,
            write_timeout=settings.write_timeout,
            keep_alive_timeout=settings.keep_alive_timeout,
        ),
        # A head that arrives in pieces is refused past this (h11's own limit, a 400); one that
        # arrives at once, by the app (431). Room for the request line beside the headers.
        h11_max_incomplete_event_size=settings.max_header_bytes + 16 * 1024,
        # No WebSocket: the app serves none, and an upgraded connection would leave the count.
        ws="none",
        log_level=settings.log_level,
        timeout_graceful_shutdown=int(settings.graceful_shutdown_seconds),
        lifespan="on",
        access_log=False,
        server_header=False,
        callback_notify=started if ready is not None else None,
    )
    # Everything alive now lives as long as the process: moved out of the collector's reach, a
    # full collection triggered by a large request's objects walks only theirs. Without it,
    # one 1 MB body of 10,000 tools caused 160-170 ms collections that held the GIL and
    # stalled every client (issue 19, part 3). The process is ours: an app embedded elsewhere
    # leaves this to its host.
    gc.collect()
    gc.freeze()
    uvicorn.Server(config).run(sockets=[listening])


def _fitted_to_descriptors(settings: ServeSettings) -> ServeSettings:
    """``settings``, with the descriptors they need: the soft ``RLIMIT_NOFILE`` raised.

    Each client connection and each upstream connection is a descriptor; at 1,024 (systemd's
    default soft limit for a service, common in containers) 1,100 idle connections left the
    proxy unable to accept ``/healthz`` or open an upstream connection (issue 29, H3). The
    soft limit is raised to the hard one (or :data:`_SANE_DESCRIPTORS` when that is
    unlimited); when even that cannot hold ``max_client_connections`` beside
    ``max_connections``, the client cap is lowered to fit, and a line says so.
    """
    try:
        import resource
    except ImportError:  # pragma: no cover (Windows: no such limit)
        return settings
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    wanted = _SANE_DESCRIPTORS if hard == resource.RLIM_INFINITY else hard
    if soft != resource.RLIM_INFINITY and soft < wanted:
        for target in (wanted, _SANE_DESCRIPTORS):
            try:
                resource.setrlimit(resource.RLIMIT_NOFILE, (min(target, wanted), hard))
            except (ValueError, OSError):
                continue
            break
        soft = resource.getrlimit(resource.RLIMIT_NOFILE)[0]
    if soft == resource.RLIM_INFINITY:
        return settings
    room = soft - settings.max_connections - _SPARE_DESCRIPTORS
    if room >= settings.max_client_connections:
        return settings
    cap = max(1, room)
    sys.stderr.write(
        f"toolwire serve: {soft} file descriptors (the hard limit) hold {cap} client "
        f"connections beside max_connections ({settings.max_connections}); "
        f"max_client_connections lowered from {settings.max_client_connections}\n"
    )
    return settings.model_copy(update={"max_client_connections": cap})


def _worker_count(value: str) -> int | Literal["auto"]:
    """``--workers``, checked as the ``workers`` setting is (an argparse error names the flag)."""
    from ..serve.settings import worker_count

    try:
        return worker_count(value)
    except ValueError as error:
        raise argparse.ArgumentTypeError(str(error)) from None


def _return_large_buffers() -> None:
    """Make glibc give every large buffer back to the system when it is freed.

    By default glibc raises its mmap threshold (up to 32 MiB) each time a large block is freed,
    so the next request's bodies come from the heap, which is not given back: one 30 MiB
    request left the proxy 100 MB larger. A fixed threshold (128 KiB) keeps RSS to what is
    alive (issue 19, part 6). Elsewhere than glibc: nothing to do.
    """
    try:
        libc = ctypes.CDLL("libc.so.6")
    except OSError:
        return
    libc.mallopt(_M_MMAP_THRESHOLD, 128 * 1024)


def _bound_socket(host: str, port: int, *, reuse_port: bool = False) -> socket.socket:
    """A bound TCP socket whose accepted connections, once it listens, send without delay.

    Every response is written in at least two sends (uvicorn writes the head, then the body).
    Without ``TCP_NODELAY`` on the accepted socket, Nagle's algorithm holds the second until
    the client acknowledges the first, and a client on a kept-alive connection delays that
    acknowledgement by ~40 ms: every request waited 44 ms more than direct (issue 20).
    asyncio sets ``TCP_NODELAY`` on an accepted socket only when its ``proto`` is
    ``IPPROTO_TCP``, and accepted sockets copy the listener's, which ``socket.create_server``
    leaves at 0: so the socket is made with the protocol named (any asyncio loop, any OS), and
    carries ``TCP_NODELAY`` itself, which Linux and the BSDs copy to what it accepts. Every
    worker's socket is made here, so every worker's connections have it.
    """
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    try:
        if os.name != "nt":  # as socket.create_server: restart without waiting for TIME_WAIT
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        if reuse_port:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        sock.bind((host, port))
    except OSError:
        sock.close()
        raise
    return sock


def _without_password(url: str) -> str:
    """``url`` with the password of its user information masked (it goes to a log)."""
    scheme, _, rest = url.partition("://")
    authority, slash, path = rest.partition("/")
    user, at, host = authority.rpartition("@")
    if not at or ":" not in user:
        return url
    return f"{scheme}://{user.split(':', 1)[0]}:***@{host}{slash}{path}"
