"""``HealingTransport`` end to end: the real ``openai`` SDK, real loopback HTTP, scripted replies.

The upstream (``upstream.py``, the e2e scripted Chat server) serves broken calls (the real
llama-cpp-python recordings, the derived OpenAI ``length`` recordings, hand-built bad calls) and
refuses a malformed history as a real backend does. The client is an unchanged agent: it
accumulates calls by index and runs each once (``client.Tools``, which fails on a call that does
not parse or match its schema). Every test runs on asyncio and on trio.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Iterator
from typing import Any

import anyio
import httpx
import openai
import pytest
from _toolwire_testdata import load_stream
from e2e.server import text_reply, tool_calls_reply

import toolwire
from toolwire.adapters.encoding import ACCEPTED_NOTE

from .client import (
    GOOD_WRITE,
    SDK_ON_TRIO_LEAK,
    USER,
    Tools,
    healed_client,
    read_stream,
    request,
)
from .upstream import (
    HealUpstream,
    Reply,
    Stall,
    chat_chunk,
    completion,
    running_upstream,
    sse,
    upstream_went_away,
)

pytestmark = [pytest.mark.anyio, pytest.mark.filterwarnings(SDK_ON_TRIO_LEAK)]

WRITTEN = {"path": "notes.txt", "content": "hello"}

#: Each real llama-cpp-python recording of a call cut at ``max_tokens`` (the server said
#: ``finish_reason: tool_calls``), its limit, and a valid call of the same tool.
LLAMA_CUTS = [
    pytest.param("write_max_tokens_24_cut_mid_string.real.sse", 24, "write", GOOD_WRITE,
                 id="write-24"),
    pytest.param("write_max_tokens_12_cut_mid_string.real.sse", 12, "write", GOOD_WRITE,
                 id="write-12"),
    pytest.param("read_max_tokens_5.real.sse", 5, "read", '{"path": "notes.txt"}', id="read-5"),
]


@pytest.fixture
def upstream() -> Iterator[HealUpstream]:
    with running_upstream() as scripted:
        yield scripted


def _llama(name: str) -> bytes:
    return load_stream(f"llama-cpp-python/{name}")


async def _verdict_message(body: bytes, provider: str, sent: dict[str, Any]) -> str:
    """What toolwire tells the model about the one call of ``body``."""
    turn = await toolwire.Pipeline(provider).collect(body, request=sent)
    (call,) = turn.calls
    assert call.verdict is not None
    assert call.verdict.message
    return call.verdict.message


def _results(sent: dict[str, Any]) -> dict[str, str]:
    """``tool_call_id -> text`` of every tool result of a request (tool or user messages)."""
    return {
        m["tool_call_id"]: m["content"]
        for m in sent["messages"]
        if m["role"] in ("tool", "user") and "tool_call_id" in m
    }


def _replayed(sent: dict[str, Any]) -> dict[str, str]:
    return {
        call["id"]: call["function"]["arguments"]
        for m in sent["messages"]
        if m["role"] == "assistant"
        for call in m.get("tool_calls") or ()
    }


# -- a broken call is healed; the tool runs once ---------------------------------------------


@pytest.mark.parametrize(("recording", "limit", "tool", "good"), LLAMA_CUTS)
async def test_a_cut_call_never_reaches_the_client_and_its_retry_runs_once(
    anyio_backend: str, upstream: HealUpstream, recording: str, limit: int, tool: str, good: str
) -> None:
    upstream.script(Reply(_llama(recording)), Reply(tool_calls_reply(("call_fixed", tool, good))))
    tools = Tools()
    sent = request(max_tokens=limit, tool_choice={"type": "function", "function": {"name": tool}})
    async with healed_client(upstream.base_url, "llama-cpp") as client:
        received = await read_stream(await client.chat.completions.create(**sent))
    tools.run(received.calls)
    assert tools.ran == [(tool, "call_fixed", json.loads(good))]
    assert received.finish_reason == "tool_calls"
    assert received.calls[0]["arguments"] == good

    first, retry = upstream.requests
    assert upstream.refused == []
    # The retry is the same request asked again: same tools, tool_choice and limit...
    assert {k: v for k, v in retry.items() if k != "messages"} == {
        k: v for k, v in first.items() if k != "messages"
    }
    assert first["stream_options"] == {"include_usage": True}  # what healing needs
    # ...with the cut call replayed as {} and toolwire's message as its result, in the form
    # llama-cpp-python's prompt shows the model (a user message naming the call).
    message = await _verdict_message(_llama(recording), "llama-cpp", first)
    (cut_id,) = _replayed(retry)
    assert _replayed(retry) == {cut_id: "{}"}
    assert _results(retry)[cut_id].endswith("\n" + message)
    assert toolwire.Pipeline("llama-cpp").check_history(retry["messages"]) == []


async def test_a_retry_may_raise_max_tokens_within_the_ceiling(
    anyio_backend: str, upstream: HealUpstream
) -> None:
    upstream.script(
        Reply(_llama("write_max_tokens_24_cut_mid_string.real.sse")),
        Reply(tool_calls_reply(("call_fixed", "write", GOOD_WRITE))),
    )
    async with healed_client(upstream.base_url, max_tokens_ceiling=40) as client:
        await read_stream(await client.chat.completions.create(**request()))
    assert [sent["max_tokens"] for sent in upstream.requests] == [24, 40]


async def test_a_valid_call_passes_byte_for_byte(
    anyio_backend: str, upstream: HealUpstream
) -> None:
    odd = '{ "path" : "notes.txt",\n  "content":"h\\u00e9llo" }'
    upstream.script(Reply(tool_calls_reply(("call_ok", "write", odd))))
    tools = Tools()
    async with healed_client(upstream.base_url) as client:
        received = await read_stream(await client.chat.completions.create(**request()))
    tools.run(received.calls)
    assert received.calls == [{"id": "call_ok", "name": "write", "arguments": odd}]
    assert tools.ran == [("write", "call_ok", {"path": "notes.txt", "content": "héllo"})]
    assert received.finish_reason == "tool_calls"
    assert len(upstream.requests) == 1


async def test_a_repairable_call_arrives_repaired(
    anyio_backend: str, upstream: HealUpstream
) -> None:
    upstream.script(Reply(tool_calls_reply(("call_c", "write", GOOD_WRITE[:-1] + ",}"))))
    tools = Tools()
    async with healed_client(upstream.base_url) as client:
        received = await read_stream(await client.chat.completions.create(**request()))
    tools.run(received.calls)
    assert received.calls[0]["arguments"] == '{"path":"notes.txt","content":"hello"}'
    assert tools.ran == [("write", "call_c", WRITTEN)]
    assert len(upstream.requests) == 1


async def test_parallel_calls_one_bad_each_tool_runs_once(
    anyio_backend: str, upstream: HealUpstream
) -> None:
    upstream.script(
        Reply(tool_calls_reply(("call_read", "read", '{"path": "notes.txt"}'),
                               ("call_write", "write", '{"path": "notes.txt", "content": 42}'))),
        # The retry repeats the valid read (it must not run twice) and fixes the write.
        Reply(tool_calls_reply(("call_read_again", "read", '{"path": "notes.txt"}'),
                               ("call_write_fixed", "write", GOOD_WRITE))),
    )
    tools = Tools()
    async with healed_client(upstream.base_url, "openai-chat") as client:
        received = await read_stream(await client.chat.completions.create(**request()))
    tools.run(received.calls)
    assert tools.ran == [
        ("read", "call_read", {"path": "notes.txt"}),
        ("write", "call_write_fixed", WRITTEN),
    ]
    retry = upstream.requests[1]
    assert _replayed(retry) == {"call_read": '{"path": "notes.txt"}', "call_write": "{}"}
    results = _results(retry)
    assert results["call_read"] == ACCEPTED_NOTE
    assert "call_write" in results
    assert "content" in results["call_write"]
    assert toolwire.Pipeline("openai-chat").check_history(retry["messages"]) == []
    assert upstream.refused == []


# -- the retry budget ---------------------------------------------------------------------------

WEATHER_TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "GetWeatherArgs",
            "strict": True,
            "parameters": {
                "type": "object",
                "properties": {
                    "city": {"type": "string"},
                    "country": {"type": "string"},
                    "units": {"type": "string", "enum": ["c", "f"]},
                },
                "required": ["city", "country", "units"],
                "additionalProperties": False,
            },
        },
    }
]
OPENAI_LENGTH = "openai-chat/length_mid_first_tool_arguments.derived.sse"


async def test_past_the_retries_a_limit_cut_finishes_length(
    anyio_backend: str, upstream: HealUpstream
) -> None:
    upstream.script(*(Reply(load_stream(OPENAI_LENGTH)) for _ in range(3)))
    async with healed_client(upstream.base_url, "openai-chat") as client:
        received = await read_stream(
            await client.chat.completions.create(**request(tools=WEATHER_TOOLS))
        )
    assert received.calls == []
    assert received.finish_reason == "length"
    assert len(upstream.requests) == 3  # the first request and max_retries=2 retries


async def test_the_sdk_s_own_length_handling_fires(
    anyio_backend: str, upstream: HealUpstream
) -> None:
    """The SDK's stream helper raises ``LengthFinishReasonError`` on a length finish."""
    upstream.script(*(Reply(load_stream(OPENAI_LENGTH)) for _ in range(2)))
    async with healed_client(upstream.base_url, "openai-chat", max_retries=1) as client:
        sent = request(tools=WEATHER_TOOLS)
        del sent["stream"]
        with pytest.raises(openai.LengthFinishReasonError):
            await _stream_helper_to_the_end(client, sent)


