"""The parse failure in the words of llama-server before its PEG parser, through the proxy.

This build says ``The model produced output that does not match the expected peg-native
format`` and quotes nothing (``test_through_proxy.py`` heals it on the real server). Earlier
builds said ``Failed to parse input at pos N: <TAIL>``, ``<TAIL>`` being the model's output
from N on (ggml-org/llama.cpp#20761, #24644), on every endpoint; no build here can produce it,
so a stand-in upstream answers every request with that 500, and ``toolwire serve
--provider llama-server`` (the app, on loopback, as ``harness.py`` runs it) is in front.
The tails are written here, in SmolLM2's own form (a list in the tag, issue 27).
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import httpx
import pytest

from .endpoints import ENDPOINTS, Endpoint
from .harness import RunningProxy, client_of, serving_proxy

#: A whole call of an offered tool in the tail: it is the model's call, and it is valid.
WHOLE_TAIL = (
    '<tool_call>\n[{"name": "write", "arguments": {"path": "hello.py", "content": "Hi"}}]\n'
    "</tool_call>"
)
#: A call cut inside its content string: never run, asked again.
CUT_TAIL = '<tool_call>\n[{"name": "write", "arguments": {"path": "hello.py", "content": "Hi'

by_endpoint = pytest.mark.parametrize("endpoint", ENDPOINTS, ids=lambda e: e.name)
whole_and_streamed = pytest.mark.parametrize("stream", [False, True], ids=["whole", "streamed"])


class _Older(BaseHTTPRequestHandler):
    """Answers every POST with llama-server's older 500 for the tail the test set."""

    tail = ""

    def log_message(self, format: str, *args: object) -> None:
        pass

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers["content-length"]))
        message = f"Failed to parse input at pos 0: {_Older.tail}"
        body = json.dumps({"error": {"code": 500, "message": message, "type": "server_error"}})
        self.send_response(500)
        self.send_header("content-type", "application/json; charset=utf-8")
        self.send_header("content-length", str(len(body.encode())))
        self.end_headers()
        self.wfile.write(body.encode())


@pytest.fixture(scope="module")
def _older_proxy() -> Iterator[RunningProxy]:
    upstream = ThreadingHTTPServer(("127.0.0.1", 0), _Older)
    thread = threading.Thread(target=upstream.serve_forever, daemon=True)
    thread.start()
    try:
        url = f"http://127.0.0.1:{upstream.server_address[1]}/v1"
        with serving_proxy(url, "llama-server") as proxy:
            yield proxy
    finally:
        upstream.shutdown()
        upstream.server_close()


@pytest.fixture
def older_proxy(_older_proxy: RunningProxy) -> RunningProxy:
    _older_proxy.upstream.reset()
    return _older_proxy


def _ask(proxy: RunningProxy, endpoint: Endpoint, tail: str, stream: bool) -> httpx.Response:
    _Older.tail = tail
    with client_of(proxy.base_url) as client:
        return client.post(endpoint.path, json=endpoint.ask(limit=20, stream=stream))


@by_endpoint
@whole_and_streamed
def test_a_valid_call_quoted_in_the_older_words_is_delivered(
    older_proxy: RunningProxy, endpoint: Endpoint, stream: bool
) -> None:
    response = _ask(older_proxy, endpoint, WHOLE_TAIL, stream)
    received = endpoint.read(response)
    assert received.status == 200
    assert received.calls == [("write", '{"path": "hello.py", "content": "Hi"}')]
    assert received.errors == []
    assert len(older_proxy.upstream.settled()) == 1  # the call was there: nothing to ask


@by_endpoint
@whole_and_streamed
def test_a_cut_call_quoted_in_the_older_words_is_asked_again(
    older_proxy: RunningProxy, endpoint: Endpoint, stream: bool
) -> None:
    response = _ask(older_proxy, endpoint, CUT_TAIL, stream)
    received = endpoint.read(response)
    assert received.calls == []  # never the cut call
    first, retry, *_ = older_proxy.upstream.settled()
    # The retry tells the model what the server said, and that its call was cut.
    told = json.dumps(retry.request[endpoint.conversation])
    assert len(retry.request[endpoint.conversation]) > len(first.request[endpoint.conversation])
    assert "could not parse" in told
    assert "Failed to parse input at pos 0" in told
    assert "The arguments end inside a string" in told
    # Every answer is the same 500 here: the client gets the last one (or, streamed, the
    # typed heal failure in band), never a call.
    assert received.errors
