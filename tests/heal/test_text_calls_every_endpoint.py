"""One setting names the upstream's kind, and calls left in the text are read on every endpoint
it serves (issue 28, item 7; issue 30, last point).

A local server answers ``/v1/chat/completions``, ``/v1/messages``, ``/v1/responses`` and
``/api/chat`` with the same model and the same tool parser, so a call its parser missed stays
in the text on each of them. Here a scripted local server (``local_server.py``) writes the
model's ``<tool_call>`` text on each endpoint, streamed and whole, and each client is the real
SDK of that format (openai for Chat Completions and Responses, anthropic for Messages, ollama
for ``/api/chat``), through :class:`toolwire.HealingTransport` and through the ``toolwire
serve`` app (in process), both given only ``provider``:

- on a local upstream (``llama-server``; ``ollama`` for ``/api/chat``) the call reaches the
  client in its format's own structured shape, its markup gone from the text, and the history
  the client sends back is one the server converts and renders (a structured call, nothing of
  the markup in the assistant's text);
- a call cut at the output-token limit never reaches the client: it is asked for again, and
  the retry carries it as a rejected structured call the server accepts;
- markup that is no call (quoted in prose, naming a tool nobody offered) stays text;
- on a hosted upstream (the default ``openai-chat``) the text passes as it was on the three
  endpoints hosted APIs serve; ``/api/chat``, which only local servers serve, reads them
  whatever the upstream is named.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Iterator, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Any, Protocol

import anthropic
import httpx
import httpx2
import ollama
import openai
import pytest

import toolwire
from toolwire.heal import Httpx2Bridge
from toolwire.serve import ServeSettings, create_app

from .client import SDK_ON_TRIO_LEAK, read_stream
from .local_server import Endpoint, LocalServer, Output, running_local_server

pytestmark = [
    pytest.mark.anyio,
    pytest.mark.filterwarnings(SDK_ON_TRIO_LEAK),
    pytest.mark.filterwarnings(
        "ignore:Async generator '(anthropic|ollama|httpx|httpx2|httpcore|httpcore2)[.]"
        ":ResourceWarning"
    ),
]

ASK = "What is the weather in Paris?"
SCHEMA = {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}
PARIS = {"city": "Paris"}
SAID = "Let me check.\n"
#: Qwen / Hermes markup, as a model on a server whose parser missed it writes it.
CALL = '<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris"}}\n</tool_call>'
#: The same call cut at the output-token limit inside its value.
CUT = '<tool_call>\n{"name": "get_weather", "arguments": {"city": "Pa'
RESULT = "18 C, clear"
ANSWER = "It is 18 C and clear in Paris."

ENDPOINTS: tuple[Endpoint, ...] = ("chat", "messages", "responses", "ollama")
#: The kind of local server that serves each endpoint (llama-server serves no ``/api/chat``).
LOCAL: dict[Endpoint, str] = {
    "chat": "llama-server",
    "messages": "llama-server",
    "responses": "llama-server",
    "ollama": "ollama",
}
HOSTED = "openai-chat"


@dataclass
class Got:
    """One turn as the client received it, and what it sends back after it."""

    text: str
    #: ``(id, name, arguments)`` of each call, arguments as the client parsed them.
    calls: list[tuple[str, str, Any]]
    finish: str | None
    #: The client's next messages: its assistant turn as its SDK gave it, one result per call.
    back: list[Any]


class Client(Protocol):
    """One format's SDK over a transport: ask once (after ``history``), then close."""

    #: The client's finish for a turn that ends with calls, and for one of text only.
    calls_finish: str
    text_finish: str

    async def ask(self, *, streamed: bool, history: Sequence[Any] = ()) -> Got: ...

    async def aclose(self) -> None: ...


class _Chat:
    calls_finish = "tool_calls"
    text_finish = "stop"

    def __init__(self, transport: httpx.AsyncBaseTransport, root: str) -> None:
        http = httpx.AsyncClient(transport=transport, timeout=10)
        self.client = openai.AsyncOpenAI(
            base_url=f"{root}/v1", api_key="sk-local", max_retries=0, http_client=http
        )

    async def ask(self, *, streamed: bool, history: Sequence[Any] = ()) -> Got:
        body: dict[str, Any] = {
            "model": "local-model",
            "messages": [{"role": "user", "content": ASK}, *history],
            "tools": [
                {"type": "function", "function": {"name": "get_weather", "parameters": SCHEMA}}
            ],
            "max_tokens": 64,
        }
        if streamed:
            received = await read_stream(
                await self.client.chat.completions.create(**body, stream=True)
            )
            text, raw, finish = received.text, received.calls, received.finish_reason
        else:
            (choice,) = (await self.client.chat.completions.create(**body)).choices
            text, finish = choice.message.content or "", choice.finish_reason
            raw = [
                {"id": c.id, "name": c.function.name, "arguments": c.function.arguments}
                for c in choice.message.tool_calls or ()
                if c.type == "function"
            ]
        assistant: dict[str, Any] = {"role": "assistant", "content": text or None}
        if raw:
            assistant["tool_calls"] = [
                {
                    "id": c["id"],
                    "type": "function",
                    "function": {"name": c["name"], "arguments": c["arguments"]},
                }
                for c in raw
            ]
        results = [{"role": "tool", "tool_call_id": c["id"], "content": RESULT} for c in raw]
        return Got(
            text,
            [(c["id"], c["name"], json.loads(c["arguments"])) for c in raw],
            finish,
            [assistant, *results],
        )

    async def aclose(self) -> None:
        await self.client.close()


