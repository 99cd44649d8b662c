"""Ollama streams that go wrong: lost lines, in-band errors, bodies that are no stream, HTTP
errors, drops; and the request reader. A bad call never runs, and the stop reason tells why.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest
from _toolwire_testdata import aiter_items
from ollama import ChatResponse, ResponseError
from test_ollama_fixtures import done, line, ndjson, tool_call

import toolwire
from toolwire.adapters.ollama import OllamaMapper, read_ollama_request
from toolwire.adapters.registry import read_request
from toolwire.core.errors import ConfigurationError
from toolwire.core.events import Event, StreamEnd

pytestmark = pytest.mark.anyio

RM_TOOL = {
    "type": "function",
    "function": {
        "name": "rm",
        "parameters": {
            "type": "object",
            "required": ["path"],
            "properties": {"path": {"type": "string"}},
        },
    },
}


def rm(path: str, call_id: str | None = None) -> dict[str, Any]:
    return tool_call("rm", {"path": path}, index=0, call_id=call_id)


# -- a line that cannot be read ---------------------------------------------------------------


@pytest.mark.parametrize(
    ("unreadable", "kind"),
    [
        (b'{"model":"qwen3:8b","message":{"role":"assistant","content":"x"', "not_json"),
        (b"this is { not json", "not_json"),
        (b"[1, 2]", "unknown_shape"),
        (b'{"choices": [{"index": 0, "delta": {}}]}', "unknown_shape"),
        (b'{"model":"m","message":{"tool_calls":"x"},"done":false}', "unknown_shape"),
        (
            b'{"model":"m","message":{"tool_calls":[{"function":{"arguments":5}}]},"done":false}',
            "unknown_shape",
        ),
        (b'{"model":"m","message":{"tool_calls":[{"id":"c"}]},"done":false}', "unknown_shape"),
    ],
)
async def test_an_unreadable_line_rejects_the_open_calls_as_lost(
    unreadable: bytes, kind: str
) -> None:
    body = ndjson(
        line(calls=[rm("/home/me/old-backups/", "call_a")]),
        unreadable,
        line(calls=[rm("/tmp/x", "call_b")]),
        done(),
    )
    turn = await toolwire.collect(body, "ollama", tools=[RM_TOOL])
    first, second = turn.calls
    # The line that could not be read may have held anything of the turn: the call open then
    # never runs. A call that arrives whole, with its name, after the loss is its own call.
    assert (first.call_id, first.outcome, first.may_run) == ("call_a", "rejected", False)
    assert first.verdict is not None
    assert first.verdict.reason == "lost_in_transit"
    assert (second.call_id, second.outcome, second.arguments) == (
        "call_b",
        "ok",  # an object is no repair (issue 18)
        {"path": "/tmp/x"},
    )
    (error,) = turn.errors
    assert (error.kind, error.fatal) == (kind, False)
    assert turn.stop_reason == "tool_calls"

    ran: list[str] = []

    async def run_tool(record: toolwire.CallRecord) -> str:
        ran.append(record.call_id)
        return "deleted"

    results = [r async for r in toolwire.dispatch(turn, run_tool)]
    assert ran == ["call_b"]
    assert [r.status for r in results] == ["rejected", "ok"]


async def test_a_line_over_the_framing_cap_is_a_lost_piece() -> None:
    huge = json.dumps(line(content="x" * (16 * 1024 * 1024 + 10))).encode()
    body = ndjson(line(calls=[rm("/", "call_a")]), huge, done())
    turn = await toolwire.collect(body, "ollama", tools=[RM_TOOL])
    (call,) = turn.calls
    assert call.verdict is not None
    assert call.verdict.reason == "lost_in_transit"
    (error,) = turn.errors
    assert error.kind == "too_long"
    assert turn.text == ""


# -- Ollama's in-band error line ---------------------------------------------------------------

OOM = "an error was encountered while running the model: CUDA error: out of memory"


async def test_an_error_line_ends_the_turn_in_error_and_the_call_never_runs() -> None:
    # server/routes.go streamResponse: after the first bytes, a failure is one {"error": ...}
    # line, and the stream ends (no done line).
    body = ndjson(line(content="Deleting."), line(calls=[rm("/home", "call_a")]), {"error": OOM})
    turn = await toolwire.collect(body, "ollama", tools=[RM_TOOL])
    assert turn.stop_reason == "error"
    assert turn.text == "Deleting."
    (error,) = turn.errors
    assert (error.kind, error.message, error.fatal) == ("error_payload", OOM, True)
    # The failure stops the call being written, whatever its text looks like: the turn says the
    # output was cut, by the error.
    (call,) = turn.calls
    assert (call.outcome, call.truncated) == ("rejected", True)
    assert (turn.truncated, turn.cut_by) == (True, "error")
    assert turn.truncation_evidence == ("error_mid_call",)


async def test_an_error_line_as_a_decoded_mapping() -> None:
    parts = [line(calls=[rm("/home", "call_a")]), {"error": OOM}]
    turn = await toolwire.collect(parts, "ollama", tools=[RM_TOOL])
    assert turn.stop_reason == "error"
    assert [c.outcome for c in turn.calls] == ["rejected"]


async def test_the_sdk_raising_on_an_error_line_is_a_dropped_turn() -> None:
    # ollama-python raises ResponseError on an {"error": ...} line instead of yielding it; the
    # runner turns a source that raises into a transport error: the call is cut, never runs.
    async def sdk_stream() -> AsyncIterator[ChatResponse]:
        yield ChatResponse(**line(calls=[rm("/home")]))
        raise ResponseError(OOM)

    turn = await toolwire.collect(sdk_stream(), "ollama", tools=[RM_TOOL])
    assert turn.stop_reason == "disconnected"
    (error,) = turn.errors
    assert error.kind == "transport"
    assert OOM in error.message
    assert [(c.outcome, c.truncated) for c in turn.calls] == [("rejected", True)]


async def test_an_error_body_on_a_200_is_an_error() -> None:
    # Before the first bytes Ollama answers an HTTP status; a proxy may still send it with 200.
    turn = await toolwire.collect(b'{"error":"model \\"llama9\\" not found"}', "ollama")
    assert turn.stop_reason == "error"
    assert turn.truncated is False
    (error,) = turn.errors
    assert (error.kind, error.message) == ("error_payload", 'model "llama9" not found')


# -- bodies that are no stream, and streams that drop -------------------------------------------


@pytest.mark.parametrize(
    ("body", "kind"),
    [
        (
            b"<html>\n<head><title>502 Bad Gateway</title></head>\n<body>nginx</body>\n</html>\n",
            "not_a_stream",
        ),
        (b'{"detail": "Not Found"}', "not_a_stream"),
        (bytes(range(256)) * 4, "not_a_stream"),
        (b"\n\n  \n", "not_a_stream"),
        (b"", "empty_response"),
    ],
)
async def test_a_body_that_is_no_stream_is_one_error_not_a_drop(body: bytes, kind: str) -> None:
    turn = await toolwire.collect(body, "ollama")
    assert turn.stop_reason == "error"
    assert turn.truncated is False
    (error,) = turn.errors  # one error for the whole page, not one per line
    assert (error.kind, error.fatal) == (kind, True)
    if kind == "not_a_stream":
        assert "Ollama NDJSON stream" in error.message


async def test_junk_before_the_stream_is_reported_once_the_stream_begins() -> None:
    body = b"garbage one\ngarbage two\n" + ndjson(line(content="Hi"), done(output=1))
    turn = await toolwire.collect(body, "ollama")
    assert (turn.text, turn.stop_reason) == ("Hi", "end_turn")
    (error,) = turn.errors
    assert error.kind == "not_json"
    assert error.raw == "garbage one"
    assert "(and 1 more unreadable lines before it)" in error.message


async def test_a_first_line_cut_short_is_a_dropped_stream() -> None:
    body = ndjson(line(calls=[rm("/home", "call_a")]))[:60]
    turn = await toolwire.collect(body, "ollama")
    assert turn.stop_reason == "disconnected"
    assert turn.truncation_evidence == ("no_finish",)
    (error,) = turn.errors
    assert error.kind == "not_json"


async def test_a_body_without_its_done_line_dropped() -> None:
    body = ndjson(
        line(calls=[rm("/a", "call_a")]),
        line(calls=[rm("/b", "call_b")]),
    )
    turn = await toolwire.collect(body, "ollama", tools=[RM_TOOL])
    assert turn.stop_reason == "disconnected"
    assert (turn.truncated, turn.truncation_evidence, turn.cut_by) == (
        True,
        ("no_finish",),
        "disconnected",
    )
    # The call generated last may be short; the one before it was whole.
    assert [(c.call_id, c.outcome, c.truncated) for c in turn.calls] == [
        ("call_a", "ok", False),  # an object is no repair (issue 18)
        ("call_b", "rejected", True),
    ]
    assert turn.usage is None


def test_nothing_after_the_done_line_is_read() -> None:
    mapper = OllamaMapper()
    events: list[Event] = mapper.feed_bytes(ndjson(line(content="Hi"), done(output=1)))
    assert mapper.done
    assert isinstance(events[-1], StreamEnd)
    assert events[-1].terminated is True
    assert mapper.feed_bytes(ndjson(line(content="more"))) == []
    assert mapper.feed_object(line(content="more")) == []
    assert mapper.finish() == []


# -- an HTTP error status -----------------------------------------------------------------------


def _client(status: int, body: bytes, content_type: str) -> httpx.AsyncClient:
    def handler(request: httpx.Request) -> httpx.Response:
        return httpx.Response(status, content=body, headers={"content-type": content_type})

    return httpx.AsyncClient(transport=httpx.MockTransport(handler), base_url="http://test")


@pytest.mark.parametrize(
    ("status", "message"),
    [
        (404, 'model "llama9" not found, try pulling it first'),
        (400, "json: cannot unmarshal string into Go struct field"),
        (500, "llama runner process has terminated: exit status 2"),
    ],
)
async def test_an_http_error_status_is_an_error_quoting_the_body(status: int, message: str) -> None:
    body = json.dumps({"error": message}).encode()
    async with _client(status, body, "application/json; charset=utf-8") as client:
        async with client.stream("POST", "/api/chat") as response:
            turn = await toolwire.collect(response, "ollama")
    assert turn.stop_reason == "error"
    assert turn.truncated is False
    (error,) = turn.errors
    assert (error.kind, error.code, error.fatal) == ("http_status", str(status), True)
    assert error.message.startswith(f"HTTP {status}")
    assert json.dumps(message)[1:-1] in error.message


async def test_an_ok_http_response_reads_like_its_body() -> None:
    body = ndjson(line(content="hello"), done(output=1))
    async with _client(200, body, "application/x-ndjson") as client:
        async with client.stream("POST", "/api/chat") as response:
            turn = await toolwire.collect(response, "ollama")
    assert (turn.text, turn.stop_reason, turn.errors) == ("hello", "end_turn", ())


async def test_reads_split_inside_a_crlf_line_end() -> None:
    # A proxy that writes \r\n: the \r ends one read and the \n starts the next.
    body = ndjson(line(content="a"), done(output=1)).replace(b"\n", b"\r\n")
    cut = body.index(b"\r\n") + 1
    turn = await toolwire.collect(aiter_items([body[:cut], body[cut:]]), "ollama")
    assert (turn.text, turn.stop_reason, turn.errors) == ("a", "end_turn", ())


# -- the request reader ---------------------------------------------------------------------------

TOOLS = [RM_TOOL]


def test_the_request_reader_reads_options() -> None:
    body = {
        "model": "qwen3:8b",
        "messages": [{"role": "user", "content": "hi"}],
        "tools": TOOLS,
        "options": {"num_predict": 128, "stop": ["</done>", "\n\n"], "temperature": 0},
        "format": "json",
        "think": True,
        "stream": True,
    }
    facts = read_ollama_request(body)
    assert (facts.max_tokens, facts.stop_sequences, facts.model) == (
        128,
        ("</done>", "\n\n"),
        "qwen3:8b",
    )
    assert facts.tools == (RM_TOOL,)
    assert facts.tool_choice is None
    assert read_request("ollama", json.dumps(body).encode()) == facts


def test_the_request_reader_with_nothing_said() -> None:
    facts = read_ollama_request({"model": "m", "messages": []})
    assert (facts.max_tokens, facts.stop_sequences, facts.tools) == (None, (), None)
    # A single stop string, and the top-level max_tokens of another API means nothing here.
    facts = read_ollama_request({"max_tokens": 5, "options": {"stop": "END"}})
    assert (facts.max_tokens, facts.stop_sequences) == (None, ("END",))


@pytest.mark.parametrize("value", [-1, -2, 0])
def test_num_predict_without_a_limit(value: int) -> None:
    # -1: generate without limit; -2: fill the context (Ollama's docs): no output-token limit.
    assert read_ollama_request({"options": {"num_predict": value}}).max_tokens is None


@pytest.mark.parametrize(
    "body",
    [
        {"options": {"num_predict": "12"}},
        {"options": {"num_predict": True}},
        {"options": {"num_predict": 1.5}},
        {"options": ["num_predict", 12]},
        {"options": {"stop": [1]}},
        {"tools": {"name": "rm"}},
    ],
)
def test_the_request_reader_refuses_bad_values(body: dict[str, Any]) -> None:
    with pytest.raises(ConfigurationError):
        read_ollama_request(body)


async def test_the_request_stop_sequence_is_stated_in_the_message() -> None:
    # A stream that drops with a call whose text stops inside a value cannot come from Ollama
    # (it sends whole objects), but a string-arguments imitator can: the facts are still true.
    body = ndjson(line(calls=[tool_call("rm", '{"path": "/ho', call_id="call_s")]), done())
    request = {"model": "m", "options": {"num_predict": 512, "stop": ["/"]}}
    turn = await toolwire.collect(body, "ollama", request=request, tools=[RM_TOOL])
    assert turn.stop_reason == "tool_calls"
    assert (turn.cut_by, turn.truncation_evidence) == ("unknown", ("arguments_unterminated",))
    (call,) = turn.calls
    assert call.outcome == "rejected"
    assert call.verdict is not None
    assert call.verdict.message is not None
    assert (
        "The server reported `stop` after 15 output tokens of the 512 allowed, so this was not "
        "the output-token limit." in call.verdict.message
    )
    assert '"/"' in call.verdict.message
    assert "smaller" not in call.verdict.message
