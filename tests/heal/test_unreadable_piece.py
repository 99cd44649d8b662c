"""A piece of the upstream's stream toolwire cannot read never costs the client text silently
(issue 19, part 4): the real ``openai`` SDK over a :class:`HealingTransport`, on asyncio and trio.

The bare proxy passes such a piece on byte for byte; the healing cannot (it may hold a call,
which must be judged), so it ends the stream there with a typed in-band error, after the text
that came before it, and asks nothing again.
"""

from __future__ import annotations

import json
from collections.abc import Iterator

import openai
import pytest

from .client import SDK_ON_TRIO_LEAK, healed_client, read_stream, request
from .upstream import HealUpstream, Reply, chat_chunk, running_upstream, sse

pytestmark = [pytest.mark.anyio, pytest.mark.filterwarnings(SDK_ON_TRIO_LEAK)]

#: One byte over the framing cap of one SSE event (16 MiB).
OVER_THE_CAP = "x" * (16 * 1024 * 1024 + 1)
BEFORE, AFTER = "Before the piece. ", "After it."


@pytest.fixture
def upstream() -> Iterator[HealUpstream]:
    with running_upstream() as scripted:
        yield scripted


def _around(piece: bytes) -> bytes:
    """A text turn with ``piece`` (one SSE event) between its two halves."""
    head = sse([chat_chunk({"role": "assistant", "content": BEFORE})], done=False)
    tail = sse([chat_chunk({"content": AFTER}), chat_chunk({}, finish_reason="stop")])
    return head + piece + tail


def _event(delta: dict[str, object]) -> bytes:
    return b"data: " + json.dumps(chat_chunk(delta), ensure_ascii=False).encode() + b"\n\n"


PIECES = [
    pytest.param(_event({"content": OVER_THE_CAP}), "too_long", id="an event over the cap"),
    pytest.param(
        _event({"content": "caf\u00e9"}).replace("\u00e9".encode(), b"\xe9"),
        "not_json",
        id="invalid UTF-8",
    ),
    pytest.param(b"data: {not json\n\n", "not_json", id="not JSON"),
    pytest.param(b'data: {"choices": "not a list"}\n\n', "unknown_shape", id="a shape never sent"),
]


@pytest.mark.parametrize(("piece", "code"), PIECES)
async def test_an_unreadable_piece_ends_the_stream_with_a_typed_error(
    upstream: HealUpstream, piece: bytes, code: str
) -> None:
    upstream.script(Reply(_around(piece)))
    async with healed_client(upstream.base_url) as client:
        stream = await client.chat.completions.create(**request())
        with pytest.raises(openai.APIError) as raised:
            await read_stream(stream)
    error = raised.value
    assert error.code == code
    assert isinstance(error.body, dict)
    assert error.body["type"] == "toolwire_upstream_error"
    assert "could not read a piece of the upstream's response" in error.message
    assert len(upstream.requests) == 1  # nothing was asked again


async def test_the_text_before_the_piece_reached_the_client(upstream: HealUpstream) -> None:
    upstream.script(Reply(_around(b"data: {not json\n\n")))
    received: list[str] = []

    async def read() -> None:
        async for chunk in stream:
            received.extend(choice.delta.content or "" for choice in chunk.choices)

    async with healed_client(upstream.base_url) as client:
        stream = await client.chat.completions.create(**request())
        with pytest.raises(openai.APIError):
            await read()
    assert "".join(received) == BEFORE


@pytest.mark.parametrize(("piece", "code"), PIECES[1:3])
async def test_a_non_streamed_body_with_an_unreadable_piece_is_not_passed_on(
    upstream: HealUpstream, piece: bytes, code: str
) -> None:
    # A non-streamed body is one piece: unreadable, it is a typed 502 (never a 200 the SDK
    # then fails to parse).
    upstream.script(Reply(piece.removeprefix(b"data: ")))
    async with healed_client(upstream.base_url) as client:
        with pytest.raises(openai.APIStatusError) as raised:
            await client.chat.completions.create(**request(stream=False))
    assert raised.value.status_code == 502
