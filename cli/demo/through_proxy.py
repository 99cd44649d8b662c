"""``toolwire demo --healing``: the suite through ``toolwire serve``, healing off, then on.

The agent here does not use toolwire at all: it is the loop an agent framework runs. It sends
each step's request to the proxy (``/v1/chat/completions``, streamed), accumulates the calls by
index (tolerant of llama-cpp-python, which repeats each call's id and name in every piece), and
for each call parses the arguments and checks them against the tool's schema, as a framework
validating tool arguments does. A call that passes runs in the sandbox; one that does
not is a *broken call received*, answered with the error as its result (the framework's retry
prompt), and the step is asked again on the next turn. A step is done when a call of its tool
ran; a task is completed when every step is. Each step gets :data:`TURNS_PER_STEP` turns.

The proxy is the real app (:class:`toolwire.serve.ProxyApp` on uvicorn, on a free loopback
port), run twice in front of the same model server: ``heal=False`` (a bare pass-through) and
``heal=True``. Its upstream transport counts what reaches the model and what the model
generates (:class:`UpstreamCounts`): every request, retries included, is what was spent.
"""

from __future__ import annotations

import json
import socket
from collections.abc import AsyncIterator, Callable, Sequence
from contextlib import asynccontextmanager
from typing import Any

import anyio
import httpx
import jsonschema
import msgspec

from .sandbox import TOOLS, Sandbox, SandboxError
from .tasks import SYSTEM_PROMPT, Task

__all__ = ["HealingComparison", "ModeResult", "PlainRun", "UpstreamCounts", "compare_healing"]

#: Turns the agent gives one step before it gives up on the task.
TURNS_PER_STEP = 3
_SCHEMAS = {tool["function"]["name"]: tool["function"]["parameters"] for tool in TOOLS}


class PlainRun(msgspec.Struct, kw_only=True):
    """One task at one budget, as the plain agent lived it."""

    name: str
    task: str
    budget: int
    steps: int
    steps_done: int = 0
    turns: int = 0
    #: Turns in which at least one call the agent received did not parse or fit its schema.
    broken_turns: int = 0
    broken_calls: int = 0
    calls_run: int = 0
    #: Turns that ended in an error (an HTTP error, an in-band error, a dropped stream).
    error_turns: int = 0
    #: Turns that ended ``length`` with no call (the agent's own limit handling).
    length_turns: int = 0
    broken_examples: list[str] = msgspec.field(default_factory=list)

    @property
    def completed(self) -> bool:
        """Every step of the plan ran a call of its tool."""
        return self.steps_done == self.steps


class ModeResult(msgspec.Struct, kw_only=True):
    """The suite with healing off or on."""

    healing: bool
    runs: list[PlainRun]
    upstream: UpstreamCounts
    turns: int = 0
    broken_turns: int = 0
    tasks: int = 0
    tasks_completed: int = 0

    def total(self) -> ModeResult:
        """Fill in the sums over :attr:`runs`."""
        self.turns = sum(run.turns for run in self.runs)
        self.broken_turns = sum(run.broken_turns for run in self.runs)
        self.tasks = len(self.runs)
        self.tasks_completed = sum(run.completed for run in self.runs)
        return self


class HealingComparison(msgspec.Struct, kw_only=True):
    """Both modes over the same suite, in one run, against one model server."""

    upstream: str
    provider: str
    model: str
    max_retries: int
    off: ModeResult
    on: ModeResult


class UpstreamCounts(msgspec.Struct, kw_only=True):
    """What reached the model server and what it generated, counted between proxy and model.

    ``generated_tokens`` is the usage the server reported, summed, when it reports usage; else
    the streamed pieces that carry generated text or arguments: llama-cpp-python reports no
    usage in streams and sends one piece per generated token. ``usage_reported`` says which.
    ``request_bytes`` is the size of the requests sent (what the prompts grew by).
    """

    requests: int = 0
    request_bytes: int = 0
    generated_tokens: int = 0
    prompt_tokens: int = 0
    usage_reported: bool = False


class _CountingStream(httpx.AsyncByteStream):
    def __init__(self, wrapped: httpx.AsyncByteStream, counts: UpstreamCounts) -> None:
        self._wrapped = wrapped
        self._counts = counts
        self._pending = b""
        self._pieces = 0
        self._usage: dict[str, Any] | None = None

    async def __aiter__(self) -> AsyncIterator[bytes]:
        async for chunk in self._wrapped:
            self._count(chunk)
            yield chunk
        counts = self._counts
        if self._usage is not None:
            counts.usage_reported = True
            counts.generated_tokens += int(self._usage.get("completion_tokens") or 0)
            counts.prompt_tokens += int(self._usage.get("prompt_tokens") or 0)
        else:
            counts.generated_tokens += self._pieces

    def _count(self, chunk: bytes) -> None:
        lines = (self._pending + chunk).split(b"\n")
        self._pending = lines.pop()
        for line in lines:
            if not line.startswith(b"data:") or line.strip() == b"data: [DONE]":
                continue
            try:
                data = json.loads(line[5:])
            except ValueError:
                continue
            if not isinstance(data, dict):
                continue
            if isinstance(data.get("usage"), dict):
                self._usage = data["usage"]
            for choice in data.get("choices") or ():
                delta = choice.get("delta") or {}
                fragments = [f.get("function") or {} for f in delta.get("tool_calls") or ()]
                if delta.get("content") or any(f.get("arguments") for f in fragments):
                    self._pieces += 1

    async def aclose(self) -> None:
        await self._wrapped.aclose()