async def _stream_helper_to_the_end(client: openai.AsyncOpenAI, sent: dict[str, Any]) -> None:
    async with client.chat.completions.stream(**sent) as stream:
        async for _ in stream:
            pass


async def _read_until_error(stream: Any) -> None:
    async for chunk in stream:
        for choice in chunk.choices:
            assert not choice.delta.tool_calls  # no call reached the client before the error


async def test_past_the_retries_another_cause_is_an_error_the_sdk_raises(
    anyio_backend: str, upstream: HealUpstream
) -> None:
    bad = tool_calls_reply(("call_bad", "write", '{"path": "notes.txt"}'))
    upstream.script(Reply(bad), Reply(bad), Reply(bad))
    async with healed_client(upstream.base_url, "openai-chat") as client:
        stream = await client.chat.completions.create(**request())
        with pytest.raises(openai.APIError) as raised:
            await _read_until_error(stream)
    message = await _verdict_message(bad, "openai-chat", upstream.requests[0])
    assert message in raised.value.message
    assert isinstance(raised.value.body, dict)
    assert raised.value.body["type"] == "toolwire_heal_failed"
    assert len(upstream.requests) == 3


async def test_a_retry_refused_by_the_server_is_an_error_the_sdk_raises(
    anyio_backend: str, upstream: HealUpstream
) -> None:
    upstream.script(
        Reply(_llama("write_max_tokens_24_cut_mid_string.real.sse")),
        Reply(b'{"error": {"message": "model overloaded"}}', status=503),
    )
    async with healed_client(upstream.base_url) as client:
        stream = await client.chat.completions.create(**request())
        with pytest.raises(openai.APIError) as raised:
            await read_stream(stream)
    assert "HTTP 503" in raised.value.message
    assert "model overloaded" in raised.value.message


