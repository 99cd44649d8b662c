"""An agent talking to the real llama-server, reading each stream with ``toolwire.Pipeline``.

On each endpoint (``endpoints.py``), what the server really sends is read by the Pipeline of its
format, as an agent's loop would: a cut call never runs, a call written whole runs with the
server's arguments, a call left in the text is read, the server's parse failure is the model's
broken call, a call the server sent before that failure is judged, and the history toolwire
writes is one the server takes (where a plain loop's replay of a cut call is refused). Each
test also holds what the server itself did, so that a change of llama-server's behaviour fails
here, by name, and not as a puzzle elsewhere.

The Pipeline reads streams; whole bodies are healed by the transport and the proxy
(``test_through_proxy.py``), which read them as the one-chunk streams they are.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest

import toolwire
from toolwire.cli.demo.server import LocalServer

from .endpoints import (
    BRACE_LOST,
    CALL_START,
    CLOSED_CALL,
    ENDPOINTS,
    LIST_FORM,
    QUOTE_LOST,
    TOOL_SYSTEM,
    WHOLE_CALL,
    Endpoint,
    Reading,
)
from .harness import async_client_of

pytestmark = [pytest.mark.anyio, pytest.mark.slow]  # slow: a real server (docs/development.md)

#: This llama.cpp's words for a parse failure (``common/chat.cpp``, ``common_chat_peg_parse``),
#: naming the parser its template got: the same on every endpoint, whole and streamed.
PARSE_FAILURE = "The model produced output that does not match the expected peg-native format"
#: What ``content`` the model wrote in ``WHOLE_CALL``: the arguments a valid call must carry.
WRITTEN = {"path": "hello.py", "content": "Hello, World!"}

by_endpoint = pytest.mark.parametrize("endpoint", ENDPOINTS, ids=lambda e: e.name)


@pytest.fixture
async def client(llama_server: LocalServer) -> AsyncIterator[httpx.AsyncClient]:
    async with async_client_of(llama_server.base_url) as http:
        yield http


async def _turn(
    client: httpx.AsyncClient, endpoint: Endpoint, body: dict[str, Any], **options: Any
) -> tuple[Reading, toolwire.Turn]:
    """What the server sent, read by the tests' reader and by the endpoint's Pipeline."""
    pipeline = toolwire.Pipeline(endpoint.provider, tools=body["tools"], **options)
    async with client.stream("POST", endpoint.path, json=body) as response:
        await response.aread()
        turn = await pipeline.collect(response, request=body)
    return endpoint.read(response), turn


@by_endpoint
async def test_a_cut_call_never_runs_and_the_token_limit_is_named(
    anyio_backend: str, client: httpx.AsyncClient, endpoint: Endpoint
) -> None:
    body = endpoint.ask(prefill=CALL_START, limit=1, stream=True)
    sent, turn = await _turn(client, endpoint, body)
    # The server sends the call as far as the model got (one token into the content string).
    ((name, arguments),) = sent.calls
    assert name == "write"
    assert arguments.startswith('{"path": "hello.py", "content": "')
    (call,) = turn.calls
    assert call.arguments_raw == arguments
    assert (call.outcome, call.verdict and call.verdict.reason) == ("rejected", "truncated")
    assert call.arguments is None
    assert (turn.stop_reason, turn.truncated, turn.cut_by) == ("length", True, "token_limit")
    if endpoint.name == "responses":
        # llama-server's /v1/responses says "completed" with no incomplete_details at the
        # limit: only its usage (output tokens = max_output_tokens) shows the cut.
        assert sent.finish == "completed"
        assert turn.truncation_evidence == ("usage_at_max_tokens",)
    else:
        assert "finish_reason" in turn.truncation_evidence


@by_endpoint
async def test_a_call_written_whole_runs_with_the_servers_arguments(
    anyio_backend: str, client: httpx.AsyncClient, endpoint: Endpoint
) -> None:
    body = endpoint.ask(prefill=WHOLE_CALL, limit=10, stream=True, stop=["</tool_call>"])
    sent, turn = await _turn(client, endpoint, body)
    ((_, arguments),) = sent.calls
    (call,) = turn.calls
    assert (call.name, call.outcome, call.arguments) == ("write", "ok", WRITTEN)
    assert call.arguments_raw == arguments
    assert (turn.stop_reason, turn.truncated, turn.errors) == ("tool_calls", False, ())


@by_endpoint
async def test_a_call_with_a_lost_quote_never_runs(
    anyio_backend: str, client: httpx.AsyncClient, endpoint: Endpoint
) -> None:
    # The model closes the objects but not the string; llama-server's parser still sends a
    # structured call with the arguments as written, and a tool_calls finish.
    body = endpoint.ask(prefill=QUOTE_LOST, limit=10, stream=True, stop=["</tool_call>"])
    sent, turn = await _turn(client, endpoint, body)
    assert sent.calls == [
        ("write", '{"path": "hello.py", "content": "print(\\"Hello, World!\\")}}')
    ]
    (call,) = turn.calls
    assert (call.outcome, call.verdict and call.verdict.reason) == ("rejected", "truncated")
    assert call.arguments is None
    # Not the token limit: the model ended its turn well before it, and toolwire says so. The
    # judge found the call cut, so the turn is cut, on every endpoint alike (issue 27 reported
    # Responses apart; tests/stages/test_judge_finish_agreement_formats.py holds the rule).
    assert (turn.stop_reason, turn.truncated, turn.cut_by) == ("tool_calls", True, "unknown")
    assert call.verdict is not None
    assert "cut off at the output-token limit" not in call.verdict.message


@by_endpoint
async def test_a_call_left_in_the_text_is_read_and_judged(
    anyio_backend: str, plain_llama_server: LocalServer, endpoint: Endpoint
) -> None:
    # The model's own template describes no tools: llama-server parses no call, and the
    # model's <tool_call> block reaches the client as text. The Chat provider llama-server
    # reads text calls by default; the Anthropic and Responses readers do when asked.
    body = endpoint.ask(
        prefill=WHOLE_CALL, limit=10, stream=True, stop=["\n\n"], system=TOOL_SYSTEM
    )
    options = {} if endpoint.provider == "llama-server" else {"text_calls": ["hermes"]}
    async with async_client_of(plain_llama_server.base_url) as client:
        sent, turn = await _turn(client, endpoint, body, **options)
    assert sent.calls == []
    assert sent.text == WHOLE_CALL + "</tool_call>"
    (call,) = turn.calls
    assert (call.name, call.origin, call.outcome, call.arguments) == (
        "write",
        "text",
        "ok",
        WRITTEN,
    )
    assert turn.text == ""  # the markup is the call, not text for the user
    assert turn.stop_reason == "tool_calls"


@by_endpoint
async def test_a_call_left_in_the_text_with_a_brace_lost_never_runs(
    anyio_backend: str, plain_llama_server: LocalServer, endpoint: Endpoint
) -> None:
    # A complete <tool_call> block around an offered tool's call is a call, judged like a
    # structured one with the same arguments: not JSON, so rejected, and not left as text.
    body = endpoint.ask(
        prefill=BRACE_LOST, limit=10, stream=True, stop=["\n\n"], system=TOOL_SYSTEM
    )
    options = {} if endpoint.provider == "llama-server" else {"text_calls": ["hermes"]}
    async with async_client_of(plain_llama_server.base_url) as client:
        sent, turn = await _turn(client, endpoint, body, **options)
    assert (sent.calls, sent.text) == ([], BRACE_LOST)
    (call,) = turn.calls
    assert (call.name, call.origin, call.outcome) == ("write", "text", "rejected")
    assert call.arguments is None
    assert call.arguments_raw in BRACE_LOST  # what came, as it came
    assert "<tool_call>" not in turn.text


@by_endpoint
@pytest.mark.parametrize("stream", [False, True], ids=["whole", "streamed"])
async def test_the_parse_failure_is_the_models_broken_call(
    anyio_backend: str, client: httpx.AsyncClient, endpoint: Endpoint, stream: bool
) -> None:
    # SmolLM2's own form, a list inside the tag: this template's parser fails, and the server
    # answers 500 (whole) or an in-band error (streamed, after a 200), quoting nothing.
    body = endpoint.ask(prefill=LIST_FORM, limit=6, stream=stream)
    sent, turn = await _turn(client, endpoint, body)
    assert (sent.status, sent.calls, sent.errors) == (
        500 if not stream else 200,
        [],
        [PARSE_FAILURE],
    )
    (error,) = turn.errors
    assert error.kind == "tool_parser"
    assert PARSE_FAILURE in error.message
    (call,) = turn.calls
    assert call.verdict is not None
    assert (call.may_run, call.verdict.reason) == (False, "server_could_not_parse")
    assert "could not parse" in call.verdict.message
    assert PARSE_FAILURE in call.verdict.message  # the server's own words, quoted


@by_endpoint
async def test_a_call_sent_before_the_parse_failure_is_judged(
    anyio_backend: str, client: httpx.AsyncClient, endpoint: Endpoint
) -> None:
    # The call is closed; the model goes on with prose, which the parser rejects after the
    # call: the server has streamed the call, then sends its in-band error.
    body = endpoint.ask(prefill=CLOSED_CALL, limit=10, stream=True)
    sent, turn = await _turn(client, endpoint, body)
    ((_, arguments),) = sent.calls
    assert sent.errors == [PARSE_FAILURE]
    (error,) = turn.errors
    assert error.kind == "tool_parser"
    (call,) = turn.calls
    assert (call.outcome, call.arguments, call.arguments_raw) == ("ok", WRITTEN, arguments)


@by_endpoint
async def test_the_history_toolwire_writes_is_accepted(
    anyio_backend: str, client: httpx.AsyncClient, endpoint: Endpoint
) -> None:
    """After a call that ran and after a cut call: the next request is answered (200).

    The cut call's raw arguments are no JSON; replayed as a plain loop keeps them, this
    template (it takes arguments as objects) makes the server parse them, and it refuses the
    whole request on Chat Completions and Responses. toolwire writes the rejected call with
    safe arguments and its message.
    """
    for prefill, limit, stop in ((WHOLE_CALL, 10, ["</tool_call>"]), (CALL_START, 1, [])):
        asked = endpoint.ask(prefill=prefill, limit=limit, stream=True, stop=stop)
        pipeline = toolwire.Pipeline(endpoint.provider, tools=asked["tools"])
        _, turn = await _turn(client, endpoint, asked)
        results = [result async for result in toolwire.dispatch(turn, _written)]
        history = pipeline.next_messages(turn, toolwire.answer_every_call(turn, results))
        assert pipeline.check_history([*asked[endpoint.conversation][:1], *history]) == []
        follow_up = endpoint.follow_up(asked, history)
        response = await client.post(endpoint.path, json=follow_up)
        assert response.status_code == 200, response.text
    if endpoint.name != "messages":  # Anthropic's input is an object: no arguments text
        replayed = _replayed_raw(follow_up, turn.calls[0].arguments_raw)
        refused = await client.post(endpoint.path, json=replayed)
        assert refused.status_code == 500
        assert "Failed to parse tool call arguments as JSON" in refused.text


async def _written(call: toolwire.CallRecord) -> str:
    return f"wrote {call.arguments}"


def _replayed_raw(value: Any, raw: str) -> Any:
    """``value`` with the safe arguments toolwire wrote (``"{}"``) put back as ``raw``."""
    if isinstance(value, dict):
        return {
            key: raw if key == "arguments" and item == "{}" else _replayed_raw(item, raw)
            for key, item in value.items()
        }
    if isinstance(value, list):
        return [_replayed_raw(item, raw) for item in value]
    return value
