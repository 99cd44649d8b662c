"""A real pydantic-ai ``Agent``, unchanged but for its HTTP client, healed by ``HealingTransport``.

The agent uses pydantic-ai's own OpenAI Chat model (``OpenAIChatModel``) and a tool that records
each call; the loopback upstream (``upstream.py``) refuses a malformed history as a real backend
does and answers, in order: a broken call (the real llama-cpp-python recordings of calls cut at
``max_tokens``, or a broken ``arguments`` string of ``tests/data/vectors/tool_args.jsonl``: a
fence, bare keys, Windows backslashes), the corrected call when asked again, then the final
text. Both of pydantic-ai's paths run: ``Agent.run_stream`` (a streamed request: the recordings
byte for byte) and ``Agent.run`` (a non-streamed request: a ``chat.completion`` body holding
the same call, its arguments byte for byte).

The same broken calls also go to pydantic-ai with no healing, to show what it does with them on
its own. pydantic-ai 2.68's ``Agent`` runs on asyncio only (it calls ``asyncio.create_task``),
so these tests do too; one test pins that.
"""

from __future__ import annotations

import gc
import json
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any

import anyio
import httpx
import httpx2
import openai
import pytest
from _toolwire_testdata import json_chunks, load_stream, load_vectors
from e2e.server import text_reply, tool_calls_reply
from pydantic_ai import (
    Agent,
    OutputTokenLimitExceeded,
    PydanticAIDeprecationWarning,
    UnexpectedModelBehavior,
)
from pydantic_ai.messages import ModelMessage, ToolCallPart, ToolReturnPart
from pydantic_ai.models.openai import OpenAIChatModel
from pydantic_ai.providers.openai import OpenAIProvider
from pydantic_ai.settings import ModelSettings

import toolwire
from toolwire.adapters.openai_chat.completion import completion_as_stream
from toolwire.heal import Httpx2Bridge

from .client import SDK_ON_TRIO_LEAK
from .upstream import HealUpstream, Reply, completion, running_upstream

pytestmark = [pytest.mark.anyio, pytest.mark.filterwarnings(SDK_ON_TRIO_LEAK)]

PROVIDER = "llama-cpp"
PROMPT = "Write hello to notes.txt"
FINAL = "Done: notes.txt says hello."
#: What pydantic-ai writes when it asks the model again itself (a tool return with
#: ``outcome='retried'``): its validation error types and words, and the wrapper it replays
#: arguments that do not parse in.
PYDANTIC_AI_RETRY_MARKS = (
    "Unknown tool name",
    "json_invalid",
    "Fix the errors and try again",
    "validation error",
    "INVALID_JSON",
)


@pytest.fixture
def anyio_backend() -> str:
    """pydantic-ai's ``Agent`` runs on asyncio only (see the trio test at the end)."""
    return "asyncio"


# -- the agent's tools ----------------------------------------------------------------------------


@dataclass
class Toolbox:
    """Python functions given to the agent as tools; each call is recorded."""

    ran: list[tuple[str, dict[str, Any]]] = field(default_factory=list)

    def tools(self) -> list[Callable[..., str]]:
        def write(path: str, content: str) -> str:
            """Write ``content`` to the file at ``path``."""
            self.ran.append(("write", {"path": path, "content": content}))
            return "written"

        def read(path: str) -> str:
            """Read the file at ``path``."""
            self.ran.append(("read", {"path": path}))
            return "hello"

        def list_channels(guild_id: str, limit: int) -> str:
            """List up to ``limit`` channels of a guild."""
            self.ran.append(("list_channels", {"guild_id": guild_id, "limit": limit}))
            return "general"

        return [write, read, list_channels]


# -- the broken calls -----------------------------------------------------------------------------


@dataclass(frozen=True)
class Broken:
    """One broken call: the streamed turn that carries it, and what healing does with it."""

    tool: str
    #: The streamed turn (a recording's bytes, or the arguments sent in small fragments).
    stream: bytes
    #: ``retry``: rejected, asked again; ``repair``: repaired in place, no request more.
    healed_by: str
    #: What the tool runs with once healed (the corrected call's, or the repaired arguments).
    arguments: dict[str, Any]
    #: The request's ``max_tokens`` (the recording's limit), or ``None``.
    max_tokens: int | None = None

    def whole(self) -> bytes:
        """The same call as a non-streamed ``chat.completion`` body (arguments byte for byte)."""
        call_id, name, arguments = _accumulated(self.stream)
        assert name == self.tool
        return completion((call_id, name, arguments))

    def body(self, mode: str) -> bytes:
        return self.stream if mode == "run_stream" else self.whole()


