"""toolwire's spans in a real tracing backend: Arize Phoenix, over OTLP/HTTP, read back by its API.

A Phoenix server (the ``[phoenix]`` extra) is started on loopback with a temporary working
directory and SQLite; recordings with known outcomes are replayed through the real judge and
exported with the standard OTLP/HTTP exporter and a batch span processor; the spans are then read
back through Phoenix's REST API (``GET /v1/projects/{project}/spans``) and the repair and
rejection counts per tool and kind are asserted. Without the extra: a skip, with the reason, in
the quick tier (which leaves this ``slow`` module out anyway), a failure in the full suite.
"""

from __future__ import annotations

import importlib.util
import json
import os
import socket
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from data_paths import STREAMS
from optional_parts import part_missing


def _missing_extra() -> list[str]:
    """What the ``[phoenix]`` extra brings that is absent (without importing ``phoenix``, whose
    import warns: the server runs in a subprocess)."""
    missing = [
        name
        for name in ("opentelemetry.sdk", "opentelemetry.exporter.otlp.proto.http", "httpx")
        if importlib.util.find_spec(name) is None
    ]
    phoenix = importlib.util.find_spec("phoenix")
    locations = list(phoenix.submodule_search_locations or []) if phoenix is not None else []
    if not any((Path(location) / "server" / "main.py").is_file() for location in locations):
        missing.append("arize-phoenix")
    return missing


_MISSING = _missing_extra()
if _MISSING:
    part_missing("phoenix", _MISSING)

import anyio  # noqa: E402
import httpx  # noqa: E402
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter  # noqa: E402
from opentelemetry.sdk.resources import Resource  # noqa: E402
from opentelemetry.sdk.trace import TracerProvider  # noqa: E402
from opentelemetry.sdk.trace.export import BatchSpanProcessor  # noqa: E402

import toolwire  # noqa: E402

pytestmark = [pytest.mark.anyio, pytest.mark.slow]  # slow: docs/development.md

PROJECT = "toolwire-integration"
STARTUP_TIMEOUT = 90.0
INGEST_TIMEOUT = 30.0


@pytest.fixture
def anyio_backend() -> str:
    # One backend is enough here: the backend matrix is covered by tests/telemetry; this test is
    # about the export path and the backend's view of the spans.
    return "asyncio"


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


@pytest.fixture(scope="module")
def phoenix_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """A Phoenix server on free loopback ports, in a temporary working dir; stopped at the end."""
    workdir = tmp_path_factory.mktemp("phoenix")
    http_port, grpc_port = _free_port(), _free_port()
    env = {
        key: value
        for key, value in os.environ.items()
        # Nothing of the caller's own tracing or Phoenix configuration leaks into the server.
        if not key.startswith(("OTEL_", "PHOENIX_"))
    }
    env.update(
        PHOENIX_WORKING_DIR=str(workdir),
        PHOENIX_HOST="127.0.0.1",
        PHOENIX_PORT=str(http_port),
        PHOENIX_GRPC_PORT=str(grpc_port),
        # No network: no product telemetry, no external fonts / scripts, no agent web access.
        PHOENIX_TELEMETRY_ENABLED="false",
        PHOENIX_ALLOW_EXTERNAL_RESOURCES="false",
        PHOENIX_DISABLE_AGENT_ASSISTANT="true",
        PYTHONWARNINGS="ignore",
    )
    log_path = workdir / "phoenix.log"
    with log_path.open("wb") as log:
        process = subprocess.Popen(
            [sys.executable, "-m", "phoenix.server.main", "serve"],
            cwd=workdir, env=env, stdout=log, stderr=subprocess.STDOUT,
        )
    url = f"http://127.0.0.1:{http_port}"
    try:
        deadline = time.monotonic() + STARTUP_TIMEOUT
        while True:
            if process.poll() is not None:
                pytest.fail(f"Phoenix exited with {process.returncode}:\n{_tail(log_path)}")
            try:
                if httpx.get(f"{url}/healthz", timeout=2).status_code == 200:
                    break
            except httpx.TransportError:
                pass
            if time.monotonic() > deadline:
                pytest.fail(f"Phoenix not ready after {STARTUP_TIMEOUT:.0f} s:\n{_tail(log_path)}")
            time.sleep(0.25)
        yield url
    finally:
        process.terminate()
        try:
            process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(timeout=10)


def _tail(path: Path, lines: int = 40) -> str:
    return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])


