"""Each agent framework of the matrix, set up as its own docs tell users, run on one task.

Run by the matrix (``matrix.py``) in the framework's virtualenv: ``python stacks.py`` reads one
JSON object on stdin, ``{"stack", "base_url", "route", "cells": [{"fault", "streamed"}],
"timeout"}``, and writes one JSON object on stdout: the versions of the stack's packages and,
for each cell, every argument the tool ran with, the run's final answer and its error.

Every stack gets the same task: one tool, ``get_weather(city)``, and "What is the weather in
Paris?". It is pointed at ``base_url`` as its docs say (``base_url`` and a key, the model
named ``weather-<fault>``, which the scripted upstream reads to choose the fault it plays).
``route`` is ``direct`` (the upstream), ``proxy`` (``toolwire serve`` in front of it: only the
URL changes) or ``transport`` (the upstream through ``toolwire.HealingTransport``, given to the
framework as its httpx client, where it takes one).

The ``history_refusal`` fault starts the run from an earlier conversation whose call the model
broke (cut: ``{"city": "Par``), in the framework's own message types; a stack that takes no
earlier conversation skips it.

This file imports the frameworks, which the main virtualenv does not hold: only the
frameworks' virtualenvs run it (``.ci/constraints-frameworks*.txt``).
"""

from __future__ import annotations

import asyncio
import importlib.metadata
import json
import sys
import time
import traceback
import warnings
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

ASK = "What is the weather in Paris?"
AGAIN = "Please try again: what is the weather in Paris?"
REPORT = "WEATHER-REPORT Paris: 18 C, clear"
#: The earlier conversation of ``history_refusal``: the call the model broke, and its result.
PRIOR_ID = "call_prior"
PRIOR_ARGUMENTS = '{"city": "Par'
PRIOR_RESULT = "error: the call's arguments were cut off"
KEY = "sk-local"
INSTRUCTIONS = "You answer questions about the weather. Use the get_weather tool."


@dataclass
class Cell:
    fault: str
    streamed: bool
    base_url: str
    route: str
    #: The arguments each run of the tool received (``{"city": <value>}``), in order.
    ran: list[Any] = field(default_factory=list)

    @property
    def model(self) -> str:
        return f"weather-{self.fault}"

    @property
    def history(self) -> bool:
        return self.fault == "history_refusal"

    @property
    def prompt(self) -> str:
        return AGAIN if self.history else ASK

    @property
    def v1(self) -> str:
        return f"{self.base_url}/v1"

    def weather(self, city: Any) -> str:
        """The tool: record what it ran with, answer as a weather service would."""
        self.ran.append({"city": city})
        return f"WEATHER-REPORT {city}: 18 C, clear"


class Skip(Exception):
    """This stack cannot play this cell (the reason is the message)."""


# -- the HTTP clients a framework may be given -----------------------------------------------


def healing_httpx2() -> Any:
    """An ``httpx2.AsyncClient`` through toolwire (openai 3.x, anthropic 2.x, pydantic-ai)."""
    import httpx2

    import toolwire
    from toolwire.heal import Httpx2Bridge

    healing = toolwire.HealingTransport(provider="llama-server")
    return httpx2.AsyncClient(transport=Httpx2Bridge(healing), timeout=60)


def healing_httpx() -> Any:
    """An ``httpx.AsyncClient`` through toolwire (openai 2.x and what is built on it)."""
    import httpx

    import toolwire

    return httpx.AsyncClient(
        transport=toolwire.HealingTransport(provider="llama-server"), timeout=60
    )


def openai_client(cell: Cell) -> Any:
    """``AsyncOpenAI(base_url=..., api_key=...)``, healed on the ``transport`` route."""
    import openai

    major = int(openai.__version__.split(".")[0])
    extra: dict[str, Any] = {}
    if cell.route == "transport":
        extra["http_client"] = healing_httpx2() if major >= 3 else healing_httpx()
    return openai.AsyncOpenAI(base_url=cell.v1, api_key=KEY, **extra)