# -- what passes through ------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("status", "error"),
    [
        (400, openai.BadRequestError),
        (429, openai.RateLimitError),
        (500, openai.InternalServerError),
    ],
)
async def test_upstream_error_statuses_reach_the_client_unchanged(
    anyio_backend: str, upstream: HealUpstream, status: int, error: type[openai.APIStatusError]
) -> None:
    body = b'{"error": {"message": "no", "type": "invalid_request_error", "code": "x"}}'
    upstream.script(Reply(body, status=status), Reply(body, status=status))
    transport = toolwire.HealingTransport(wrapped=httpx.AsyncHTTPTransport())
    async with httpx.AsyncClient(transport=transport, base_url=upstream.base_url) as http:
        response = await http.post("/chat/completions", json=request())
        assert (response.status_code, response.content) == (status, body)
        assert response.headers["content-type"] == "application/json"
    async with healed_client(upstream.base_url) as client:
        with pytest.raises(error) as raised:
            await client.chat.completions.create(**request())
    assert raised.value.status_code == status
    assert raised.value.body == json.loads(body)["error"]


async def test_other_paths_and_requests_without_tools_pass_untouched(
    anyio_backend: str, upstream: HealUpstream
) -> None:
    reply = text_reply("Hello there.")
    upstream.script(Reply(reply))
    content = b'{"model":"m",  "messages":[{"role":"user","content":"hi"}], "stream":true}'
    transport = toolwire.HealingTransport(wrapped=httpx.AsyncHTTPTransport())
    async with httpx.AsyncClient(transport=transport, base_url=upstream.base_url) as http:
        models = await http.get("/models")
        chat = await http.post(
            "/chat/completions", content=content, headers={"content-type": "application/json"}
        )
    assert models.json()["data"][0]["id"] == "scripted-model"
    assert upstream.paths == ["/v1/models", "/v1/chat/completions"]
    assert upstream.raw_bodies[1] == content  # byte for byte upstream
    assert chat.content == reply  # and back


