"""``toolwire serve`` passes on what the healing says (issue 30): the real command, the real
``openai`` SDK, the scripted upstream of ``tests/heal/upstream.py``.

- a whole healed answer carries ``x-toolwire-attempts``, ``x-toolwire-rejected-calls`` and
  ``x-toolwire-repaired-calls``;
- llama-server's refusal of the history reaches the client as its own 500, whole or streamed,
  with ``x-toolwire-history-refused`` and ``x-should-retry: false`` (before: a 502 whole, a 200
  with an in-band error streamed, both naming ``Pipeline.check_history``).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import openai
import pytest
from heal.client import GOOD_WRITE, SDK_ON_TRIO_LEAK, TOOLS, USER
from heal.test_history_refused import HISTORY, LLAMA_SERVER_REFUSAL
from heal.upstream import HealUpstream, Reply, completion, running_upstream

from toolwire.heal.transport import (
    ATTEMPTS_HEADER,
    HISTORY_REFUSED_HEADER,
    REJECTED_CALLS_HEADER,
    REPAIRED_CALLS_HEADER,
)

from .proxy import Proxy, running_proxy

pytestmark = [pytest.mark.anyio, pytest.mark.filterwarnings(SDK_ON_TRIO_LEAK)]

CUT_WRITE = '{"path": "notes.txt", "content": "hel'


@pytest.fixture(scope="module")
def upstream() -> Iterator[HealUpstream]:
    with running_upstream() as scripted:
        yield scripted


@pytest.fixture(scope="module")
def proxy(upstream: HealUpstream) -> Iterator[Proxy]:
    with running_proxy("--upstream", upstream.base_url, "--provider", "llama-server") as running:
        yield running


@pytest.fixture(autouse=True)
def _fresh_script(upstream: HealUpstream) -> None:
    upstream.reset()


def _client(proxy: Proxy) -> openai.AsyncOpenAI:
    # The SDK's own retries on: the refusal's x-should-retry: false must hold them.
    return openai.AsyncOpenAI(base_url=proxy.base_url, api_key="sk-test", max_retries=2)


def _request(messages: list[dict[str, Any]], **extra: Any) -> dict[str, Any]:
    return {"model": "scripted-model", "messages": messages, "tools": TOOLS, **extra}


async def test_a_whole_healed_answer_says_what_it_took(
    anyio_backend: str, upstream: HealUpstream, proxy: Proxy
) -> None:
    upstream.script(
        Reply(completion(("c1", "write", CUT_WRITE), finish_reason="length")),
        Reply(completion(("c2", "write", GOOD_WRITE))),
    )
    async with _client(proxy) as client:
        raw = await client.chat.completions.with_raw_response.create(**_request(list(USER)))
    headers = raw.headers
    figures = (headers[ATTEMPTS_HEADER], headers[REJECTED_CALLS_HEADER])
    assert figures == ("2", "1")
    assert headers[REPAIRED_CALLS_HEADER] == "0"
    (call,) = raw.parse().choices[0].message.tool_calls or ()
    assert call.function.arguments == GOOD_WRITE


@pytest.mark.parametrize("stream", [False, True], ids=["whole", "streamed"])
async def test_a_refused_history_reaches_the_client_as_the_servers_500(
    anyio_backend: str, upstream: HealUpstream, proxy: Proxy, stream: bool
) -> None:
    upstream.script(Reply(status=500, body=LLAMA_SERVER_REFUSAL))
    async with _client(proxy) as client:
        with pytest.raises(openai.InternalServerError) as raised:
            await client.chat.completions.create(**_request(HISTORY, stream=stream))
    response = raised.value.response
    assert response.status_code == 500
    assert response.content == LLAMA_SERVER_REFUSAL
    assert response.headers["x-should-retry"] == "false"
    assert response.headers[HISTORY_REFUSED_HEADER].startswith(
        "llama.cpp refused this request's history"
    )
    assert len(upstream.raw_bodies) == 1
