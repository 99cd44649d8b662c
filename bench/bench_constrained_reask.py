"""The constrained re-ask on the real servers with SmolLM2-135M: off against on, in one run.

Run: ``.venv/bin/python bench/bench_constrained_reask.py [--natural-tasks 4]
[--natural-budgets 16] [--injected-tasks 6] [--injected-budgets 64]
[--servers llama-cpp-python,llama-server] [--json out.json]``

Both local servers the demo can start serve the same SmolLM2-135M file: llama-cpp-python with
``chatml-function-calling``, llama.cpp's ``llama-server`` with Qwen2.5's tool template. The
demo's suite (``toolwire demo --healing``: the plain agent of ``cli/demo/through_proxy.py``,
its prompts, tools and turns per step) runs through ``toolwire serve`` (the real app, in
process, on a free loopback port), with healing on, once per arm:

- ``off``: the constrained re-ask off (``constrain = false``); ``on``: on (the default);
- ``on+budget`` (the natural part only): on, with the retry's token budget policy
  (``max_tokens_ceiling 1024``, ``max_tokens_factor 4``).

Two parts:

- **natural** (llama-cpp-python): the suite as the demo runs it. Every call llama-cpp-python
  sends is already written under its grammar for the named tool (the demo names the step's
  tool), so what breaks is what a grammar cannot prevent: a call cut at ``max_tokens``.
- **injected** (both servers): the same suite, but the first answer of every task is a call of
  the step's tool whose first required argument is a number where the schema asks for a string
  and whose other arguments are missing (the shape of SmolLM2's broken calls: a wrong type, a
  required key left out), written by the bench instead of the server; everything after it,
  the re-ask first, is the real server's. That is where a constraint helps, and the only way
  to have the same broken call on both servers: on llama-server SmolLM2 writes no call at all
  on this suite (below, :data:`TOOL_CHOICE`). The injected answer is not counted as a request
  or tokens.

With ``--probe-required`` it measures, on llama-server alone, what its ``tool_choice:
"required"`` does to a re-ask (why toolwire asks it otherwise: ``docs/healing.md``): the demo's
first six tasks, each asked again after a rejected call of its first tool (the call replayed
with ``{}``, toolwire's message as its result), with ``required`` and the tools narrowed to that
tool, at 64 and 256 tokens; printed: how each ended and what it spent.

Counted for each arm, from the runs themselves: the proxy's spans (an in-memory exporter) give
the calls toolwire rejected, the retries it sent (a resend after a drop is not one), which
were constrained (and, for the others, why not), and how each exchange with a retry ended: a
valid call in place of the rejected one (its span settled ``healed``), no call (the model
answered in words), or none (retries spent, a cut at the limit); the agent gives the tasks
completed and the broken calls it received (none, with healing on); the proxy's upstream
transport counts the requests that reached the model and the tokens it generated (the usage
the server reported, or, where it reports none in a stream, as llama-cpp-python, the streamed
pieces that carried text or arguments: one per token). It prints one table and writes the JSON
report.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections import Counter
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import anyio
import httpx
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from toolwire.cli.demo.model_file import MODEL_NAME
from toolwire.cli.demo.sandbox import TOOLS
from toolwire.cli.demo.server import LocalServer
from toolwire.cli.demo.server_kinds import SERVER_KINDS
from toolwire.cli.demo.tasks import TASKS
from toolwire.cli.demo.through_proxy import PlainRun, proxy_app, run_plain_task

#: Each arm: its name and the proxy settings it adds.
ARMS: dict[str, dict[str, Any]] = {
    "off": {"constrain": False},
    "on": {},
}
BUDGET_ARM = ("on+budget", {"max_tokens_ceiling": 1024, "max_tokens_factor": 4})
#: What the agent's requests say for ``tool_choice`` on each server: the demo names the step's
#: tool; llama-server b11434 reads ``tool_choice`` as a string only (a named function is
#: "Wrong type supplied" and ``auto`` is used: on the demo's suite at 256 tokens SmolLM2 then
#: completed no task and no call was rejected, 60 turns over both arms), so there the agent
#: asks ``required``, the string that asks for a call.
TOOL_CHOICE: dict[str, Any] = {"llama-cpp-python": None, "llama-server": "required"}
MAX_RETRIES = 2


_SCHEMAS = {tool["function"]["name"]: tool["function"]["parameters"] for tool in TOOLS}
#: Each task's first tool, by its prompt (the first request of a task is its system prompt and
#: its prompt, nothing else).
_FIRST_TOOL = {task.prompt: task.plan[0] for task in TASKS}


def broken_arguments(tool: str) -> str:
    """The injected call's arguments: the first required argument a number, the rest missing."""
    return json.dumps({_SCHEMAS[tool]["required"][0]: 3})