async def test_a_request_that_asks_for_usage_goes_up_byte_for_byte_and_gets_it(
    anyio_backend: str, upstream: HealUpstream
) -> None:
    usage_chunk = {**chat_chunk(), "choices": [],
                   "usage": {"prompt_tokens": 9, "completion_tokens": 3, "total_tokens": 12}}
    reply = sse([chat_chunk({"content": "Hi"}), chat_chunk(finish_reason="stop"), usage_chunk])
    upstream.script(Reply(reply), Reply(reply))
    asked = request(stream_options={"include_usage": True})
    async with healed_client(upstream.base_url) as client:
        with_usage = await read_stream(await client.chat.completions.create(**asked))
        without = await read_stream(await client.chat.completions.create(**request()))
    assert with_usage.usage is not None
    assert with_usage.usage.total_tokens == 12
    assert without.usage is None  # the client did not ask: it gets no usage chunk...
    assert json.loads(upstream.raw_bodies[1])["stream_options"] == {"include_usage": True}
    assert with_usage.text == without.text == "Hi"
    # ...and a request that asked went up exactly as the SDK wrote it (the SDK's own bytes).
    assert json.loads(upstream.raw_bodies[0]) == asked


async def test_authorization_is_forwarded_on_every_request_and_never_logged(
    anyio_backend: str, upstream: HealUpstream, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG, logger="toolwire")
    upstream.script(
        Reply(_llama("write_max_tokens_24_cut_mid_string.real.sse")),
        Reply(tool_calls_reply(("call_fixed", "write", GOOD_WRITE))),
    )
    async with healed_client(upstream.base_url) as client:
        await read_stream(await client.chat.completions.create(**request()))
    assert [h["authorization"] for h in upstream.headers] == ["Bearer sk-test-secret"] * 2
    assert not [r for r in caplog.records if "sk-test-secret" in r.getMessage()]


async def test_a_stream_that_drops_drops_for_the_client(
    anyio_backend: str, upstream: HealUpstream
) -> None:
    upstream.script(Reply(text_reply("Hello there, how are you?"), cut="drop", events=3))
    async with healed_client(upstream.base_url) as client:
        stream = await client.chat.completions.create(**request())
        with pytest.raises(openai.APIConnectionError):
            await read_stream(stream)


# -- timing: the first byte, and a client that goes away ----------------------------------------


async def test_text_arrives_before_the_response_ends_and_closing_cancels_upstream(
    anyio_backend: str, upstream: HealUpstream
) -> None:
    """The upstream sends its text, then holds the stream open: the client reads the text at
    once, closes, and the upstream sees its connection go away."""
    upstream.script(Stall(text_reply("Hello there."), events=2))
    async with healed_client(upstream.base_url) as client:
        stream = await client.chat.completions.create(**request())
        with anyio.fail_after(5):
            async for chunk in stream:
                if chunk.choices and chunk.choices[0].delta.content:
                    break
        assert not upstream.gone.is_set()
        await stream.close()
        assert await upstream_went_away(upstream)


async def test_a_cancelled_client_cancels_upstream(
    anyio_backend: str, upstream: HealUpstream
) -> None:
    upstream.script(Stall(text_reply("Hello there."), events=2))
    async with healed_client(upstream.base_url) as client:
        stream = await client.chat.completions.create(**request())
        with anyio.move_on_after(0.3) as scope:
            async for _ in stream:
                pass  # the upstream never ends: this is cancelled while waiting
        assert scope.cancelled_caught
        assert await upstream_went_away(upstream)
        await stream.close()


# -- non-streamed requests ----------------------------------------------------------------------