# -- the OpenAI Agents SDK -------------------------------------------------------------------


async def openai_agents(cell: Cell, *, responses: bool) -> str | None:
    from agents import (
        Agent,
        OpenAIChatCompletionsModel,
        OpenAIResponsesModel,
        Runner,
        function_tool,
        set_tracing_disabled,
    )

    set_tracing_disabled(True)

    @function_tool
    def get_weather(city: str) -> str:
        """Get the current weather for a city."""
        return cell.weather(city)

    client = openai_client(cell)
    model_class = OpenAIResponsesModel if responses else OpenAIChatCompletionsModel
    agent = Agent(
        name="weather",
        instructions=INSTRUCTIONS,
        tools=[get_weather],
        model=model_class(model=cell.model, openai_client=client),
    )
    items: Any = cell.prompt
    if cell.history:
        items = [
            {"role": "user", "content": ASK},
            {
                "type": "function_call",
                "call_id": PRIOR_ID,
                "name": "get_weather",
                "arguments": PRIOR_ARGUMENTS,
            },
            {"type": "function_call_output", "call_id": PRIOR_ID, "output": PRIOR_RESULT},
            {"role": "user", "content": AGAIN},
        ]
    if cell.streamed:
        result = Runner.run_streamed(agent, items, max_turns=6)
        async for _ in result.stream_events():
            pass
    else:
        result = await Runner.run(agent, items, max_turns=6)
    return str(result.final_output) if result.final_output is not None else None


# -- LangGraph -------------------------------------------------------------------------------


def _langchain_history(cell: Cell) -> list[Any]:
    from langchain_core.messages import AIMessage, HumanMessage, ToolMessage

    if not cell.history:
        return [HumanMessage(cell.prompt)]
    # A call whose arguments did not parse is an ``invalid_tool_calls`` entry in LangChain: the
    # raw arguments are kept, and sent back as they are.
    broken = AIMessage(
        content="",
        invalid_tool_calls=[
            {
                "type": "invalid_tool_call",
                "id": PRIOR_ID,
                "name": "get_weather",
                "args": PRIOR_ARGUMENTS,
                "error": None,
            }
        ],
    )
    return [
        HumanMessage(ASK),
        broken,
        ToolMessage(PRIOR_RESULT, tool_call_id=PRIOR_ID),
        HumanMessage(AGAIN),
    ]


async def langgraph(cell: Cell, *, anthropic: bool) -> str | None:
    from langchain_core.messages import AIMessage
    from langchain_core.tools import tool
    from langgraph.prebuilt import create_react_agent

    @tool
    def get_weather(city: str) -> str:
        """Get the current weather for a city."""
        return cell.weather(city)

    if anthropic:
        from langchain_anthropic import ChatAnthropic

        extra: dict[str, Any] = {}
        if cell.route == "transport":
            raise Skip("ChatAnthropic takes no HTTP client")
        llm: Any = ChatAnthropic(
            model_name=cell.model,
            base_url=cell.base_url,
            api_key=KEY,
            max_tokens=256,
            streaming=cell.streamed,
            **extra,
        )
    else:
        from langchain_openai import ChatOpenAI

        extra = {}
        if cell.route == "transport":
            extra["http_async_client"] = healing_httpx2()
        llm = ChatOpenAI(model=cell.model, base_url=cell.v1, api_key=KEY, **extra)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        agent = create_react_agent(llm, [get_weather], prompt=INSTRUCTIONS)
    state = {"messages": _langchain_history(cell)}
    limit = {"recursion_limit": 12}
    if cell.streamed:
        final: Any = None
        async for mode, chunk in agent.astream(state, limit, stream_mode=["messages", "values"]):
            if mode == "values":
                final = chunk
        messages = final["messages"] if final else []
    else:
        messages = (await agent.ainvoke(state, limit))["messages"]
    last = messages[-1] if messages else None
    if isinstance(last, AIMessage) and not last.tool_calls:
        return last.text if hasattr(last, "text") else str(last.content)
    return None


