"""A server's refusal of the request's history reaches the client as the server answered it
(issue 30).

llama-server reads every earlier call's arguments with nlohmann's JSON parser
(``common/chat.cpp``, ``func_args_not_string``) and refuses the whole request with HTTP 500
``Failed to parse tool call arguments as JSON: <nlohmann's words>``; vLLM up to 0.28 with HTTP 400
``Expecting ',' delimiter: ...`` (``adapters/parser_wordings.py`` has the rows and their
reports). toolwire rewrites before sending every earlier call whose arguments it cannot read as
a JSON object; the server here refuses anyway, as a server whose parser reads a call differently
would. Before, the transport healed the refusal as if the model had failed: a whole request got
a 502, a stream a 200 with an in-band error, both telling an HTTP client to call
``Pipeline.check_history``. Now the client gets the server's status and body, whole or streamed,
with ``x-toolwire-history-refused`` saying what toolwire knows and what to change, and
``x-should-retry: false``: the SDK (``max_retries=2`` here) does not send the same history again.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import httpx
import openai
import pytest

import toolwire
from toolwire.heal.transport import HISTORY_REFUSED_HEADER, HISTORY_REPAIRED_HEADER

from .client import GOOD_WRITE, SDK_ON_TRIO_LEAK, TOOLS
from .upstream import HealUpstream, Reply, completion, running_upstream

pytestmark = [pytest.mark.anyio, pytest.mark.filterwarnings(SDK_ON_TRIO_LEAK)]

#: llama-server's refusal, its body as it writes one (the words of
#: https://github.com/ggml-org/llama.cpp/issues/22948, nlohmann's message after them).
LLAMA_SERVER_REFUSAL = json.dumps(
    {
        "error": {
            "code": 500,
            "message": "Failed to parse tool call arguments as JSON: "
            "[json.exception.parse_error.101] parse error at line 1, column 38: syntax error "
            "while parsing value - invalid string: missing closing quote; last read: "
            "'\"hello'",
            "type": "server_error",
        }
    }
).encode()
#: vLLM <= 0.28's refusal (https://github.com/vllm-project/vllm/issues/43995).
VLLM_REFUSAL = json.dumps(
    {"error": {"message": "Expecting ',' delimiter: line 1 column 54 (char 53)", "code": 400}}
).encode()

#: A history whose earlier call toolwire reads as a JSON object.
HISTORY: list[dict[str, Any]] = [
    {"role": "user", "content": "Write hello to notes.txt"},
    {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {"id": "c1", "type": "function", "function": {"name": "write", "arguments": GOOD_WRITE}}
        ],
    },
    {"role": "tool", "tool_call_id": "c1", "content": "written"},
    {"role": "user", "content": "Now read it."},
]
#: ... and one more earlier call whose arguments were cut: toolwire rewrites it before sending.
CUT_CALL: list[dict[str, Any]] = [
    {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {
                "id": "c2",
                "type": "function",
                "function": {"name": "write", "arguments": '{"path": "notes.txt", "content": "h'},
            }
        ],
    },
    {"role": "tool", "tool_call_id": "c2", "content": "error"},
    {"role": "user", "content": "Try again."},
]


@pytest.fixture
def upstream() -> Iterator[HealUpstream]:
    with running_upstream() as scripted:
        yield scripted


def _client(upstream: HealUpstream, provider: str) -> tuple[httpx.AsyncClient, openai.AsyncOpenAI]:
    transport = toolwire.HealingTransport(httpx.AsyncHTTPTransport(), provider)
    http = httpx.AsyncClient(transport=transport, timeout=10)
    # The SDK's own retries on: x-should-retry: false must keep it from resending.
    client = openai.AsyncOpenAI(
        base_url=upstream.base_url, api_key="sk-test", max_retries=2, http_client=http
    )
    return http, client


def _request(messages: list[dict[str, Any]], **extra: Any) -> dict[str, Any]:
    return {"model": "scripted-model", "messages": messages, "tools": TOOLS, **extra}


def _told(error: openai.APIStatusError) -> str:
    return error.response.headers[HISTORY_REFUSED_HEADER]


@pytest.mark.parametrize("stream", [False, True], ids=["whole", "streamed"])
async def test_llama_servers_refusal_reaches_the_client_as_its_500(
    anyio_backend: str, upstream: HealUpstream, stream: bool
) -> None:
    upstream.script(Reply(status=500, body=LLAMA_SERVER_REFUSAL))
    http, client = _client(upstream, "llama-server")
    async with http, client:
        with pytest.raises(openai.InternalServerError) as raised:
            # Streamed too: the server refused before any byte, so the refusal is the HTTP
            # error of the request itself, raised by create(), not an error in a 200's stream.
            await client.chat.completions.create(**_request(HISTORY, stream=stream))
    error = raised.value
    assert error.status_code == 500  # the server's, not toolwire's 502
    assert error.response.content == LLAMA_SERVER_REFUSAL  # the server's body, byte for byte
    assert error.response.headers["x-should-retry"] == "false"
    told = _told(error)
    assert told.startswith("llama.cpp refused this request's history")
    assert "read every earlier call's arguments as a JSON object" in told
    assert "send its arguments as one JSON object" in told
    assert "check_history" not in told  # a proxy's client has no Pipeline to call
    assert len(upstream.raw_bodies) == 1  # neither toolwire nor the SDK sent it again


async def test_vllms_refusal_is_its_400_a_bad_request(
    anyio_backend: str, upstream: HealUpstream
) -> None:
    upstream.script(Reply(status=400, body=VLLM_REFUSAL))
    http, client = _client(upstream, "vllm")
    async with http, client:
        with pytest.raises(openai.BadRequestError) as raised:
            await client.chat.completions.create(**_request(HISTORY, stream=True))
    assert raised.value.response.content == VLLM_REFUSAL
    assert _told(raised.value).startswith("vllm refused this request's history")
    assert len(upstream.raw_bodies) == 1


async def test_the_refusal_says_what_toolwire_had_already_repaired(
    anyio_backend: str, upstream: HealUpstream
) -> None:
    upstream.script(Reply(status=500, body=LLAMA_SERVER_REFUSAL))
    http, client = _client(upstream, "llama-server")
    async with http, client:
        with pytest.raises(openai.InternalServerError) as raised:
            await client.chat.completions.create(**_request(HISTORY + CUT_CALL))
    headers = raised.value.response.headers
    assert headers[HISTORY_REPAIRED_HEADER] == "arguments_not_json=1"
    assert (
        "had already rewritten 1 earlier call whose arguments were not a JSON object"
        in (headers[HISTORY_REFUSED_HEADER])
    )
    (sent,) = [json.loads(body) for body in upstream.raw_bodies]
    assert sent["messages"][4]["tool_calls"][0]["function"]["arguments"] == "{}"


async def test_a_request_toolwire_does_not_heal_gets_the_same_answer(
    anyio_backend: str, upstream: HealUpstream
) -> None:
    # No tools: nothing to judge, the history is still read (and repaired) on the way up.
    upstream.script(Reply(status=500, body=LLAMA_SERVER_REFUSAL))
    body = _request(HISTORY)
    del body["tools"]
    http, client = _client(upstream, "llama-server")
    async with http, client:
        with pytest.raises(openai.InternalServerError) as raised:
            await client.chat.completions.create(**body)
    assert raised.value.response.content == LLAMA_SERVER_REFUSAL
    assert _told(raised.value).startswith("llama.cpp refused this request's history")
    assert len(upstream.raw_bodies) == 1


async def test_a_tool_parser_failure_is_still_the_models_call_and_healed(
    anyio_backend: str, upstream: HealUpstream
) -> None:
    # The words about the model's own output of this turn are not a history refusal.
    failure = {"error": {"code": 500, "message": "Failed to parse input at pos 12: </tool_call>"}}
    upstream.script(
        Reply(status=500, body=json.dumps(failure).encode()),
        Reply(completion(("c9", "write", GOOD_WRITE))),
    )
    http, client = _client(upstream, "llama-server")
    async with http, client:
        raw = await client.chat.completions.with_raw_response.create(**_request(HISTORY))
    assert HISTORY_REFUSED_HEADER not in raw.headers
    (call,) = raw.parse().choices[0].message.tool_calls or ()
    assert call.function.arguments == GOOD_WRITE
    assert len(upstream.raw_bodies) == 2
