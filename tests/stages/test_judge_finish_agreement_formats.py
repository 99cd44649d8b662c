"""One answer for one text, on every format llama-server serves: a call cut is a turn cut.

Issue 27 reported that on ``/v1/responses`` a call whose string the model left open was
rejected as ``truncated`` while ``turn.truncated`` stayed false, where Chat Completions and
Messages said true. The rule (``stages/judge.py``, ``_finish_cut``): when the judge finds a
call's text cut and nothing in the stream said so, the turn is cut too, ``cut_by="unknown"``.
This holds it on Chat Completions, Messages and Responses, for a structured call and for a
call left in the text, streamed and whole (Messages has no whole form of it: a ``tool_use``
input is an object, it cannot stop inside a string).

The arguments are what SmolLM2-135M wrote through llama-server b11434 for
``tests/llama_server/endpoints.py``'s ``QUOTE_LOST`` (the objects closed, the string not:
24 of 24 runs there); the shapes are the ones that server sent on each endpoint (recorded for
this test with ``tests/llama_server/``'s set-up; ids and timings left out), which
``tests/llama_server/test_direct.py`` checks against the real server.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

import toolwire
from toolwire.adapters.registry import heal_formats

pytestmark = pytest.mark.anyio

#: The arguments as the model wrote them: the content string never closed.
OPEN_STRING = '{"path": "hello.py", "content": "print(\\"Hello, World!\\")}}'
#: The same call left in the text, as the model's template writes it (Hermes/Qwen2.5).
MARKUP = '<tool_call>\n{"name": "write", "arguments": ' + OPEN_STRING + "\n"
PARAMETERS = {
    "type": "object",
    "required": ["path", "content"],
    "properties": {"path": {"type": "string"}, "content": {"type": "string"}},
}
CHAT_TOOLS = [{"type": "function", "function": {"name": "write", "parameters": PARAMETERS}}]
MESSAGES_TOOLS = [{"name": "write", "input_schema": PARAMETERS}]
RESPONSES_TOOLS = [{"type": "function", "name": "write", "parameters": PARAMETERS}]


def _data(payload: dict[str, Any], event: str | None = None) -> bytes:
    named = f"event: {event}\n".encode() if event else b""
    return named + b"data: " + json.dumps(payload).encode() + b"\n\n"


def _chat_chunk(delta: dict[str, Any], finish: str | None = None) -> bytes:
    choice = {"index": 0, "delta": delta, "finish_reason": finish}
    return _data({"object": "chat.completion.chunk", "model": "m", "choices": [choice]})


def chat_stream(text: bool) -> bytes:
    if text:
        return (
            _chat_chunk({"role": "assistant", "content": None})
            + _chat_chunk({"content": MARKUP})
            + _chat_chunk({}, "stop")
            + b"data: [DONE]\n\n"
        )
    call = {"index": 0, "id": "c1", "type": "function"}
    function = {"name": "write", "arguments": OPEN_STRING}
    return (
        _chat_chunk({"role": "assistant", "content": None})
        + _chat_chunk({"tool_calls": [{**call, "function": function}]})
        + _chat_chunk({}, "tool_calls")
        + b"data: [DONE]\n\n"
    )


def chat_whole(text: bool) -> bytes:
    message: dict[str, Any] = {"role": "assistant", "content": MARKUP if text else ""}
    if not text:
        function = {"name": "write", "arguments": OPEN_STRING}
        message["tool_calls"] = [{"type": "function", "id": "c1", "function": function}]
    choice = {"index": 0, "message": message, "finish_reason": "stop" if text else "tool_calls"}
    usage = {"prompt_tokens": 253, "completion_tokens": 7, "total_tokens": 260}
    body = {"object": "chat.completion", "model": "m", "choices": [choice], "usage": usage}
    return json.dumps(body).encode()


def _messages_event(payload: dict[str, Any]) -> bytes:
    return _data(payload, payload["type"])


def messages_stream(text: bool) -> bytes:
    usage = {"input_tokens": 1, "output_tokens": 0}
    message = {"id": "m1", "type": "message", "role": "assistant", "content": [], "model": "m"}
    body = _messages_event({"type": "message_start", "message": {**message, "usage": usage}})
    if text:
        block: dict[str, Any] = {"type": "text", "text": ""}
        delta: dict[str, Any] = {"type": "text_delta", "text": MARKUP}
        stop = {"stop_reason": "stop_sequence", "stop_sequence": "</tool_call>"}
    else:
        block = {"type": "tool_use", "id": "t1", "name": "write"}
        delta = {"type": "input_json_delta", "partial_json": OPEN_STRING}
        stop = {"stop_reason": "tool_use", "stop_sequence": "</tool_call>"}
    return (
        body
        + _messages_event({"type": "content_block_start", "index": 0, "content_block": block})
        + _messages_event({"type": "content_block_delta", "index": 0, "delta": delta})
        + _messages_event({"type": "content_block_stop", "index": 0})
        + _messages_event({"type": "message_delta", "delta": stop, "usage": {"output_tokens": 7}})
        + _messages_event({"type": "message_stop"})
    )


def messages_whole(text: bool) -> bytes:
    assert text  # a tool_use input is an object: it cannot stop inside a string
    message = {
        "id": "m1",
        "type": "message",
        "role": "assistant",
        "model": "m",
        "content": [{"type": "text", "text": MARKUP}],
        "stop_reason": "stop_sequence",
        "stop_sequence": "</tool_call>",
        "usage": {"input_tokens": 1, "output_tokens": 7},
    }
    return json.dumps(message).encode()


def _responses_item(text: bool, status: str) -> dict[str, Any]:
    if text:
        part = {"type": "output_text", "annotations": [], "text": MARKUP}
        return {
            "type": "message",
            "id": "msg_1",
            "role": "assistant",
            "status": status,
            "content": [part] if status == "completed" else [],
        }
    arguments = OPEN_STRING if status == "completed" else ""
    return {
        "type": "function_call",
        "id": "fc_1",
        "call_id": "call_1",
        "name": "write",
        "arguments": arguments,
        "status": status,
    }


def _responses_event(payload: dict[str, Any]) -> bytes:
    return _data(payload, payload["type"])


def responses_whole_body(text: bool) -> dict[str, Any]:
    usage = {"input_tokens": 253, "output_tokens": 7, "total_tokens": 260}
    return {
        "id": "resp_1",
        "object": "response",
        "status": "completed",
        "model": "m",
        "output": [_responses_item(text, "completed")],
        "usage": usage,
    }


def responses_stream(text: bool) -> bytes:
    created = {"id": "resp_1", "object": "response", "status": "in_progress"}
    body = _responses_event({"type": "response.created", "response": created})
    body += _responses_event(
        {"type": "response.output_item.added", "item": _responses_item(text, "in_progress")}
    )
    if text:
        body += _responses_event(
            {"type": "response.output_text.delta", "item_id": "msg_1", "delta": MARKUP}
        )
        body += _responses_event(
            {"type": "response.output_text.done", "item_id": "msg_1", "text": MARKUP}
        )
    else:
        body += _responses_event(
            {
                "type": "response.function_call_arguments.delta",
                "item_id": "fc_1",
                "delta": OPEN_STRING,
            }
        )
    body += _responses_event(
        {"type": "response.output_item.done", "item": _responses_item(text, "completed")}
    )
    return body + _responses_event(
        {"type": "response.completed", "response": responses_whole_body(text)}
    )


def responses_whole(text: bool) -> bytes:
    return json.dumps(responses_whole_body(text)).encode()


#: format name -> (provider, tools, the request's limit key, streamed body, whole body)
FORMATS: dict[str, tuple[str, list[dict[str, Any]], str, Any, Any]] = {
    "chat": ("llama-server", CHAT_TOOLS, "max_tokens", chat_stream, chat_whole),
    "messages": ("anthropic", MESSAGES_TOOLS, "max_tokens", messages_stream, messages_whole),
    "responses": (
        "openai-responses",
        RESPONSES_TOOLS,
        "max_output_tokens",
        responses_stream,
        responses_whole,
    ),
}
CASES = [
    pytest.param(name, text, stream, id=f"{name}-{'text' if text else 'call'}-{mode}")
    for name in FORMATS
    for text in (False, True)
    for stream, mode in ((True, "streamed"), (False, "whole"))
    if not (name == "messages" and not text and not stream)
]


async def _turn(name: str, text: bool, stream: bool) -> toolwire.Turn:
    provider, tools, limit_key, streamed, whole = FORMATS[name]
    # The limit the request named (10 tokens), far above what was used (7): not the limit.
    request = {"tools": tools, limit_key: 10}
    pipeline = toolwire.Pipeline(provider, tools=tools, text_calls=["hermes"])
    if stream:
        return await pipeline.collect(streamed(text), request=request)
    # A whole body, read as the healing transport and the proxy read it.
    (wire,) = [w for w in heal_formats("llama-server") if w.provider == provider]
    read = wire.read_body(whole(text))
    assert read is not None
    return await pipeline.collect(wire.body_as_stream(read), request=request)


@pytest.mark.parametrize(("name", "text", "stream"), CASES)
async def test_a_call_left_with_its_string_open_cuts_the_turn(
    anyio_backend: str, name: str, text: bool, stream: bool
) -> None:
    turn = await _turn(name, text, stream)
    (call,) = turn.calls
    assert call.verdict is not None
    assert (call.name, call.outcome, call.verdict.reason) == ("write", "rejected", "truncated")
    assert call.origin == ("text" if text else "structured")
    assert call.truncated
    assert not call.may_run
    # One answer for one text: the turn is cut, by nothing known (no limit was reached).
    assert (turn.stop_reason, turn.truncated, turn.cut_by) == ("tool_calls", True, "unknown")
    assert "arguments_unterminated" in turn.truncation_evidence
