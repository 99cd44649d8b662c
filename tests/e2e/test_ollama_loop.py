"""An agent loop against a loopback Ollama ``/api/chat``, through httpx and the ``ollama`` SDK.

The scripted server (``tests/e2e/ollama_server.py``) streams NDJSON like Ollama and refuses a
request the way Ollama does (object arguments, field types) and, stricter, a history whose calls
are not each answered in order. Every scenario runs on both clients and both anyio backends;
the judge decides, and these tests check what reaches the tool and what the next request
carried.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from typing import Any, Protocol

import httpx
import ollama
import pytest

import toolwire
from toolwire.core.turn import Turn
from toolwire.loop import check_history, dispatch

from .loop_steps import WRITE_AND_READ_TOOLS, ToolSpy, step
from .ollama_server import (
    Reply,
    ScriptedOllama,
    chat_line,
    done_line,
    ndjson,
    ollama_call,
    running_ollama,
)

pytestmark = pytest.mark.anyio

#: ollama-python 0.6 raises ``ResponseError`` from inside ``async for line in r.aiter_lines()``
#: (``AsyncClient._stream``'s ``inner``) and never closes that iterator, so on trio the garbage
#: collector finalizes httpx's chain of async generators (``aiter_lines`` -> ``aiter_text`` ->
#: ``aiter_bytes``) with a ResourceWarning. toolwire closes the stream it is given (``aclose``)
#: but cannot reach a generator local to the SDK. Only that warning, only where the SDK raises,
#: is ignored; every other warning is still an error.
SDK_RAISES_ON_TRIO = pytest.mark.filterwarnings(
    "ignore:Async generator 'httpx[.]_models[.]Response[.]aiter_:ResourceWarning"
)

PROVIDER = "ollama"
NUM_PREDICT = 24
TOOLS = WRITE_AND_READ_TOOLS
USER = [{"role": "user", "content": "Write hello to notes.txt"}]
GOOD = {"path": "notes.txt", "content": "hello"}


def request_body(messages: list[dict[str, Any]]) -> dict[str, Any]:
    return {
        "model": "qwen3:8b",
        "messages": messages,
        "tools": TOOLS,
        "stream": True,
        "options": {"num_predict": NUM_PREDICT},
    }


class Chat(Protocol):
    #: The client keeps Ollama's call ids (the SDK's pydantic models drop them).
    keeps_ids: bool

    async def turn(self, messages: list[dict[str, Any]]) -> Turn: ...


class HttpxChat:
    """``response.aiter_bytes()`` straight into ``toolwire.collect``."""

    keeps_ids = True

    def __init__(self, client: httpx.AsyncClient) -> None:
        self.client = client

    async def turn(self, messages: list[dict[str, Any]]) -> Turn:
        body = request_body(messages)
        async with self.client.stream("POST", "/api/chat", json=body) as response:
            response.raise_for_status()
            return await toolwire.collect(
                response.aiter_bytes(), PROVIDER, request=body, tools=TOOLS
            )


class SdkChat:
    """``ollama.AsyncClient.chat(stream=True)``: its async iterator of ``ChatResponse``."""

    keeps_ids = False

    def __init__(self, client: ollama.AsyncClient) -> None:
        self.client = client

    async def turn(self, messages: list[dict[str, Any]]) -> Turn:
        body = request_body(messages)
        stream = await self.client.chat(
            model=body["model"],
            messages=messages,
            tools=TOOLS,
            stream=True,
            options={"num_predict": NUM_PREDICT},
        )
        return await toolwire.collect(stream, PROVIDER, request=body, tools=TOOLS)


@pytest.fixture
def server() -> Iterator[ScriptedOllama]:
    with running_ollama() as scripted:
        yield scripted


@pytest.fixture(params=["httpx", "ollama-sdk"])
def via(request: pytest.FixtureRequest) -> str:
    kind: str = request.param
    return kind


@asynccontextmanager
async def chat_client(via: str, server: ScriptedOllama) -> AsyncIterator[Chat]:
    if via == "httpx":
        async with httpx.AsyncClient(base_url=server.base_url, timeout=10) as client:
            yield HttpxChat(client)
    else:
        async with ollama.AsyncClient(host=server.base_url, timeout=10) as sdk:
            yield SdkChat(sdk)


async def test_a_call_cut_at_num_predict_never_runs_and_the_corrected_one_runs_once(
    anyio_backend: str, via: str, server: ScriptedOllama
) -> None:
    # Turn 1: a builtin parser flushed the call it was reading when num_predict stopped the
    # model: the call comes whole-looking in the done line, done_reason "length".
    cut = ollama_call("write", {"path": "notes.txt", "content": "hel"}, 0, "call_cut00001")
    server.script(
        Reply(
            ndjson(
                chat_line(thinking="Write the file."),
                chat_line(content="Writing."),
                done_line("length", eval_count=NUM_PREDICT, calls=[cut]),
            )
        ),
        Reply(
            ndjson(
                chat_line(calls=[ollama_call("write", GOOD, 0, "call_good0001")]),
                done_line(eval_count=18),
            )
        ),
        Reply(ndjson(chat_line(content="Wrote notes.txt."), done_line(eval_count=5))),
    )
    tool = ToolSpy(ids=False)
    messages = list(USER)
    async with chat_client(via, server) as chat:
        turn1, results1 = await step(chat, messages, tool, PROVIDER)
        assert tool.ran == []
        (call,) = turn1.calls
        assert (call.name, call.truncated, call.outcome) == ("write", True, "rejected")
        assert (turn1.stop_reason, turn1.finish_raw, turn1.cut_by) == (
            "length",
            "length",
            "token_limit",
        )
        assert turn1.truncation_evidence == ("finish_reason", "usage_at_max_tokens")
        assert (turn1.text, turn1.reasoning) == ("Writing.", "Write the file.")
        assert call.id_synthesized is not chat.keeps_ids
        assert [r.status for r in results1] == ["rejected"]

        turn2, results2 = await step(chat, messages, tool, PROVIDER)
        assert tool.ran == [("write", GOOD)]
        assert turn2.stop_reason == "tool_calls"
        assert [r.status for r in results2] == ["ok"]

        turn3, _ = await step(chat, messages, tool, PROVIDER)
        assert (turn3.text, turn3.stop_reason, turn3.calls) == ("Wrote notes.txt.", "end_turn", ())
    assert tool.ran == [("write", GOOD)]  # exactly once
    assert server.refused == []

    # What turn 2's request carried: the assistant turn with the cut call as an empty OBJECT,
    # and the rejection as the call's tool result, naming its tool.
    sent = server.requests[1]["messages"]
    assistant, rejection = sent[1], sent[2]
    assert assistant["role"] == "assistant"
    assert assistant["content"] == "Writing."
    assert assistant["thinking"] == "Write the file."
    (written,) = assistant["tool_calls"]
    assert written["function"] == {"name": "write", "arguments": {}}
    assert rejection["role"] == "tool"
    assert rejection["tool_name"] == "write"
    assert "output-token limit" in rejection["content"]
    if chat.keeps_ids:
        assert written["id"] == "call_cut00001"
        assert rejection["tool_call_id"] == "call_cut00001"
    else:
        # ollama-python 0.6 validates messages into its Message model, which has neither
        # tool_calls[].id nor tool_call_id; and toolwire never sends a synthesized id anyway.
        assert "id" not in written
        assert "tool_call_id" not in rejection
    # Turn 3's request carried the good call byte for byte as an object, and its result.
    third = server.requests[2]["messages"]
    assert third[3]["tool_calls"][0]["function"]["arguments"] == GOOD
    assert third[4]["role"] == "tool"
    assert third[4]["content"] == "written"


async def test_parallel_calls_in_one_line_the_bad_one_never_runs(
    anyio_backend: str, via: str, server: ScriptedOllama
) -> None:
    # Two calls in one line, both index 0 (a builtin parser's count restarts): two calls. The
    # write misses "content" (schema), the read is good.
    server.script(
        Reply(
            ndjson(
                chat_line(
                    calls=[
                        ollama_call("write", {"path": "notes.txt"}, 0, "call_w0000001"),
                        ollama_call("read", {"path": "notes.txt"}, 0, "call_r0000001"),
                    ]
                ),
                done_line(eval_count=19),
            )
        ),
        Reply(ndjson(chat_line(content="Done."), done_line(eval_count=2))),
    )
    tool = ToolSpy(ids=False)
    messages = list(USER)
    async with chat_client(via, server) as chat:
        turn1, results = await step(chat, messages, tool, PROVIDER)
        assert [(c.name, c.outcome) for c in turn1.calls] == [
            ("write", "rejected"),
            ("read", "ok"),  # an object is no repair (issue 18)
        ]
        assert tool.ran == [("read", {"path": "notes.txt"})]
        assert [r.status for r in results] == ["rejected", "ok"]
        turn2, _ = await step(chat, messages, tool, PROVIDER)
        assert turn2.text == "Done."
    assert server.refused == []
    sent = server.requests[1]["messages"]
    assert [c["function"] for c in sent[1]["tool_calls"]] == [
        {"name": "write", "arguments": {}},
        {"name": "read", "arguments": {"path": "notes.txt"}},
    ]
    assert [(m["role"], m["tool_name"]) for m in sent[2:]] == [("tool", "write"), ("tool", "read")]


@pytest.mark.parametrize("via", ["httpx", pytest.param("ollama-sdk", marks=SDK_RAISES_ON_TRIO)])
async def test_an_error_line_mid_stream_the_call_never_runs(
    anyio_backend: str, via: str, server: ScriptedOllama
) -> None:
    oom = "an error was encountered while running the model: CUDA error: out of memory"
    server.script(
        Reply(
            ndjson(
                chat_line(calls=[ollama_call("write", GOOD, 0, "call_e0000001")]),
                {"error": oom},
            )
        ),
    )
    tool = ToolSpy(ids=False)
    async with chat_client(via, server) as chat:
        turn = await chat.turn(list(USER))
    results = [r async for r in dispatch(turn, tool)]
    assert tool.ran == []
    assert [r.status for r in results] == ["rejected"]
    (call,) = turn.calls
    assert call.truncated
    (error,) = turn.errors
    assert oom in error.message
    if via == "httpx":
        assert (turn.stop_reason, error.kind) == ("error", "error_payload")
    else:
        # The SDK raises ResponseError on the error line instead of yielding it: a read that
        # failed, which toolwire reads as a dropped turn.
        assert (turn.stop_reason, error.kind) == ("disconnected", "transport")


async def test_a_dropped_connection_cuts_the_last_call(
    anyio_backend: str, via: str, server: ScriptedOllama
) -> None:
    body = ndjson(
        chat_line(calls=[ollama_call("read", {"path": "a.txt"}, 0, "call_d0000001")]),
        chat_line(calls=[ollama_call("write", GOOD, 1, "call_d0000002")]),
        done_line(),
    )
    server.script(Reply(body, cut="drop", events=2))
    tool = ToolSpy(ids=False)
    async with chat_client(via, server) as chat:
        turn = await chat.turn(list(USER))
    _ = [r async for r in dispatch(turn, tool)]
    assert turn.stop_reason == "disconnected"
    assert [(c.name, c.truncated) for c in turn.calls] == [("read", False), ("write", True)]
    assert tool.ran == [("read", {"path": "a.txt"})]


async def test_ollama_refuses_string_arguments_with_400(
    anyio_backend: str, server: ScriptedOllama
) -> None:
    # A Chat-Completions-style history sent to /api/chat: the HTTP status is never read as a
    # stream; the error quotes Ollama's message.
    messages = [
        *USER,
        {
            "role": "assistant",
            "content": "",
            "tool_calls": [
                {"id": "c1", "function": {"name": "read", "arguments": '{"path": "a"}'}}
            ],
        },
        {"role": "tool", "content": "x", "tool_name": "read", "tool_call_id": "c1"},
    ]
    assert [p.kind for p in check_history(messages, PROVIDER)] == ["arguments_not_object"]
    async with httpx.AsyncClient(base_url=server.base_url, timeout=10) as client:
        async with client.stream("POST", "/api/chat", json=request_body(messages)) as response:
            turn = await toolwire.collect(response, PROVIDER)
    assert turn.stop_reason == "error"
    (error,) = turn.errors
    assert (error.kind, error.code) == ("http_status", "400")
    assert "cannot unmarshal str into Go struct field" in error.message
