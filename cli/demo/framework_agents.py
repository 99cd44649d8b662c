"""Real framework agents against the real model server, direct or through ``toolwire serve``.

Two agents nobody wrote for toolwire, each changed only in its base URL: pydantic-ai's
``Agent`` (its own ``OpenAIChatModel``; ``run`` or ``run_stream``) and the openai SDK's standard
loop (``messages.append(response.choices[0].message)``, then one ``role: tool`` message per
call; streamed or not). Both send back what OpenAI documents: an assistant ``content: null``
next to its calls and ``role: tool`` results, the history llama-cpp-python refuses (HTTP 500) or
hides from the model. Through the proxy, toolwire adapts it (``docs/providers.md``).

:func:`agent_proxy` runs the real ``toolwire serve`` app in this process; :class:`Recorder`
keeps every request that reached the model server and the status it answered. The tools are
two plain look-ups a 135M-parameter model calls reliably at temperature 0; each records the
arguments it ran with, so a test can say every tool ran once with valid arguments.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any, Literal

import httpx
import msgspec

from .through_proxy import proxy_app

__all__ = [
    "AGENT_TOOLS",
    "AgentRun",
    "Recorder",
    "Toolbox",
    "agent_proxy",
    "run_openai_loop",
    "run_pydantic_ai",
]

#: The tools both agents offer, in Chat Completions form.
AGENT_TOOLS: list[dict[str, Any]] = [
    {
        "type": "function",
        "function": {
            "name": "get_weather",
            "description": "Get the current weather of a city.",
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
            "name": "get_time",
            "description": "Get the current time in a city.",
            "parameters": {
                "type": "object",
                "properties": {"city": {"type": "string"}},
                "required": ["city"],
            },
        },
    },
]

Mode = Literal["run", "run_stream"]


class AgentRun(msgspec.Struct, kw_only=True):
    """How one agent run went: finished (with its output) or the error that ended it."""

    finished: bool
    output: str = ""
    error: str = ""
    #: (tool, arguments) of every tool run, in order.
    ran: list[tuple[str, dict[str, Any]]] = msgspec.field(default_factory=list)


class Toolbox:
    """The tools' bodies: each answers from a fixed table and records what it ran with."""

    def __init__(self) -> None:
        self.ran: list[tuple[str, dict[str, Any]]] = []

    def get_weather(self, city: str) -> str:
        """Get the current weather of a city."""
        self.ran.append(("get_weather", {"city": city}))
        return f"It is sunny and 21 C in {city}."

    def get_time(self, city: str) -> str:
        """Get the current time in a city."""
        self.ran.append(("get_time", {"city": city}))
        return f"It is 10:30 in {city}."

    def run(self, name: str, arguments: dict[str, Any]) -> str:
        """Run tool ``name`` (the openai loop's dispatch); a bad call says so, as a tool error."""
        city = arguments.get("city")
        if name not in ("get_weather", "get_time") or not isinstance(city, str):
            return f"error: no tool {name} with arguments {arguments}"
        method = self.get_weather if name == "get_weather" else self.get_time
        return method(city)


class Recorder(httpx.AsyncBaseTransport):
    """The proxy's upstream transport: keeps each request body and the status it got."""

    def __init__(self, wrapped: httpx.AsyncBaseTransport | None = None) -> None:
        self.wrapped = wrapped or httpx.AsyncHTTPTransport()
        self.seen: list[tuple[dict[str, Any], int]] = []

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        """Send ``request``; keep its body and the status of the answer."""
        content = await request.aread()
        response = await self.wrapped.handle_async_request(request)
        if content:
            self.seen.append((msgspec.json.decode(content), response.status_code))
        return response

    async def aclose(self) -> None:
        """Close the wrapped transport."""
        await self.wrapped.aclose()


@asynccontextmanager
async def agent_proxy(
    upstream: str, recorder: Recorder, provider: str = "llama-cpp"
) -> AsyncIterator[str]:
    """``toolwire serve`` (healing on) in front of ``upstream`` for the block: its ``/v1`` URL."""
    async with proxy_app(upstream, provider, heal=True, max_retries=2, wrapped=recorder) as (
        url,
        _,
    ):
        yield url


