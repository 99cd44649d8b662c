"""``toolwire serve --otlp-endpoint``: the healing's spans reach an OTLP/HTTP collector.

The collector is a loopback HTTP server that keeps every export it receives (protobuf bodies,
read for the span names they carry); the proxy heals one real cut call, then is stopped with
SIGTERM, which must flush what is still batched before the process ends.
"""

from __future__ import annotations

import signal
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import httpx
import pytest
from _toolwire_testdata import load_stream
from e2e.server import tool_calls_reply
from heal.client import GOOD_WRITE, request
from heal.upstream import HealUpstream, Reply, running_upstream

from .proxy import running_proxy

CUT = "llama-cpp-python/write_max_tokens_24_cut_mid_string.real.sse"


class _Collector(ThreadingHTTPServer):
    exports: list[tuple[str, bytes]]


class _Handler(BaseHTTPRequestHandler):
    server: _Collector

    def do_POST(self) -> None:
        body = self.rfile.read(int(self.headers.get("content-length", 0)))
        self.server.exports.append((self.path, body))
        self.send_response(200)
        self.send_header("content-type", "application/x-protobuf")
        self.send_header("content-length", "0")
        self.end_headers()

    def log_message(self, format: str, *args: object) -> None:
        pass


@pytest.fixture
def collector() -> Iterator[_Collector]:
    server = _Collector(("127.0.0.1", 0), _Handler)
    server.exports = []
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield server
    server.shutdown()
    server.server_close()


@pytest.fixture
def upstream() -> Iterator[HealUpstream]:
    with running_upstream() as scripted:
        yield scripted


def test_healing_spans_and_metrics_reach_the_collector(
    collector: _Collector, upstream: HealUpstream
) -> None:
    upstream.script(
        Reply(load_stream(CUT)), Reply(tool_calls_reply(("call_ok", "write", GOOD_WRITE)))
    )
    endpoint = f"http://127.0.0.1:{collector.server_address[1]}"
    with running_proxy("--upstream", upstream.base_url, "--otlp-endpoint", endpoint) as proxy:
        assert f"telemetry to {endpoint}" in proxy.log
        with httpx.Client(timeout=10) as http:
            response = http.post(f"{proxy.base_url}/chat/completions", json=request())
        assert b"call_ok" in response.content
        assert proxy.stop(signal.SIGTERM) == -signal.SIGTERM
    traces = b"".join(body for path, body in collector.exports if path == "/v1/traces")
    metrics = b"".join(body for path, body in collector.exports if path == "/v1/metrics")
    for span in (b"toolwire.heal", b"toolwire.heal.retry", b"toolwire.heal.call write"):
        assert span in traces
    assert b"toolwire-serve" in traces  # service.name
    assert b"toolwire.heal.tool_calls" in metrics
