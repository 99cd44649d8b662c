"""``toolwire serve`` heals Gemini and native Ollama: the real command and uvicorn between the real
``google-genai`` / ``ollama`` SDKs and the scripted servers that refuse, as the real APIs do, a
history that is not well formed (``tests/e2e/gemini_server.py``, ``tests/e2e/ollama_server.py``).

Each SDK is unchanged but for its base URL, the proxy's root: google-genai appends
``/v1beta/models/...``, ollama ``/api/chat``; the proxy sends both to the upstream's root (its
``--upstream`` less ``/v1``). One proxy per upstream, started once for the module.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import httpx
import ollama
import pytest
from e2e.gemini_server import (
    MODEL,
    ScriptedGeminiServer,
    chunk,
    cut_streamed_call_reply,
    running_gemini_server,
    sse,
    whole_call_reply,
)
from e2e.loopback import Reply
from e2e.ollama_server import (
    ScriptedOllama,
    chat_line,
    done_line,
    ndjson,
    ollama_call,
    running_ollama,
)
from google import genai
from google.genai import errors, types
from heal.broken_histories import GEMINI, OLLAMA, assert_repaired_through_proxy

from .proxy import Proxy, running_proxy

pytestmark = [
    pytest.mark.anyio,
    pytest.mark.filterwarnings(
        "ignore:Async generator '(google|ollama|httpx|httpcore)[.]:ResourceWarning"
    ),
]

SECRET = "test-secret-never-logged"
WEATHER = types.FunctionDeclaration(
    name="getWeather",
    parameters=types.Schema(
        type=types.Type.OBJECT,
        properties={"location": types.Schema(type=types.Type.STRING)},
        required=["location"],
    ),
)
CONFIG = types.GenerateContentConfig(
    tools=[types.Tool(function_declarations=[WEATHER])], max_output_tokens=64
)
BOSTON = {"location": "Boston"}


@pytest.fixture(scope="module")
def gemini() -> Iterator[ScriptedGeminiServer]:
    with running_gemini_server() as scripted:
        yield scripted


@pytest.fixture(scope="module")
def ollama_upstream() -> Iterator[ScriptedOllama]:
    with running_ollama() as scripted:
        yield scripted


@pytest.fixture(scope="module")
def gemini_proxy(gemini: ScriptedGeminiServer) -> Iterator[Proxy]:
    with running_proxy("--upstream", f"{gemini.base_url}/v1", "--max-retries", "1") as running:
        yield running


@pytest.fixture(scope="module")
def ollama_proxy(ollama_upstream: ScriptedOllama) -> Iterator[Proxy]:
    with running_proxy("--upstream", f"{ollama_upstream.base_url}/v1") as running:
        yield running


@pytest.fixture(autouse=True)
def _fresh_scripts(request: pytest.FixtureRequest) -> None:
    for name in ("gemini", "ollama_upstream"):
        if name in request.fixturenames:
            upstream = request.getfixturevalue(name)
            upstream.replies.clear()
            upstream.requests.clear()
            upstream.refused.clear()


def _genai(root: str) -> Any:
    http = types.HttpOptions(base_url=root, timeout=20_000)
    return genai.Client(api_key=SECRET, http_options=http).aio


def _calls(responses: list[Any]) -> list[tuple[str, Any]]:
    found = []
    for response in responses:
        content = response.candidates[0].content
        for part in (content.parts if content is not None else None) or ():
            if part.function_call is not None:
                found.append((part.function_call.name, part.function_call.args))
    return found


@pytest.mark.parametrize("streamed", [True, False])
async def test_gemini_a_cut_call_is_healed_through_the_proxy(
    anyio_backend: str, gemini: ScriptedGeminiServer, gemini_proxy: Proxy, streamed: bool
) -> None:
    gemini.script(
        cut_streamed_call_reply(1, "getWeather", [("$.location", "Bos")]),
        whole_call_reply(2, "getWeather", BOSTON),
    )
    async with _genai(gemini_proxy.root) as client:
        if streamed:
            stream = await client.models.generate_content_stream(
                model=MODEL, contents="Weather in Boston?", config=CONFIG
            )
            responses = [item async for item in stream]
        else:
            responses = [
                await client.models.generate_content(
                    model=MODEL, contents="Weather in Boston?", config=CONFIG
                )
            ]
    assert _calls(responses) == [("getWeather", BOSTON)]  # only the good call arrived
    assert gemini.refused == []
    assert len(gemini.requests) == 2
    assert SECRET not in gemini_proxy.log


async def test_gemini_a_failed_heal_is_an_error_the_sdk_raises(
    anyio_backend: str, gemini: ScriptedGeminiServer, gemini_proxy: Proxy
) -> None:
    bad = sse(
        chunk({"functionCall": {"name": "getWeather", "args": {"city": 3}}}),
        chunk({"text": ""}, finish="STOP"),
    )
    gemini.script(bad, bad)
    async with _genai(gemini_proxy.root) as client:
        with pytest.raises(errors.ServerError) as raised:
            await client.models.generate_content(model=MODEL, contents="x", config=CONFIG)
    assert (raised.value.code, raised.value.status) == (502, "TOOLWIRE_HEAL_FAILED")
    assert raised.value.response.headers["x-should-retry"] == "false"
    assert len(gemini.requests) == 2  # the first and its one retry, no more


WRITE = {
    "type": "function",
    "function": {
        "name": "write",
        "parameters": {
            "type": "object",
            "properties": {"path": {"type": "string"}, "content": {"type": "string"}},
            "required": ["path", "content"],
        },
    },
}
GOOD = {"path": "notes.txt", "content": "hello"}


@pytest.mark.parametrize("streamed", [True, False])
async def test_ollama_an_invalid_call_is_healed_through_the_proxy(
    anyio_backend: str, ollama_upstream: ScriptedOllama, ollama_proxy: Proxy, streamed: bool
) -> None:
    ollama_upstream.script(
        Reply(
            ndjson(
                chat_line(content="Writing."),
                chat_line(calls=[ollama_call("write", {"path": 3}, 0, "c1")]),
                done_line("stop"),
            )
        ),
        Reply(ndjson(chat_line(calls=[ollama_call("write", GOOD, 0, "c2")]), done_line("stop"))),
    )
    request: dict[str, Any] = {
        "model": "qwen3:8b",
        "messages": [{"role": "user", "content": "Write hello to notes.txt"}],
        "tools": [WRITE],
    }
    async with ollama.AsyncClient(host=ollama_proxy.root, timeout=20) as client:
        if streamed:
            parts = [part async for part in await client.chat(**request, stream=True)]
        else:
            parts = [await client.chat(**request, stream=False)]
    calls = [
        (c.function.name, dict(c.function.arguments))
        for part in parts
        for c in part.message.tool_calls or ()
    ]
    assert calls == [("write", GOOD)]
    assert "".join(part.message.content or "" for part in parts) == "Writing."
    assert ollama_upstream.refused == []


async def test_only_ollama_s_chat_is_served_and_paths_are_still_refused(
    anyio_backend: str, ollama_proxy: Proxy
) -> None:
    async with httpx.AsyncClient(base_url=ollama_proxy.root, timeout=10) as http:
        assert (await http.post("/api/delete", json={"model": "m"})).status_code == 404
        assert (await http.get("/api/tags")).status_code == 404
        refused = await http.post("/v1beta/models/..%2f..%2fapi%2fdelete:generateContent")
        assert refused.status_code == 400
        assert refused.json()["error"]["code"] == "invalid_path"


# -- a history the server refuses is repaired before it goes upstream -----------------------------


async def test_gemini_a_broken_history_is_repaired_through_the_proxy(
    anyio_backend: str, gemini: ScriptedGeminiServer, gemini_proxy: Proxy
) -> None:
    await assert_repaired_through_proxy(gemini_proxy.root, GEMINI, gemini)


async def test_ollama_a_broken_history_is_repaired_through_the_proxy(
    anyio_backend: str, ollama_upstream: ScriptedOllama, ollama_proxy: Proxy
) -> None:
    await assert_repaired_through_proxy(ollama_proxy.root, OLLAMA, ollama_upstream)