# -- pydantic-ai -----------------------------------------------------------------------------


def _pydantic_ai_history(cell: Cell) -> list[Any] | None:
    if not cell.history:
        return None
    from pydantic_ai.messages import (
        ModelRequest,
        ModelResponse,
        ToolCallPart,
        ToolReturnPart,
        UserPromptPart,
    )

    return [
        ModelRequest(parts=[UserPromptPart(ASK)]),
        ModelResponse(parts=[ToolCallPart("get_weather", PRIOR_ARGUMENTS, tool_call_id=PRIOR_ID)]),
        ModelRequest(parts=[ToolReturnPart("get_weather", PRIOR_RESULT, tool_call_id=PRIOR_ID)]),
    ]


async def pydantic_ai(cell: Cell, *, anthropic: bool) -> str | None:
    from pydantic_ai import Agent

    extra: dict[str, Any] = {}
    if cell.route == "transport":
        extra["http_client"] = healing_httpx2()
    if anthropic:
        from pydantic_ai.models.anthropic import AnthropicModel
        from pydantic_ai.providers.anthropic import AnthropicProvider

        provider: Any = AnthropicProvider(base_url=cell.base_url, api_key=KEY, **extra)
        model: Any = AnthropicModel(cell.model, provider=provider)
    else:
        from pydantic_ai.models.openai import OpenAIChatModel
        from pydantic_ai.providers.openai import OpenAIProvider

        provider = OpenAIProvider(base_url=cell.v1, api_key=KEY, **extra)
        model = OpenAIChatModel(cell.model, provider=provider)
    agent = Agent(model, instructions=INSTRUCTIONS)

    @agent.tool_plain
    def get_weather(city: str) -> str:
        """Get the current weather for a city."""
        return cell.weather(city)

    history = _pydantic_ai_history(cell)
    if cell.streamed:
        async with agent.run_stream(cell.prompt, message_history=history) as run:
            return str(await run.get_output())
    result = await agent.run(cell.prompt, message_history=history)
    return str(result.output)


# -- smolagents ------------------------------------------------------------------------------


def smolagents(cell: Cell) -> str | None:
    from smolagents import OpenAIServerModel, ToolCallingAgent, tool

    if cell.route == "transport":
        raise Skip("smolagents calls the openai SDK's synchronous client")
    if cell.history:
        raise Skip("smolagents' run takes a task, not an earlier conversation")

    @tool
    def get_weather(city: str) -> str:
        """Get the current weather for a city.

        Args:
            city: The city's name.
        """
        return cell.weather(city)

    model = OpenAIServerModel(model_id=cell.model, api_base=cell.v1, api_key=KEY)
    agent = ToolCallingAgent(
        tools=[get_weather],
        model=model,
        max_steps=4,
        stream_outputs=cell.streamed,
        verbosity_level=0,
    )
    answer = agent.run(cell.prompt)
    return None if answer is None else str(answer)


# -- llama-index -----------------------------------------------------------------------------