async def test_a_non_streamed_cut_call_is_healed_on_the_whole_message(
    anyio_backend: str, upstream: HealUpstream
) -> None:
    upstream.script(
        Reply(completion(("call_cut", "write", '{"path": "notes.txt", "content": "hel'),
                         finish_reason="length",
                         usage={"prompt_tokens": 50, "completion_tokens": 24,
                                "total_tokens": 74})),
        Reply(completion(("call_fixed", "write", GOOD_WRITE),
                         usage={"prompt_tokens": 120, "completion_tokens": 16,
                                "total_tokens": 136})),
    )
    tools = Tools()
    async with healed_client(upstream.base_url) as client:
        result = await client.chat.completions.create(**request(stream=False))
    choice = result.choices[0]
    calls = [{"id": c.id, "name": c.function.name, "arguments": c.function.arguments}
             for c in choice.message.tool_calls or ()]
    tools.run(calls)
    assert tools.ran == [("write", "call_fixed", WRITTEN)]
    assert calls[0]["arguments"] == GOOD_WRITE
    assert choice.finish_reason == "tool_calls"
    assert result.system_fingerprint == "fp_scripted"  # the rest of the body is kept
    assert result.usage is not None
    assert (result.usage.prompt_tokens, result.usage.completion_tokens) == (170, 40)
    first, retry = upstream.requests
    assert "stream_options" not in first
    assert retry["stream"] is False
    assert _replayed(retry) == {"call_cut": "{}"}
    assert "cut off at the output-token limit" in _results(retry)["call_cut"]


async def test_a_non_streamed_valid_body_passes_byte_for_byte(
    anyio_backend: str, upstream: HealUpstream
) -> None:
    body = completion(("call_ok", "write", GOOD_WRITE))
    upstream.script(Reply(body))
    transport = toolwire.HealingTransport(wrapped=httpx.AsyncHTTPTransport())
    async with httpx.AsyncClient(transport=transport, base_url=upstream.base_url) as http:
        response = await http.post("/chat/completions", json=request(stream=False))
    assert response.status_code == 200
    assert response.content == body


async def test_a_non_streamed_healing_that_fails_is_a_502_the_sdk_does_not_resend(
    anyio_backend: str, upstream: HealUpstream
) -> None:
    bad = completion(("call_bad", "nope", "{}"))
    upstream.script(*(Reply(bad) for _ in range(9)))
    async with healed_client(upstream.base_url, "openai-chat", sdk_retries=2) as client:
        with pytest.raises(openai.InternalServerError) as raised:
            await client.chat.completions.create(**request(stream=False))
    assert raised.value.status_code == 502
    assert isinstance(raised.value.body, dict)
    assert raised.value.body["type"] == "toolwire_heal_failed"
    assert "nope" in raised.value.body["message"]
    assert len(upstream.requests) == 3  # healing's retries only; the SDK did not resend


async def test_a_non_streamed_limit_cut_past_the_retries_finishes_length(
    anyio_backend: str, upstream: HealUpstream
) -> None:
    cut = completion(("call_cut", "write", '{"path": "notes.txt", "content": "hel'),
                     finish_reason="length")
    upstream.script(Reply(cut), Reply(cut))
    async with healed_client(upstream.base_url, max_retries=1) as client:
        result = await client.chat.completions.create(**request(stream=False))
    assert result.choices[0].finish_reason == "length"
    assert not result.choices[0].message.tool_calls


async def test_a_messages_history_of_healed_turns_stays_well_formed(
    anyio_backend: str, upstream: HealUpstream
) -> None:
    """Two turns of an unchanged agent loop: what it appends is what a strict server accepts."""
    upstream.script(
        Reply(_llama("write_max_tokens_24_cut_mid_string.real.sse")),
        Reply(tool_calls_reply(("call_fixed", "write", GOOD_WRITE))),
        Reply(text_reply("Wrote notes.txt.")),
    )
    tools = Tools()
    messages: list[dict[str, Any]] = list(USER)
    async with healed_client(upstream.base_url) as client:
        received = await read_stream(
            await client.chat.completions.create(**request(messages=messages))
        )
        tools.run(received.calls)
        messages.append({"role": "assistant", "content": received.text or "", "tool_calls": [
            {"id": c["id"], "type": "function",
             "function": {"name": c["name"], "arguments": c["arguments"]}}
            for c in received.calls]})
        messages += [{"role": "user", "tool_call_id": c["id"], "content": "written"}
                     for c in received.calls]
        final = await read_stream(
            await client.chat.completions.create(**request(messages=messages))
        )
    assert final.text == "Wrote notes.txt."
    assert final.finish_reason == "stop"
    assert upstream.refused == []
    assert tools.ran == [("write", "call_fixed", WRITTEN)]
