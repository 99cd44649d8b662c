"""The guardrail's retries that fail: a fault of the network, or the upstream's HTTP answer.

No LiteLLM process: the guardrail is built in this process and its healing loop is driven with
in-memory responses and a stand-in ``_ask_again`` (the retry through LiteLLM's router) that
raises. The main virtualenv has no LiteLLM, so ``litellm.integrations.custom_guardrail`` is a
stub when LiteLLM is absent, and the exceptions are stand-ins named and shaped as LiteLLM
1.108.7's (``litellm/exceptions.py``): toolwire tells them apart by class name and status, never
by importing LiteLLM. ``test_litellm_guardrail.py`` checks the same names against the real
classes, inside LiteLLM's virtualenv.
"""

from __future__ import annotations

import importlib
import json
import sys
from collections.abc import AsyncIterator, Callable
from itertools import pairwise
from types import ModuleType
from typing import Any

import httpx
import openai
import pytest
from _toolwire_testdata import chat_chunk, sse_body
from heal.client import GOOD_WRITE, TOOLS
from optional_parts import optional_module

import toolwire.gateway
from toolwire.core.wire import WireItem

pytestmark = pytest.mark.anyio

CUT_WRITE = '{"path": "notes.txt", "content": "hel'
#: llama-server's words when it cannot read an earlier call's arguments (in band here).
HISTORY_WORDS = "Failed to parse tool call arguments as JSON: [json.exception.parse_error.101]"


_REQUEST = httpx.Request("POST", "http://127.0.0.1:1/v1/chat/completions")


def _answered(status: int) -> httpx.Response:
    return httpx.Response(status, request=_REQUEST, json={"error": {"message": "scripted"}})


# LiteLLM's classes on top of the openai SDK's, as ``litellm/exceptions.py`` defines them (with
# the ``status_code`` each sets), and its provider's wrapper (``OpenAIError``).
class OpenAIError(Exception):
    pass


class APIConnectionError(openai.APIConnectionError):
    def __init__(self, message: str) -> None:
        super().__init__(message=f"litellm.APIConnectionError: {message}", request=_REQUEST)
        self.status_code = 500


class Timeout(openai.APITimeoutError):
    def __init__(self, status: int = 408) -> None:
        super().__init__(request=_REQUEST)
        self.status_code = status


class InternalServerError(openai.InternalServerError):
    def __init__(self, message: str) -> None:
        super().__init__(
            f"litellm.InternalServerError: {message}", response=_answered(500), body=None
        )


class RateLimitError(openai.RateLimitError):
    def __init__(self, message: str) -> None:
        super().__init__(f"litellm.RateLimitError: {message}", response=_answered(429), body=None)


class MidStreamFallbackError(openai.APIStatusError):
    """LiteLLM's (a ``ServiceUnavailableError``: an ``APIStatusError`` though nothing answered)."""

    def __init__(self, message: str) -> None:
        super().__init__(message, response=_answered(503), body=None)


def _raised(*chain: BaseException) -> BaseException:
    """``chain[0]``, raised while handling ``chain[1]``, raised while handling ``chain[2]``..."""
    for outer, inner in pairwise(chain):
        outer.__context__ = inner
    return chain[0]


def _status_error(status: int) -> list[BaseException]:
    """What LiteLLM raised its exception while handling, for an upstream's HTTP ``status``."""
    response = _answered(status)
    sdk = openai.RateLimitError if status == 429 else openai.InternalServerError
    answered = sdk("scripted", response=response, body=None)
    answered.__suppress_context__ = True  # the SDK raises it ``from None``
    return [
        OpenAIError(f"scripted {status}"),
        answered,
        httpx.HTTPStatusError("scripted", request=_REQUEST, response=response),
    ]


