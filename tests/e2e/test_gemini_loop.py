"""An agent loop against a loopback Gemini API, through the google-genai SDK and through httpx.

The scripted server (``tests/e2e/gemini_server.py``) streams Gemini SSE and refuses, like the
real API, a history that is not well formed or whose function calls lost their thought
signatures. The SDK is pointed at it with ``HttpOptions(base_url=...)`` and its
``generate_content_stream`` iterator is passed to ``toolwire.collect`` as it is; the httpx
variant passes the ``httpx.Response``. Turn 1 is a broken call that must not run; turn 2's
request must carry the model turn and the rejection; the corrected call then runs exactly once.
"""

from __future__ import annotations

import base64
import json
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from typing import Any, Protocol

import httpx
import pytest
from google import genai
from google.genai import types

import toolwire
from toolwire.core.turn import Turn
from toolwire.loop import check_history, dispatch, next_messages

from .gemini_server import (
    MODEL,
    SENTINEL,
    ScriptedGeminiServer,
    contents_errors,
    cut_streamed_call_reply,
    malformed_reply,
    running_gemini_server,
    signature,
    text_reply,
    whole_call_reply,
)
from .loop_steps import ToolSpy

pytestmark = pytest.mark.anyio

MAX_OUTPUT_TOKENS = 32
DECLARATIONS: list[dict[str, Any]] = [
    {
        "name": "write_file",
        "description": "Write a file.",
        "parameters": {
            "type": "OBJECT",
            "properties": {"path": {"type": "STRING"}, "content": {"type": "STRING"}},
            "required": ["path", "content"],
        },
    }
]
USER = {"role": "user", "parts": [{"text": "Write hello to notes.txt"}]}
GOOD_ARGS = {"path": "notes.txt", "content": "hello"}
PIPELINE = toolwire.Pipeline("gemini")


def rest_body(contents: list[dict[str, Any]]) -> dict[str, Any]:
    """The request in the REST shape: what httpx sends, and what toolwire reads the facts from."""
    return {
        "contents": contents,
        "tools": [{"functionDeclarations": DECLARATIONS}],
        "generationConfig": {"maxOutputTokens": MAX_OUTPUT_TOKENS},
    }


class Chat(Protocol):
    async def turn(self, contents: list[dict[str, Any]]) -> Turn: ...


class SdkChat:
    """google-genai's async stream of ``GenerateContentResponse`` straight into collect."""

    def __init__(self, client: Any) -> None:
        self.client = client

    async def turn(self, contents: list[dict[str, Any]]) -> Turn:
        stream = await self.client.models.generate_content_stream(
            model=MODEL,
            contents=[types.Content.model_validate(content) for content in contents],
            config=types.GenerateContentConfig(
                max_output_tokens=MAX_OUTPUT_TOKENS,
                tools=[types.Tool(function_declarations=DECLARATIONS)],
            ),
        )
        return await PIPELINE.collect(stream, request=rest_body(contents))


class HttpxChat:
    """The ``httpx.Response`` itself into collect."""

    def __init__(self, client: httpx.AsyncClient) -> None:
        self.client = client

    async def turn(self, contents: list[dict[str, Any]]) -> Turn:
        body = rest_body(contents)
        url = f"/v1beta/models/{MODEL}:streamGenerateContent?alt=sse"
        async with self.client.stream("POST", url, json=body) as response:
            return await PIPELINE.collect(response, request=body)


@pytest.fixture
def server() -> Iterator[ScriptedGeminiServer]:
    with running_gemini_server() as scripted:
        yield scripted


@pytest.fixture(params=["sdk", "httpx"])
def via(request: pytest.FixtureRequest) -> str:
    kind: str = request.param
    return kind


@asynccontextmanager
async def chat_client(via: str, server: ScriptedGeminiServer) -> AsyncIterator[Chat]:
    if via == "httpx":
        headers = {"x-goog-api-key": "test"}
        async with httpx.AsyncClient(base_url=server.base_url, headers=headers, timeout=10) as c:
            yield HttpxChat(c)
        return
    options = types.HttpOptions(base_url=server.base_url, timeout=10_000)
    with genai.Client(api_key="test", http_options=options) as client:
        async with client.aio as aio:
            yield SdkChat(aio)


async def step(
    chat: Chat, tools: ToolSpy, contents: list[dict[str, Any]]
) -> tuple[Turn, list[dict[str, Any]]]:
    """One turn of the loop: collect, dispatch, append the history (a new list)."""
    turn = await chat.turn(contents)
    results = [result async for result in dispatch(turn, tools)]
    history = [*contents, *next_messages(turn, results, "gemini")]
    assert check_history(history, "gemini") == []
    return turn, history


def signature_bytes(value: str) -> bytes:
    return base64.urlsafe_b64decode(value.replace("+", "-").replace("/", "_") + "==")