class _Messages:
    calls_finish = "tool_use"
    text_finish = "end_turn"

    def __init__(self, transport: httpx.AsyncBaseTransport, root: str) -> None:
        http = httpx2.AsyncClient(transport=Httpx2Bridge(transport), timeout=10)
        self.client = anthropic.AsyncAnthropic(
            base_url=root, api_key="sk-ant-local", max_retries=0, http_client=http
        )

    async def ask(self, *, streamed: bool, history: Sequence[Any] = ()) -> Got:
        body: dict[str, Any] = {
            "model": "local-model",
            "max_tokens": 64,
            "messages": [{"role": "user", "content": ASK}, *history],
            "tools": [{"name": "get_weather", "input_schema": SCHEMA}],
        }
        if streamed:
            async with self.client.messages.stream(**body) as stream:
                message = await stream.get_final_message()
        else:
            message = await self.client.messages.create(**body)
        uses = [block for block in message.content if block.type == "tool_use"]
        results = [
            {"type": "tool_result", "tool_use_id": block.id, "content": RESULT} for block in uses
        ]
        back: list[Any] = [{"role": "assistant", "content": message.content}]
        if results:
            back.append({"role": "user", "content": results})
        return Got(
            "".join(block.text for block in message.content if block.type == "text"),
            [(block.id, block.name, block.input) for block in uses],
            message.stop_reason,
            back,
        )

    async def aclose(self) -> None:
        await self.client.close()


class _Responses:
    calls_finish = "completed"
    text_finish = "completed"

    def __init__(self, transport: httpx.AsyncBaseTransport, root: str) -> None:
        http = httpx.AsyncClient(transport=transport, timeout=10)
        self.client = openai.AsyncOpenAI(
            base_url=f"{root}/v1", api_key="sk-local", max_retries=0, http_client=http
        )

    async def ask(self, *, streamed: bool, history: Sequence[Any] = ()) -> Got:
        body: dict[str, Any] = {
            "model": "local-model",
            "input": [{"role": "user", "content": ASK}, *history],
            "tools": [{"type": "function", "name": "get_weather", "parameters": SCHEMA}],
            "max_output_tokens": 64,
        }
        if streamed:
            async with self.client.responses.stream(**body) as stream:
                response = await stream.get_final_response()
        else:
            response = await self.client.responses.create(**body)
        calls = [item for item in response.output if item.type == "function_call"]
        results = [
            {"type": "function_call_output", "call_id": item.call_id, "output": RESULT}
            for item in calls
        ]
        return Got(
            response.output_text,
            [(item.call_id, item.name, json.loads(item.arguments)) for item in calls],
            response.status,
            [*response.output, *results],
        )

    async def aclose(self) -> None:
        await self.client.close()


class _Ollama:
    calls_finish = "stop"  # Ollama says ``stop`` after calls too
    text_finish = "stop"

    def __init__(self, transport: httpx.AsyncBaseTransport, root: str) -> None:
        self.client = ollama.AsyncClient(host=root, transport=transport, timeout=10)

    async def ask(self, *, streamed: bool, history: Sequence[Any] = ()) -> Got:
        body: dict[str, Any] = {
            "model": "qwen3:8b",
            "messages": [{"role": "user", "content": ASK}, *history],
            "tools": [
                {"type": "function", "function": {"name": "get_weather", "parameters": SCHEMA}}
            ],
            "options": {"num_predict": 64},
        }
        if streamed:
            parts = [part async for part in await self.client.chat(**body, stream=True)]
        else:
            parts = [await self.client.chat(**body, stream=False)]
        text = "".join(part.message.content or "" for part in parts)
        calls = [call for part in parts for call in part.message.tool_calls or ()]
        assistant: dict[str, Any] = {"role": "assistant", "content": text}
        if calls:
            assistant["tool_calls"] = [
                {"function": {"name": c.function.name, "arguments": dict(c.function.arguments)}}
                for c in calls
            ]
        results = [{"role": "tool", "tool_name": c.function.name, "content": RESULT} for c in calls]
        return Got(
            text,
            [("", c.function.name, dict(c.function.arguments)) for c in calls],
            parts[-1].done_reason,
            [assistant, *results],
        )

    async def aclose(self) -> None:
        await self.client.close()