def _chat_stream(name: str, arguments: str, *, model: str = "qwen2.5-7b-instruct") -> bytes:
    """A Chat Completions SSE body with one call whose arguments arrive 7 characters a chunk."""

    def chunk(delta: dict[str, Any], finish: str | None = None) -> bytes:
        payload = {
            "id": "chatcmpl-phoenix", "object": "chat.completion.chunk", "created": 1727346178,
            "model": model,
            "choices": [{"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}],
        }
        return b"data: " + json.dumps(payload).encode() + b"\n\n"

    head = {"index": 0, "id": f"call_{name}", "type": "function",
            "function": {"name": name, "arguments": ""}}
    parts = [chunk({"role": "assistant", "content": None}), chunk({"tool_calls": [head]})]
    for start in range(0, len(arguments), 7):
        piece = {"index": 0, "function": {"arguments": arguments[start : start + 7]}}
        parts.append(chunk({"tool_calls": [piece]}))
    parts.append(chunk({}, "tool_calls"))
    return b"".join(parts) + b"data: [DONE]\n\n"


#: (provider, body, max_tokens) replays, and the spans they must produce.
def _replays() -> list[tuple[str, bytes, int | None]]:
    llama = STREAMS / "llama-cpp-python"
    return [
        # Real recordings of llama-cpp-python: calls cut at max_tokens, and a complete one.
        ("llama-cpp", (llama / "read_max_tokens_5.real.sse").read_bytes(), 5),
        ("llama-cpp", (llama / "write_max_tokens_12_cut_mid_string.real.sse").read_bytes(), 12),
        ("llama-cpp", (llama / "write_max_tokens_24_cut_mid_string.real.sse").read_bytes(), 24),
        ("llama-cpp", (llama / "write_complete.real.sse").read_bytes(), 300),
        # Hand-written streams with the usual damage of open-weight models.
        ("vllm", _chat_stream("read", '```json\n{"path": "notes.txt"}\n```'), None),
        ("vllm", _chat_stream("write", '{path: "a.txt", content: "hello"}'), None),
        ("vllm", _chat_stream("read", "{'path': 'b.txt'}"), None),
        ("vllm", _chat_stream("search", '{"query" "phoenix"}'), None),
    ]


EXPECTED_REJECTIONS = {("read", "truncated"): 1, ("write", "truncated"): 2,
                       ("search", "not_json"): 1}
EXPECTED_REPAIRS = {("read", "fence"): 1, ("write", "bare_keys"): 1, ("read", "python_literal"): 1}


async def _spans(client: httpx.AsyncClient) -> list[dict[str, Any]]:
    """Every span of the test project, through Phoenix's REST API (paginated)."""
    spans: list[dict[str, Any]] = []
    cursor: str | None = None
    while True:
        params: dict[str, Any] = {"limit": 100}
        if cursor:
            params["cursor"] = cursor
        response = await client.get(f"/v1/projects/{PROJECT}/spans", params=params)
        if response.status_code == 404:  # the project appears with its first span
            return spans
        response.raise_for_status()
        body = response.json()
        spans.extend(body["data"])
        cursor = body.get("next_cursor")
        if not cursor or not body["data"]:
            return spans


def _attribute(span: dict[str, Any], key: str) -> Any:
    """An attribute whether the API returns it flat (``a.b``) or nested (``{"a": {"b"}}``)."""
    attributes = span.get("attributes") or {}
    if key in attributes:
        return attributes[key]
    value: Any = attributes
    for part in key.split("."):
        if not isinstance(value, dict) or part not in value:
            return None
        value = value[part]
    return value


async def test_repairs_and_rejections_per_tool_and_kind_in_phoenix(phoenix_url: str) -> None:
    provider = TracerProvider(
        resource=Resource.create(
            {"service.name": "toolwire-tests", "openinference.project.name": PROJECT}
        )
    )
    provider.add_span_processor(
        BatchSpanProcessor(OTLPSpanExporter(endpoint=f"{phoenix_url}/v1/traces", timeout=10))
    )
    replays = _replays()
    try:
        for name, body, max_tokens in replays:
            await toolwire.collect(body, name, max_tokens=max_tokens, tracer_provider=provider)
        assert provider.force_flush(timeout_millis=20_000)
    finally:
        provider.shutdown()

    expected_spans = len(replays) + sum(EXPECTED_REJECTIONS.values()) + sum(
        EXPECTED_REPAIRS.values()
    )
    deadline = time.monotonic() + INGEST_TIMEOUT
    async with httpx.AsyncClient(base_url=phoenix_url, timeout=10) as client:
        spans = await _spans(client)
        while len(spans) < expected_spans and time.monotonic() < deadline:
            await anyio.sleep(0.5)  # Phoenix inserts the spans it receives in batches
            spans = await _spans(client)
    assert len(spans) == expected_spans, [span["name"] for span in spans]

    turns = [span for span in spans if span["name"] == "toolwire.turn"]
    assert len(turns) == len(replays)
    turn_ids = {span["context"]["span_id"] for span in turns}
    assert Counter(_attribute(span, "gen_ai.provider.name") for span in turns) == {
        "llama.cpp": 4, "vllm": 4
    }
    assert sum(_attribute(span, "toolwire.tool_calls.rejected") for span in turns) == 4
    assert sum(_attribute(span, "toolwire.tool_calls.repaired") for span in turns) == 3
    assert sum(_attribute(span, "toolwire.tool_calls.ok") for span in turns) == 1

    rejections = [span for span in spans if span["name"].startswith("toolwire.reject ")]
    repairs = [span for span in spans if span["name"].startswith("toolwire.repair ")]
    assert Counter(
        (_attribute(span, "gen_ai.tool.name"), _attribute(span, "toolwire.reject.reason"))
        for span in rejections
    ) == EXPECTED_REJECTIONS
    assert Counter(
        (_attribute(span, "gen_ai.tool.name"), kind)
        for span in repairs
        for kind in _attribute(span, "toolwire.repair.kinds")
    ) == EXPECTED_REPAIRS
    for span in rejections:
        assert span["status_code"] == "ERROR"
        assert _attribute(span, "error.type") == _attribute(span, "toolwire.reject.reason")
        assert span["name"] == f"toolwire.reject {_attribute(span, 'gen_ai.tool.name')}"
    for span in rejections + repairs:
        assert span.get("parent_id") in turn_ids
        assert _attribute(span, "gen_ai.tool.call.id")
    truncated = [s for s in rejections if _attribute(s, "toolwire.reject.reason") == "truncated"]
    assert all(_attribute(span, "toolwire.truncated") is True for span in truncated)
    assert all(_attribute(span, "toolwire.truncation.evidence") for span in truncated)
