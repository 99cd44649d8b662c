"""The framework matrix: each agent stack, each fault, direct and through toolwire.

Each stack runs in a virtualenv of its own (:data:`VENVS`: the frameworks pin versions the
main virtualenv cannot hold, and two camps pin ``openai`` below and above 3), through
``stacks.py`` in a subprocess that reports, per cell, every argument the tool ran with, the
final answer and the error. The scripted upstream (``upstream.py``) runs in this process;
``toolwire serve --provider llama-server`` runs as the real command (``serve/proxy.py``).

What a cell shows is :func:`outcome` of the run: ``ok`` (a correct run: the tool ran exactly
once, with ``{"city": "Paris"}``, and the run ended with the answer), or what went wrong, the
worst first: ``BAD ARGS`` (the tool ran with arguments the model never meant), ``ran twice``,
an error (the framework raised: its exception's name), ``no tool`` (the run answered without
running the tool: with the call's markup, say), ``no answer`` (the run ended with no text).
The tests (``test_frameworks.py``) and ``bench/framework_matrix.py`` (which writes
``docs/frameworks.md``) share it.
"""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from serve.proxy import running_proxy

from .upstream import (
    ANSWER,
    FAULT_TITLES,
    FAULTS,
    GOOD,
    FrameworkUpstream,
    running_framework_upstream,
)

ROOT = Path(__file__).resolve().parents[2]
STACKS_SCRIPT = Path(__file__).with_name("stacks.py")

#: Each virtualenv -> the constraints file that pins it (``.ci/run`` makes the CI ones).
VENVS = {
    ".venv-frameworks": ".ci/constraints-frameworks.txt",
    ".venv-frameworks-openai2": ".ci/constraints-frameworks-openai2.txt",
}
ROUTES = ("direct", "proxy", "transport")
#: Keep every framework on loopback and quiet: no telemetry, no tracing export, no model cost
#: map fetched (LiteLLM), no hub lookups (smolagents); their warnings are not the result.
OFFLINE_ENV = {
    "PYTHONWARNINGS": "ignore",
    "OPENAI_AGENTS_DISABLE_TRACING": "1",
    "AGNO_TELEMETRY": "false",
    "LITELLM_LOCAL_MODEL_COST_MAP": "True",
    "LITELLM_TELEMETRY": "False",
    "HF_HUB_OFFLINE": "1",
    "LANGSMITH_TRACING": "false",
}


@dataclass(frozen=True)
class Stack:
    """One framework set up one way: its row of the matrix."""

    key: str
    title: str
    venv: str
    #: The one-line setup its docs give, pointed at toolwire (docs/frameworks.md).
    setup: str
    #: ``whole`` and/or ``streamed``: how the run asks the model.
    modes: tuple[str, ...] = ("whole", "streamed")
    #: Whether the framework takes an httpx client (the HealingTransport route).
    transport: bool = True


#: Where the setups point: ``toolwire serve`` on its default port.
V1 = "http://127.0.0.1:8000/v1"
ROOT_URL = "http://127.0.0.1:8000"
STACKS: tuple[Stack, ...] = (
    Stack(
        "openai-agents-responses",
        "OpenAI Agents SDK, Responses",
        ".venv-frameworks",
        "`OpenAIResponsesModel(model=..., openai_client="
        f'AsyncOpenAI(base_url="{V1}", api_key=...))`; `Runner.run` and `Runner.run_streamed`',
    ),
    Stack(
        "openai-agents-chat",
        "OpenAI Agents SDK, Chat Completions",
        ".venv-frameworks",
        "`OpenAIChatCompletionsModel(model=..., openai_client="
        f'AsyncOpenAI(base_url="{V1}", api_key=...))`; `Runner.run` and `Runner.run_streamed`',
    ),
    Stack(
        "langgraph-openai",
        "LangGraph + langchain-openai",
        ".venv-frameworks",
        f'`create_react_agent(ChatOpenAI(model=..., base_url="{V1}", api_key=...), tools)`; '
        "`ainvoke` (whole) and `astream` (streamed)",
    ),
    Stack(
        "pydantic-ai-openai",
        "pydantic-ai, OpenAI",
        ".venv-frameworks",
        f'`OpenAIChatModel(..., provider=OpenAIProvider(base_url="{V1}", api_key=...))`; '
        "`run` and `run_stream`",
    ),
    Stack(
        "pydantic-ai-anthropic",
        "pydantic-ai, Anthropic",
        ".venv-frameworks",
        "`AnthropicModel(..., provider="
        f'AnthropicProvider(base_url="{ROOT_URL}", api_key=...))`; `run` and `run_stream`',
    ),
    Stack(
        "smolagents",
        "smolagents",
        ".venv-frameworks",
        "`ToolCallingAgent(tools, OpenAIServerModel(model_id=..., "
        f'api_base="{V1}", api_key=...), stream_outputs=...)`',
        transport=False,
    ),
    Stack(
        "llama-index",
        "llama-index",
        ".venv-frameworks-openai2",
        f'`FunctionAgent(tools, llm=OpenAILike(model=..., api_base="{V1}", api_key=..., '
        "is_chat_model=True, is_function_calling_model=True), streaming=...)`",
    ),
    Stack(
        "autogen",
        "AutoGen AgentChat",
        ".venv-frameworks",
        "`AssistantAgent(..., model_client=OpenAIChatCompletionClient(model=..., "
        f'base_url="{V1}", api_key=..., model_info=...), tools=..., '
        "reflect_on_tool_use=True, model_client_stream=...)`",
        transport=False,
    ),
    Stack(
        "agno",
        "Agno",
        ".venv-frameworks",
        f'`Agent(model=OpenAILike(id=..., base_url="{V1}", api_key=...), tools=...)`; '
        "`arun` and `arun(stream=True)`",
    ),
    Stack(
        "strands",
        "Strands Agents",
        ".venv-frameworks-openai2",
        f'`Agent(model=OpenAIModel(client_args={{"base_url": "{V1}", "api_key": ...}}, '
        "model_id=...), tools=...)`",
        modes=("streamed",),
    ),
    Stack(
        "google-adk",
        "Google ADK (LiteLLM)",
        ".venv-frameworks-openai2",
        f'`LlmAgent(model=LiteLlm(model="openai/...", api_base="{V1}", api_key=...), '
        "tools=...)`; `RunConfig(streaming_mode=NONE or SSE)`",
        transport=False,
    ),
    Stack(
        "anthropic-tool-runner",
        "anthropic SDK tool runner",
        ".venv-frameworks",
        f'`AsyncAnthropic(base_url="{ROOT_URL}", api_key=...)'
        ".beta.messages.tool_runner(..., stream=..., thread=False)`",
    ),
    Stack(
        "langgraph-anthropic",
        "LangGraph + langchain-anthropic",
        ".venv-frameworks",
        f'`create_react_agent(ChatAnthropic(model=..., base_url="{ROOT_URL}", api_key=...), '
        "tools)`",
        transport=False,
    ),
)
BY_KEY = {stack.key: stack for stack in STACKS}