CLIENTS: dict[Endpoint, type[_Chat | _Messages | _Responses | _Ollama]] = {
    "chat": _Chat,
    "messages": _Messages,
    "responses": _Responses,
    "ollama": _Ollama,
}


@pytest.fixture(scope="module")
def module_server() -> Iterator[LocalServer]:
    with running_local_server() as scripted:
        yield scripted


@pytest.fixture
def server(module_server: LocalServer) -> LocalServer:
    module_server.reset()
    return module_server


@asynccontextmanager
async def connected(
    shell: str, endpoint: Endpoint, server: LocalServer, provider: str
) -> AsyncIterator[Client]:
    """``endpoint``'s SDK through ``shell``: the healing transport, or the proxy app in process
    (``toolwire serve --provider PROVIDER --upstream <server>/v1``)."""
    app = None
    transport: httpx.AsyncBaseTransport
    if shell == "transport":
        transport, root = toolwire.HealingTransport(provider=provider), server.base_url
    else:
        app = create_app(ServeSettings(upstream=f"{server.base_url}/v1", provider=provider))
        transport, root = httpx.ASGITransport(app=app), "http://proxy.test"
    client = CLIENTS[endpoint](transport, root)
    try:
        yield client
    finally:
        await client.aclose()
        if app is not None:
            await app.aclose()


def _assistant_texts(view: list[dict[str, Any]]) -> str:
    """Every assistant text of a history, as the server's Chat messages hold it."""
    texts = []
    for message in view:
        if message.get("role") != "assistant":
            continue
        content = message.get("content")
        if isinstance(content, str):
            texts.append(content)
        for part in content if isinstance(content, list) else ():
            texts.append(part.get("text", ""))
    return "".join(texts)


def _calls_in(view: list[dict[str, Any]]) -> list[tuple[str, Any]]:
    return [
        (call["function"]["name"], json.loads(call["function"]["arguments"]))
        for message in view
        for call in message.get("tool_calls") or ()
    ]


SHELLS = pytest.mark.parametrize("shell", ["transport", "proxy"])
STREAMED = pytest.mark.parametrize("streamed", [True, False], ids=["streamed", "whole"])
EVERY_ENDPOINT = pytest.mark.parametrize("endpoint", ENDPOINTS)


@SHELLS
@STREAMED
@EVERY_ENDPOINT
async def test_a_call_in_the_text_reaches_the_client_structured_and_goes_back_structured(
    anyio_backend: str, server: LocalServer, shell: str, streamed: bool, endpoint: Endpoint
) -> None:
    server.script(Output(SAID + CALL), Output(ANSWER))
    async with connected(shell, endpoint, server, LOCAL[endpoint]) as client:
        got = await client.ask(streamed=streamed)
        assert [call[1:] for call in got.calls] == [("get_weather", PARIS)]
        assert got.text == SAID  # the markup never reaches the client's text
        assert got.finish == client.calls_finish
        # The agent runs the tool and sends the turn back as its SDK gave it.
        answer = await client.ask(streamed=streamed, history=got.back)
    assert (answer.text, answer.calls, answer.finish) == (ANSWER, [], client.text_finish)
    assert server.refused == []  # the server converts and renders that history
    _, then = server.chat_views
    assert _calls_in(then) == [("get_weather", PARIS)]
    assert "<tool_call>" not in _assistant_texts(then)  # the call is not there twice
    results = [m for m in then if m.get("role") == "tool"]
    assert [m["content"] for m in results] == [RESULT]


@SHELLS
@STREAMED
@EVERY_ENDPOINT
async def test_a_cut_call_in_the_text_is_asked_for_again_never_delivered(
    anyio_backend: str, server: LocalServer, shell: str, streamed: bool, endpoint: Endpoint
) -> None:
    server.script(Output(SAID + CUT, "length"), Output(CALL))
    async with connected(shell, endpoint, server, LOCAL[endpoint]) as client:
        got = await client.ask(streamed=streamed)
    assert [call[1:] for call in got.calls] == [("get_weather", PARIS)]  # the retry's call
    assert got.text == SAID  # what came before the cut markup; nothing of the markup
    assert got.finish == client.calls_finish
    assert len(server.requests) == 2
    assert server.refused == []  # the retry's history is one the server renders
    first, retry = server.chat_views
    asked = retry[len(first) :]
    # The cut call went back as a rejected structured call ({}), with toolwire's message.
    assert _calls_in(asked) == [("get_weather", {})]
    assert "<tool_call>" not in _assistant_texts(asked)
    (result,) = [m for m in asked if m.get("role") == "tool"]
    assert "cut off" in json.dumps(result)