async def llama_index(cell: Cell) -> str | None:
    from llama_index.core.agent.workflow import FunctionAgent
    from llama_index.core.llms import ChatMessage
    from llama_index.llms.openai_like import OpenAILike

    extra: dict[str, Any] = {}
    if cell.route == "transport":
        extra["async_http_client"] = healing_httpx()
    llm = OpenAILike(
        model=cell.model,
        api_base=cell.v1,
        api_key=KEY,
        is_chat_model=True,
        is_function_calling_model=True,
        context_window=8192,
        **extra,
    )

    def get_weather(city: str) -> str:
        """Get the current weather for a city."""
        return cell.weather(city)

    agent = FunctionAgent(
        tools=[get_weather], llm=llm, system_prompt=INSTRUCTIONS, streaming=cell.streamed
    )
    history = None
    if cell.history:
        call = {
            "id": PRIOR_ID,
            "type": "function",
            "function": {"name": "get_weather", "arguments": PRIOR_ARGUMENTS},
        }
        history = [
            ChatMessage(role="user", content=ASK),
            ChatMessage(role="assistant", content="", additional_kwargs={"tool_calls": [call]}),
            ChatMessage(
                role="tool", content=PRIOR_RESULT, additional_kwargs={"tool_call_id": PRIOR_ID}
            ),
        ]
    handler = agent.run(user_msg=cell.prompt, chat_history=history, max_iterations=6)
    async for _ in handler.stream_events():
        pass
    response = await handler
    return str(response)


# -- AutoGen AgentChat -----------------------------------------------------------------------


async def autogen(cell: Cell) -> str | None:
    from autogen_agentchat.agents import AssistantAgent
    from autogen_ext.models.openai import OpenAIChatCompletionClient

    if cell.route == "transport":
        raise Skip("OpenAIChatCompletionClient builds its own openai client")
    if cell.history:
        raise Skip(
            "run(task=...) takes a task; an earlier conversation goes through a model_context"
        )
    client = OpenAIChatCompletionClient(
        model=cell.model,
        base_url=cell.v1,
        api_key=KEY,
        model_info={
            "vision": False,
            "function_calling": True,
            "json_output": False,
            "structured_output": False,
            "family": "unknown",
        },
    )

    async def get_weather(city: str) -> str:
        """Get the current weather for a city."""
        return cell.weather(city)

    agent = AssistantAgent(
        "weather",
        model_client=client,
        tools=[get_weather],
        system_message=INSTRUCTIONS,
        reflect_on_tool_use=True,
        model_client_stream=cell.streamed,
    )
    try:
        result = await agent.run(task=cell.prompt)
    finally:
        await client.close()
    last = result.messages[-1]
    content = getattr(last, "content", None)
    return content if isinstance(content, str) and last.type == "TextMessage" else None


# -- Agno ------------------------------------------------------------------------------------


async def agno(cell: Cell) -> str | None:
    from agno.agent import Agent
    from agno.models.openai.like import OpenAILike

    if cell.history:
        raise Skip("arun takes one input; an earlier conversation goes through a database")
    extra: dict[str, Any] = {}
    if cell.route == "transport":
        # Agno hands the openai SDK only an httpx.AsyncClient (it drops anything else).
        extra["http_client"] = healing_httpx()

    def get_weather(city: str) -> str:
        """Get the current weather for a city."""
        return cell.weather(city)

    agent = Agent(
        model=OpenAILike(id=cell.model, base_url=cell.v1, api_key=KEY, **extra),
        tools=[get_weather],
        instructions=INSTRUCTIONS,
    )
    if cell.streamed:
        text = ""
        async for event in agent.arun(cell.prompt, stream=True):
            if getattr(event, "event", "") == "RunContent" and isinstance(event.content, str):
                text += event.content
            if getattr(event, "event", "") == "RunError":
                raise RuntimeError(f"RunError: {getattr(event, 'content', '')}")
        return text or None
    response = await agent.arun(cell.prompt)
    if str(getattr(response, "status", "")).lower().endswith("error"):
        raise RuntimeError(f"RunError: {response.content}")
    return response.content if isinstance(response.content, str) else None


# -- Strands ---------------------------------------------------------------------------------


