"""The constrained re-ask on Chat Completions, through ``HealingTransport``, against a scripted
loopback server that records each request as the server received it (issue 31).

Each server profile asks in its server's own shape (``adapters/openai_chat/profiles.py``,
``docs/healing.md``): a named function for llama-cpp-python, vLLM and SGLang; the call as a
JSON object in the ``json_schema`` field for llama-server (which reads ``tool_choice`` as a
string only, and whose ``required`` lets text come first); the named function and ``strict:
true`` for OpenAI, when the schema is one strict mode takes. What does not change: the history
(the model reads the same true message), the tool the model chose, the judge (a server that
ignores the constraint and breaks the call again is rejected again), and a turn with no
rejected call (prose stays prose).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from e2e.server import text_reply, tool_calls_reply
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

import toolwire

from .upstream import Hangup, HealUpstream, Reply, completion, running_upstream

pytestmark = [pytest.mark.anyio]


def _tool(name: str, properties: dict[str, Any], *, closed: bool = True) -> dict[str, Any]:
    parameters: dict[str, Any] = {
        "type": "object",
        "properties": properties,
        "required": list(properties),
    }
    if closed:
        parameters["additionalProperties"] = False
    return {"type": "function", "function": {"name": name, "parameters": parameters}}


STRING = {"type": "string"}
WRITE = _tool("write", {"path": STRING, "content": STRING})
READ = _tool("read", {"path": STRING})
#: A schema with a keyword no grammar engine here keeps to whole.
SEARCH = _tool("search", {"pattern": {"type": "string", "pattern": "^[a-z]+$"}})
TOOLS = [WRITE, READ, SEARCH]
#: A call of ``write`` whose ``path`` is a number and whose ``content`` is missing.
BROKEN_WRITE = ("call_1", "write", '{"path": 3}')
GOOD_WRITE = ("call_2", "write", '{"path": "a.txt", "content": "hi"}')
#: The same call cut inside a value (with ``finish_reason: length``: at the token limit).
CUT_WRITE = ("call_1", "write", '{"path": "a.txt", "content": "hel')
WRITE_FORCED = {"type": "function", "function": {"name": "write"}}
#: llama-server's way: its ``json_schema`` field holding the call as a JSON object.
WRITE_AS_JSON = {
    "type": "object",
    "properties": {"name": {"const": "write"}, "arguments": WRITE["function"]["parameters"]},
    "required": ["name", "arguments"],
    "additionalProperties": False,
}


@pytest.fixture
def upstream() -> Iterator[HealUpstream]:
    with running_upstream() as scripted:
        yield scripted


def body(*, stream: bool = True, **extra: Any) -> dict[str, Any]:
    return {
        "model": "scripted-model",
        "messages": [{"role": "user", "content": "Write hi to a.txt"}],
        "tools": TOOLS,
        "max_tokens": 64,
        "stream": stream,
        **extra,
    }


async def ask(
    upstream: HealUpstream,
    provider: str,
    sent: dict[str, Any],
    *,
    headers: dict[str, str] | None = None,
    **options: Any,
) -> httpx.Response:
    """Send ``sent`` through a healing transport; the response, read."""
    transport = toolwire.HealingTransport(
        wrapped=httpx.AsyncHTTPTransport(), provider=provider, **options
    )
    async with httpx.AsyncClient(transport=transport, timeout=10) as client:
        response = await client.post(
            f"{upstream.base_url}/chat/completions", json=sent, headers=headers or {}
        )
        await response.aread()
        return response


def streamed_calls(response: httpx.Response) -> list[tuple[str, str]]:
    """``(name, arguments)`` of every call a healed stream sent the client."""
    calls: dict[int, list[str]] = {}
    for line in response.text.splitlines():
        if not line.startswith("data: {"):
            continue
        for choice in json.loads(line[6:]).get("choices", []):
            for fragment in (choice.get("delta") or {}).get("tool_calls") or ():
                entry = calls.setdefault(fragment["index"], ["", ""])
                function = fragment.get("function") or {}
                entry[0] += function.get("name") or ""
                entry[1] += function.get("arguments") or ""
    return [(name, arguments) for name, arguments in (calls[i] for i in sorted(calls))]


def without(request: dict[str, Any], *keys: str) -> dict[str, Any]:
    return {key: value for key, value in request.items() if key not in keys}


# -- each server's own shape -------------------------------------------------------------------


@pytest.mark.parametrize(
    ("provider", "forced"),
    [
        pytest.param("llama-cpp", {"tool_choice": WRITE_FORCED}, id="llama-cpp-python"),
        pytest.param("vllm", {"tool_choice": WRITE_FORCED}, id="vllm"),
        pytest.param("sglang", {"tool_choice": WRITE_FORCED}, id="sglang"),
        pytest.param("llama-server", {"json_schema": WRITE_AS_JSON}, id="llama-server"),
        pytest.param(
            "openai-chat",
            {
                "tool_choice": WRITE_FORCED,
                "tools": [
                    {"type": "function", "function": {**WRITE["function"], "strict": True}},
                    READ,
                    SEARCH,
                ],
            },
            id="openai",
        ),
    ],
)
async def test_a_rejected_call_is_asked_for_again_in_its_servers_own_shape(
    anyio_backend: str, upstream: HealUpstream, provider: str, forced: dict[str, Any]
) -> None:
    upstream.script(Reply(tool_calls_reply(BROKEN_WRITE)), Reply(tool_calls_reply(GOOD_WRITE)))
    response = await ask(upstream, provider, body())
    assert streamed_calls(response) == [("write", GOOD_WRITE[2])]
    first, retry = upstream.requests
    assert {key: retry[key] for key in forced} == forced
    # Nothing else changed: the model reads the follow-up it read before, the true message.
    assert without(retry, *forced, "messages") == without(first, *forced, "messages")
    said = retry["messages"][-1]["content"] if provider != "llama-cpp" else retry["messages"][-1]
    assert "expected string, got integer" in json.dumps(said)
    assert 'missing required property \\"content\\"' in json.dumps(said)


async def test_the_client_s_own_tools_and_choice_come_back_on_the_next_request(
    anyio_backend: str, upstream: HealUpstream
) -> None:
    """Only the re-ask is constrained: the turn after it is asked as the client asks it."""
    upstream.script(
        Reply(tool_calls_reply(BROKEN_WRITE)),
        Reply(tool_calls_reply(BROKEN_WRITE)),
        Reply(tool_calls_reply(GOOD_WRITE)),
    )
    await ask(upstream, "llama-server", body(tool_choice="auto"), max_retries=2)
    first, once, twice = upstream.requests
    assert "json_schema" not in first
    assert once["json_schema"] == twice["json_schema"] == WRITE_AS_JSON
    assert first["tool_choice"] == once["tool_choice"] == twice["tool_choice"] == "auto"
    # The second re-ask is built on the client's request, not on the first re-ask.
    assert len(twice["messages"]) == len(once["messages"]) + 2


async def test_a_server_that_ignores_the_constraint_is_still_judged(
    anyio_backend: str, upstream: HealUpstream
) -> None:
    """Every call a constrained re-ask brings is judged: broken again, it never goes out."""
    upstream.script(
        Reply(completion(BROKEN_WRITE)),
        Reply(completion(("call_3", "write", '{"path": "a.txt"}'))),
    )
    response = await ask(upstream, "llama-cpp", body(stream=False), max_retries=1)
    assert response.status_code == 502
    error = response.json()["error"]
    assert error["type"] == "toolwire_heal_failed"
    assert 'missing required property "content"' in error["message"]
    assert upstream.requests[1]["tool_choice"] == WRITE_FORCED
    assert "x-toolwire-constrained" not in response.headers


async def test_a_whole_response_says_which_calls_a_constrained_re_ask_brought(
    anyio_backend: str, upstream: HealUpstream
) -> None:
    upstream.script(Reply(completion(BROKEN_WRITE)), Reply(completion(GOOD_WRITE)))
    response = await ask(upstream, "vllm", body(stream=False))
    assert response.status_code == 200
    assert response.headers["x-toolwire-constrained"] == "write=1"
    (call,) = response.json()["choices"][0]["message"]["tool_calls"]
    assert call["function"]["arguments"] == GOOD_WRITE[2]


# -- the model keeps its choice ----------------------------------------------------------------


async def test_the_constraint_names_the_tool_the_model_chose_not_the_one_the_client_forced(
    anyio_backend: str, upstream: HealUpstream
) -> None:
    upstream.script(
        Reply(tool_calls_reply(("call_1", "read", '{"path": ["a"]}'))),
        Reply(tool_calls_reply(("call_2", "read", '{"path": "a.txt"}'))),
    )
    await ask(upstream, "vllm", body(tool_choice="required"))
    assert upstream.requests[1]["tool_choice"] == {"type": "function", "function": {"name": "read"}}


async def test_prose_is_never_turned_into_a_call(
    anyio_backend: str, upstream: HealUpstream
) -> None:
    upstream.script(Reply(text_reply("I wrote it.")))
    response = await ask(upstream, "llama-server", body())
    assert streamed_calls(response) == []
    assert len(upstream.requests) == 1


@pytest.mark.parametrize(
    ("first_reply", "why"),
    [
        pytest.param(("call_1", "delete", '{"path": "a"}'), "unknown_tool", id="unknown-tool"),
        pytest.param(("call_1", "search", '{"pattern": 3}'), "schema_unsupported", id="pattern"),
    ],
)
async def test_a_call_a_constraint_cannot_fix_is_asked_again_as_before(
    anyio_backend: str, upstream: HealUpstream, first_reply: tuple[str, str, str], why: str
) -> None:
    upstream.script(Reply(tool_calls_reply(first_reply)), Reply(tool_calls_reply(GOOD_WRITE)))
    await ask(upstream, "llama-server", body())
    first, retry = upstream.requests
    assert without(retry, "messages") == without(first, "messages")


async def test_a_call_cut_at_the_limit_is_not_constrained_and_its_budget_is_bounded(
    anyio_backend: str, upstream: HealUpstream
) -> None:
    """A cut needs more budget, not a grammar; the budget rises to no more than the factor
    times the client's own, under the ceiling."""
    cut = tool_calls_reply(
        ("call_1", "write", '{"path": "a.txt", "content": "hel'), finish_reason="length"
    )
    upstream.script(Reply(cut), Reply(cut), Reply(tool_calls_reply(GOOD_WRITE)))
    await ask(
        upstream,
        "llama-server",
        body(max_tokens=100),
        max_tokens_ceiling=10_000,
        max_tokens_factor=3,
    )
    _, once, twice = upstream.requests
    assert [r["max_tokens"] for r in upstream.requests] == [100, 200, 300]
    assert "json_schema" not in once
    assert "json_schema" not in twice


