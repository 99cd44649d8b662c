"""``toolwire serve --otlp-endpoint``: the healing's spans reach an OTLP/HTTP collector.

The collector is a loopback HTTP server that keeps every export it receives (protobuf bodies,
read for the span names they carry); the proxy heals one real cut call, then is stopped with
SIGTERM, which must flush what is still batched before the process ends.
"""

from __future__ import annotations

import signal
import threading
from collections import defaultdict
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import httpx
import pytest
from _toolwire_testdata import load_stream
from e2e.server import tool_calls_reply
from heal.client import GOOD_WRITE, request
from heal.upstream import HealUpstream, Reply, running_upstream
from opentelemetry.proto.collector.metrics.v1.metrics_service_pb2 import (
    ExportMetricsServiceRequest,
)
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

from .proxy import answer, one_connection_per_worker, post_chat, running_proxy

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


# Three processes and a stop: the slow tier.
@pytest.mark.slow
def test_each_worker_exports_its_own_telemetry_under_its_own_instance(
    collector: _Collector, upstream: HealUpstream
) -> None:
    endpoint = f"http://127.0.0.1:{collector.server_address[1]}"
    arguments = ("--upstream", upstream.base_url, "--otlp-endpoint", endpoint, "--workers", "2")
    with running_proxy(*arguments) as proxy:
        with one_connection_per_worker(proxy) as connections:
            for connection in connections.values():
                upstream.script(
                    Reply(load_stream(CUT)),
                    Reply(tool_calls_reply(("call_ok", "write", GOOD_WRITE))),
                )
                post_chat(connection)
                assert b"call_ok" in answer(connection)
        assert proxy.stop(signal.SIGTERM) == -signal.SIGTERM
    # Each worker made its providers after the fork and flushed them when it stopped.
    resources: dict[str, set[tuple[str, int, int]]] = defaultdict(set)
    for path, body in collector.exports:
        kind = {"/v1/traces": ExportTraceServiceRequest, "/v1/metrics": ExportMetricsServiceRequest}
        export = kind[path].FromString(body)
        sent = export.resource_spans if path == "/v1/traces" else export.resource_metrics
        for item in sent:
            values = {a.key: a.value for a in item.resource.attributes}
            assert values["service.name"].string_value == "toolwire-serve"
            resources[path].add(
                (
                    values["service.instance.id"].string_value,
                    values["toolwire.worker"].int_value,
                    values["process.pid"].int_value,
                )
            )
    for path in ("/v1/traces", "/v1/metrics"):
        assert len({instance for instance, _, _ in resources[path]}) == 2, resources[path]
        assert {worker for _, worker, _ in resources[path]} == {0, 1}
        assert {pid for _, _, pid in resources[path]} == set(connections)