def _accumulated(stream: bytes) -> tuple[str, str, str]:
    """A streamed turn's one call as a client that keeps the first name reads it: id, name,
    the arguments string."""
    call_id, name, arguments = None, "", ""
    for chunk in json_chunks(stream):
        for choice in chunk["choices"]:
            for fragment in choice["delta"].get("tool_calls") or ():
                call_id = call_id or fragment.get("id")
                name = name or (fragment.get("function") or {}).get("name") or ""
                arguments += (fragment.get("function") or {}).get("arguments") or ""
    assert call_id is not None
    return call_id, name, arguments


WRITE = {"path": "notes.txt", "content": "hello"}
READ = {"path": "notes.txt"}


def _llama(name: str, limit: int, tool: str, good: dict[str, Any]) -> Broken:
    return Broken(tool, load_stream(f"llama-cpp-python/{name}"), "retry", good, limit)


def _vector(vector_id: str, tool: str) -> Broken:
    (vector,) = [v for v in load_vectors("tool_args.jsonl") if v["id"] == vector_id]
    assert vector["expect"] == "repair"
    stream = tool_calls_reply(("call_bad", tool, vector["raw"]))
    return Broken(tool, stream, "repair", vector["expected_args"])


#: The real llama-cpp-python recording of a ``write`` cut at ``max_tokens=24`` (the server
#: said ``finish_reason: tool_calls``, and repeats the tool's name on every chunk).
CUT_WRITE_24 = _llama("write_max_tokens_24_cut_mid_string.real.sse", 24, "write", WRITE)
BROKEN_CALLS = [
    pytest.param(CUT_WRITE_24, id="llama-write-24"),
    pytest.param(
        _llama("write_max_tokens_12_cut_mid_string.real.sse", 12, "write", WRITE),
        id="llama-write-12",
    ),
    pytest.param(_llama("read_max_tokens_5.real.sse", 5, "read", READ), id="llama-read-5"),
    pytest.param(_vector("oxi-O3", "read"), id="fence"),
    pytest.param(_vector("tiny-T20", "list_channels"), id="bare-keys"),
    pytest.param(_vector("x-windows-path", "read"), id="windows-backslashes"),
]
MODES = ["run_stream", "run"]


def _corrected(broken: Broken, mode: str) -> bytes:
    arguments = json.dumps(broken.arguments)
    if mode == "run_stream":
        return tool_calls_reply(("call_fixed", broken.tool, arguments))
    return completion(("call_fixed", broken.tool, arguments))


def _final_text(mode: str) -> bytes:
    if mode == "run_stream":
        return text_reply(FINAL)
    return completion(content=FINAL, finish_reason="stop")


# -- the agent ------------------------------------------------------------------------------------


@pytest.fixture
def upstream() -> Iterator[HealUpstream]:
    with running_upstream() as scripted:
        yield scripted


@asynccontextmanager
async def provider_for(kind: str, base_url: str) -> AsyncIterator[OpenAIProvider]:
    """pydantic-ai's OpenAI provider over a healing client, or over a plain one.

    ``openai-httpx``: an ``openai.AsyncOpenAI`` built on ``httpx.AsyncClient(transport=
    HealingTransport(...))``; ``httpx2-bridge``: pydantic-ai's own preferred form, an
    ``httpx2.AsyncClient`` (``Httpx2Bridge(HealingTransport(...))``); ``plain``: no healing.
    """
    if kind == "httpx2-bridge":
        bridge = Httpx2Bridge(toolwire.HealingTransport(provider=PROVIDER))
        async with httpx2.AsyncClient(transport=bridge, timeout=10) as http2:
            yield OpenAIProvider(base_url=base_url, api_key="sk-test", http_client=http2)
        return
    transport: httpx.AsyncBaseTransport = (
        httpx.AsyncHTTPTransport()
        if kind == "plain"
        else toolwire.HealingTransport(wrapped=httpx.AsyncHTTPTransport(), provider=PROVIDER)
    )
    async with httpx.AsyncClient(transport=transport, timeout=10) as http:
        async with openai.AsyncOpenAI(
            base_url=base_url, api_key="sk-test", max_retries=0, http_client=http
        ) as client:
            yield OpenAIProvider(openai_client=client)


