"""A call the server sent before its in-band tool-parser error is judged, never withheld.

llama-server streams the calls its partial parse reads, then parses the finished output again;
when that final parse fails it sends the error in band and ends the stream
(``tools/server/server-context.cpp``: ``data: {"error": {...}}`` on Chat Completions and
Responses, ``event: error`` with the error object on Messages). Ollama sends a call only once
its parser read it whole, and an ``{"error": ...}`` line when a later part fails. Either way a
call sent before the error is the model's call as the server read it: it is judged as it stands
(issue 27: the proxy withheld it and passed on only the error). The streams here are written
from those source files' shapes (``tests/e2e/llama_server_streams.py``).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from e2e.llama_server_streams import (
    CUT,
    SCHEMA,
    WHOLE,
    chat_stream,
    messages_stream,
    ollama_stream,
    responses_stream,
    sse_data,
)

import toolwire

Stream = Callable[[str | None], bytes]

FORMATS: list[Any] = [
    pytest.param(
        "llama-server",
        [{"type": "function", "function": {"name": "get_weather", "parameters": SCHEMA}}],
        chat_stream,
        id="chat",
    ),
    pytest.param(
        "anthropic",
        [{"name": "get_weather", "input_schema": SCHEMA}],
        messages_stream,
        id="messages",
    ),
    pytest.param(
        "openai-responses",
        [{"type": "function", "name": "get_weather", "parameters": SCHEMA}],
        responses_stream,
        id="responses",
    ),
]


@pytest.mark.anyio
@pytest.mark.parametrize(("provider", "tools", "stream"), FORMATS)
async def test_a_whole_call_sent_before_the_error_runs(
    provider: str, tools: list[dict[str, Any]], stream: Stream
) -> None:
    turn = await toolwire.Pipeline(provider, tools=tools).collect(stream(WHOLE))
    (call,) = turn.calls
    assert (call.name, call.arguments_raw, call.outcome) == ("get_weather", WHOLE, "ok")
    assert call.may_run
    assert turn.stop_reason == "tool_calls"
    assert not turn.truncated
    (error,) = turn.errors
    assert error.kind == "tool_parser"
    assert not error.fatal
    assert "could not parse the model's output" in error.message


@pytest.mark.anyio
@pytest.mark.parametrize(("provider", "tools", "stream"), FORMATS)
async def test_a_call_sent_cut_before_the_error_is_judged_cut(
    provider: str, tools: list[dict[str, Any]], stream: Stream
) -> None:
    turn = await toolwire.Pipeline(provider, tools=tools).collect(stream(CUT))
    (call,) = turn.calls
    assert call.outcome == "rejected"
    assert call.truncated
    assert call.verdict is not None
    assert call.verdict.reason == "truncated"
    # The judge and the turn agree; nothing says the token limit.
    assert turn.truncated
    assert turn.cut_by == "unknown"
    assert turn.truncation_evidence == ("arguments_unterminated",)
    assert "not known" in (call.verdict.message or "")


@pytest.mark.anyio
@pytest.mark.parametrize(("provider", "tools", "stream"), FORMATS)
async def test_an_error_before_any_call_is_the_models_output(
    provider: str, tools: list[dict[str, Any]], stream: Stream
) -> None:
    turn = await toolwire.Pipeline(provider, tools=tools).collect(stream(None))
    (call,) = turn.calls
    assert call.name == ""
    assert not call.may_run
    assert call.verdict is not None
    assert call.verdict.reason == "server_could_not_parse"
    assert (call.verdict.message or "").startswith(
        "The server (llama.cpp) could not parse your output"
    )
    assert turn.stop_reason == "tool_calls"


@pytest.mark.anyio
async def test_an_ollama_call_line_before_an_error_line_runs() -> None:
    tools = [{"type": "function", "function": {"name": "get_weather", "parameters": SCHEMA}}]
    turn = await toolwire.Pipeline("ollama", tools=tools).collect(ollama_stream(WHOLE))
    (call,) = turn.calls
    assert call.name == "get_weather"
    assert call.arguments == {"city": "Paris"}
    assert call.may_run
    assert [error.kind for error in turn.errors] == ["tool_parser"]


@pytest.mark.anyio
async def test_an_unknown_error_after_a_call_still_costs_it_its_run() -> None:
    # Not a parser's words: the server failed mid-stream, the call being written is cut.
    tools = [{"type": "function", "function": {"name": "get_weather", "parameters": SCHEMA}}]
    body = chat_stream(WHOLE, sse_data({"error": {"code": 500, "message": "out of memory"}}))
    turn = await toolwire.Pipeline("llama-server", tools=tools).collect(body)
    (call,) = turn.calls
    assert not call.may_run
    assert turn.stop_reason == "error"
    assert [error.kind for error in turn.errors] == ["error_payload"]
