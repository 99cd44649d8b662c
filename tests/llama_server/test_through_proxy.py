"""A client with no toolwire in it, through ``toolwire serve --provider llama-server``.

The proxy runs in this process (``harness.py``) in front of the real llama-server and keeps
every exchange it had with it, so each test compares what the client received with what the
server really sent: a valid call byte for byte, a broken one never, a call left in the text
as a call, the server's parse failure healed, a call sent before that failure delivered, and a
history the server would refuse repaired. On each endpoint (``endpoints.py``), whole and
streamed.

The tests are synchronous: the proxy runs on uvicorn (asyncio) in its own thread whatever a test
runs on, and the client is plain HTTP (``tests/serve/test_hypercorn.py`` runs the proxy itself
on trio). Each test costs the model a few tokens, and each retry a longer prompt: the proxy asks
again once (``max_retries=1``), enough to show a healing.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

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
from .harness import Exchange, RunningProxy, client_of

pytestmark = pytest.mark.slow  # a real server (docs/development.md)

PARSE_FAILURE = "The model produced output that does not match the expected peg-native format"
#: The arguments llama-server sends for ``CALL_START`` cut one token later (test_direct.py).
CUT_ARGUMENTS = '{"path": "hello.py", "content": "Hello'
#: How each endpoint's finish says "the output-token limit" to the client.
LIMIT_FINISH = {
    "chat": "length",
    "messages": "max_tokens",
    "responses": "incomplete:max_output_tokens",
}
#: ... and "the model called a tool".
CALL_FINISH = {"chat": "tool_calls", "messages": "tool_use", "responses": "completed"}

by_endpoint = pytest.mark.parametrize("endpoint", ENDPOINTS, ids=lambda e: e.name)
whole_and_streamed = pytest.mark.parametrize("stream", [False, True], ids=["whole", "streamed"])


def _ask(proxy: RunningProxy, endpoint: Endpoint, body: dict[str, Any]) -> Reading:
    with client_of(proxy.base_url) as client:
        response = client.post(endpoint.path, json=body)
    return endpoint.read(response)


def _upstream(endpoint: Endpoint, exchange: Exchange) -> Reading:
    """What the server answered one of the proxy's requests, as that request asked it."""
    asked = bool(exchange.request.get("stream", False))
    return endpoint.reading(exchange.status, exchange.body, asked)


def _valid(arguments: str) -> bool:
    """The ``write`` tool's schema, checked by hand: an object with two strings."""
    try:
        value = json.loads(arguments)
    except ValueError:
        return False
    return (
        isinstance(value, dict)
        and set(value) == {"path", "content"}
        and all(isinstance(item, str) for item in value.values())
    )


def _healed(endpoint: Endpoint, proxy: RunningProxy, received: Reading) -> list[Exchange]:
    """The rules of every healed answer; the exchanges, for what a test checks besides."""
    exchanges = proxy.upstream.settled()
    assert len(exchanges) >= 2, "the model was not asked again"
    # Each retry carries the history toolwire wrote (the rejected call and why): the server
    # took every one of them.
    retries = exchanges[1:]
    assert [exchange.status for exchange in retries] == [200] * len(retries)
    first = exchanges[0].request[endpoint.conversation]
    for retry in retries:
        assert len(retry.request[endpoint.conversation]) > len(first)
    assert received.status == 200
    assert received.errors == []
    assert all(name == "write" and _valid(arguments) for name, arguments in received.calls)
    return exchanges


@by_endpoint
@whole_and_streamed
def test_a_cut_call_never_reaches_the_client(
    llama_proxy: RunningProxy, endpoint: Endpoint, stream: bool
) -> None:
    body = endpoint.ask(prefill=CALL_START, limit=1, stream=stream)
    received = _ask(llama_proxy, endpoint, body)
    exchanges = _healed(endpoint, llama_proxy, received)
    cut = _upstream(endpoint, exchanges[0])
    ((_, arguments),) = cut.calls
    if endpoint.name == "messages" and not stream:
        # llama-server's whole Messages answer turns the cut arguments into an empty input.
        assert arguments == "{}"
    else:
        assert arguments.startswith(CUT_ARGUMENTS[:34])
    assert arguments not in [sent for _, sent in received.calls]
    # Every answer was cut at one token: the client learns of the limit, in its own words
    # (llama-server's Responses said "completed"; usage at the limit shows the cut).
    assert received.finish == LIMIT_FINISH[endpoint.name]


@by_endpoint
@whole_and_streamed
def test_a_valid_call_passes_byte_for_byte(
    llama_proxy: RunningProxy, endpoint: Endpoint, stream: bool
) -> None:
    body = endpoint.ask(prefill=WHOLE_CALL, limit=10, stream=stream, stop=["</tool_call>"])
    with client_of(llama_proxy.base_url) as client:
        response = client.post(endpoint.path, json=body)
    received = endpoint.read(response)
    (exchange,) = llama_proxy.upstream.settled()  # no retry
    sent = _upstream(endpoint, exchange)
    assert sent.calls == [("write", '{"path": "hello.py", "content": "Hello, World!"}')]
    assert received.calls == sent.calls  # the arguments text as the server sent it
    assert received.finish == CALL_FINISH[endpoint.name] == sent.finish
    if not stream:
        # Nothing to change: the server's body, byte for byte.
        assert response.content == exchange.body


