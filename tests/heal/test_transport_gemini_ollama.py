"""Healing Gemini and native Ollama in process: the real ``google-genai`` and ``ollama`` SDKs over
a :class:`HealingTransport` (google-genai takes it as ``HttpOptions.async_client_args``'s
``transport``; ollama passes its keyword arguments to its ``httpx.AsyncClient``), real loopback
HTTP, and the scripted servers that refuse a history the real APIs would
(``tests/e2e/gemini_server.py``, ``tests/e2e/ollama_server.py``). Streamed and not, with a call
cut at the token limit, a malformed call and a schema-invalid one: no broken call reaches the
client.
"""

from __future__ import annotations

import base64
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
    malformed_reply,
    running_gemini_server,
    signature,
    sse,
    whole_call_reply,
)
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

import toolwire

pytestmark = [
    pytest.mark.anyio,
    pytest.mark.filterwarnings(
        "ignore:Async generator '(google|ollama|httpx|httpcore)[.]:ResourceWarning"
    ),
]

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


@pytest.fixture
def gemini() -> Iterator[ScriptedGeminiServer]:
    with running_gemini_server() as scripted:
        yield scripted


@pytest.fixture
def ollama_server() -> Iterator[ScriptedOllama]:
    with running_ollama() as scripted:
        yield scripted


def _genai(base_url: str, **options: Any) -> Any:
    """google-genai's async client over a healing transport (an ``async with`` block)."""
    transport = toolwire.HealingTransport(**options)
    http = types.HttpOptions(
        base_url=base_url, timeout=10_000, async_client_args={"transport": transport}
    )
    return genai.Client(api_key="test-key", http_options=http).aio


def _calls(response: Any) -> list[tuple[str, Any, bytes | None]]:
    content = response.candidates[0].content  # none on the finish chunk
    parts = (content.parts if content is not None else None) or []
    return [
        (p.function_call.name, p.function_call.args, p.thought_signature)
        for p in parts
        if p.function_call is not None
    ]


async def _streamed(client: Any, **extra: Any) -> list[Any]:
    stream = await client.models.generate_content_stream(
        model=MODEL, contents="Weather in Boston?", config=CONFIG, **extra
    )
    return [item async for item in stream]


# -- Gemini, through google-genai ----------------------------------------------------------------


@pytest.mark.parametrize("streamed", [True, False])
async def test_gemini_a_cut_call_is_healed(
    anyio_backend: str, gemini: ScriptedGeminiServer, streamed: bool
) -> None:
    gemini.script(
        cut_streamed_call_reply(1, "getWeather", [("$.location", "Bos")]),
        whole_call_reply(2, "getWeather", BOSTON),
    )
    async with _genai(gemini.base_url, max_tokens_ceiling=256) as client:
        if streamed:
            chunks = await _streamed(client)
            calls = [call for item in chunks for call in _calls(item)]
            finish = chunks[-1].candidates[0].finish_reason
        else:
            response = await client.models.generate_content(
                model=MODEL, contents="Weather in Boston?", config=CONFIG
            )
            calls, finish = _calls(response), response.candidates[0].finish_reason
    # One call, the good one, with the retry's signature (the SDK holds it decoded).
    assert calls == [("getWeather", BOSTON, base64.b64decode(signature(2)))]
    assert finish == types.FinishReason.STOP
    assert gemini.refused == []  # the retry's history is one the API accepts
    _, retry = gemini.requests
    assert retry["generationConfig"]["maxOutputTokens"] == 128
    assert retry["contents"][-2]["parts"][0]["functionCall"] == {"name": "getWeather", "args": {}}
    assert all(":streamGenerateContent?alt=sse" in p or streamed is False for p in gemini.paths)


async def test_gemini_a_malformed_call_is_asked_again(
    anyio_backend: str, gemini: ScriptedGeminiServer
) -> None:
    gemini.script(
        malformed_reply("Malformed function call: print(default_api.getWeather())"),
        whole_call_reply(2, "getWeather", BOSTON),
    )
    async with _genai(gemini.base_url) as client:
        chunks = await _streamed(client)
    assert [c[:2] for item in chunks for c in _calls(item)] == [("getWeather", BOSTON)]
    assert gemini.refused == []
    response = gemini.requests[1]["contents"][-1]["parts"][0]["functionResponse"]
    assert "MALFORMED_FUNCTION_CALL" in response["response"]["error"]


@pytest.mark.parametrize("streamed", [True, False])
async def test_gemini_a_schema_invalid_call_never_reaches_the_sdk(
    anyio_backend: str, gemini: ScriptedGeminiServer, streamed: bool
) -> None:
    bad = sse(
        chunk({"functionCall": {"name": "getWeather", "args": {"city": 3}}}),
        chunk({"text": ""}, finish="STOP"),
    )
    gemini.script(bad)
    async with _genai(gemini.base_url, max_retries=0) as client:
        asked = (
            _streamed(client)
            if streamed
            else client.models.generate_content(model=MODEL, contents="x", config=CONFIG)
        )
        with pytest.raises(errors.ServerError) as raised:
            await asked
    assert raised.value.code == 502
    assert raised.value.status == "TOOLWIRE_HEAL_FAILED"
    assert "location" in (raised.value.message or "")
    assert len(gemini.requests) == 1