async def test_a_call_cut_at_the_token_limit_never_runs_and_its_retry_runs_once(
    via: str, server: ScriptedGeminiServer
) -> None:
    server.script(
        cut_streamed_call_reply(1, "write_file", [("$.path", "notes.txt"), ("$.content", "hel")]),
        whole_call_reply(2, "write_file", GOOD_ARGS),
        text_reply("Done: notes.txt holds hello."),
    )
    tools = ToolSpy(ids=False, answer="wrote 5 bytes")
    async with chat_client(via, server) as chat:
        first, history = await step(chat, tools, [USER])
        assert tools.ran == []
        (cut,) = first.calls
        assert cut.arguments_raw == '{"path":"notes.txt","content":"hel'
        assert (first.stop_reason, first.cut_by, cut.outcome) == (
            "length",
            "token_limit",
            "rejected",
        )

        second, history = await step(chat, tools, history)
        assert tools.ran == [("write_file", GOOD_ARGS)]
        assert second.stop_reason == "tool_calls"

        third, history = await step(chat, tools, history)
        assert third.text == "Done: notes.txt holds hello."
        assert third.stop_reason == "end_turn"
    assert tools.ran == [("write_file", GOOD_ARGS)]  # exactly once
    assert server.refused == []
    assert len(server.requests) == 3

    # Turn 2's request carried the cut call, with {} and its signature, and the rejection.
    contents = server.requests[1]["contents"]
    assert [c["role"] for c in contents] == ["user", "model", "user"]
    (call_part,) = contents[1]["parts"]
    assert call_part["functionCall"]["name"] == "write_file"
    assert call_part["functionCall"].get("args", {}) == {}
    assert signature_bytes(call_part["thoughtSignature"]) == signature_bytes(signature(1))
    (response_part,) = contents[2]["parts"]
    answer = response_part["functionResponse"]
    assert answer["name"] == "write_file"
    assert "output-token limit" in answer["response"]["error"]
    assert '{"path":"notes.txt","content":"hel' in answer["response"]["error"]
    # Turn 3's request: both model turns signed, the tool's output answering the second.
    contents = server.requests[2]["contents"]
    assert signature_bytes(contents[3]["parts"][0]["thoughtSignature"]) == signature_bytes(
        signature(2)
    )
    assert contents[3]["parts"][0]["functionCall"]["args"] == GOOD_ARGS
    assert contents[4]["parts"][0]["functionResponse"]["response"] == {"output": "wrote 5 bytes"}
    # What the SDK sent is what toolwire read the facts from (the limit, the functions).
    for request in server.requests:
        assert request["generationConfig"]["maxOutputTokens"] == MAX_OUTPUT_TOKENS
        (tool,) = request["tools"]
        assert [d["name"] for d in tool["functionDeclarations"]] == ["write_file"]


async def test_a_malformed_call_is_answered_and_its_retry_runs_once(
    via: str, server: ScriptedGeminiServer
) -> None:
    said = "Malformed function call: print(default_api.write_file(path='notes.txt'"
    server.script(
        malformed_reply(said),
        whole_call_reply(2, "write_file", GOOD_ARGS),
        text_reply("Done."),
    )
    tools = ToolSpy(ids=False, answer="wrote 5 bytes")
    async with chat_client(via, server) as chat:
        first, history = await step(chat, tools, [USER])
        assert tools.ran == []
        (malformed,) = first.calls
        assert (malformed.name, malformed.outcome, first.stop_reason) == (
            "",
            "rejected",
            "tool_calls",
        )
        _second, history = await step(chat, tools, history)
        await step(chat, tools, history)
    assert tools.ran == [("write_file", GOOD_ARGS)]
    assert server.refused == []
    contents = server.requests[1]["contents"]
    (call_part,) = contents[1]["parts"]
    assert call_part["functionCall"]["name"] == "malformed_function_call"
    assert signature_bytes(call_part["thoughtSignature"]) == signature_bytes(SENTINEL)
    error = contents[2]["parts"][0]["functionResponse"]["response"]["error"]
    assert "MALFORMED_FUNCTION_CALL" in error
    assert "Call the function again" in error
    # google-genai 2.x's Gemini API converter (_Candidate_from_mldev) does not copy
    # finishMessage into its objects: only the raw stream can quote what the server said.
    assert (said in error) is (via == "httpx")


async def test_the_server_refuses_a_history_that_lost_its_signatures(
    via: str, server: ScriptedGeminiServer
) -> None:
    # The server's check is the real API's: the same loop with the signature stripped is refused.
    server.script(
        whole_call_reply(1, "write_file", GOOD_ARGS), text_reply("unused"), text_reply("unused")
    )
    tools = ToolSpy(ids=False, answer="wrote 5 bytes")
    async with chat_client(via, server) as chat:
        _, history = await step(chat, tools, [USER])
        stripped = json.loads(json.dumps(history))
        del stripped[1]["parts"][0]["thoughtSignature"]
        assert contents_errors(stripped, server.issued) == [
            "contents[1]: function call 'write_file' is missing a thought_signature"
        ]
        forged = json.loads(json.dumps(history))
        forged[1]["parts"][0]["thoughtSignature"] = base64.b64encode(b"forged").decode()
        for contents in (stripped, forged):
            turn = await chat.turn(contents)
            assert turn.stop_reason in ("error", "disconnected")
            assert turn.calls == ()
    assert len(server.refused) == 2
    assert "missing a thought_signature" in server.refused[0]
    assert "corrupted thought signature" in server.refused[1]