class Injecting(httpx.AsyncBaseTransport):
    """The proxy's upstream transport: the first request of each run (:meth:`expect`) answered
    with a broken call of the task's first tool (:func:`broken_arguments`), every other request
    sent to the server."""

    def __init__(self) -> None:
        self.real = httpx.AsyncHTTPTransport()
        self.injected = 0
        self._expected: str | None = None

    def expect(self, prompt: str) -> None:
        """The next run's first request (the one whose last message is ``prompt``) is
        answered here."""
        self._expected = prompt

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        body = json.loads(await request.aread())
        messages = body.get("messages") or []
        prompt = messages[-1].get("content") if len(messages) == 2 else None
        tool = _FIRST_TOOL.get(prompt) if prompt == self._expected else None
        if tool is None:
            return await self.real.handle_async_request(request)
        self._expected = None
        self.injected += 1
        call = {"id": f"call_injected_{self.injected}", "type": "function"}
        function = {"name": tool, "arguments": broken_arguments(tool)}
        if body.get("stream") is not True:
            message = {"role": "assistant", "content": None,
                       "tool_calls": [{**call, "function": function}]}  # fmt: skip
            completion = {
                "id": "chatcmpl-injected", "object": "chat.completion", "created": 1,
                "model": body.get("model"),
                "choices": [{"index": 0, "message": message, "finish_reason": "tool_calls"}],
            }  # fmt: skip
            return httpx.Response(200, json=completion)
        chunks = [
            {"tool_calls": [{"index": 0, **call, "function": function}]},
            None,
        ]
        lines = []
        for delta in chunks:
            choice = {
                "index": 0,
                "delta": delta or {},
                "finish_reason": None if delta else "tool_calls",
            }
            lines.append(
                "data: "
                + json.dumps(
                    {
                        "id": "chatcmpl-injected",
                        "object": "chat.completion.chunk",
                        "created": 1,
                        "model": body.get("model"),
                        "choices": [choice],
                    }
                )
                + "\n\n"
            )
        lines.append("data: [DONE]\n\n")
        return httpx.Response(
            200, headers={"content-type": "text/event-stream"}, content="".join(lines).encode()
        )

    async def aclose(self) -> None:
        await self.real.aclose()


@dataclass
class ArmResult:
    """One arm on one server: what the agent lived and what the proxy did."""

    part: str
    server: str
    arm: str
    tasks: int = 0
    tasks_completed: int = 0
    turns: int = 0
    broken_calls_received: int = 0
    rejected_calls: int = 0
    retries: int = 0
    constrained_retries: int = 0
    not_constrained: dict[str, int] = field(default_factory=dict)
    #: Exchanges whose retries brought a valid call in place of the rejected one.
    retries_with_a_valid_call: int = 0
    #: Exchanges whose retries brought no call at all (the model answered in words).
    retries_with_no_call: int = 0
    #: Exchanges that ended with no valid call (retries spent, a cut at the limit...).
    exchanges_failed: int = 0
    upstream_requests: int = 0
    generated_tokens: int = 0
    prompt_tokens: int = 0
    request_kb: float = 0.0
    usage_reported: bool = False
    seconds: float = 0.0
    runs: list[dict[str, Any]] = field(default_factory=list)


def _attributes(span: ReadableSpan) -> dict[str, Any]:
    return dict(span.attributes or {})


def _count_spans(result: ArmResult, spans: list[ReadableSpan]) -> None:
    """The healing's figures, from its spans (``docs/healing.md``, "Observability")."""
    reasons: Counter[str] = Counter()
    by_exchange: dict[int, list[ReadableSpan]] = {}
    for span in spans:
        by_exchange.setdefault(span.context.trace_id if span.context else 0, []).append(span)
    for exchange in by_exchange.values():
        calls = [s for s in exchange if s.name.startswith("toolwire.heal.call ")]
        retries = [
            s
            for s in exchange
            if s.name == "toolwire.heal.retry"
            and _attributes(s).get("toolwire.heal.cause") != "upstream_dropped"
        ]
        result.rejected_calls += len(calls)
        result.retries += len(retries)
        for retry in retries:
            said = str(_attributes(retry).get("toolwire.heal.constraint", "none"))
            if said == "constrained":
                result.constrained_retries += 1
            else:
                reasons[said] += 1
        outcomes = {_attributes(s).get("toolwire.heal.outcome") for s in calls}
        if not retries:
            continue
        if "healed" in outcomes:
            result.retries_with_a_valid_call += 1
        elif "no_call" in outcomes:
            result.retries_with_no_call += 1
        else:
            result.exchanges_failed += 1
    result.not_constrained = dict(sorted(reasons.items()))