#: How LiteLLM 1.108.7's router fails a request to an openai-compatible upstream, measured
#: (``litellm_errors.py``, which ``test_litellm_guardrail.py`` runs in LiteLLM's virtualenv to
#: compare the chains' class names with these): its class does not tell a connection that
#: failed from an HTTP 500, what it was raised while handling does.
LITELLM_FAILURES: dict[str, Callable[[], BaseException]] = {
    "refused": lambda: _raised(
        InternalServerError("Connection error."),
        OpenAIError("Connection error."),
        openai.APIConnectionError(request=_REQUEST),
        httpx.ConnectError("All connection attempts failed"),
    ),
    "hangup": lambda: _raised(
        InternalServerError("Connection error."),
        OpenAIError("Connection error."),
        openai.APIConnectionError(request=_REQUEST),
        httpx.ReadError(""),
    ),
    "broken streamed": lambda: _raised(
        APIConnectionError("Connection error."),
        MidStreamFallbackError("Connection error."),
        openai.APIConnectionError(request=_REQUEST),
        httpx.ReadError(""),
    ),
    "stall": lambda: _raised(
        Timeout(),
        OpenAIError("Request timed out."),
        openai.APITimeoutError(request=_REQUEST),
        httpx.ReadTimeout(""),
    ),
    "500": lambda: _raised(InternalServerError("scripted 500"), *_status_error(500)),
    "504": lambda: _raised(Timeout(504), *_status_error(504)),
    "429": lambda: _raised(RateLimitError("scripted 429"), *_status_error(429)),
    # A streamed retry whose first event is the server's in-band error: LiteLLM's router reads
    # the first chunk before it returns, and raises; the openai SDK's APIError is the server's.
    "inband streamed": lambda: _raised(
        APIConnectionError("OpenAIException - " + HISTORY_WORDS),
        MidStreamFallbackError("OpenAIException - " + HISTORY_WORDS),
        openai.APIError(HISTORY_WORDS, request=_REQUEST, body=None),
    ),
    # A whole retry answered 200 with a body that is not JSON, or with nothing.
    "garbage": lambda: _raised(
        InternalServerError("OpenAIException - Empty or invalid response from LLM endpoint."),
        OpenAIError("Empty or invalid response from LLM endpoint. Received: 'this is not json'"),
        OpenAIError("Empty or invalid response from LLM endpoint. Received: 'this is not json'"),
    ),
    "empty": lambda: _raised(
        InternalServerError("OpenAIException - Empty or invalid response from LLM endpoint."),
        OpenAIError("Empty or invalid response from LLM endpoint."),
        OpenAIError("Empty or invalid response from LLM endpoint."),
    ),
}


def _request(*, stream: bool) -> dict[str, Any]:
    """LiteLLM's request data for a Chat Completions request with the ``write`` tool."""
    return {
        "model": "fake",
        "messages": [{"role": "user", "content": "Write hello to notes.txt"}],
        "tools": TOOLS,
        "stream": stream,
    }


def _streamed(call_id: str, arguments: str, finish: str) -> bytes:
    opened = chat_chunk({"role": "assistant", "content": None})
    call = {"index": 0, "id": call_id, "type": "function"}
    written = chat_chunk(
        {"tool_calls": [{**call, "function": {"name": "write", "arguments": arguments}}]}
    )
    return sse_body([opened, written, chat_chunk(finish_reason=finish)])


def _completion(call_id: str, arguments: str, finish: str) -> dict[str, Any]:
    call = {
        "id": call_id,
        "type": "function",
        "function": {"name": "write", "arguments": arguments},
    }
    return {
        "id": "chatcmpl-1",
        "object": "chat.completion",
        "created": 1,
        "model": "fake",
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": None, "tool_calls": [call]},
                "finish_reason": finish,
            }
        ],
    }


async def _chunks(body: bytes) -> AsyncIterator[bytes]:
    yield body


@pytest.fixture
def gateway(monkeypatch: pytest.MonkeyPatch) -> ModuleType:
    """``toolwire.gateway.litellm``, imported afresh (over a stub of LiteLLM's base class when
    LiteLLM is absent), and forgotten again afterwards."""
    try:
        importlib.import_module("litellm.integrations.custom_guardrail")
    except ImportError:
        stub = ModuleType("litellm.integrations.custom_guardrail")

        class CustomGuardrail:
            def __init__(self, **kwargs: Any) -> None:
                pass

        stub.CustomGuardrail = CustomGuardrail  # type: ignore[attr-defined]
        for name in ("litellm", "litellm.integrations"):
            monkeypatch.setitem(sys.modules, name, ModuleType(name))
        monkeypatch.setitem(sys.modules, stub.__name__, stub)
    monkeypatch.delitem(sys.modules, "toolwire.gateway.litellm", raising=False)
    monkeypatch.setattr(toolwire.gateway, "litellm", None, raising=False)
    return importlib.import_module("toolwire.gateway.litellm")


class Router:
    """``_ask_again`` as the tests script it: each retry raises the next error, or answers."""

    def __init__(self, *answers: BaseException | str) -> None:
        self.answers = list(answers)
        self.bodies: list[dict[str, Any]] = []

    async def __call__(
        self, body: dict[str, Any], data: Any, *, streaming: bool
    ) -> AsyncIterator[bytes]:
        self.bodies.append(body)
        answer = self.answers.pop(0)
        if isinstance(answer, BaseException):
            raise answer
        return _chunks(_streamed("call_ok", answer, "tool_calls"))


