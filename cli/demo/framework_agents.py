"""Real framework agents against the real model server, direct or through ``toolwire serve``.

Two agents nobody wrote for toolwire, each changed only in its base URL: pydantic-ai's
``Agent`` (its own ``OpenAIChatModel``; ``run`` or ``run_stream``) and the openai SDK's standard
loop (``messages.append(response.choices[0].message)``, then one ``role: tool`` message per
call; streamed or not). Both send back what OpenAI documents: an assistant ``content: null``
next to its calls and ``role: tool`` results, the history llama-cpp-python refuses (HTTP 500) or
hides from the model. Through the proxy, toolwire adapts it (``docs/providers.md``).

:func:`agent_proxy` runs the real ``toolwire serve`` app in this process; :class:`Recorder`
keeps every request that reached the model server and the status it answered.

The task (:data:`AGENT_TASKS`) needs two tools one after the other, then the answer: the
weather of a city, then its time, then :data:`ANSWER_TOOL` with both. What it takes for
SmolLM2-135M (temperature 0) on llama-cpp-python's ``chatml-function-calling`` to finish one,
measured on the real server (``docs/local-servers.md``, "Framework agents that finish"):

- **The answer is a tool call.** With tools and ``tool_choice: "auto"``, the server writes a
  text answer under its follow-up grammar (``functions.<name>: | "<|im_end|>"``), so a text
  answer is always ``""``; and after a tool result the model picks a call over text by 8-10
  nats. So both agents answer with a structured output: pydantic-ai's own output tool
  (``output_type``, named ``final_result``), and the openai loop's :data:`ANSWER_TOOL` of the
  same name and schema, whose call ends the loop as a text answer would (the structured-output
  form of the loop; every request it sends is the standard loop's). pydantic-ai asks
  ``tool_choice: "required"`` for an output tool, which this server refuses (an assertion in
  its handler: a 500, or an empty body when streamed), unless the model profile says the
  server cannot force a tool (``supports_forced_tool_choice=False``): then it asks ``"auto"``.
- **Each result says what comes next.** The template shows the model the tools' names and
  parameters only (no descriptions), and a system prompt that says the order moves nothing;
  without a hint the model cycles ``get_weather``, ``get_time``, ``get_weather``... The tools
  here end their results with the next step (:class:`Toolbox`), as tools written for small
  models do; then each pick of :data:`AGENT_TASKS`' first task wins by 1 nat or more
  (``bench/agent_margins.py``), the city by 3.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Any, Literal

import httpx
import jsonschema
import msgspec

from .through_proxy import proxy_app

__all__ = [
    "AGENT_TASKS",
    "AGENT_TOOLS",
    "ANSWER_TOOL",
    "SYSTEM_PROMPT",
    "AgentRun",
    "AgentTask",
    "Recorder",
    "Toolbox",
    "WeatherReport",
    "agent_proxy",
    "fits_schema",
    "run_openai_loop",
    "run_pydantic_ai",
]

#: Both agents' system prompt: the template lists the tools to the model only in a system message.
SYSTEM_PROMPT = "You are a helpful assistant."
#: The tool whose call is the answer: pydantic-ai's default name for its output tool.
ANSWER_TOOL = "final_result"


def _function(name: str, description: str, parameters: dict[str, Any]) -> dict[str, Any]:
    return {
        "type": "function",
        "function": {"name": name, "description": description, "parameters": parameters},
    }


def _city_parameters() -> dict[str, Any]:
    return {
        "additionalProperties": False,
        "properties": {"city": {"type": "string"}},
        "required": ["city"],
        "type": "object",
    }


@dataclass
class WeatherReport:
    """The answer: the weather and the time asked for."""

    weather: str
    time: str


#: The tools both agents offer, in Chat Completions form, as pydantic-ai writes them (the
#: openai loop sends the same, so that both agents put the same prompt before the model).
AGENT_TOOLS: list[dict[str, Any]] = [
    _function("get_weather", "Get the current weather of a city.", _city_parameters()),
    _function("get_time", "Get the current time in a city.", _city_parameters()),
    # pydantic-ai's output tool for WeatherReport (output_type), key for key.
    _function(
        ANSWER_TOOL,
        WeatherReport.__doc__ or "",
        {
            "properties": {"weather": {"type": "string"}, "time": {"type": "string"}},
            "required": ["weather", "time"],
            "type": "object",
            "additionalProperties": False,
        },
    ),
]
_SCHEMAS = {tool["function"]["name"]: tool["function"]["parameters"] for tool in AGENT_TOOLS}


class AgentTask(msgspec.Struct, frozen=True, kw_only=True):
    """A question that needs ``get_weather``, then ``get_time``, for ``city``, then the answer."""

    name: str
    prompt: str
    city: str


#: The tasks of the finish-rate bench (``bench/bench_framework_agents.py``): six phrasings and
#: four cities. The first is the test's.
AGENT_TASKS: tuple[AgentTask, ...] = tuple(
    AgentTask(name=f"{city.lower()}-{number}", prompt=prompt, city=city)
    for number, (prompt, city) in enumerate(
        [
            ("Tell me the weather in Paris and the time there.", "Paris"),
            ("What is the weather in Paris, and what time is it there?", "Paris"),
            ("What is the weather and the time in Paris?", "Paris"),
            ("Tell me the weather in London and the time there.", "London"),
            ("What is the weather in Tokyo, and what time is it there?", "Tokyo"),
            ("What is the weather and the time in Berlin?", "Berlin"),
        ],
        start=1,
    )
)

Mode = Literal["run", "run_stream"]


class AgentRun(msgspec.Struct, kw_only=True):
    """How one agent run went: finished (with its answer) or the error that ended it."""

    finished: bool
    #: The answer's arguments (``weather``, ``time``) when the run finished with one.
    output: dict[str, Any] = msgspec.field(default_factory=dict)
    error: str = ""
    #: (tool, arguments) of every tool run, in order.
    ran: list[tuple[str, dict[str, Any]]] = msgspec.field(default_factory=list)
    #: (tool, arguments) of every call that was not run: no such tool, or arguments that do
    #: not fit its schema (answered with the error, as a framework does).
    refused: list[tuple[str, Any]] = msgspec.field(default_factory=list)


def fits_schema(name: str, arguments: Any) -> bool:
    """Whether ``arguments`` are valid arguments of tool ``name`` (:data:`AGENT_TOOLS`)."""
    schema = _SCHEMAS.get(name)
    if schema is None:
        return False
    try:
        jsonschema.validate(arguments, schema)
    except jsonschema.ValidationError:
        return False
    return True


class Toolbox:
    """The tools' bodies: each answers from a fixed table and records what it ran with.

    Each result ends with the next step: SmolLM2-135M follows the last instruction it read
    (see the module docstring).
    """

    def __init__(self) -> None:
        self.ran: list[tuple[str, dict[str, Any]]] = []
        self.refused: list[tuple[str, Any]] = []

    def get_weather(self, city: str) -> str:
        """Get the current weather of a city."""
        self.ran.append(("get_weather", {"city": city}))
        return f"It is sunny and 21 C in {city}. Now call get_time."

    def get_time(self, city: str) -> str:
        """Get the current time in a city."""
        self.ran.append(("get_time", {"city": city}))
        return f"It is 10:30 in {city}. Now call {ANSWER_TOOL}."

    def run(self, name: str, arguments: Any) -> str:
        """Run tool ``name`` (the openai loop's dispatch); a bad call says so, as a tool error."""
        if name == ANSWER_TOOL or not fits_schema(name, arguments):
            self.refused.append((name, arguments))
            return f"error: no tool {name} with arguments {arguments}"
        method = self.get_weather if name == "get_weather" else self.get_time
        return method(arguments["city"])


_TRANSFER_HEADERS = frozenset({"content-encoding", "content-length", "transfer-encoding"})


class Recorder(httpx.AsyncBaseTransport):
    """The proxy's upstream transport: keeps each request body, the status it got, and each
    whole JSON answer (a stream is passed on unread), so a test can hold the tools' arguments
    against what the model server generated."""

    def __init__(self, wrapped: httpx.AsyncBaseTransport | None = None) -> None:
        self.wrapped = wrapped or httpx.AsyncHTTPTransport()
        self.seen: list[tuple[dict[str, Any], int]] = []
        self.answers: list[Any] = []

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        """Send ``request``; keep its body, the status of the answer and a JSON answer's body."""
        content = await request.aread()
        response = await self.wrapped.handle_async_request(request)
        if content:
            self.seen.append((msgspec.json.decode(content), response.status_code))
        if not response.headers.get("content-type", "").startswith("application/json"):
            return response
        body = await response.aread()
        await response.aclose()
        try:
            self.answers.append(msgspec.json.decode(body))
        except msgspec.DecodeError:
            self.answers.append(None)
        # The body is decoded now: the headers that described its transfer no longer hold.
        headers = [
            (name, value)
            for name, value in response.headers.multi_items()
            if name.lower() not in _TRANSFER_HEADERS
        ]
        return httpx.Response(response.status_code, headers=headers, content=body)

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


def _openai_client(base_url: str) -> Any:
    import openai

    # Any: the SDK's annotation names httpx2's client; httpx's serves it as well.
    http_client: Any = httpx.AsyncClient(timeout=300, trust_env=False)
    return openai.AsyncOpenAI(
        base_url=base_url, api_key="local", max_retries=0, http_client=http_client
    )


def _failed(error: Exception, tools: Toolbox) -> AgentRun:
    return AgentRun(
        finished=False,
        error=f"{type(error).__name__}: {error}"[:500],
        ran=tools.ran,
        refused=tools.refused,
    )


async def run_pydantic_ai(
    base_url: str,
    model: str,
    task: AgentTask,
    mode: Mode,
    *,
    request_limit: int = 8,
    max_tokens: int = 120,
) -> AgentRun:
    """pydantic-ai's ``Agent`` with both tools and :class:`WeatherReport` as its output, once.

    ``request_limit`` is pydantic-ai's own ``UsageLimits(request_limit=...)``.
    """
    from pydantic_ai import Agent
    from pydantic_ai.models.openai import OpenAIChatModel
    from pydantic_ai.profiles.openai import OpenAIModelProfile
    from pydantic_ai.providers.openai import OpenAIProvider
    from pydantic_ai.settings import ModelSettings
    from pydantic_ai.usage import UsageLimits

    client = _openai_client(base_url)
    tools = Toolbox()
    chat_model = OpenAIChatModel(
        model,
        provider=OpenAIProvider(openai_client=client),
        # llama-cpp-python refuses tool_choice "required" (docs/providers.md): said here, so
        # that pydantic-ai asks "auto" for its output tool.
        profile=OpenAIModelProfile(supports_forced_tool_choice=False),
    )
    agent = Agent(
        chat_model,
        instructions=SYSTEM_PROMPT,
        output_type=WeatherReport,
        model_settings=ModelSettings(temperature=0, max_tokens=max_tokens, seed=7),
        tools=[tools.get_weather, tools.get_time],
        retries=0,
    )
    limits = UsageLimits(request_limit=request_limit)
    try:
        if mode == "run":
            output = (await agent.run(task.prompt, usage_limits=limits)).output
        else:
            async with agent.run_stream(task.prompt, usage_limits=limits) as result:
                output = await result.get_output()
    except Exception as error:  # the run's end, whatever it is, is the measurement
        return _failed(error, tools)
    finally:
        await client.close()
    answer = {"weather": output.weather, "time": output.time}
    return AgentRun(finished=True, output=answer, ran=tools.ran, refused=tools.refused)


async def run_openai_loop(
    base_url: str,
    model: str,
    task: AgentTask,
    *,
    stream: bool,
    max_turns: int = 4,
    max_tokens: int = 120,
) -> AgentRun:
    """The openai SDK's standard tool loop: append the message, then the results; repeat.

    It ends when the model answers: in text (a message without calls), or with a call of
    :data:`ANSWER_TOOL` whose arguments fit its schema (the structured-output form).
    """
    client = _openai_client(base_url)
    tools = Toolbox()
    messages: list[Any] = [
        {"role": "system", "content": SYSTEM_PROMPT},
        {"role": "user", "content": task.prompt},
    ]
    options: dict[str, Any] = {"temperature": 0, "max_tokens": max_tokens, "seed": 7}
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
                answer = {"text": message.content or ""}
                return AgentRun(finished=True, output=answer, ran=tools.ran, refused=tools.refused)
            for call in message.tool_calls:
                try:
                    arguments = json.loads(call.function.arguments)
                except ValueError:
                    arguments = call.function.arguments
                if call.function.name == ANSWER_TOOL and fits_schema(ANSWER_TOOL, arguments):
                    return AgentRun(
                        finished=True, output=arguments, ran=tools.ran, refused=tools.refused
                    )
                result = tools.run(call.function.name, arguments)
                messages.append({"role": "tool", "tool_call_id": call.id, "content": result})
    except Exception as error:
        return _failed(error, tools)
    finally:
        await client.close()
    return AgentRun(
        finished=False,
        error=f"no answer after {max_turns} turns",
        ran=tools.ran,
        refused=tools.refused,
    )


async def _streamed_message(
    client: Any, model: str, messages: list[Any], options: dict[str, Any]
) -> Any:
    """A streamed answer, put together by the SDK's own helper (``get_final_completion``)."""
    async with client.chat.completions.stream(
        model=model, messages=messages, tools=AGENT_TOOLS, tool_choice="auto", **options
    ) as events:
        completion = await events.get_final_completion()
    return completion.choices[0].message