async def strands(cell: Cell) -> str | None:
    from strands import Agent, tool
    from strands.models.openai import OpenAIModel

    if cell.history:
        raise Skip("an earlier conversation is Bedrock-shaped messages: not written here")
    if not cell.streamed:
        raise Skip("Strands' OpenAIModel always streams")
    client_args: dict[str, Any] = {"base_url": cell.v1, "api_key": KEY}
    client: Any = None
    if cell.route == "transport":
        # Strands opens (and closes) an openai client per request from ``client_args``; one
        # given as ``client`` is kept, with the httpx client it was given.
        import openai

        client = openai.AsyncOpenAI(**client_args, http_client=healing_httpx())

    @tool
    def get_weather(city: str) -> str:
        """Get the current weather for a city.

        Args:
            city: The city's name.
        """
        return cell.weather(city)

    if client is not None:
        model = OpenAIModel(client=client, model_id=cell.model)
    else:
        model = OpenAIModel(client_args=client_args, model_id=cell.model)
    agent = Agent(
        model=model, tools=[get_weather], system_prompt=INSTRUCTIONS, callback_handler=None
    )
    result = await agent.invoke_async(cell.prompt)
    return str(result)


# -- Google ADK ------------------------------------------------------------------------------


async def google_adk(cell: Cell) -> str | None:
    from google.adk.agents import LlmAgent
    from google.adk.agents.run_config import RunConfig, StreamingMode
    from google.adk.models.lite_llm import LiteLlm
    from google.adk.runners import InMemoryRunner
    from google.genai import types

    if cell.route == "transport":
        raise Skip("LiteLlm builds its own HTTP client")
    if cell.history:
        raise Skip("an earlier conversation is session events: not written here")

    def get_weather(city: str) -> str:
        """Get the current weather for a city."""
        return cell.weather(city)

    agent = LlmAgent(
        name="weather",
        model=LiteLlm(model=f"openai/{cell.model}", api_base=cell.v1, api_key=KEY),
        instruction=INSTRUCTIONS,
        tools=[get_weather],
    )
    runner = InMemoryRunner(agent=agent, app_name="weather")
    session = await runner.session_service.create_session(app_name="weather", user_id="user")
    mode = StreamingMode.SSE if cell.streamed else StreamingMode.NONE
    message = types.Content(role="user", parts=[types.Part(text=cell.prompt)])
    answer = None
    async for event in runner.run_async(
        user_id="user",
        session_id=session.id,
        new_message=message,
        run_config=RunConfig(streaming_mode=mode),
    ):
        if getattr(event, "error_code", None):
            raise RuntimeError(f"{event.error_code}: {event.error_message}")
        if event.is_final_response() and event.content and event.content.parts:
            text = "".join(part.text or "" for part in event.content.parts)
            answer = text or answer
    return answer


# -- the anthropic SDK's tool runner ---------------------------------------------------------


async def anthropic_tool_runner(cell: Cell) -> str | None:
    from anthropic import AsyncAnthropic, beta_async_tool

    extra: dict[str, Any] = {}
    if cell.route == "transport":
        extra["http_client"] = healing_httpx2()
    client = AsyncAnthropic(base_url=cell.base_url, api_key=KEY, **extra)

    @beta_async_tool
    async def get_weather(city: str) -> str:
        """Get the current weather for a city.

        Args:
            city: The city's name.
        """
        return cell.weather(city)

    messages: list[Any] = [{"role": "user", "content": cell.prompt}]
    if cell.history:
        messages = [
            {"role": "user", "content": ASK},
            {
                "role": "assistant",
                "content": [
                    # A call whose arguments did not parse: its input kept as the text received.
                    {
                        "type": "tool_use",
                        "id": PRIOR_ID,
                        "name": "get_weather",
                        "input": PRIOR_ARGUMENTS,
                    }
                ],
            },
            {
                "role": "user",
                "content": [
                    {"type": "tool_result", "tool_use_id": PRIOR_ID, "content": PRIOR_RESULT},
                    {"type": "text", "text": AGAIN},
                ],
            },
        ]
    runner = client.beta.messages.tool_runner(
        model=cell.model,
        max_tokens=256,
        system=INSTRUCTIONS,
        tools=[get_weather],
        messages=messages,
        max_iterations=6,
        stream=cell.streamed,
        # The runner keeps the conversation in a server-side thread by default and sends only
        # the new messages each turn; a local server holds no threads (llama-server ignores
        # the ``thread`` field), so the whole history goes every turn, as the SDK's docs say.
        thread=False,
    )
    final = await runner.until_done()
    texts = [block.text for block in final.content if block.type == "text"]
    return "".join(texts) if texts and final.stop_reason != "tool_use" else None