def venv_python(stack: Stack) -> Path:
    """The Python of ``stack``'s virtualenv (``TOOLWIRE_FRAMEWORKS_VENVS``: their folder)."""
    folder = Path(os.environ.get("TOOLWIRE_FRAMEWORKS_VENVS", ROOT))
    return folder / stack.venv / "bin" / "python"


def run_stack(
    stack: Stack,
    route: str,
    base_url: str,
    cells: Sequence[tuple[str, bool]],
    *,
    timeout: float = 60,
) -> dict[str, Any]:
    """Run ``cells`` (fault, streamed) of ``stack`` on ``route`` against ``base_url``."""
    spec = {
        "stack": stack.key,
        "route": route,
        "base_url": base_url,
        "timeout": timeout,
        "cells": [{"fault": fault, "streamed": streamed} for fault, streamed in cells],
    }
    done = subprocess.run(
        [str(venv_python(stack)), str(STACKS_SCRIPT)],
        input=json.dumps(spec),
        capture_output=True,
        text=True,
        timeout=timeout * len(cells) + 60,
        env={**os.environ, **OFFLINE_ENV},
        cwd=ROOT,
    )
    if done.returncode != 0:
        raise RuntimeError(f"{stack.key} on {route}: exit {done.returncode}\n{done.stderr[-3000:]}")
    result: dict[str, Any] = json.loads(done.stdout)
    return result


def outcome(result: dict[str, Any]) -> str:
    """What one run came to (module docstring), the worst first."""
    if result["skipped"]:
        return "n/a"
    ran = result["ran"]
    if any(arguments != GOOD for arguments in ran):
        return "BAD ARGS"
    if len(ran) > 1:
        return "ran twice"
    if result["error"]:
        return result["error"].split(":", 1)[0]
    answer = (result["answer"] or "").strip()
    if not ran:
        return "no tool" if answer else "no answer"
    return "ok" if ANSWER in answer else "no answer"


@contextmanager
def running_routes() -> Iterator[tuple[dict[str, str], FrameworkUpstream]]:
    """The upstream and ``toolwire serve --provider llama-server`` in front of it: the base
    URL (no ``/v1``) of each route, and the upstream."""
    with (
        running_framework_upstream() as upstream,
        running_proxy(
            "--upstream", f"{upstream.base_url}/v1", "--provider", "llama-server"
        ) as proxy,
    ):
        urls = {"direct": upstream.base_url, "transport": upstream.base_url, "proxy": proxy.root}
        yield urls, upstream


def every_cell(stack: Stack, faults: Sequence[str] = FAULTS) -> list[tuple[str, bool]]:
    """Each ``(fault, streamed)`` cell of ``stack``'s rows."""
    return [(fault, mode == "streamed") for mode in stack.modes for fault in faults]