async def run_agent(
    provider: OpenAIProvider, toolbox: Toolbox, mode: str, max_tokens: int | None
) -> tuple[str, list[ModelMessage]]:
    """The agent's whole run: its output and every message of it."""
    agent = Agent(OpenAIChatModel("scripted-model", provider=provider), tools=toolbox.tools())
    settings = ModelSettings(max_tokens=max_tokens) if max_tokens is not None else None
    if mode == "run":
        result = await agent.run(PROMPT, model_settings=settings)
        return result.output, result.all_messages()
    async with agent.run_stream(PROMPT, model_settings=settings) as streamed:
        output = await streamed.get_output()
    return output, streamed.all_messages()


def _parts(messages: list[ModelMessage]) -> list[Any]:
    return [part for message in messages for part in message.parts]


async def _verdict_message(broken: Broken, mode: str, sent: dict[str, Any]) -> str:
    """What toolwire tells the model about the broken call, read as the transport read it."""
    body = (
        broken.stream if mode == "run_stream" else completion_as_stream(json.loads(broken.whole()))
    )
    turn = await toolwire.Pipeline(PROVIDER).collect(body, request=sent)
    (call,) = turn.calls
    assert call.verdict is not None
    assert call.verdict.message
    return call.verdict.message


def _tool_results(sent: dict[str, Any]) -> list[str]:
    """The text of every tool result a request carried (``tool``, or llama-cpp's ``user``)."""
    return [m["content"] for m in sent["messages"] if "tool_call_id" in m]


# -- healed: the tool runs once, no broken call reaches pydantic-ai -------------------------------


def _assert_healed(
    broken: Broken, toolbox: Toolbox, output: str, messages: list[ModelMessage]
) -> None:
    assert toolbox.ran == [(broken.tool, broken.arguments)]  # once, with the right arguments
    assert output == FINAL
    parts = _parts(messages)
    calls = [part for part in parts if isinstance(part, ToolCallPart)]
    assert [(c.tool_name, c.args_as_dict()) for c in calls] == [(broken.tool, broken.arguments)]
    returns = [part for part in parts if isinstance(part, ToolReturnPart)]
    assert [r.outcome for r in returns] == ["success"]  # pydantic-ai never asked again itself
    assert [type(p).__name__ for p in parts if "Retry" in type(p).__name__] == []


async def _assert_upstream_saw_healing(broken: Broken, mode: str, upstream: HealUpstream) -> None:
    assert upstream.refused == []
    for sent in upstream.requests:  # no pydantic-ai retry prompt, nothing broken replayed
        text = json.dumps(sent)
        assert not [mark for mark in PYDANTIC_AI_RETRY_MARKS if mark in text]
    if broken.healed_by == "repair":
        assert len(upstream.requests) == 2  # the repaired call ran; then the final answer
        return
    first, retry, after_tool = upstream.requests
    message = await _verdict_message(broken, mode, first)
    (result,) = _tool_results(retry)
    assert result.endswith("\n" + message)  # toolwire's message, in llama-cpp's user form
    assert "output-token limit" in message
    assert toolwire.Pipeline(PROVIDER).check_history(retry["messages"]) == []
    # pydantic-ai sends its ``max_tokens`` setting as ``max_completion_tokens``; kept as it was.
    limit = broken.max_tokens
    assert retry.get("max_completion_tokens") == first.get("max_completion_tokens") == limit
    (ran,) = _tool_results(after_tool)  # pydantic-ai's role: tool, adapted to llama-cpp's form
    assert ran.endswith("):\n" + ("written" if broken.tool == "write" else "hello"))


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("client", ["openai-httpx", "httpx2-bridge"])
async def test_a_cut_call_is_healed_and_the_agent_runs_its_tool_once(
    anyio_backend: str, upstream: HealUpstream, client: str, mode: str
) -> None:
    broken = CUT_WRITE_24
    upstream.script(
        Reply(broken.body(mode)), Reply(_corrected(broken, mode)), Reply(_final_text(mode))
    )
    toolbox = Toolbox()
    async with provider_for(client, upstream.base_url) as provider:
        output, messages = await run_agent(provider, toolbox, mode, broken.max_tokens)
    _assert_healed(broken, toolbox, output, messages)
    await _assert_upstream_saw_healing(broken, mode, upstream)


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("broken", BROKEN_CALLS)
async def test_every_broken_call_is_healed_before_pydantic_ai_sees_it(
    anyio_backend: str, upstream: HealUpstream, broken: Broken, mode: str
) -> None:
    replies = [Reply(broken.body(mode))]
    if broken.healed_by == "retry":
        replies.append(Reply(_corrected(broken, mode)))
    upstream.script(*replies, Reply(_final_text(mode)))
    toolbox = Toolbox()
    async with provider_for("openai-httpx", upstream.base_url) as provider:
        output, messages = await run_agent(provider, toolbox, mode, broken.max_tokens)
    _assert_healed(broken, toolbox, output, messages)
    await _assert_upstream_saw_healing(broken, mode, upstream)