async def _arm(
    part: str, server_name: str, base_url: str, provider: str, arm: str,
    settings: dict[str, Any], tasks: list[Any], budgets: list[int], tool_choice: Any,
) -> ArmResult:  # fmt: skip
    exporter = InMemorySpanExporter()
    tracer_provider = TracerProvider()
    tracer_provider.add_span_processor(SimpleSpanProcessor(exporter))
    result = ArmResult(part=part, server=server_name, arm=arm)
    started = time.monotonic()
    injecting = Injecting() if part == "injected" else None
    async with proxy_app(
        base_url,
        provider,
        heal=True,
        max_retries=MAX_RETRIES,
        wrapped=injecting,
        tracer_provider=tracer_provider,
        **settings,
    ) as (proxy_url, counting):
        async with httpx.AsyncClient(base_url=proxy_url, timeout=600) as client:
            for task in tasks:
                for budget in budgets:
                    if injecting is not None:
                        injecting.expect(task.prompt)
                    run: PlainRun = await run_plain_task(
                        task, budget, client, MODEL_NAME, tool_choice=tool_choice
                    )
                    result.runs.append(
                        {
                            "name": run.name,
                            "completed": run.completed,
                            "turns": run.turns,
                            "broken_calls": run.broken_calls,
                            "error_turns": run.error_turns,
                            "length_turns": run.length_turns,
                        }
                    )
                    result.tasks += 1
                    result.tasks_completed += run.completed
                    result.turns += run.turns
                    result.broken_calls_received += run.broken_calls
                    print(
                        f"  {part:<8} {server_name:<16} {arm:<9} {run.name:<18} "
                        f"{'done' if run.completed else 'not done':<9} turns={run.turns}",
                        file=sys.stderr,
                        flush=True,
                    )
        counts = counting.counts
    result.seconds = round(time.monotonic() - started, 1)
    injected = injecting.injected if injecting is not None else 0
    # The injected answers reached no model: one request and one streamed piece each.
    result.upstream_requests = counts.requests - injected
    result.generated_tokens = counts.generated_tokens - injected
    result.prompt_tokens = counts.prompt_tokens
    result.request_kb = round(counts.request_bytes / 1000, 1)
    result.usage_reported = counts.usage_reported
    tracer_provider.shutdown()
    _count_spans(result, list(exporter.get_finished_spans()))
    return result


def _table(results: list[ArmResult]) -> str:
    header = (
        "| part | server | constrained re-ask | retries | constrained | exchanges whose retry "
        "brought a valid call | tasks completed | model requests | tokens generated |"
    )
    lines = [header, "|---|---|---|---|---|---|---|---|---|"]
    for r in results:
        valid = r.retries_with_a_valid_call
        healed = valid + r.retries_with_no_call + r.exchanges_failed
        lines.append(
            f"| {r.part} | {r.server} | {r.arm} | {r.retries} | {r.constrained_retries} | "
            f"{valid} of {healed} exchanges | {r.tasks_completed}/{r.tasks} | "
            f"{r.upstream_requests} | "
            f"{r.generated_tokens} |"
        )
    return "\n".join(lines)


#: A rejected call's result, as toolwire words a missing required argument.
_PROBE_RESULT = (
    "Tool call `{tool}` (id call_1) was not run: its arguments do not match the parameters of "
    '`{tool}`:\n- $: missing required property "{key}"\nReceived (2 characters): {{}}\n'
    "Fix these and call `{tool}` again."
)