class _CountingTransport(httpx.AsyncBaseTransport):
    """Counts what reaches the model server and what it generates (:class:`UpstreamCounts`)."""

    def __init__(self, wrapped: httpx.AsyncBaseTransport) -> None:
        self.wrapped = wrapped
        self.counts = UpstreamCounts()

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        self.counts.requests += 1
        self.counts.request_bytes += len(await request.aread())
        response = await self.wrapped.handle_async_request(request)
        stream = response.stream
        assert isinstance(stream, httpx.AsyncByteStream)
        return httpx.Response(
            response.status_code,
            headers=response.headers,
            stream=_CountingStream(stream, self.counts),
            extensions=response.extensions,
        )

    async def aclose(self) -> None:
        await self.wrapped.aclose()


@asynccontextmanager
async def proxy_app(
    upstream: str,
    provider: str,
    *,
    heal: bool,
    max_retries: int,
    wrapped: httpx.AsyncBaseTransport | None = None,
    tracer_provider: Any = None,
    meter_provider: Any = None,
    **settings: Any,
) -> AsyncIterator[tuple[str, _CountingTransport]]:
    """``toolwire serve`` in this process, on a free loopback port, for the block.

    ``wrapped`` sends the proxy's requests upstream (a plain HTTP transport by default);
    ``settings`` are more of the proxy's settings (``constrain``, ``max_tokens_ceiling``...),
    and the providers where its spans and metrics go (``bench/bench_constrained_reask.py``).
    """
    import uvicorn

    from ...serve import ServeSettings, create_app

    counting = _CountingTransport(wrapped or httpx.AsyncHTTPTransport())
    app = create_app(
        ServeSettings(
            upstream=upstream.rstrip("/"),
            provider=provider,
            heal=heal,
            max_retries=max_retries,
            **settings,
        ),
        upstream_transport=counting,
        tracer_provider=tracer_provider,
        meter_provider=meter_provider,
    )
    listening = socket.create_server(("127.0.0.1", 0))
    port = listening.getsockname()[1]
    server = uvicorn.Server(
        uvicorn.Config(app, log_level="warning", lifespan="on", access_log=False)
    )
    async with anyio.create_task_group() as group:
        # The socket already listens: a request sent before uvicorn accepts waits in the
        # backlog, so there is nothing to wait for here.
        group.start_soon(server.serve, [listening])
        try:
            yield f"http://127.0.0.1:{port}/v1", counting
        finally:
            server.should_exit = True
    listening.close()


def _request(
    model: str, messages: list[dict[str, Any]], tool: str, budget: int, choice: Any = None
) -> dict[str, Any]:
    return {
        "model": model,
        "messages": list(messages),
        "tools": TOOLS,
        "tool_choice": choice or {"type": "function", "function": {"name": tool}},
        "max_tokens": budget,
        "stream": True,
        "temperature": 0,
        "seed": 7,
    }


class _Received(msgspec.Struct, kw_only=True):
    calls: list[dict[str, Any]]
    finish_reason: str | None = None
    error: str | None = None


async def _one_turn(client: httpx.AsyncClient, request: dict[str, Any]) -> _Received:
    """Read one streamed response the way an SDK does: calls by index, finish, usage."""
    calls: dict[int, dict[str, Any]] = {}
    received = _Received(calls=[])
    try:
        async with client.stream("POST", "/chat/completions", json=request) as response:
            if response.status_code != 200:
                body = await response.aread()
                received.error = f"HTTP {response.status_code}: {body[:200]!r}"
                return received
            async for line in response.aiter_lines():
                if not line.startswith("data:"):
                    continue
                data = line[5:].strip()
                if data == "[DONE]":
                    break
                chunk = json.loads(data)
                if "error" in chunk:
                    received.error = str(chunk["error"].get("message", chunk["error"]))[:300]
                    break
                for choice in chunk.get("choices") or ():
                    for fragment in (choice.get("delta") or {}).get("tool_calls") or ():
                        entry = calls.setdefault(
                            fragment.get("index", 0), {"id": None, "name": "", "arguments": ""}
                        )
                        # The id and name are taken, not appended: llama-cpp-python repeats
                        # both in every piece of a call (an accumulator that appends them, as
                        # the openai SDK's stream helper does, gets `writewrite...`).
                        entry["id"] = fragment.get("id") or entry["id"]
                        function = fragment.get("function") or {}
                        entry["name"] = function.get("name") or entry["name"]
                        entry["arguments"] += function.get("arguments") or ""
                    if choice.get("finish_reason"):
                        received.finish_reason = choice["finish_reason"]
    except httpx.HTTPError as error:
        received.error = f"{type(error).__name__}: {error}"
    received.calls = [calls[index] for index in sorted(calls)]
    return received