async def test_past_the_retries_pydantic_ai_raises_its_own_token_limit_error(
    anyio_backend: str, upstream: HealUpstream
) -> None:
    """Every answer is cut: the turn finishes ``length`` with no call, and pydantic-ai's own
    handling of a response cut at ``max_tokens`` fires."""
    broken = CUT_WRITE_24
    upstream.script(*(Reply(broken.stream) for _ in range(3)))
    toolbox = Toolbox()
    async with provider_for("openai-httpx", upstream.base_url) as provider:
        with pytest.raises(OutputTokenLimitExceeded):
            await run_agent(provider, toolbox, "run_stream", broken.max_tokens)
    assert toolbox.ran == []
    assert len(upstream.requests) == 3  # the request and the transport's 2 retries
    assert upstream.refused == []


COMPLETE_WRITE = load_stream("llama-cpp-python/write_complete.real.sse")


@pytest.mark.parametrize("client", ["openai-httpx", "plain"])
async def test_a_complete_llama_cpp_call_runs_first_time_only_when_healed(
    anyio_backend: str, upstream: HealUpstream, client: str
) -> None:
    """llama-cpp-python repeats the tool's name on every chunk of a streamed call; pydantic-ai
    appends each one, so even a valid call names no tool it has. Healed, every call goes out
    whole, its name once: it runs at once, with the recording's (valid) arguments."""
    _, _, recorded = _accumulated(COMPLETE_WRITE)
    toolbox = Toolbox()
    if client == "plain":
        corrected = tool_calls_reply(("call_fixed", "write", json.dumps(WRITE)))
        upstream.script(Reply(COMPLETE_WRITE), Reply(corrected), Reply(text_reply(FINAL)))
    else:
        upstream.script(Reply(COMPLETE_WRITE), Reply(text_reply(FINAL)))
    async with provider_for(client, upstream.base_url) as provider:
        output, messages = await run_agent(provider, toolbox, "run_stream", None)
    assert output == FINAL
    returns = [part for part in _parts(messages) if isinstance(part, ToolReturnPart)]
    if client == "plain":
        assert [r.outcome for r in returns] == ["retried", "success"]
        assert isinstance(returns[0].content, str)
        assert returns[0].content.startswith("Unknown tool name: 'writewrite")
        assert toolbox.ran == [("write", WRITE)]  # only the next answer's call could run
    else:
        assert [r.outcome for r in returns] == ["success"]
        assert toolbox.ran == [("write", json.loads(recorded))]  # byte for byte, parsed
        assert len(upstream.requests) == 2  # the call, then the final answer
    assert upstream.refused == []


# -- not healed: what pydantic-ai does with the same calls on its own -----------------------------


