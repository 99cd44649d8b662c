"""The client side of the healing tests: the real ``openai`` SDK over a :class:`HealingTransport`.

:func:`read_stream` accumulates a streamed turn the way an agent does (calls by index), and
:class:`Tools` runs each call once, the way an agent would, after checking what a tool would
check: the arguments parse and match the tool's schema. A call that reached the client broken
fails the test there.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any

import httpx
import jsonschema
import openai
from e2e.loop_steps import WRITE_AND_READ_TOOLS

import toolwire

#: Async generators of the HTTP stack that trio's garbage collector reports, and only those:
#: the SDK breaks out of its own SSE iterator at ``[DONE]`` without closing it (see
#: ``tests/e2e/test_agent_loop.py``; with a plain ``httpx`` client the leaked generators are
#: ``httpx``'s, not ``httpx2``'s), and when a stream is closed early, closing httpx's outer
#: ``aiter_bytes`` never closes the generators nested in it (``aiter_raw``, the transport's and
#: httpcore's ``__aiter__``). A generator of toolwire's own that leaked would still fail a test.
SDK_ON_TRIO_LEAK = (
    "ignore:Async generator '(openai|httpx|httpx2|httpcore|httpcore2)[.]:ResourceWarning"
)

TOOLS = WRITE_AND_READ_TOOLS
GOOD_WRITE = '{"path": "notes.txt", "content": "hello"}'
USER = [{"role": "user", "content": "Write hello to notes.txt"}]


@dataclass
class Received:
    """One turn as the client accumulated it."""

    text: str = ""
    reasoning: str = ""
    calls: list[dict[str, Any]] = field(default_factory=list)
    finish_reason: str | None = None
    usage: Any = None
    chunks: int = 0


async def read_stream(stream: Any) -> Received:
    """Accumulate an SDK ``AsyncStream`` of chunks: text, calls by index, finish, usage."""
    received = Received()
    calls: dict[int, dict[str, Any]] = {}
    async for chunk in stream:
        received.chunks += 1
        if chunk.usage is not None:
            received.usage = chunk.usage
        for choice in chunk.choices:
            delta = choice.delta
            if delta.content:
                received.text += delta.content
            reasoning = getattr(delta, "reasoning_content", None)
            if reasoning:
                received.reasoning += reasoning
            for fragment in delta.tool_calls or ():
                entry = calls.setdefault(fragment.index, {"id": None, "name": "", "arguments": ""})
                if fragment.id:
                    entry["id"] = fragment.id
                if fragment.function is not None:
                    entry["name"] += fragment.function.name or ""
                    entry["arguments"] += fragment.function.arguments or ""
            if choice.finish_reason is not None:
                received.finish_reason = choice.finish_reason
    received.calls = [calls[index] for index in sorted(calls)]
    assert sorted(calls) == list(range(len(calls))), f"client indices {sorted(calls)}"
    return received


class Tools:
    """Runs each call a client received once, as an agent would; records every run."""

    def __init__(self, tools: list[dict[str, Any]] = TOOLS) -> None:
        self.schemas = {tool["function"]["name"]: tool["function"]["parameters"] for tool in tools}
        self.ran: list[tuple[str, str, dict[str, Any]]] = []

    def run(self, calls: list[dict[str, Any]]) -> None:
        for call in calls:
            arguments = json.loads(call["arguments"])  # a broken call fails the test here
            jsonschema.validate(arguments, self.schemas[call["name"]])
            self.ran.append((call["name"], call["id"], arguments))


@asynccontextmanager
async def healed_client(
    base_url: str, provider: str = "llama-cpp", *, sdk_retries: int = 0, **options: Any
) -> AsyncIterator[openai.AsyncOpenAI]:
    """``openai.AsyncOpenAI`` whose HTTP client goes through a :class:`HealingTransport`."""
    transport = toolwire.HealingTransport(
        wrapped=httpx.AsyncHTTPTransport(), provider=provider, **options
    )
    async with httpx.AsyncClient(transport=transport, timeout=10) as http:
        async with openai.AsyncOpenAI(
            base_url=base_url, api_key="sk-test-secret", max_retries=sdk_retries, http_client=http
        ) as client:
            yield client


def request(**extra: Any) -> dict[str, Any]:
    """A streamed request with the write/read tools (``extra`` overrides)."""
    return {
        "model": "scripted-model",
        "messages": list(USER),
        "tools": TOOLS,
        "max_tokens": 24,
        "stream": True,
        **extra,
    }