def measure(
    stacks: Sequence[Stack],
    routes: dict[str, str],
    upstream: FrameworkUpstream,
    faults: Sequence[str] = FAULTS,
) -> dict[str, Any]:
    """Every cell of ``stacks`` on every route: ``{stack: {"versions", "log": {route: what
    the upstream answered}, route: [result]}}``."""
    measured: dict[str, Any] = {}
    for stack in stacks:
        row: dict[str, Any] = {"log": {}}
        for route in ROUTES:
            if route == "transport" and not stack.transport:
                continue
            with upstream._lock:
                upstream.log.clear()
            result = run_stack(stack, route, routes[route], every_cell(stack, faults))
            row["versions"] = result["versions"]
            row[route] = result["results"]
            with upstream._lock:
                row["log"][route] = list(upstream.log)
        measured[stack.key] = row
    return measured


#: The cells through toolwire that are no correct run, and why: ``(stack, fault, mode)``.
EXPLAINED: dict[tuple[str, str, str], str] = {
    ("smolagents", "parser_500", "whole"): (
        "the upstream's only answer is llama-server's HTTP 500 quoting the call; toolwire answers "
        "with that call in a whole `chat.completion` body, which has no `usage` because the "
        "upstream reported none, and smolagents reads `response.usage.prompt_tokens` (its "
        "`AgentGenerationError`: `'NoneType' object has no attribute 'prompt_tokens'`). The "
        "tool never runs. Writing counts toolwire does not know would be a guess; open in "
        "issue 30"
    ),
}


def toolwire_cells(measured: dict[str, Any]) -> Iterator[tuple[Stack, str, dict[str, Any]]]:
    """Every result through toolwire: ``(stack, route, result)``."""
    for key, row in measured.items():
        for route in ("proxy", "transport"):
            for result in row.get(route, ()):
                yield BY_KEY[key], route, result


def render(measured: dict[str, Any], faults: Sequence[str] = FAULTS) -> str:
    """The matrix in Markdown (docs/frameworks.md, between its markers): the table (a row per
    stack and mode, ``direct → proxy`` cells), then why a cell is ``n/a``."""
    head = "| stack (versions) | mode | " + " | ".join(FAULT_TITLES[f] for f in faults) + " |"
    lines = [head, "|" + "---|" * (len(faults) + 2)]
    skipped: dict[str, set[str]] = {}
    for key, row in measured.items():
        stack = BY_KEY[key]
        versions = ", ".join(f"{name} {version}" for name, version in row["versions"].items())
        for mode in stack.modes:
            cells = []
            for fault in faults:
                direct = _find(row["direct"], fault, mode)
                proxied = _find(row["proxy"], fault, mode)
                for result in (direct, proxied):
                    if result["skipped"]:
                        skipped.setdefault(stack.title, set()).add(result["skipped"])
                if direct["skipped"]:
                    cells.append("n/a")
                    continue
                text = f"{outcome(direct)} → {outcome(proxied)}"
                if "transport" in row:
                    healed = outcome(_find(row["transport"], fault, mode))
                    if healed != outcome(proxied):
                        text += f" (transport: {healed})"
                cells.append(text)
            lines.append(f"| {stack.title} ({versions}) | {mode} | " + " | ".join(cells) + " |")
    lines.append("")
    lines.append("Not played (`n/a`):")
    lines.append("")
    for title, reasons in skipped.items():
        lines.append(f"- {title}: " + "; ".join(sorted(reasons)) + ".")
    explained = [
        (BY_KEY[key].title, fault, mode, why)
        for (key, fault, mode), why in EXPLAINED.items()
        if key in measured
    ]
    if explained:
        lines.append("")
        lines.append("Through toolwire and no correct run:")
        lines.append("")
        for title, fault, mode, why in explained:
            lines.append(f"- {title}, {FAULT_TITLES[fault]}, {mode}: {why}.")
    lines.append("")
    lines.append("The one-line setup of each stack, pointed at `toolwire serve` on port 8000:")
    lines.append("")
    for key in measured:
        stack = BY_KEY[key]
        healed = "" if stack.transport else " (takes no httpx client: proxy only)"
        lines.append(f"- {stack.title}{healed}: {stack.setup}")
    return "\n".join(lines) + "\n"


def _find(results: list[dict[str, Any]], fault: str, mode: str) -> dict[str, Any]:
    streamed = mode == "streamed"
    found: dict[str, Any] = next(
        r for r in results if r["fault"] == fault and r["streamed"] == streamed
    )
    return found


#: The markers between which docs/frameworks.md holds :func:`render`'s text.
START = "<!-- framework-matrix:start (bench/framework_matrix.py --write) -->"
END = "<!-- framework-matrix:end -->"
DOC = ROOT / "docs" / "frameworks.md"


def rendered_in_doc() -> str:
    """What docs/frameworks.md holds between the markers."""
    text = DOC.read_text(encoding="utf-8")
    return text.split(START, 1)[1].split(END, 1)[0].strip("\n") + "\n"


def write_doc(measured: dict[str, Any]) -> None:
    """Put :func:`render`'s text between the markers of docs/frameworks.md."""
    text = DOC.read_text(encoding="utf-8")
    head, rest = text.split(START, 1)
    tail = rest.split(END, 1)[1]
    DOC.write_text(f"{head}{START}\n{render(measured)}{END}{tail}", encoding="utf-8")
