"""A history a server refuses is repaired before it goes upstream, in every healed format (issue
17, part 4): Anthropic Messages, OpenAI Responses, Gemini and Ollama's ``/api/chat``, against
the scripted servers of ``tests/e2e``, which refuse the broken history as the real ones do
(``broken_histories.py``; Chat's is ``test_transport_history_and_parser_errors.py``). The same
table goes through ``toolwire serve`` in ``tests/serve/test_serve_formats.py`` and
``tests/serve/test_serve_gemini_ollama.py``.

Through plain httpx over a :class:`~toolwire.HealingTransport` for each format, and the real
``anthropic`` and ``openai`` SDKs for the two whose SDKs send such a history as given
(google-genai and ollama validate ``args`` / ``arguments`` as objects before sending: their
broken histories come from clients that write the JSON themselves).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import anthropic
import httpx
import httpx2
import openai
import pytest
from e2e.anthropic_server import running_server as running_messages_server
from e2e.gemini_server import running_gemini_server
from e2e.loopback import ScriptedServer
from e2e.ollama_server import running_ollama
from e2e.openai_responses_server import running_server as running_responses_server

import toolwire
from toolwire.heal import Httpx2Bridge
from toolwire.heal.transport import HISTORY_REPAIRED_HEADER

from .broken_histories import (
    ANTHROPIC,
    GEMINI,
    OLLAMA,
    RESPONSES,
    BrokenHistory,
    assert_repaired_through,
    scripted_answer,
)
from .client import SDK_ON_TRIO_LEAK

pytestmark = [
    pytest.mark.anyio,
    pytest.mark.filterwarnings(SDK_ON_TRIO_LEAK),
    pytest.mark.filterwarnings(
        "ignore:Async generator '(anthropic|httpx|httpx2|httpcore|httpcore2)[.]:ResourceWarning"
    ),
]

Upstream = tuple[BrokenHistory, ScriptedServer[Any], str]

#: Each format's broken history, the scripted server of its API, and the part of the server's
#: ``base_url`` past its root.
FORMATS: list[Any] = [
    pytest.param((ANTHROPIC, running_messages_server, ""), id="anthropic"),
    pytest.param((RESPONSES, running_responses_server, "/v1"), id="responses"),
    pytest.param((GEMINI, running_gemini_server, ""), id="gemini"),
    pytest.param((OLLAMA, running_ollama, ""), id="ollama"),
]


@pytest.fixture
def upstream(request: pytest.FixtureRequest) -> Iterator[Upstream]:
    history, running, base_path = request.param
    with running() as server:
        yield history, server, server.base_url.removesuffix(base_path)


def _healed(root: str) -> httpx.AsyncClient:
    transport = toolwire.HealingTransport(httpx.AsyncHTTPTransport())
    return httpx.AsyncClient(transport=transport, base_url=root, timeout=10)


@pytest.mark.parametrize("upstream", FORMATS, indirect=True)
async def test_without_the_transport_the_broken_history_is_refused(
    anyio_backend: str, upstream: Upstream
) -> None:
    history, server, root = upstream
    server.script(scripted_answer(history, server))
    async with httpx.AsyncClient(base_url=root, timeout=10) as http:
        response = await http.post(history.path, json=history.body, headers=history.headers)
    assert response.status_code == 400
    assert server.refused != []


@pytest.mark.parametrize("upstream", FORMATS, indirect=True)
async def test_a_broken_history_is_repaired_and_the_response_says_so(
    anyio_backend: str, upstream: Upstream
) -> None:
    history, server, root = upstream
    async with _healed(root) as http:
        await assert_repaired_through(http, history, server)


@pytest.mark.parametrize("upstream", FORMATS, indirect=True)
async def test_a_request_not_healed_is_repaired_too(anyio_backend: str, upstream: Upstream) -> None:
    history, server, root = upstream
    async with _healed(root) as http:
        await assert_repaired_through(http, history, server, history.unhealed())


# -- through the SDKs that send such a history as the client gave it ---------------------------


@pytest.mark.parametrize("upstream", [FORMATS[0]], indirect=True)
@pytest.mark.parametrize("stream", [False, True], ids=["whole", "streamed"])
async def test_anthropic_sdk_gets_its_answer_and_the_header(
    anyio_backend: str, upstream: Upstream, stream: bool
) -> None:
    history, server, root = upstream
    server.script(scripted_answer(history, server))
    bridge = Httpx2Bridge(toolwire.HealingTransport())
    async with (
        httpx2.AsyncClient(transport=bridge, timeout=10) as http,
        anthropic.AsyncAnthropic(
            base_url=root, api_key="sk-ant-test", max_retries=0, http_client=http
        ) as client,
    ):
        if stream:
            async with client.messages.stream(**history.body) as streamed:
                message = await streamed.get_final_message()
            headers = streamed.response.headers
        else:
            raw = await client.messages.with_raw_response.create(**history.body)
            message, headers = await raw.parse(), raw.headers
    assert [block.type for block in message.content] == ["text"]
    assert headers[HISTORY_REPAIRED_HEADER] == history.header
    assert server.refused == []
    history.assert_repaired(server.requests[0])


@pytest.mark.parametrize("upstream", [FORMATS[1]], indirect=True)
async def test_openai_sdk_responses_gets_its_answer_and_the_header(
    anyio_backend: str, upstream: Upstream
) -> None:
    history, server, root = upstream
    server.script(scripted_answer(history, server))
    transport = toolwire.HealingTransport()
    async with (
        httpx.AsyncClient(transport=transport, timeout=10) as http,
        openai.AsyncOpenAI(
            base_url=f"{root}/v1", api_key="sk-test", max_retries=0, http_client=http
        ) as client,
    ):
        raw = await client.responses.with_raw_response.create(**history.body)
        events = [event.type async for event in raw.parse()]
    assert raw.headers[HISTORY_REPAIRED_HEADER] == history.header
    assert events[-1] == "response.completed"
    assert server.refused == []
    history.assert_repaired(server.requests[0])
