"""A whole healed answer says what its exchange took (issue 30): ``x-toolwire-attempts``,
``x-toolwire-rejected-calls``, ``x-toolwire-repaired-calls``.

Before, nothing in a response said it was healed: on the real llama-server a run ended with
the model's prose after its only call had been rejected, and the client never knew a call was
tried. The figures are final on a whole answer (every retry is over before its headers go out);
a stream's headers go out before anything is judged, so a stream claims no figure. The body is
unchanged by them: a body with nothing to change still goes byte for byte.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import httpx
import openai
import pytest
from e2e.server import tool_calls_reply

import toolwire
from toolwire.heal.transport import ATTEMPTS_HEADER, REJECTED_CALLS_HEADER, REPAIRED_CALLS_HEADER

from .client import GOOD_WRITE, SDK_ON_TRIO_LEAK, TOOLS, USER, read_stream
from .upstream import HealUpstream, Reply, completion, running_upstream

pytestmark = [pytest.mark.anyio, pytest.mark.filterwarnings(SDK_ON_TRIO_LEAK)]

CUT_WRITE = '{"path": "notes.txt", "content": "hel'
#: One reading only (a trailing comma): passed repaired.
COMMA_WRITE = '{"path": "notes.txt", "content": "hello",}'
FIGURES = (ATTEMPTS_HEADER, REJECTED_CALLS_HEADER, REPAIRED_CALLS_HEADER)


@pytest.fixture
def upstream() -> Iterator[HealUpstream]:
    with running_upstream() as scripted:
        yield scripted


def _client(upstream: HealUpstream, **options: Any) -> tuple[httpx.AsyncClient, openai.AsyncOpenAI]:
    transport = toolwire.HealingTransport(httpx.AsyncHTTPTransport(), "llama-server", **options)
    http = httpx.AsyncClient(transport=transport, timeout=10)
    client = openai.AsyncOpenAI(
        base_url=upstream.base_url, api_key="sk-test", max_retries=0, http_client=http
    )
    return http, client


def _request(**extra: Any) -> dict[str, Any]:
    return {"model": "scripted-model", "messages": list(USER), "tools": TOOLS, **extra}


def _figures(headers: httpx.Headers) -> tuple[int, int, int]:
    attempts, rejected, repaired = (int(headers[name]) for name in FIGURES)
    return attempts, rejected, repaired


async def test_an_answer_with_nothing_to_change_says_one_attempt_and_goes_byte_for_byte(
    anyio_backend: str, upstream: HealUpstream
) -> None:
    body = completion(("c1", "write", GOOD_WRITE))
    upstream.script(Reply(body))
    http, client = _client(upstream)
    async with http, client:
        raw = await client.chat.completions.with_raw_response.create(**_request())
    assert _figures(raw.headers) == (1, 0, 0)
    assert raw.http_response.content == body


async def test_a_healed_answer_says_the_retry_and_the_rejected_call(
    anyio_backend: str, upstream: HealUpstream
) -> None:
    upstream.script(
        Reply(completion(("c1", "write", CUT_WRITE), finish_reason="length")),
        Reply(completion(("c2", "write", GOOD_WRITE))),
    )
    http, client = _client(upstream)
    async with http, client:
        raw = await client.chat.completions.with_raw_response.create(**_request())
    assert _figures(raw.headers) == (2, 1, 0)
    (call,) = raw.parse().choices[0].message.tool_calls or ()
    assert call.function.arguments == GOOD_WRITE


async def test_a_retry_answered_in_words_still_says_a_call_was_rejected(
    anyio_backend: str, upstream: HealUpstream
) -> None:
    # Issue 30's run: the model's prose ("saved") after its only call was rejected.
    upstream.script(
        Reply(completion(("c1", "write", CUT_WRITE), finish_reason="length")),
        Reply(completion(content="I saved it.", finish_reason="stop")),
    )
    http, client = _client(upstream)
    async with http, client:
        raw = await client.chat.completions.with_raw_response.create(**_request())
    assert raw.parse().choices[0].message.content == "I saved it."
    assert _figures(raw.headers) == (2, 1, 0)


async def test_a_repaired_call_is_counted(anyio_backend: str, upstream: HealUpstream) -> None:
    upstream.script(Reply(completion(("c1", "write", COMMA_WRITE))))
    http, client = _client(upstream)
    async with http, client:
        raw = await client.chat.completions.with_raw_response.create(**_request())
    assert _figures(raw.headers) == (1, 0, 1)


async def test_a_failed_healing_says_every_attempt(
    anyio_backend: str, upstream: HealUpstream
) -> None:
    cut = completion(("c1", "write", CUT_WRITE), finish_reason="tool_calls")
    upstream.script(*(Reply(cut) for _ in range(3)))
    http, client = _client(upstream)
    async with http, client:
        with pytest.raises(openai.InternalServerError) as raised:
            await client.chat.completions.create(**_request())
    assert raised.value.status_code == 502
    assert _figures(raw_headers := raised.value.response.headers) == (3, 3, 0)
    assert raw_headers["x-should-retry"] == "false"


async def test_a_retry_refused_with_its_status_says_both_attempts(
    anyio_backend: str, upstream: HealUpstream
) -> None:
    upstream.script(
        Reply(completion(("c1", "write", CUT_WRITE), finish_reason="length")),
        Reply(status=503, body=b'{"error": {"message": "overloaded"}}'),
    )
    http, client = _client(upstream)
    async with http, client:
        with pytest.raises(openai.InternalServerError) as raised:
            await client.chat.completions.create(**_request())
    assert raised.value.status_code == 503
    assert _figures(raised.value.response.headers) == (2, 1, 0)


async def test_a_stream_claims_no_figure_before_it_is_known(
    anyio_backend: str, upstream: HealUpstream
) -> None:
    upstream.script(
        Reply(tool_calls_reply(("c1", "write", CUT_WRITE), finish_reason="length")),
        Reply(tool_calls_reply(("c2", "write", GOOD_WRITE))),
    )
    http, client = _client(upstream)
    async with http, client:
        raw = await client.chat.completions.with_raw_response.create(**_request(stream=True))
        received = await read_stream(raw.parse())
    assert [call["arguments"] for call in received.calls] == [GOOD_WRITE]
    assert len(upstream.raw_bodies) == 2  # it was healed, and its headers could not know
    assert not any(name in raw.headers for name in FIGURES)
