"""``HealingTransport`` against ``httpx.MockTransport``: what the upstream's bytes and headers
become, closing before reading, and the configuration it refuses."""

from __future__ import annotations

import gzip
import json
import subprocess
import sys
from collections.abc import AsyncIterator, Callable
from typing import Any

import httpx
import pytest
from e2e.server import cut_write_reply, tool_calls_reply

import toolwire
from toolwire.heal.transport import HealingTransport

from .client import GOOD_WRITE, request
from .upstream import completion

pytestmark = pytest.mark.anyio


class _TrackedStream(httpx.AsyncByteStream):
    """An upstream body that records whether it was closed."""

    def __init__(self, body: bytes) -> None:
        self.body = body
        self.closed = False

    async def __aiter__(self) -> AsyncIterator[bytes]:
        yield self.body

    async def aclose(self) -> None:
        self.closed = True


def _transport(
    reply: Callable[[httpx.Request], httpx.Response], **options: Any
) -> HealingTransport:
    return HealingTransport(wrapped=httpx.MockTransport(reply), provider="llama-cpp", **options)


def _calls_of(body: bytes) -> list[dict[str, Any]]:
    return [
        fragment
        for line in body.split(b"\n\n")
        if line.startswith(b"data: {")
        for choice in json.loads(line[6:]).get("choices", ())
        for fragment in choice["delta"].get("tool_calls") or ()
    ]


async def test_a_compressed_stream_is_read_and_healed(anyio_backend: str) -> None:
    replies = [cut_write_reply(), tool_calls_reply(("call_fixed", "write", GOOD_WRITE))]

    def reply(sent: httpx.Request) -> httpx.Response:
        return httpx.Response(
            200,
            headers={"content-type": "text/event-stream", "content-encoding": "gzip"},
            content=gzip.compress(replies.pop(0)),
        )

    async with httpx.AsyncClient(transport=_transport(reply), base_url="http://up/v1") as http:
        response = await http.post("/chat/completions", json=request())
    assert "content-encoding" not in response.headers
    assert [c["id"] for c in _calls_of(response.content)] == ["call_fixed"]


async def test_a_compressed_completion_is_read_and_passed_decoded(anyio_backend: str) -> None:
    body = completion(("call_ok", "write", GOOD_WRITE))

    def reply(sent: httpx.Request) -> httpx.Response:
        return httpx.Response(
            200,
            headers={"content-type": "application/json", "content-encoding": "gzip",
                     "x-request-id": "abc"},
            content=gzip.compress(body),
        )

    async with httpx.AsyncClient(transport=_transport(reply), base_url="http://up/v1") as http:
        response = await http.post("/chat/completions", json=request(stream=False))
    assert response.content == body
    assert "content-encoding" not in response.headers
    assert response.headers["x-request-id"] == "abc"  # the upstream's other headers are kept


async def test_a_200_that_is_no_stream_becomes_an_in_band_error(anyio_backend: str) -> None:
    def reply(sent: httpx.Request) -> httpx.Response:
        return httpx.Response(200, json={"detail": "streaming is off"})

    async with httpx.AsyncClient(transport=_transport(reply), base_url="http://up/v1") as http:
        response = await http.post("/chat/completions", json=request())
    assert response.headers["content-type"].startswith("text/event-stream")
    (line,) = [part for part in response.content.split(b"\n\n") if part]
    error = json.loads(line.removeprefix(b"data: "))["error"]
    assert error["code"] == "not_a_stream"
    assert "streaming is off" in error["message"]


async def test_closing_before_reading_closes_the_upstream_response(anyio_backend: str) -> None:
    stream = _TrackedStream(cut_write_reply())

    def reply(sent: httpx.Request) -> httpx.Response:
        return httpx.Response(200, headers={"content-type": "text/event-stream"}, stream=stream)

    async with httpx.AsyncClient(transport=_transport(reply), base_url="http://up/v1") as http:
        async with http.stream("POST", "/chat/completions", json=request()):
            pass  # headers only: the client never reads the body
    assert stream.closed


async def test_the_retry_goes_to_the_same_url_with_the_same_headers(anyio_backend: str) -> None:
    seen: list[httpx.Request] = []
    replies = [cut_write_reply(), tool_calls_reply(("call_fixed", "write", GOOD_WRITE))]

    def reply(sent: httpx.Request) -> httpx.Response:
        seen.append(sent)
        return httpx.Response(200, headers={"content-type": "text/event-stream"},
                              content=replies.pop(0))

    async with httpx.AsyncClient(transport=_transport(reply), base_url="http://up/v1") as http:
        await http.post("/chat/completions?api-version=1", json=request(),
                        headers={"authorization": "Bearer k", "x-custom": "1"})
    first, retry = seen
    assert retry.url == first.url == "http://up/v1/chat/completions?api-version=1"
    for name in ("authorization", "x-custom", "user-agent", "content-type"):
        assert retry.headers[name] == first.headers[name]
    assert int(retry.headers["content-length"]) == len(retry.content)


@pytest.mark.parametrize(
    "options",
    [
        {"provider": "anthropic"},
        {"provider": "no-such-server"},
        {"max_retries": -1},
        {"max_retries": True},
        {"max_tokens_ceiling": 0},
        {"reasoning_field": "thoughts"},
        {"truncated_calls": "sometimes"},
    ],
)
def test_bad_configuration_is_refused_at_once(options: dict[str, Any]) -> None:
    with pytest.raises(toolwire.ConfigurationError):
        HealingTransport(wrapped=httpx.MockTransport(lambda r: httpx.Response(200)), **options)


def test_the_transport_is_exported_and_httpx_stays_optional() -> None:
    assert toolwire.HealingTransport is HealingTransport
    assert "HealingTransport" in toolwire.__all__
    script = "import sys, toolwire, toolwire.heal.session; print('httpx' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                         check=True)
    assert out.stdout.strip() == "False"