async def test_the_budget_policy_is_off_by_default(
    anyio_backend: str, upstream: HealUpstream
) -> None:
    cut = tool_calls_reply(
        ("call_1", "write", '{"path": "a.txt", "content": "hel'), finish_reason="length"
    )
    upstream.script(Reply(cut), Reply(tool_calls_reply(GOOD_WRITE)))
    await ask(upstream, "llama-server", body(max_tokens=100), max_tokens_factor=3)
    assert [r["max_tokens"] for r in upstream.requests] == [100, 100]


# -- turned off: per request, per tool, per transport ------------------------------------------


@pytest.mark.parametrize(
    ("options", "headers"),
    [
        pytest.param({"constrain": False}, {}, id="transport"),
        pytest.param({"unconstrained_tools": ["write"]}, {}, id="tool"),
        pytest.param({}, {"x-toolwire-constrain": "off"}, id="request-header"),
    ],
)
async def test_the_constraint_can_be_turned_off(
    anyio_backend: str,
    upstream: HealUpstream,
    options: dict[str, Any],
    headers: dict[str, str],
) -> None:
    upstream.script(Reply(tool_calls_reply(BROKEN_WRITE)), Reply(tool_calls_reply(GOOD_WRITE)))
    await ask(upstream, "llama-server", body(), headers=headers, **options)
    first, retry = upstream.requests
    assert without(retry, "messages") == without(first, "messages")