async def test_gemini_vertex_path_and_the_json_array_stream(
    anyio_backend: str, gemini: ScriptedGeminiServer
) -> None:
    gemini.script(
        cut_streamed_call_reply(1, "getWeather", [("$.location", "Bos")]),
        whole_call_reply(2, "getWeather", BOSTON),
    )
    body = {
        "contents": [{"role": "user", "parts": [{"text": "Weather?"}]}],
        "tools": [{"functionDeclarations": [WEATHER.model_dump(mode="json", exclude_none=True)]}],
        "generationConfig": {"maxOutputTokens": 64},
    }
    path = f"/v1/projects/p/locations/us-central1/publishers/google/models/{MODEL}"
    async with httpx.AsyncClient(transport=toolwire.HealingTransport(), timeout=10) as http:
        response = await http.post(
            f"{gemini.base_url}{path}:streamGenerateContent",
            json=body,
            headers={"x-goog-api-key": "k"},
        )
    assert response.headers["content-type"].startswith("application/json")
    chunks = response.json()  # one valid JSON array, as the endpoint streams without alt=sse
    parts = [p for c in chunks for p in c["candidates"][0].get("content", {}).get("parts", [])]
    assert parts == [
        {"functionCall": {"name": "getWeather", "args": BOSTON}, "thoughtSignature": signature(2)}
    ]
    assert gemini.refused == []
    assert all(p.endswith("alt=sse") for p in gemini.paths)  # read upstream as SSE


# -- Ollama, through the ollama SDK --------------------------------------------------------------

WRITE = {
    "type": "function",
    "function": {
        "name": "write",
        "description": "Write a file.",
        "parameters": {
            "type": "object",
            "properties": {"path": {"type": "string"}, "content": {"type": "string"}},
            "required": ["path", "content"],
        },
    },
}
GOOD = {"path": "notes.txt", "content": "hello"}


async def _chat(host: str, *, stream: bool, **options: Any) -> tuple[list[Any], Any]:
    """The calls the SDK received, and its last ``ChatResponse``."""
    async with ollama.AsyncClient(
        host=host, transport=toolwire.HealingTransport(**options), timeout=10
    ) as client:
        request: dict[str, Any] = {
            "model": "qwen3:8b",
            "messages": [{"role": "user", "content": "Write hello to notes.txt"}],
            "tools": [WRITE],
            "options": {"num_predict": 64},
        }
        if stream:
            parts = [part async for part in await client.chat(**request, stream=True)]
        else:
            parts = [await client.chat(**request, stream=False)]
    calls = [
        (c.function.name, dict(c.function.arguments))
        for part in parts
        for c in part.message.tool_calls or ()
    ]
    return calls, parts[-1]


@pytest.mark.parametrize("streamed", [True, False])
async def test_ollama_a_cut_and_an_invalid_call_are_healed(
    anyio_backend: str, ollama_server: ScriptedOllama, streamed: bool
) -> None:
    ollama_server.script(
        # One valid call, then one cut at num_predict.
        _reply(
            chat_line(calls=[ollama_call("write", GOOD, 0, "call_1")]),
            chat_line(calls=[ollama_call("write", {"path": "b.txt"}, 1, "call_2")]),
            done_line("length", eval_count=64),
        ),
        # The retry: a schema-invalid call.
        _reply(
            chat_line(calls=[ollama_call("write", {"path": 3}, 0, "call_3")]),
            done_line("stop"),
        ),
        _reply(
            chat_line(calls=[ollama_call("write", {"path": "b.txt", "content": "x"}, 0, "c4")]),
            done_line("stop"),
        ),
    )
    calls, last = await _chat(ollama_server.base_url, stream=streamed, max_tokens_ceiling=256)
    assert calls == [("write", GOOD), ("write", {"path": "b.txt", "content": "x"})]
    assert (last.done, last.done_reason) == (True, "stop")
    assert ollama_server.refused == []  # every retry's history is one Ollama accepts
    _, second, third = ollama_server.requests
    assert second["options"]["num_predict"] == 128
    assert third["messages"][-1]["role"] == "tool"


@pytest.mark.parametrize("streamed", [True, False])
async def test_ollama_a_failed_heal_is_a_response_error(
    anyio_backend: str, ollama_server: ScriptedOllama, streamed: bool
) -> None:
    ollama_server.script(
        _reply(chat_line(calls=[ollama_call("write", {"path": 3}, 0, "c")]), done_line("stop"))
    )
    with pytest.raises(ollama.ResponseError) as raised:
        await _chat(ollama_server.base_url, stream=streamed, max_retries=0)
    assert "write" in str(raised.value.error)
    assert raised.value.status_code == (-1 if streamed else 502)


def _reply(*lines: dict[str, Any]) -> Any:
    from e2e.loopback import Reply

    return Reply(ndjson(*lines))
