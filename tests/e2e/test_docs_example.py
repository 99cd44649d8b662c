"""``docs/agent_loop.py`` keeps working: imported and run against the scripted server."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from collections.abc import Iterator
from types import ModuleType
from typing import Any

import openai
import pytest

from toolwire.loop import check_history

from .loopback import ROOT
from .server import Reply, ScriptedChatServer, running_server, text_reply, tool_calls_reply
from .test_agent_loop import SDK_ON_TRIO_LEAK

EXAMPLE = ROOT / "docs" / "agent_loop.py"

pytestmark = [pytest.mark.anyio, SDK_ON_TRIO_LEAK]


def load_example() -> ModuleType:
    spec = importlib.util.spec_from_file_location("toolwire_docs_agent_loop", EXAMPLE)
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def example() -> ModuleType:
    return load_example()


@pytest.fixture
def server() -> Iterator[ScriptedChatServer]:
    with running_server() as scripted:
        yield scripted


async def run(example: ModuleType, server: ScriptedChatServer, **options: Any) -> Any:
    ran: list[tuple[str, dict[str, Any]]] = []

    async def run_tool(call: Any) -> Any:
        ran.append((call.name, call.arguments))
        return await example.run_example_tool(call)

    async with openai.AsyncOpenAI(base_url=server.base_url, api_key="x", max_retries=0) as client:
        result = await example.run_agent(
            client,
            "scripted-model",
            [{"role": "user", "content": "What is 2 + 3?"}],
            example.TOOLS,
            run_tool,
            **options,
        )
    result.ran = ran
    return result


async def test_a_cut_call_is_bounced_and_the_fixed_one_runs(
    anyio_backend: str, example: ModuleType, server: ScriptedChatServer
) -> None:
    server.script(
        Reply(tool_calls_reply(("c1", "add", '{"a": 2, "b": '), finish_reason="length")),
        Reply(tool_calls_reply(("c2", "add", '{"a": 2, "b": 3}'))),
        Reply(text_reply("2 + 3 = 5")),
    )
    result = await run(example, server)
    assert result.stop.reason == "done"
    assert result.final_text == "2 + 3 = 5"
    assert result.ran == [("add", {"a": 2, "b": 3})]
    assert check_history(result.messages) == []
    assert server.refused == []
    assert [m["content"] for m in result.messages if m["role"] == "tool"][1] == "5"


async def test_the_same_tool_rejected_three_times_is_a_repair_loop(
    anyio_backend: str, example: ModuleType, server: ScriptedChatServer
) -> None:
    bad = tool_calls_reply(("c", "add", '{"a": "two"}'))
    server.script(*(Reply(bad.replace(b'"c"', f'"c{n}"'.encode())) for n in range(3)))
    result = await run(example, server)
    assert result.stop.reason == "repair_loop"
    assert result.ran == []
    assert len(server.requests) == 3
    assert check_history(result.messages) == []


async def test_max_steps(
    anyio_backend: str, example: ModuleType, server: ScriptedChatServer
) -> None:
    server.script(
        *(Reply(tool_calls_reply((f"c{n}", "word_count", '{"text": "a b"}'))) for n in range(2))
    )
    result = await run(example, server, max_steps=2)
    assert result.stop.reason == "max_steps"
    assert result.ran == [("word_count", {"text": "a b"})] * 2
    assert check_history(result.messages) == []


async def test_a_raising_tool_is_reported_to_the_model(
    anyio_backend: str, example: ModuleType, server: ScriptedChatServer
) -> None:
    server.script(
        Reply(tool_calls_reply(("c1", "add", '{"a": 1e308, "b": 1e308}'))),
        Reply(text_reply("Too big.")),
    )
    result = await run(example, server)
    assert result.stop.reason == "done"
    (error,) = [m["content"] for m in result.messages if m["role"] == "tool"]
    assert "ValueError" in error
    assert "finite" in error


def test_the_command_line_runs(server: ScriptedChatServer) -> None:
    server.script(
        Reply(tool_calls_reply(("c1", "word_count", '{"text": "to be or not to be"}'))),
        Reply(text_reply("Six words.")),
    )
    completed = subprocess.run(
        [sys.executable, str(EXAMPLE), "--base-url", server.base_url, "--model", "scripted"],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert completed.returncode == 0, completed.stderr
    assert "step 1: word_count ok" in completed.stdout
    assert "stopped: done" in completed.stdout
    assert completed.stdout.rstrip().endswith("Six words.")