async def test_a_request_cannot_turn_on_what_the_transport_turned_off(
    anyio_backend: str, upstream: HealUpstream
) -> None:
    upstream.script(Reply(tool_calls_reply(BROKEN_WRITE)), Reply(tool_calls_reply(GOOD_WRITE)))
    await ask(
        upstream, "llama-server", body(), headers={"x-toolwire-constrain": "on"}, constrain=False
    )
    assert "json_schema" not in upstream.requests[1]


@pytest.mark.parametrize(
    "options",
    [
        {"max_tokens_factor": 0.5},
        {"max_tokens_factor": True},
        {"unconstrained_tools": "write"},
        {"unconstrained_tools": [3]},
    ],
)
def test_bad_options_are_refused_at_once(options: dict[str, Any]) -> None:
    with pytest.raises(toolwire.ConfigurationError):
        toolwire.HealingTransport(provider="llama-server", **options)


# -- telemetry -----------------------------------------------------------------------------------


async def test_the_spans_and_counters_say_a_call_came_from_a_constrained_re_ask(
    anyio_backend: str, upstream: HealUpstream
) -> None:
    exporter = InMemorySpanExporter()
    tracer_provider = TracerProvider()
    tracer_provider.add_span_processor(SimpleSpanProcessor(exporter))
    reader = InMemoryMetricReader()
    upstream.script(Reply(tool_calls_reply(BROKEN_WRITE)), Reply(tool_calls_reply(GOOD_WRITE)))
    await ask(
        upstream,
        "llama-server",
        body(),
        tracer_provider=tracer_provider,
        meter_provider=MeterProvider(metric_readers=[reader]),
    )
    spans = {span.name: span for span in exporter.get_finished_spans()}
    retry = dict(spans["toolwire.heal.retry"].attributes or {})
    assert retry["toolwire.heal.constraint"] == "constrained"
    assert retry["toolwire.heal.constraint.tool"] == "write"
    assert retry["toolwire.heal.constraint.mechanism"] == "json_schema=call"
    assert retry["toolwire.heal.constraint.schema_enforced"] is True
    call = dict(spans["toolwire.heal.call write"].attributes or {})
    assert call["toolwire.heal.outcome"] == "healed"
    assert call["toolwire.heal.constrained"] is True
    points = _points(reader, "toolwire.heal.tool_calls")
    assert {"toolwire.heal.outcome": "healed", "toolwire.heal.constrained": True} in [
        {k: v for k, v in p.items() if k in ("toolwire.heal.outcome", "toolwire.heal.constrained")}
        for p in points
    ]


