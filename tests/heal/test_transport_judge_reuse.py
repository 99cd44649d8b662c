"""The healing transport takes the digest of a request's tools once (issue 20).

Planning a request looks its tools up in the pipeline's judge cache (the digest of their
canonical JSON: about 30 µs for 20 tools); the response's turn judges with the stage found
there instead of taking the digest again, and a list seen for the first time is judged with
the stage its compile made. What must hold: two digests for a list's first request (the
lookup and the compile's), one per request once it is compiled, streamed or not, and each
request judged by its own tools, never by the stage of the request before it.
"""

from __future__ import annotations

import json
from typing import Any

import httpx
import pytest
from e2e.server import chat_chunk, sse

import toolwire
from toolwire.stages import judge_cache

pytestmark = pytest.mark.anyio

USER = [{"role": "user", "content": "write it"}]


def _tools(required: list[str]) -> list[dict[str, Any]]:
    properties = {"path": {"type": "string"}, "content": {"type": "string"}}
    schema = {"type": "object", "properties": properties, "required": required}
    return [{"type": "function", "function": {"name": "write", "parameters": schema}}]


#: Only ``path`` required: the call below fits. Both required: it misses ``content``.
LENIENT = _tools(["path"])
STRICT = _tools(["path", "content"])
ARGUMENTS = '{"path": "notes.txt"}'


def _answer(request: httpx.Request) -> httpx.Response:
    function = {"name": "write", "arguments": ARGUMENTS}
    call = {"id": "call_1", "type": "function", "function": function}
    if json.loads(request.content).get("stream"):
        chunks = [
            chat_chunk({"role": "assistant", "content": None}),
            chat_chunk({"tool_calls": [{"index": 0, **call}]}),
            chat_chunk({}, "tool_calls"),
        ]
        return httpx.Response(
            200, headers={"content-type": "text/event-stream"}, content=sse(chunks)
        )
    message = {"role": "assistant", "content": None, "tool_calls": [call]}
    completion = {
        "id": "chatcmpl-1",
        "object": "chat.completion",
        "created": 1,
        "model": "m",
        "choices": [{"index": 0, "message": message, "finish_reason": "tool_calls"}],
    }
    return httpx.Response(200, json=completion)


async def _send(client: httpx.AsyncClient, tools: list[dict[str, Any]], stream: bool) -> bytes:
    body = {"model": "m", "messages": USER, "tools": tools, "stream": stream}
    response = await client.post("http://upstream.test/v1/chat/completions", json=body)
    return response.content


def _passed_the_call(content: bytes) -> bool:
    """Whether the client got the call, its arguments unchanged (whole body or event stream)."""
    if content.startswith(b"data:"):
        chunks = [
            json.loads(line[6:]) for line in content.split(b"\n\n") if line.startswith(b"data: {")
        ]
        messages = [c["choices"][0]["delta"] for c in chunks if c.get("choices")]
    else:
        messages = [choice["message"] for choice in json.loads(content).get("choices", [])]
    arguments = [
        call["function"]["arguments"] for m in messages for call in m.get("tool_calls") or []
    ]
    return arguments == [ARGUMENTS]


@pytest.mark.parametrize("stream", [True, False], ids=["streamed", "whole"])
async def test_one_digest_per_request_and_each_judged_by_its_own_tools(
    monkeypatch: pytest.MonkeyPatch, stream: bool
) -> None:
    digests: list[object] = []
    canonical = judge_cache._canonical  # what every digest of a tool list starts from

    def counted(tools: Any) -> Any:
        digests.append(tools)
        return canonical(tools)

    monkeypatch.setattr(judge_cache, "_canonical", counted)
    transport = toolwire.HealingTransport(httpx.MockTransport(_answer), max_retries=0)
    async with httpx.AsyncClient(transport=transport) as client:
        for tools in (LENIENT, STRICT):
            # First sight: the plan's lookup misses, the compile keeps the stage (a digest
            # each), and the turn judges with the stage compiled, not looked up again.
            digests.clear()
            await _send(client, tools, stream)
            assert len(digests) == 2, "the tools' digest was taken again for the turn"
        for tools, fits in ((LENIENT, True), (STRICT, False), (LENIENT, True), (STRICT, False)):
            digests.clear()
            content = await _send(client, tools, stream)
            assert len(digests) == 1, "the tools' digest was taken more than once"
            assert _passed_the_call(content) is fits, content
            if not fits:
                assert b'missing required property \\"content\\"' in content, content
