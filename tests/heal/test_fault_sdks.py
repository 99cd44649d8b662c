"""The fault table through the official SDKs: each raises its own error with toolwire's code,
and none sends the exchange again (``x-should-retry: false``), with their default retries on.

Without the header, the openai and anthropic SDKs would send a whole exchange that failed with
a 502 up to twice more: six upstream requests for two. google-genai does not retry unless told
to (``HttpOptions(retry_options=...)``); when told, it retries 502 and 504 whatever the header
says (``docs/healing.md``). The ollama SDK does not retry.
"""

from __future__ import annotations

import anthropic
import httpx
import httpx2
import ollama
import openai
import pytest
from google import genai
from google.genai import errors, types

import toolwire
from toolwire.heal import Httpx2Bridge

from .client import SDK_ON_TRIO_LEAK
from .faults import FORMATS, GOOD, faulty_upstream

pytestmark = [
    pytest.mark.anyio,
    # Four SDKs, each with its own client: the quick loop has the table's rows without them.
    pytest.mark.slow,
    pytest.mark.filterwarnings(SDK_ON_TRIO_LEAK),
    pytest.mark.filterwarnings(
        "ignore:Async generator '(anthropic|google|ollama|httpx|httpx2|httpcore|httpcore2)[.]"
        ":ResourceWarning"
    ),
]

READ_TIMEOUT = 0.2


def _openai(base_url: str) -> openai.AsyncOpenAI:
    http = httpx.AsyncClient(
        transport=toolwire.HealingTransport(), timeout=httpx.Timeout(5, read=READ_TIMEOUT)
    )
    # The SDK's default retries (2): the header is what stops them.
    return openai.AsyncOpenAI(base_url=f"{base_url}/v1", api_key="sk-test", http_client=http)


async def test_openai_a_whole_exchange_that_dropped_twice_is_not_sent_again(
    anyio_backend: str,
) -> None:
    case = FORMATS["Chat"]
    with faulty_upstream(case, "drop", False) as upstream:
        async with _openai(upstream.base_url) as client:
            with pytest.raises(openai.InternalServerError) as raised:
                await client.chat.completions.create(**case.request(False))
    assert raised.value.status_code == 502
    assert isinstance(raised.value.body, dict)
    assert raised.value.body["code"] == "upstream_dropped"
    assert len(upstream.requests) == 2


async def test_openai_a_retry_s_500_is_not_sent_again(anyio_backend: str) -> None:
    case = FORMATS["Chat"]
    with faulty_upstream(case, "retry_5xx", False) as upstream:
        async with _openai(upstream.base_url) as client:
            with pytest.raises(openai.InternalServerError):
                await client.chat.completions.create(**case.request(False))
    assert len(upstream.requests) == 2  # not 6


async def test_openai_a_stall_in_a_stream_is_an_api_error_saying_so(anyio_backend: str) -> None:
    case = FORMATS["Chat"]
    with faulty_upstream(case, "stall", True) as upstream:
        async with _openai(upstream.base_url) as client:
            stream = await client.chat.completions.create(**case.request(True))
            with pytest.raises(openai.APIError) as raised:
                async for _ in stream:
                    pass
    assert isinstance(raised.value.body, dict)
    assert raised.value.body["code"] == "upstream_timeout"
    assert len(upstream.requests) == 1


async def test_anthropic_a_whole_exchange_that_dropped_twice_is_not_sent_again(
    anyio_backend: str,
) -> None:
    case = FORMATS["Anthropic"]
    with faulty_upstream(case, "drop", False) as upstream:
        bridge = Httpx2Bridge(toolwire.HealingTransport())
        async with httpx2.AsyncClient(transport=bridge, timeout=5) as http:
            async with anthropic.AsyncAnthropic(
                base_url=upstream.base_url, api_key="sk-ant-test", http_client=http
            ) as client:
                with pytest.raises(anthropic.APIStatusError) as raised:
                    await client.messages.create(**case.request(False))
    assert raised.value.status_code == 502
    assert isinstance(raised.value.body, dict)
    assert raised.value.body["error"]["code"] == "upstream_dropped"
    assert len(upstream.requests) == 2


@pytest.mark.parametrize("streamed", [True, False], ids=["streamed", "whole"])
async def test_google_genai_a_drop_raises_server_error(anyio_backend: str, streamed: bool) -> None:
    case = FORMATS["Gemini"]
    with faulty_upstream(case, "drop", streamed) as upstream:
        http = types.HttpOptions(
            base_url=upstream.base_url,
            timeout=5_000,
            async_client_args={"transport": toolwire.HealingTransport()},
        )
        client = genai.Client(api_key="test-key", http_options=http).aio
        request = case.request(streamed)
        config = types.GenerateContentConfig(tools=request["tools"])

        async def ask() -> None:
            if streamed:
                async for _ in await client.models.generate_content_stream(
                    model="gemini-scripted", contents=request["contents"], config=config
                ):
                    pass
            else:
                await client.models.generate_content(
                    model="gemini-scripted", contents=request["contents"], config=config
                )

        with pytest.raises(errors.ServerError) as raised:
            await ask()
    assert raised.value.code == 502
    assert raised.value.status == "TOOLWIRE_UPSTREAM_ERROR"
    assert len(upstream.requests) == 2


async def test_ollama_a_drop_once_is_healed_by_the_resend(anyio_backend: str) -> None:
    case = FORMATS["Ollama"]
    with faulty_upstream(case, "drop_once", True) as upstream:
        client = ollama.AsyncClient(
            host=upstream.base_url, transport=toolwire.HealingTransport(), timeout=5
        )
        request = case.request(True)
        calls = []
        async for part in await client.chat(
            model=request["model"],
            messages=request["messages"],
            tools=request["tools"],
            stream=True,
        ):
            calls += part.message.tool_calls or []
    assert [(call.function.name, dict(call.function.arguments)) for call in calls] == [
        ("write", GOOD)
    ]
    assert len(upstream.requests) == 2


async def test_ollama_a_stall_raises_response_error(anyio_backend: str) -> None:
    case = FORMATS["Ollama"]
    with faulty_upstream(case, "stall", False) as upstream:
        client = ollama.AsyncClient(
            host=upstream.base_url,
            transport=toolwire.HealingTransport(),
            timeout=httpx.Timeout(5, read=READ_TIMEOUT),
        )
        request = case.request(False)
        with pytest.raises(ollama.ResponseError) as raised:
            await client.chat(
                model=request["model"], messages=request["messages"], tools=request["tools"]
            )
    assert raised.value.status_code == 504
    assert "not of the model" in raised.value.error
    assert len(upstream.requests) == 1
