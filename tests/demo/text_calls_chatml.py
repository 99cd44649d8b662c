"""Calls SmolLM2 writes as text under llama-cpp-python's plain ``chatml`` (issue 17, part 4).

Plain ``chatml`` has no tool parser: with the tools in the system prompt and two example
turns, SmolLM2-135M answers ``<tool_call>[{"name": ..., "arguments": {...}}]</tool_call>`` in
the text at ``temperature: 0``, and at a small ``max_tokens`` the call is cut. Each
:data:`SCENARIOS` entry is one client request through :class:`toolwire.HealingTransport`
(``llama-cpp`` profile) and the ``openai`` SDK; :class:`Recorder` keeps every request that went
upstream and the raw body the server sent back (``recordings/text_calls_chatml.json``), which
the fast test replays through the same client.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import openai
from heal.client import Received, read_stream

import toolwire

RECORDING = Path(__file__).parent / "recordings" / "text_calls_chatml.json"
MODEL = "smollm2-135m"

TOOLS: list[dict[str, Any]] = [
    {
        "type": "function",
        "function": {
            "name": "get_weather",
            "description": "Get the weather in a city.",
            "parameters": {
                "type": "object",
                "properties": {"city": {"type": "string"}},
                "required": ["city"],
            },
        },
    },
    {
        "type": "function",
        "function": {
            "name": "write_file",
            "description": "Write text to a file.",
            "parameters": {
                "type": "object",
                "properties": {"path": {"type": "string"}, "content": {"type": "string"}},
                "required": ["path", "content"],
            },
        },
    },
]

SYSTEM = (
    "You are a helpful assistant with access to these tools:\n<tools>\n"
    + "\n".join(json.dumps(tool["function"]) for tool in TOOLS)
    + "\n</tools>\nTo call tools, answer with a list of calls inside <tool_call></tool_call> "
    'tags, like:\n<tool_call>[{"name": "get_weather", "arguments": {"city": "Rome"}}]'
    "</tool_call>"
)
EXAMPLES: list[dict[str, Any]] = [
    {"role": "user", "content": "What is the weather in Rome?"},
    {
        "role": "assistant",
        "content": '<tool_call>[{"name": "get_weather", "arguments": {"city": "Rome"}}]'
        "</tool_call>",
    },
    {"role": "user", "content": "Write hi to a.txt"},
    {
        "role": "assistant",
        "content": '<tool_call>[{"name": "write_file", "arguments": {"path": "a.txt", '
        '"content": "hi"}}]</tool_call>',
    },
]


@dataclass(frozen=True)
class Scenario:
    """One client request: the user's message, the limit, streamed or not."""

    name: str
    ask: str
    max_tokens: int
    stream: bool = True


SCENARIOS = [
    # A complete call, valid against its schema: it reaches the client as a structured call.
    Scenario("complete", "What is the weather in Paris?", 64),
    # The same, the client not streaming.
    Scenario("complete-whole", "What is the weather in Paris?", 64, stream=False),
    # ``write_file`` without ``content``: rejected by the schema, asked again.
    Scenario("invalid", "Write hello world to hello.txt", 64),
    # Cut at the limit in the middle of the call: truncated, never runs, asked again.
    Scenario("cut", "Write hello world to hello.txt", 16),
    # No call: the answer is text.
    Scenario("text", "Tell me a joke.", 40),
]


def body(scenario: Scenario) -> dict[str, Any]:
    """The client's request for ``scenario``."""
    return {
        "model": MODEL,
        "messages": [
            {"role": "system", "content": SYSTEM},
            *EXAMPLES,
            {"role": "user", "content": scenario.ask},
        ],
        "tools": TOOLS,
        "max_tokens": scenario.max_tokens,
        "temperature": 0,
        "seed": 7,
        "stream": scenario.stream,
    }


class Recorder(httpx.AsyncBaseTransport):
    """Sends through ``wrapped`` and keeps each request body and the raw response body."""

    def __init__(self, wrapped: httpx.AsyncBaseTransport) -> None:
        self.wrapped = wrapped
        self.exchanges: list[dict[str, Any]] = []

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        sent = json.loads(await request.aread())
        response = await self.wrapped.handle_async_request(request)
        try:
            content = await response.aread()
        finally:
            await response.aclose()
        self.exchanges.append(
            {
                "request": sent,
                "status": response.status_code,
                "content_type": response.headers.get("content-type", ""),
                "body": content.decode("utf-8"),
            }
        )
        return httpx.Response(
            response.status_code,
            headers=[(k, v) for k, v in response.headers.items() if k.lower() != "content-length"],
            content=content,
        )

    async def aclose(self) -> None:
        await self.wrapped.aclose()


async def ask(base_url: str, scenario: Scenario, wrapped: httpx.AsyncBaseTransport) -> Received:
    """What the client receives for ``scenario`` through the healing transport."""
    transport = toolwire.HealingTransport(wrapped=wrapped, provider="llama-cpp")
    async with httpx.AsyncClient(transport=transport, timeout=300) as http:
        async with openai.AsyncOpenAI(
            base_url=base_url, api_key="sk-local", max_retries=0, http_client=http
        ) as client:
            sent = body(scenario)
            if scenario.stream:
                return await read_stream(await client.chat.completions.create(**sent))
            reply = await client.chat.completions.create(**sent)
    (choice,) = reply.choices
    return Received(
        text=choice.message.content or "",
        calls=[
            {"id": call.id, "name": call.function.name, "arguments": call.function.arguments}
            for call in choice.message.tool_calls or ()
        ],
        finish_reason=choice.finish_reason,
    )