#: Markup that is no call: quoted in prose, and a call to a tool nobody offered.
PROSE = [
    "A model writes " + CALL + " and then stops; that is all.",
    '<tool_call>\n{"name": "delete_everything", "arguments": {}}\n</tool_call>',
]


@SHELLS
@STREAMED
@EVERY_ENDPOINT
@pytest.mark.parametrize("prose", PROSE, ids=["quoted", "unoffered"])
async def test_on_a_local_upstream_markup_that_is_no_call_stays_text(
    anyio_backend: str,
    server: LocalServer,
    shell: str,
    streamed: bool,
    endpoint: Endpoint,
    prose: str,
) -> None:
    server.script(Output(prose))
    async with connected(shell, endpoint, server, LOCAL[endpoint]) as client:
        got = await client.ask(streamed=streamed)
    assert (got.text, got.calls, got.finish) == (prose, [], client.text_finish)
    assert len(server.requests) == 1


@SHELLS
@STREAMED
@pytest.mark.parametrize("endpoint", ["chat", "messages", "responses"])
async def test_on_a_hosted_upstream_the_text_is_left_alone(
    anyio_backend: str, server: LocalServer, shell: str, streamed: bool, endpoint: Endpoint
) -> None:
    server.script(Output(SAID + CALL))
    async with connected(shell, endpoint, server, HOSTED) as client:
        got = await client.ask(streamed=streamed)
    assert (got.text, got.calls, got.finish) == (SAID + CALL, [], client.text_finish)
    assert len(server.requests) == 1


@SHELLS
@STREAMED
async def test_api_chat_reads_text_calls_whatever_the_upstream_is_named(
    anyio_backend: str, server: LocalServer, shell: str, streamed: bool
) -> None:
    # Only local servers serve /api/chat (Ollama, SGLang): its calls left in the text are read
    # with the default provider too, as before the setting named the upstream.
    server.script(Output(SAID + CALL))
    async with connected(shell, "ollama", server, HOSTED) as client:
        got = await client.ask(streamed=streamed)
    assert ([c[1:] for c in got.calls], got.text) == ([("get_weather", PARIS)], SAID)


@SHELLS
@pytest.mark.parametrize("endpoint", ["chat", "messages", "responses"])
async def test_an_upstream_named_ollama_reads_text_calls_on_its_other_endpoints(
    anyio_backend: str, server: LocalServer, shell: str, endpoint: Endpoint
) -> None:
    # Ollama serves /v1/chat/completions (the ollama-openai profile), /v1/messages and
    # /v1/responses beside /api/chat: one name covers them all.
    server.script(Output(SAID + CALL))
    async with connected(shell, endpoint, server, "ollama") as client:
        got = await client.ask(streamed=True)
    assert ([c[1:] for c in got.calls], got.text) == ([("get_weather", PARIS)], SAID)


@pytest.mark.parametrize(
    ("path", "body", "words"),
    [
        pytest.param(
            "/v1/responses",
            {
                "input": [
                    {"role": "user", "content": ASK},
                    {
                        "type": "function_call",
                        "call_id": "c1",
                        "name": "get_weather",
                        "arguments": PARIS,
                    },
                ]
            },
            "Cannot determine type of 'item'",
            id="responses-object-arguments",
        ),
        pytest.param(
            "/v1/messages",
            {
                "messages": [
                    {"role": "user", "content": ASK},
                    {
                        "role": "assistant",
                        "content": [
                            {"type": "tool_use", "id": "t1", "name": "get_weather", "input": PARIS}
                        ],
                    },
                    {"role": "user", "content": "and?"},
                ]
            },
            "have no result",
            id="messages-call-without-result",
        ),
    ],
)
async def test_the_scripted_server_refuses_what_the_real_one_cannot_read(
    anyio_backend: str, server: LocalServer, path: str, body: dict[str, Any], words: str
) -> None:
    # The checks above are only worth what this server refuses: a history it cannot convert or
    # pair is a 400, as llama-server's conversion throws or its template would mis-render it.
    server.script(Output(ANSWER))
    async with httpx.AsyncClient(base_url=server.base_url) as http:
        response = await http.post(path, json={"model": "local-model", **body})
    assert response.status_code == 400
    assert words in response.json()["error"]["message"]
    assert server.refused != []