async def test_a_schema_the_engine_cannot_take_says_so_in_telemetry(
    anyio_backend: str, upstream: HealUpstream
) -> None:
    exporter = InMemorySpanExporter()
    tracer_provider = TracerProvider()
    tracer_provider.add_span_processor(SimpleSpanProcessor(exporter))
    upstream.script(
        Reply(tool_calls_reply(("call_1", "search", '{"pattern": 3}'))),
        Reply(tool_calls_reply(("call_2", "search", '{"pattern": "todo"}'))),
    )
    await ask(upstream, "llama-server", body(), tracer_provider=tracer_provider)
    (retry,) = [s for s in exporter.get_finished_spans() if s.name == "toolwire.heal.retry"]
    attributes = dict(retry.attributes or {})
    assert attributes["toolwire.heal.constraint"] == "schema_unsupported"
    assert attributes["toolwire.heal.constraint.detail"] == "#/properties/pattern: pattern"
    assert "toolwire.heal.constraint.mechanism" not in attributes


def _points(reader: InMemoryMetricReader, name: str) -> list[dict[str, Any]]:
    data = reader.get_metrics_data()
    assert data is not None
    return [
        dict(point.attributes or {})
        for resource in data.resource_metrics
        for scope in resource.scope_metrics
        for metric in scope.metrics
        if metric.name == name
        for point in metric.data.data_points
    ]


async def test_a_constrained_re_ask_sent_again_after_a_drop_is_the_same_request(
    anyio_backend: str, upstream: HealUpstream
) -> None:
    """The one resend after a drop sends what was sent: the constrained re-ask itself."""
    upstream.script(
        Reply(tool_calls_reply(BROKEN_WRITE)), Hangup(), Reply(tool_calls_reply(GOOD_WRITE))
    )
    response = await ask(upstream, "llama-server", body(), max_retries=1)
    assert streamed_calls(response) == [("write", GOOD_WRITE[2])]
    _, retry, resent = upstream.requests
    assert retry == resent
    assert resent["json_schema"] == WRITE_AS_JSON
