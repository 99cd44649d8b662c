"""Real framework agents on the real llama-cpp-python server, direct and through ``toolwire serve``.

pydantic-ai's ``Agent`` (``run``, ``run_stream``) and the openai SDK's standard loop (streamed
and not), changed only in their base URL (``toolwire.cli.demo.framework_agents``), SmolLM2-135M
at temperature 0, on a task that needs two tools one after the other, then the answer (a call
of the answer tool: on this server a text answer is always empty; the module docstring of
``framework_agents`` says why, and what the tools' results do).

Direct, every run dies on its second request (HTTP 500 on ``content: null``) or its first
streamed one (an empty body). Through the proxy, the run finishes: ``get_weather`` then
``get_time``, each run once with valid arguments, exactly those the server generated, then the
answer, and the server answered 200 to every request. The assertions are rules, not a
transcript: the picks they rest on were measured with a margin of 1 nat or more
(``docs/local-servers.md``), and nothing here reads the model's words, which a CPU's rounding
may change. That includes the city: here the model gives both tools ``"Paris"``, but on CI's
CPU it once gave a tool ``""``, arguments that fit the schema; what toolwire answers for is
that the tool runs with what the model generated, unchanged.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import Any

import pytest

from toolwire.cli.demo.framework_agents import (
    AGENT_TASKS,
    ANSWER_TOOL,
    AgentRun,
    Recorder,
    agent_proxy,
    fits_schema,
    run_openai_loop,
    run_pydantic_ai,
)
from toolwire.cli.demo.model_file import MODEL_NAME
from toolwire.cli.demo.server import LocalServer

pytestmark = [pytest.mark.anyio, pytest.mark.slow]

TASK = AGENT_TASKS[0]
#: Requests each run may send: the task needs three (two tool turns, then the answer).
TURNS = 5


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"  # pydantic-ai's Agent runs on asyncio only


@pytest.fixture
async def proxied(local_server: LocalServer) -> AsyncIterator[tuple[str, Recorder]]:
    recorder = Recorder()
    async with agent_proxy(local_server.base_url, recorder) as url:
        yield url, recorder


AGENTS = ["pydantic-ai run", "pydantic-ai run_stream", "openai loop", "openai loop streamed"]


async def _run(agent: str, base_url: str) -> AgentRun:
    if agent.startswith("pydantic-ai"):
        mode = "run_stream" if agent.endswith("run_stream") else "run"
        return await run_pydantic_ai(base_url, MODEL_NAME, TASK, mode, request_limit=TURNS)
    return await run_openai_loop(
        base_url, MODEL_NAME, TASK, stream=agent.endswith("streamed"), max_turns=TURNS
    )


def _generated_calls(recorder: Recorder) -> list[tuple[str, Any]]:
    """The tool calls the model server answered with, in order, but the answer tool's."""
    calls = []
    for answer in recorder.answers:
        for call in answer["choices"][0]["message"].get("tool_calls") or []:
            name = call["function"]["name"]
            if name != ANSWER_TOOL:
                calls.append((name, json.loads(call["function"]["arguments"])))
    return calls


@pytest.mark.parametrize("agent", AGENTS)
async def test_direct_the_run_dies_on_the_servers_refusal(
    anyio_backend: str, local_server: LocalServer, agent: str
) -> None:
    run = await _run(agent, local_server.base_url)
    assert not run.finished
    assert len(run.ran) <= 1  # at most the first turn's call ran


@pytest.mark.parametrize("agent", AGENTS)
async def test_through_the_proxy_the_run_finishes(
    anyio_backend: str, proxied: tuple[str, Recorder], agent: str
) -> None:
    url, recorder = proxied
    run = await _run(agent, url)
    assert run.finished, run.error
    # Two tool turns, each tool run once, with valid arguments: those the server generated.
    assert sorted(name for name, _ in run.ran) == ["get_time", "get_weather"], run.ran
    for name, arguments in run.ran:
        assert fits_schema(name, arguments)
    assert run.ran == _generated_calls(recorder), recorder.answers
    assert run.refused == []
    assert fits_schema(ANSWER_TOOL, run.output), run.output
    # The server accepted every history: one request per turn, each answered 200.
    assert [status for _, status in recorder.seen] == [200] * 3, run.error
    for body, _ in recorder.seen:  # in the form llama-cpp-python takes and shows the model
        for message in body["messages"]:
            assert message["role"] in ("system", "user", "assistant")
            assert message.get("content") is not None
            assert message.get("function_call", {}) is not None
        assert body.get("stream") is not True or body.get("tool_choice") != "auto"
    last = recorder.seen[-1][0]["messages"]
    results = [m["content"] for m in last if "tool_call_id" in m]
    assert [result.split("`")[1] for result in results] == [name for name, _ in run.ran]
    assert all(result.startswith("Result of tool call `") for result in results)
