"""A constrained re-ask on a real server: the first answer scripted broken, the retry real.

A small model breaks a call when it will, not when a test asks. So the first request of the
exchange is answered here with a call of the demo's ``write`` tool whose ``path`` is a number
and whose ``content`` is missing (what SmolLM2-135M writes on a bad turn: a wrong type, a
required key left out), and every later request, the re-ask, goes to the real server
(llama-cpp-python or llama-server, ``tests/demo`` and ``tests/llama_server``). What the tests
check: the server took the re-ask in its own shape (no error), its model's call is the chosen
tool's, and it passed the judge; and the whole response says it came from a constrained
re-ask.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

import httpx

import toolwire
from toolwire.cli.demo.sandbox import TOOLS

__all__ = ["Exchange", "constrained_exchange"]

#: The broken first call.
BROKEN = '{"path": 3}'


@dataclass
class _FirstBroken(httpx.AsyncBaseTransport):
    """The first request answered with :data:`BROKEN`; every later one sent to the server."""

    sent: list[dict[str, Any]] = field(default_factory=list)
    real: httpx.AsyncBaseTransport = field(default_factory=httpx.AsyncHTTPTransport)

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        body = json.loads(await request.aread())
        self.sent.append(body)
        if len(self.sent) > 1:
            return await self.real.handle_async_request(request)
        call = {"id": "call_broken", "type": "function"}
        message = {
            "role": "assistant",
            "content": None,
            "tool_calls": [{**call, "function": {"name": "write", "arguments": BROKEN}}],
        }
        return httpx.Response(
            200,
            json={
                "id": "chatcmpl-scripted",
                "object": "chat.completion",
                "created": 1,
                "model": body.get("model", "m"),
                "choices": [{"index": 0, "message": message, "finish_reason": "tool_calls"}],
            },
        )

    async def aclose(self) -> None:
        await self.real.aclose()


@dataclass
class Exchange:
    """The client's response and every request that went upstream (the first one scripted)."""

    response: httpx.Response
    sent: list[dict[str, Any]]

    @property
    def call(self) -> dict[str, Any]:
        """The one call the client received."""
        (call,) = self.response.json()["choices"][0]["message"]["tool_calls"]
        return dict(call["function"])


async def constrained_exchange(base_url: str, provider: str, model: str) -> Exchange:
    """A non-streamed request for a ``write`` through ``HealingTransport(provider=...)``, whose
    first answer is :data:`BROKEN` and whose re-ask goes to the server at ``base_url``."""
    upstream = _FirstBroken()
    transport = toolwire.HealingTransport(wrapped=upstream, provider=provider, max_retries=1)
    async with httpx.AsyncClient(transport=transport, timeout=300) as client:
        response = await client.post(
            f"{base_url}/chat/completions",
            json={
                "model": model,
                "messages": [
                    {"role": "system", "content": "You are a coding agent. Use the tools."},
                    {"role": "user", "content": "Write a hello world program to hello.py."},
                ],
                "tools": TOOLS,
                "max_tokens": 160,
                "temperature": 0,
                "seed": 7,
            },
        )
        await response.aread()
    return Exchange(response, upstream.sent)