def probe_required() -> list[dict[str, Any]]:
    """llama-server's ``required`` on six re-asks at 64 and 256 tokens (see the docstring)."""
    from toolwire.cli.demo.tasks import SYSTEM_PROMPT

    kind = SERVER_KINDS["llama-server"]
    found: list[dict[str, Any]] = []
    with LocalServer(kind.check(), model_name=MODEL_NAME, kind=kind) as server:
        for task in TASKS[:6]:
            tool = task.plan[0]
            replayed = {"id": "call_1", "type": "function",
                        "function": {"name": tool, "arguments": "{}"}}  # fmt: skip
            result = _PROBE_RESULT.format(tool=tool, key=_SCHEMAS[tool]["required"][0])
            messages = [
                {"role": "system", "content": SYSTEM_PROMPT},
                {"role": "user", "content": task.prompt},
                {"role": "assistant", "content": None, "tool_calls": [replayed]},
                {"role": "tool", "tool_call_id": "call_1", "content": result},
            ]
            for budget in (64, 256):
                answer = httpx.post(
                    f"{server.base_url}/chat/completions",
                    json={
                        "model": MODEL_NAME, "messages": messages, "max_tokens": budget,
                        "tools": [t for t in TOOLS if t["function"]["name"] == tool],
                        "tool_choice": "required", "temperature": 0, "seed": 7,
                    },
                    timeout=600,
                ).json()  # fmt: skip
                (choice,) = answer["choices"]
                calls = choice["message"].get("tool_calls") or []
                found.append(
                    {
                        "task": task.name,
                        "max_tokens": budget,
                        "finish_reason": choice["finish_reason"],
                        "completion_tokens": answer["usage"]["completion_tokens"],
                        "calls": [c["function"]["name"] for c in calls],
                    }
                )
                print(found[-1], flush=True)
    ran_out = sum(1 for row in found if row["finish_reason"] == "length")
    print(f"{ran_out} of {len(found)} re-asks ran to their max_tokens")
    return found


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--natural-tasks", type=int, default=4)
    parser.add_argument("--natural-budgets", default="16")
    parser.add_argument("--injected-tasks", type=int, default=6)
    parser.add_argument("--injected-budgets", default="64")
    parser.add_argument("--servers", default="llama-cpp-python,llama-server")
    parser.add_argument("--json", type=Path, default=None)
    parser.add_argument("--probe-required", action="store_true", help="llama-server's required")
    args = parser.parse_args()
    started = time.monotonic()
    probe = probe_required() if args.probe_required else None
    parts = {
        "natural": (
            list(TASKS[: args.natural_tasks]),
            [int(b) for b in args.natural_budgets.split(",")],
            {**ARMS, BUDGET_ARM[0]: BUDGET_ARM[1]},
            ("llama-cpp-python",),
        ),
        "injected": (
            list(TASKS[: args.injected_tasks]),
            [int(b) for b in args.injected_budgets.split(",")],
            dict(ARMS),
            ("llama-cpp-python", "llama-server"),
        ),
    }
    results: list[ArmResult] = []
    for name in args.servers.split(","):
        kind = SERVER_KINDS[name]
        with LocalServer(kind.check(), model_name=MODEL_NAME, kind=kind) as server:
            for part, (tasks, budgets, arms, servers) in parts.items():
                if name not in servers or not tasks:
                    continue
                for arm, settings in arms.items():
                    results.append(
                        anyio.run(
                            _arm,
                            part,
                            name,
                            server.base_url,
                            kind.provider,
                            arm,
                            settings,
                            tasks,
                            budgets,
                            TOOL_CHOICE[name],
                        )
                    )
    report = {
        "command": " ".join(sys.argv),
        "model": MODEL_NAME,
        "parts": {
            part: {"tasks": [t.name for t in tasks], "budgets": budgets}
            for part, (tasks, budgets, _, _) in parts.items()
        },
        "max_retries": MAX_RETRIES,
        "seconds": round(time.monotonic() - started, 1),
        "arms": [asdict(r) for r in results],
        "probe_required": probe,
    }
    if args.json is not None:
        args.json.write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
    print(_table(results))
    for r in results:
        print(
            f"{r.part} {r.server} {r.arm}: rejected calls {r.rejected_calls}; not constrained: "
            f"{r.not_constrained}; valid call {r.retries_with_a_valid_call}, no call "
            f"{r.retries_with_no_call}, none {r.exchanges_failed}; broken calls the agent "
            f"received {r.broken_calls_received}; prompt tokens {r.prompt_tokens}"
            f"{'' if r.usage_reported else ' (not reported)'}; {r.request_kb} KB sent; "
            f"{r.seconds} s"
        )
    print(f"total {report['seconds']} s")


if __name__ == "__main__":
    main()