def _openai_client(base_url: str, http: httpx.AsyncClient | None = None) -> Any:
    import openai

    http_client: Any = http or httpx.AsyncClient(timeout=300, trust_env=False)
    return openai.AsyncOpenAI(
        base_url=base_url, api_key="local", max_retries=0, http_client=http_client
    )


async def run_pydantic_ai(
    base_url: str, model: str, prompt: str, mode: Mode, *, request_limit: int = 8
) -> AgentRun:
    """pydantic-ai's ``Agent`` with both tools, run once (``run`` or ``run_stream``).

    ``request_limit`` is pydantic-ai's own ``UsageLimits(request_limit=...)``.
    """
    from pydantic_ai import Agent
    from pydantic_ai.models.openai import OpenAIChatModel
    from pydantic_ai.providers.openai import OpenAIProvider
    from pydantic_ai.settings import ModelSettings
    from pydantic_ai.usage import UsageLimits

    client = _openai_client(base_url)
    tools = Toolbox()
    agent = Agent(
        OpenAIChatModel(model, provider=OpenAIProvider(openai_client=client)),
        model_settings=ModelSettings(temperature=0, max_tokens=120, seed=7),
        tools=[tools.get_weather, tools.get_time],
        retries=0,
    )
    limits = UsageLimits(request_limit=request_limit)
    try:
        if mode == "run":
            output = (await agent.run(prompt, usage_limits=limits)).output
        else:
            async with agent.run_stream(prompt, usage_limits=limits) as result:
                output = await result.get_output()
    except Exception as error:  # the run's end, whatever it is, is the measurement
        return AgentRun(
            finished=False, error=f"{type(error).__name__}: {error}"[:500], ran=tools.ran
        )
    finally:
        await client.close()
    return AgentRun(finished=True, output=str(output), ran=tools.ran)


async def run_openai_loop(
    base_url: str,
    model: str,
    prompt: str,
    *,
    stream: bool,
    max_turns: int = 4,
    system: str | None = None,
) -> AgentRun:
    """The openai SDK's standard tool loop: append the message, then the results; repeat."""
    import json

    client = _openai_client(base_url)
    tools = Toolbox()
    messages: list[Any] = [{"role": "user", "content": prompt}]
    if system is not None:
        messages.insert(0, {"role": "system", "content": system})
    options: dict[str, Any] = {"temperature": 0, "max_tokens": 120, "seed": 7}
    try:
        for _ in range(max_turns):
            if stream:
                message = await _streamed_message(client, model, messages, options)
            else:
                response = await client.chat.completions.create(
                    model=model, messages=messages, tools=AGENT_TOOLS, tool_choice="auto", **options
                )
                message = response.choices[0].message
            messages.append(message)
            if not message.tool_calls:
                return AgentRun(finished=True, output=message.content or "", ran=tools.ran)
            for call in message.tool_calls:
                try:
                    arguments = json.loads(call.function.arguments)
                except ValueError:
                    arguments = {}
                result = tools.run(
                    call.function.name, arguments if isinstance(arguments, dict) else {}
                )
                messages.append({"role": "tool", "tool_call_id": call.id, "content": result})
    except Exception as error:
        return AgentRun(
            finished=False, error=f"{type(error).__name__}: {error}"[:500], ran=tools.ran
        )
    finally:
        await client.close()
    return AgentRun(finished=False, error=f"no answer after {max_turns} turns", ran=tools.ran)


async def _streamed_message(
    client: Any, model: str, messages: list[Any], options: dict[str, Any]
) -> Any:
    """A streamed answer, put together by the SDK's own helper (``get_final_completion``)."""
    async with client.chat.completions.stream(
        model=model, messages=messages, tools=AGENT_TOOLS, tool_choice="auto", **options
    ) as events:
        completion = await events.get_final_completion()
    return completion.choices[0].message