def _check(call: dict[str, Any]) -> tuple[dict[str, Any] | None, str]:
    """The arguments when the call is usable, else ``None`` and why (a framework's check)."""
    schema = _SCHEMAS.get(call["name"])
    if schema is None:
        return None, f"no tool named {call['name']!r}"
    try:
        arguments = json.loads(call["arguments"])
    except ValueError as error:
        return None, f"arguments are not JSON: {error}"
    if not isinstance(arguments, dict):
        return None, "arguments are not an object"
    try:
        jsonschema.validate(arguments, schema)
    except jsonschema.ValidationError as error:
        return None, f"arguments do not fit the schema: {error.message}"
    return arguments, ""


async def run_plain_task(
    task: Task, budget: int, client: httpx.AsyncClient, model: str, *, tool_choice: Any = None
) -> PlainRun:
    """Run ``task`` at ``budget`` with the plain agent, through ``client`` (the proxy).

    ``tool_choice``: what each request says instead of naming the step's tool (llama-server
    b11434 reads a string only: a named function is ignored for ``auto``).
    """
    run = PlainRun(
        name=f"{task.name}@{budget}", task=task.name, budget=budget, steps=len(task.plan)
    )
    messages: list[dict[str, Any]] = [
        {"role": "system", "content": SYSTEM_PROMPT},
        {"role": "user", "content": task.prompt},
    ]
    with Sandbox() as sandbox:
        for _ in range(len(task.plan) * TURNS_PER_STEP):
            if run.completed:
                break
            tool = task.plan[run.steps_done]
            received = await _one_turn(client, _request(model, messages, tool, budget, tool_choice))
            run.turns += 1
            if received.error is not None:
                run.error_turns += 1
                continue
            if not received.calls:
                run.length_turns += received.finish_reason == "length"
                continue
            results: list[dict[str, Any]] = []
            broken = False
            step_done = False
            for number, call in enumerate(received.calls):
                call_id = call["id"] or f"call_{run.turns}_{number}"
                call["id"] = call_id
                arguments, why = _check(call)
                if arguments is None:
                    broken = True
                    run.broken_calls += 1
                    if len(run.broken_examples) < 3:
                        run.broken_examples.append(f"{call['name']}: {call['arguments'][:80]!r}")
                    content = f"Error: {why}. Send the call again with valid arguments."
                else:
                    try:
                        content = sandbox.run_tool(call["name"], arguments)
                    except SandboxError as error:
                        content = f"Error: {error}"
                    run.calls_run += 1
                    step_done = step_done or call["name"] == tool
                results.append({"role": "tool", "tool_call_id": call_id, "content": content})
            run.broken_turns += broken
            messages.append(
                {
                    "role": "assistant",
                    "content": "",
                    "tool_calls": [
                        {
                            "id": call["id"],
                            "type": "function",
                            "function": {"name": call["name"], "arguments": call["arguments"]},
                        }
                        for call in received.calls
                    ],
                }
            )
            messages += results
            if step_done:
                run.steps_done += 1
    return run


async def compare_healing(
    tasks: Sequence[Task],
    budgets: Sequence[int],
    *,
    upstream: str,
    provider: str,
    model: str,
    max_retries: int = 2,
    on_run: Callable[[bool, PlainRun], None] | None = None,
) -> HealingComparison:
    """The suite through the proxy with healing off, then on (see the module docstring)."""
    modes: dict[bool, ModeResult] = {}
    for heal in (False, True):
        async with proxy_app(upstream, provider, heal=heal, max_retries=max_retries) as (
            base_url,
            counting,
        ):
            runs: list[PlainRun] = []
            async with httpx.AsyncClient(base_url=base_url, timeout=600) as client:
                for task in tasks:
                    for budget in budgets:
                        run = await run_plain_task(task, budget, client, model)
                        runs.append(run)
                        if on_run is not None:
                            on_run(heal, run)
            modes[heal] = ModeResult(healing=heal, runs=runs, upstream=counting.counts).total()
    return HealingComparison(
        upstream=upstream,
        provider=provider,
        model=model,
        max_retries=max_retries,
        off=modes[False],
        on=modes[True],
    )