# -- the table -------------------------------------------------------------------------------

Runner = Callable[[Cell], "Awaitable[str | None] | str | None"]

STACKS: dict[str, tuple[Runner, tuple[str, ...]]] = {
    "openai-agents-responses": (
        lambda cell: openai_agents(cell, responses=True),
        ("openai-agents", "openai"),
    ),
    "openai-agents-chat": (
        lambda cell: openai_agents(cell, responses=False),
        ("openai-agents", "openai"),
    ),
    "langgraph-openai": (
        lambda cell: langgraph(cell, anthropic=False),
        ("langgraph", "langchain-openai"),
    ),
    "pydantic-ai-openai": (
        lambda cell: pydantic_ai(cell, anthropic=False),
        ("pydantic-ai-slim", "openai"),
    ),
    "pydantic-ai-anthropic": (
        lambda cell: pydantic_ai(cell, anthropic=True),
        ("pydantic-ai-slim", "anthropic"),
    ),
    "smolagents": (smolagents, ("smolagents", "openai")),
    "llama-index": (llama_index, ("llama-index-core", "llama-index-llms-openai-like")),
    "autogen": (autogen, ("autogen-agentchat", "autogen-ext")),
    "agno": (agno, ("agno", "openai")),
    "strands": (strands, ("strands-agents", "openai")),
    "google-adk": (google_adk, ("google-adk", "litellm")),
    "anthropic-tool-runner": (anthropic_tool_runner, ("anthropic",)),
    "langgraph-anthropic": (
        lambda cell: langgraph(cell, anthropic=True),
        ("langgraph", "langchain-anthropic"),
    ),
}


async def _run_cell(runner: Runner, cell: Cell, seconds: float) -> dict[str, Any]:
    started = time.monotonic()
    answer: str | None = None
    error: str | None = None
    skipped: str | None = None
    try:
        outcome = runner(cell)
        if asyncio.iscoroutine(outcome):
            answer = await asyncio.wait_for(outcome, seconds)
        else:
            answer = outcome  # type: ignore[assignment]
    except Skip as skip:
        skipped = str(skip)
    except Exception as failure:  # the framework's own error is data (a time-out too)
        error = f"{type(failure).__name__}: {failure}"[:400]
        if "--trace" in sys.argv:
            traceback.print_exc()
    return {
        "fault": cell.fault,
        "streamed": cell.streamed,
        "ran": cell.ran,
        "answer": answer,
        "error": error,
        "skipped": skipped,
        "seconds": round(time.monotonic() - started, 2),
    }


async def _run_cells(spec: dict[str, Any], runner: Runner) -> list[dict[str, Any]]:
    # One event loop for every cell: some frameworks keep their HTTP client across runs
    # (langchain-openai caches one per process), as an application's one loop would.
    results = []
    for wanted in spec["cells"]:
        cell = Cell(wanted["fault"], wanted["streamed"], spec["base_url"], spec["route"])
        results.append(await _run_cell(runner, cell, float(spec.get("timeout", 60))))
    return results


def main() -> None:
    spec = json.load(sys.stdin)
    runner, packages = STACKS[spec["stack"]]
    versions = {name: importlib.metadata.version(name) for name in packages}
    out = sys.stdout
    sys.stdout = sys.stderr  # what the frameworks print (smolagents' console) is not the result
    try:
        results = asyncio.run(_run_cells(spec, runner))
    finally:
        sys.stdout = out
    json.dump({"versions": versions, "results": results}, out)


if __name__ == "__main__":
    main()