async def _stream(gateway: ModuleType, router: Router) -> list[WireItem]:
    """What the client of a streamed request whose first answer is a cut call receives."""
    guardrail = gateway.ToolwireGuardrail()
    guardrail._ask_again = router
    data = _request(stream=True)
    plan = guardrail._response_plan(None, data, streaming=True)
    session = guardrail._session(plan, data)
    sent: list[WireItem] = []
    first = _chunks(_streamed("call_cut", CUT_WRITE, "length"))
    try:
        async for items in guardrail._healed(session, first, data, streaming=True):
            sent += items
    finally:
        session.close()
    return sent


def _error(sent: list[WireItem]) -> dict[str, Any]:
    (error,) = [item["error"] for item in sent if isinstance(item, dict) and "error" in item]
    assert isinstance(error, dict)
    return error


def _calls(sent: list[WireItem]) -> list[str]:
    return [
        call["id"]
        for item in sent
        if isinstance(item, dict)
        for choice in item.get("choices", [])
        for call in choice.get("delta", {}).get("tool_calls", []) or []
        if call.get("id")
    ]


@pytest.mark.parametrize("failure", ["refused", "hangup", "broken streamed"])
async def test_a_retry_whose_connection_failed_is_sent_again_once_and_healed(
    anyio_backend: str, gateway: ModuleType, failure: str
) -> None:
    router = Router(LITELLM_FAILURES[failure](), GOOD_WRITE)
    sent = await _stream(gateway, router)
    assert _calls(sent) == ["call_ok"]
    assert not [item for item in sent if isinstance(item, dict) and "error" in item]
    retry, resent = router.bodies
    assert resent == retry  # the same request again, the model told nothing more


async def test_a_retry_whose_connection_fails_twice_ends_with_a_typed_drop(
    anyio_backend: str, gateway: ModuleType
) -> None:
    router = Router(LITELLM_FAILURES["refused"](), LITELLM_FAILURES["hangup"]())
    error = _error(await _stream(gateway, router))
    assert (error["type"], error["code"]) == ("toolwire_upstream_error", "upstream_dropped")
    assert "HTTP 500" not in error["message"]  # the server answered nothing
    assert "(ReadError)" in error["message"]
    assert len(router.bodies) == 2


async def test_a_retry_that_stalled_ends_at_once_with_a_typed_timeout(
    anyio_backend: str, gateway: ModuleType
) -> None:
    router = Router(LITELLM_FAILURES["stall"]())
    error = _error(await _stream(gateway, router))
    assert (error["type"], error["code"]) == ("toolwire_upstream_error", "upstream_timeout")
    assert "HTTP 408" not in error["message"]
    assert len(router.bodies) == 1  # a second wait would be the same wait


@pytest.mark.parametrize("status", [500, 504, 429])
async def test_a_retry_the_upstream_answered_with_an_error_status_says_that_status(
    anyio_backend: str, gateway: ModuleType, status: int
) -> None:
    router = Router(LITELLM_FAILURES[str(status)]())
    error = _error(await _stream(gateway, router))
    assert error["code"] == "retry_http_status"
    assert f"the server answered HTTP {status}" in error["message"]
    assert len(router.bodies) == 1


@pytest.mark.parametrize(
    ("failure", "status", "code"),
    [("stall", 504, "upstream_timeout"), ("hangup", 502, "upstream_dropped")],
)
async def test_a_whole_exchange_whose_retry_failed_is_the_faults_status(
    anyio_backend: str, gateway: ModuleType, failure: str, status: int, code: str
) -> None:
    # The guardrail raises fastapi's HTTPException, as LiteLLM's proxy (which brings fastapi)
    # expects; [dev] alone has no fastapi: a skip in the quick tier, a failure in the full suite.
    http_exception = optional_module("fastapi").HTTPException
    guardrail = gateway.ToolwireGuardrail()
    guardrail._ask_again = Router(LITELLM_FAILURES[failure](), LITELLM_FAILURES[failure]())

    class Whole:
        def model_dump_json(self) -> str:
            return json.dumps(_completion("call_cut", CUT_WRITE, "length"))

    with pytest.raises(http_exception) as raised:
        await guardrail.async_post_call_success_hook(_request(stream=False), None, Whole())
    assert raised.value.status_code == status  # 504 for a stall, as through the transport
    assert raised.value.headers == {"x-should-retry": "false"}
    detail: Any = raised.value.detail
    assert (detail["type"], detail["code"]) == ("toolwire_upstream_error", code)