def _name_repeats(recording: bytes, tool: str) -> int:
    """How many chunks of a recording carry the tool's name (llama-cpp-python: every one)."""
    return sum(
        1
        for chunk in json_chunks(recording)
        for choice in chunk["choices"]
        for fragment in choice["delta"].get("tool_calls") or ()
        if (fragment.get("function") or {}).get("name") == tool
    )


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("broken", BROKEN_CALLS)
async def test_without_healing_pydantic_ai_asks_again_itself(
    anyio_backend: str, upstream: HealUpstream, broken: Broken, mode: str
) -> None:
    """The broken call reaches pydantic-ai: it never runs the tool with it, and asks the model
    again with its own words (a tool return with ``outcome='retried'``), replaying the broken
    arguments wrapped as ``{"INVALID_JSON": raw}``. The model is never told of a token limit.
    """
    upstream.script(
        Reply(broken.body(mode)), Reply(_corrected(broken, mode)), Reply(_final_text(mode))
    )
    toolbox = Toolbox()
    async with provider_for("plain", upstream.base_url) as provider:
        output, messages = await run_agent(provider, toolbox, mode, broken.max_tokens)
    assert output == FINAL
    assert toolbox.ran == [(broken.tool, broken.arguments)]  # only the corrected call ran
    parts = _parts(messages)
    received, corrected = [part for part in parts if isinstance(part, ToolCallPart)]
    own_retry, success = [part for part in parts if isinstance(part, ToolReturnPart)]
    assert (own_retry.outcome, success.outcome) == ("retried", "success")
    assert corrected.tool_call_id == "call_fixed"

    llama_stream = mode == "run_stream" and broken.healed_by == "retry"
    if llama_stream:
        # llama-cpp-python repeats the name on every chunk; pydantic-ai appends each one, so
        # the call names no tool it has, and the model is told so (not that it was cut).
        assert received.tool_name == broken.tool * _name_repeats(broken.stream, broken.tool)
        assert isinstance(own_retry.content, str)
        assert own_retry.content.startswith(f"Unknown tool name: '{received.tool_name}'")
    else:
        assert received.tool_name == broken.tool
        assert isinstance(own_retry.content, list)
        assert [error["type"] for error in own_retry.content] == ["json_invalid"]

    assert upstream.refused == []  # its own retry's history is one the server accepts
    _, own, _ = upstream.requests
    (replayed,) = [c for m in own["messages"] for c in m.get("tool_calls") or ()]
    assert json.loads(replayed["function"]["arguments"]).keys() == {"INVALID_JSON"}
    (feedback,) = _tool_results(own)
    assert "output-token limit" not in feedback
    assert any(mark in feedback for mark in PYDANTIC_AI_RETRY_MARKS)


async def test_without_healing_a_repeated_cut_ends_the_run_with_no_word_of_the_limit(
    anyio_backend: str, upstream: HealUpstream
) -> None:
    """The model answers with the same cut call twice: pydantic-ai's one tool retry is spent
    and the run fails on an unknown tool, not on the token limit (healed, the same answers end
    in ``OutputTokenLimitExceeded``: see ``test_past_the_retries_...``)."""
    broken = CUT_WRITE_24
    upstream.script(*(Reply(broken.stream) for _ in range(3)))
    toolbox = Toolbox()
    async with provider_for("plain", upstream.base_url) as provider:
        with pytest.raises(
            UnexpectedModelBehavior, match=r"'(write)+' exceeded max retries"
        ) as raised:
            await run_agent(provider, toolbox, "run_stream", broken.max_tokens)
    assert not isinstance(raised.value, OutputTokenLimitExceeded)
    assert toolbox.ran == []
    assert len(upstream.requests) == 2


# -- how pydantic-ai takes the client, and where it runs ------------------------------------------


async def test_pydantic_ai_deprecates_an_httpx_client_for_its_provider(
    anyio_backend: str,
) -> None:
    """Why the bridge: ``OpenAIProvider(http_client=httpx.AsyncClient(...))`` warns; an
    ``httpx2`` client (or an ``openai_client`` built on ``httpx``) does not."""
    transport = toolwire.HealingTransport(provider=PROVIDER)
    async with httpx.AsyncClient(transport=transport) as http:
        with pytest.warns(PydanticAIDeprecationWarning, match="httpx2.AsyncClient"):
            OpenAIProvider(base_url="http://127.0.0.1:9/v1", api_key="sk-test", http_client=http)


@pytest.mark.filterwarnings("ignore:coroutine '.*' was never awaited:RuntimeWarning")
def test_a_pydantic_ai_agent_does_not_run_on_trio() -> None:
    """pydantic-ai 2.68 starts its run with ``asyncio.create_task``: on trio it fails before any
    request (toolwire's transport runs on both). When this test fails, give this module both
    backends again."""

    async def run_on_trio() -> None:
        async with provider_for("httpx2-bridge", "http://127.0.0.1:9/v1") as provider:
            await run_agent(provider, Toolbox(), "run_stream", None)

    with pytest.raises(RuntimeError, match="no running event loop"):
        anyio.run(run_on_trio, backend="trio")
    gc.collect()  # the coroutines it created and never awaited warn now, under this filter