@by_endpoint
@whole_and_streamed
def test_a_call_with_a_lost_quote_is_asked_again(
    llama_proxy: RunningProxy, endpoint: Endpoint, stream: bool
) -> None:
    body = endpoint.ask(prefill=QUOTE_LOST, limit=10, stream=stream, stop=["</tool_call>"])
    received = _ask(llama_proxy, endpoint, body)
    exchanges = _healed(endpoint, llama_proxy, received)
    broken = _upstream(endpoint, exchanges[0])
    ((_, arguments),) = broken.calls  # llama-server sent it as a structured call
    assert not _valid(arguments)
    assert broken.finish == CALL_FINISH[endpoint.name]  # and said the model ended its turn


@by_endpoint
@whole_and_streamed
def test_a_call_left_in_the_text_reaches_the_client_as_a_call(
    plain_llama_proxy: RunningProxy, endpoint: Endpoint, stream: bool
) -> None:
    # The server started with the model's own template parses no call: the model's block stays
    # in the text. ``--provider llama-server`` reads it on every endpoint of that server.
    body = endpoint.ask(
        prefill=WHOLE_CALL, limit=10, stream=stream, stop=["\n\n"], system=TOOL_SYSTEM
    )
    received = _ask(plain_llama_proxy, endpoint, body)
    (exchange,) = plain_llama_proxy.upstream.settled()
    sent = _upstream(endpoint, exchange)
    assert (sent.calls, sent.text) == ([], WHOLE_CALL + "</tool_call>")
    assert received.calls == [("write", '{"path": "hello.py", "content": "Hello, World!"}')]
    assert "<tool_call>" not in received.text
    assert received.finish == CALL_FINISH[endpoint.name]


@by_endpoint
@whole_and_streamed
def test_a_call_left_in_the_text_with_a_brace_lost_is_asked_again(
    plain_llama_proxy: RunningProxy, endpoint: Endpoint, stream: bool
) -> None:
    # Neither passed on as text (the agent would wait on a call never made) nor run: rejected,
    # and the model asked again.
    body = endpoint.ask(
        prefill=BRACE_LOST, limit=10, stream=stream, stop=["\n\n"], system=TOOL_SYSTEM
    )
    received = _ask(plain_llama_proxy, endpoint, body)
    exchanges = _healed(endpoint, plain_llama_proxy, received)
    assert _upstream(endpoint, exchanges[0]).text == BRACE_LOST
    assert BRACE_LOST not in received.text


@by_endpoint
@whole_and_streamed
def test_the_parse_failure_is_healed(
    llama_proxy: RunningProxy, endpoint: Endpoint, stream: bool
) -> None:
    body = endpoint.ask(prefill=LIST_FORM, limit=6, stream=stream)
    received = _ask(llama_proxy, endpoint, body)
    exchanges = _healed(endpoint, llama_proxy, received)
    failed = _upstream(endpoint, exchanges[0])
    assert failed.status == (200 if stream else 500)
    assert (failed.calls, failed.errors) == ([], [PARSE_FAILURE])


@by_endpoint
def test_a_call_sent_before_the_parse_failure_is_delivered(
    llama_proxy: RunningProxy, endpoint: Endpoint
) -> None:
    # Streamed: llama-server sends the call it parsed, then its in-band error (the model's
    # prose after the call). The call is valid: the client gets it, and no error.
    body = endpoint.ask(prefill=CLOSED_CALL, limit=10, stream=True)
    received = _ask(llama_proxy, endpoint, body)
    exchanges = llama_proxy.upstream.settled()
    sent = _upstream(endpoint, exchanges[0])
    assert sent.errors == [PARSE_FAILURE]
    ((_, arguments),) = sent.calls
    assert _valid(arguments)
    assert received.calls == sent.calls
    assert received.errors == []
    assert received.finish == CALL_FINISH[endpoint.name]
    assert len(exchanges) == 1  # nothing to ask again


@by_endpoint
def test_a_history_holding_a_cut_call_is_repaired_and_accepted(
    llama_proxy: RunningProxy, endpoint: Endpoint
) -> None:
    """A client that kept the cut call's text sends it back; the proxy writes it as rejected.

    Direct, llama-server refuses that history on Chat Completions and Responses (its template
    takes arguments as objects, so it parses each one: ``test_direct.py``); through the proxy
    the request is answered. A history with nothing to repair goes up as the client wrote it.
    """
    asked = endpoint.ask(limit=4, stream=False)
    user = asked[endpoint.conversation][:1]
    kept = endpoint.replay("c1", CUT_ARGUMENTS, "nothing written")
    broken = {**asked, endpoint.conversation: [*user, *kept]}
    with client_of(llama_proxy.base_url) as client:
        response = client.post(endpoint.path, json=broken)
    assert response.status_code == 200, response.text
    assert response.headers["x-toolwire-history-repaired"].startswith("arguments_not_")
    (exchange,) = llama_proxy.upstream.settled()
    assert exchange.status == 200
    replayed = json.dumps(exchange.request[endpoint.conversation])
    assert CUT_ARGUMENTS not in replayed
    written = '{"path": "hello.py", "content": "Hello, World!"}'
    whole = {**asked, endpoint.conversation: [*user, *endpoint.replay("c1", written, "ok")]}
    llama_proxy.upstream.reset()
    with client_of(llama_proxy.base_url) as client:
        response = client.post(endpoint.path, json=whole)
    assert response.status_code == 200, response.text
    assert "x-toolwire-history-repaired" not in response.headers
    (exchange,) = llama_proxy.upstream.settled()
    assert exchange.request[endpoint.conversation] == whole[endpoint.conversation]
