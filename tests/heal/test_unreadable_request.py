"""The library shell never forwards a body it cannot read unhealed (issue 29, M3).

``HealingTransport`` plans a request with msgspec. A body msgspec refuses but Python's ``json``
reads (``NaN``, ``1e400``, a UTF-8 byte order mark, a lone ``\\ud83d`` as JavaScript writes
half an emoji) or that is not UTF-8 was planned as "not healed" and sent upstream as it came:
no error, no header, no log, and the call the model made reached the client unjudged. A lone
surrogate stays in that conversation's history, so every later turn went the same way. It is
now the transport's typed 400 naming why (what ``toolwire serve`` answers too), and the
upstream sees nothing.
"""

from __future__ import annotations

import json
from typing import Any

import httpx
import pytest

import toolwire
from toolwire.heal.request_body import READ_AT_ONCE_UP_TO

pytestmark = pytest.mark.anyio

_SCHEMA = {"type": "object", "properties": {"path": {"type": "string"}}}
_FUNCTION = {"name": "write", "description": "write a file", "parameters": _SCHEMA}
_USER = [{"role": "user", "content": "Write hello to notes.txt"}]
_CHAT_TOOLS = [{"type": "function", "function": _FUNCTION}]

#: One healed request per healed endpoint: (path, body), each offering one tool.
ENDPOINTS: dict[str, tuple[str, dict[str, Any]]] = {
    "chat": ("/v1/chat/completions", {"model": "m", "messages": _USER, "tools": _CHAT_TOOLS}),
    "messages": (
        "/v1/messages",
        {"model": "m", "max_tokens": 64, "messages": _USER,
         "tools": [{"name": "write", "input_schema": _SCHEMA}]},
    ),
    "responses": (
        "/v1/responses",
        {"model": "m", "input": "Write hello", "tools": [{"type": "function", **_FUNCTION}]},
    ),
    "gemini": (
        "/v1beta/models/m:generateContent",
        {"contents": [{"role": "user", "parts": [{"text": "Write hello"}]}],
         "tools": [{"functionDeclarations": [_FUNCTION]}]},
    ),
    "ollama": (
        "/api/chat",
        {"model": "m", "messages": _USER, "stream": False, "tools": _CHAT_TOOLS},
    ),
}  # fmt: skip

#: The five kinds of body of issue 29's M3 (Python's ``json`` reads all but the last, msgspec
#: none; since ES2019 ``JSON.stringify`` writes a lone surrogate as ``\ud83d``): bytes before
#: the body, a member written into it as raw bytes (no encoder writes them), and the words the
#: refusal names it by.
KINDS: dict[str, tuple[bytes, bytes, str]] = {
    "NaN": (b"", b'"temperature": NaN', "NaN, a number JSON has no form for"),
    "1e400": (b"", b'"temperature": 1e400', "1e400, a number JSON has no form for"),
    "byte order mark": (b"\xef\xbb\xbf", b"", "byte order mark"),
    # Half of a thumbs-up (U+1F44D is \ud83d\udc4d), as JavaScript writes a string cut there.
    "lone surrogate": (b"", b'"user": "thumbs \\ud83d"', "lone UTF-16 surrogate"),
    "invalid UTF-8": (b"", b'"user": "\xff\xfe"', "it is not UTF-8"),
}


def _written(body: dict[str, Any], kind: str) -> bytes:
    """``body`` as JSON, written with ``kind``'s bytes."""
    prefix, member, _ = KINDS[kind]
    content = json.dumps(body).encode()
    if member:
        content = content[:-1] + b", " + member + b"}"
    return prefix + content


class _Upstream:
    """Records what reaches it; answers a whole Chat turn (what it answers is never read here
    when the transport refuses)."""

    def __init__(self) -> None:
        self.sent: list[bytes] = []

    def __call__(self, request: httpx.Request) -> httpx.Response:
        self.sent.append(request.content)
        return httpx.Response(200, json={"ok": True})


async def _post(path: str, content: bytes, upstream: _Upstream) -> httpx.Response:
    transport = toolwire.HealingTransport(httpx.MockTransport(upstream), provider="llama-server")
    async with httpx.AsyncClient(transport=transport, base_url="http://upstream.test") as http:
        return await http.post(path, content=content, headers={"content-type": "application/json"})


def _refusal(response: httpx.Response) -> str:
    assert response.status_code == 400, response.text
    error = response.json()["error"]
    assert (error["type"], error["code"]) == ("toolwire_invalid_request", "invalid_request")
    message: str = error["message"]
    assert message.startswith("toolwire cannot read this request's JSON to heal it: ")
    assert message.endswith("It was not sent upstream, where it would have gone unhealed")
    return message


@pytest.mark.parametrize("endpoint", list(ENDPOINTS))
@pytest.mark.parametrize("kind", list(KINDS))
async def test_a_body_the_healing_cannot_read_is_a_typed_400_never_sent(
    kind: str, endpoint: str
) -> None:
    path, body = ENDPOINTS[endpoint]
    upstream = _Upstream()
    response = await _post(path, _written(body, kind), upstream)
    assert KINDS[kind][2] in _refusal(response)
    assert upstream.sent == []


@pytest.mark.parametrize("kind", list(KINDS))
async def test_a_large_body_is_refused_the_same_way(kind: str) -> None:
    """Above 64 KiB the body is planned in a worker thread: the same check, the same answer."""
    path, body = ENDPOINTS["chat"]
    long_turn = {"role": "assistant", "content": "x" * READ_AT_ONCE_UP_TO}
    padded = {**body, "messages": [*_USER, long_turn]}
    upstream = _Upstream()
    response = await _post(path, _written(padded, kind), upstream)
    assert KINDS[kind][2] in _refusal(response)
    assert upstream.sent == []


async def test_a_body_that_is_no_json_at_all_is_refused_as_the_proxy_refuses_it() -> None:
    upstream = _Upstream()
    response = await _post("/v1/chat/completions", b"model=m&messages=hi", upstream)
    assert "it is not JSON" in _refusal(response)
    assert upstream.sent == []


@pytest.mark.parametrize(
    "content",
    [
        # Readable and not healed (no tools; not an object): as it came, byte for byte.
        json.dumps({"model": "m", "messages": _USER}).encode(),
        b'[{"model": "m"}]',
        # Readable: a duplicate key is read by msgspec (the last wins) and planned as it reads.
        b'{"model": "m", "messages": [], "model": "n"}',
        # A big integer is a JSON number msgspec reads (only a float out of range is none).
        json.dumps({"model": "m", "messages": _USER, "seed": 10**40}).encode(),
    ],
    ids=["no tools", "an array", "a key twice", "a big integer"],
)
async def test_a_body_the_healing_reads_is_not_refused(content: bytes) -> None:
    upstream = _Upstream()
    response = await _post("/v1/chat/completions", content, upstream)
    assert response.status_code == 200
    assert upstream.sent == [content]


async def test_an_endpoint_that_is_not_healed_passes_any_body_untouched() -> None:
    """``/v1/embeddings`` is not toolwire's to read: what the client sent goes up as sent."""
    content = b'{"model": "m", "input": "x", "dimensions": NaN}'
    upstream = _Upstream()
    response = await _post("/v1/embeddings", content, upstream)
    assert response.status_code == 200
    assert upstream.sent == [content]