async def test_a_streamed_retry_whose_first_event_is_the_servers_error_is_not_an_http_500(
    anyio_backend: str, gateway: ModuleType
) -> None:
    # LiteLLM's APIConnectionError (status 500) over its MidStreamFallbackError (an
    # APIStatusError, 503): nothing answered with a status. It is the drop LiteLLM raises for
    # the same error in the first response's stream: sent again once, then the typed drop,
    # in the server's words.
    router = Router(LITELLM_FAILURES["inband streamed"](), LITELLM_FAILURES["inband streamed"]())
    error = _error(await _stream(gateway, router))
    assert (error["type"], error["code"]) == ("toolwire_upstream_error", "upstream_dropped")
    assert "HTTP 500" not in error["message"]
    assert "HTTP 503" not in error["message"]
    assert HISTORY_WORDS in error["message"]
    retry, resent = router.bodies
    assert resent == retry


@pytest.mark.parametrize("failure", ["garbage", "empty"])
async def test_a_retry_litellm_could_not_read_is_told_in_its_words_with_no_status(
    anyio_backend: str, gateway: ModuleType, failure: str
) -> None:
    router = Router(LITELLM_FAILURES[failure]())
    error = _error(await _stream(gateway, router))
    assert error["code"] == "retry_failed"
    assert "HTTP" not in error["message"]  # the upstream answered 200: no status is made up
    assert "OpenAIException" in error["message"]  # LiteLLM's words
    assert len(router.bodies) == 1


@pytest.mark.parametrize("status", [504, 429, 500])
async def test_a_whole_exchange_whose_retry_got_an_error_status_is_that_status(
    anyio_backend: str, gateway: ModuleType, status: int
) -> None:
    # Through the transport (and toolwire serve) a whole exchange's retry answered with an
    # error status reaches the client with that status and x-should-retry: false; not a 502.
    http_exception = optional_module("fastapi").HTTPException
    guardrail = gateway.ToolwireGuardrail()
    guardrail._ask_again = Router(LITELLM_FAILURES[str(status)]())

    class Whole:
        def model_dump_json(self) -> str:
            return json.dumps(_completion("call_cut", CUT_WRITE, "length"))

    with pytest.raises(http_exception) as raised:
        await guardrail.async_post_call_success_hook(_request(stream=False), None, Whole())
    assert raised.value.status_code == status
    assert raised.value.headers == {"x-should-retry": "false"}
    detail: Any = raised.value.detail
    assert detail["code"] == "retry_http_status"
    assert f"the server answered HTTP {status}" in detail["message"]


def test_the_status_told_is_the_upstreams_not_litellms_class(gateway: ModuleType) -> None:
    # LiteLLM's Timeout carries 408 for a stall and the status for an upstream's 504; its
    # InternalServerError 500 for a refused connection too. httpx's answer says which.
    assert gateway.answered_status(LITELLM_FAILURES["504"]()) == 504
    assert gateway.answered_status(LITELLM_FAILURES["429"]()) == 429
    assert gateway.answered_status(LITELLM_FAILURES["stall"]()) is None
    assert gateway.answered_status(LITELLM_FAILURES["inband streamed"]()) is None
    assert gateway.answered_status(LITELLM_FAILURES["garbage"]()) is None


def test_an_exception_that_says_nothing_of_the_network_is_no_fault(gateway: ModuleType) -> None:
    # The guardrail's own (no router, an answer it cannot read): the retry's failure, as before.
    assert gateway.unanswered(RuntimeError("the LiteLLM proxy has no router")) is None


class _Answer:
    def __init__(self, body: dict[str, Any]) -> None:
        self.body = body

    def model_dump_json(self) -> str:
        return json.dumps(self.body)


async def test_a_whole_retry_whose_answer_is_no_completion_is_a_typed_error(
    gateway: ModuleType, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The router answered the retry, but not with a chat.completion: the client is told the
    answer could not be read (as the transport tells it), never that a server answered 500."""

    class LlmRouter:
        async def acompletion(self, **body: Any) -> _Answer:
            return _Answer({"object": "list", "data": []})

    server = ModuleType("litellm.proxy.proxy_server")
    server.llm_router = LlmRouter()  # type: ignore[attr-defined]
    for name in ("litellm", "litellm.proxy"):
        monkeypatch.setitem(sys.modules, name, sys.modules.get(name) or ModuleType(name))
    monkeypatch.setitem(sys.modules, server.__name__, server)
    guardrail = gateway.ToolwireGuardrail()
    data = _request(stream=False)
    plan = guardrail._response_plan(None, data, streaming=False)
    session = guardrail._session(plan, data)
    first = guardrail._wire.body_as_stream(_completion("call_cut", CUT_WRITE, "length"))
    sent: list[WireItem] = []
    try:
        async for items in guardrail._healed(session, first, data, streaming=False):
            sent += items
    finally:
        session.close()
    error = _error(sent)
    assert error["code"] == "not_a_stream"
    assert error["type"] == "toolwire_upstream_error"
    assert '{"object": "list", "data": []}' in error["message"]
    assert "HTTP 500" not in error["message"]
    assert session.error_status == 502
