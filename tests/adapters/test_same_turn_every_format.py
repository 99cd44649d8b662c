"""The same logical turn, written in all five wire formats, gives equal Turns (raw fields apart).

Each body is written by hand in its provider's real shape (see the recordings under
``tests/data/fixtures/streams/``): some text, one call ``get_weather({"city": "Paris"})`` whose
arguments arrive in pieces where the format streams them, the tool-call finish, usage 10 in and
20 out. A second turn is cut by the provider's own token-limit word.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

import toolwire

pytestmark = pytest.mark.anyio

TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "get_weather",
            "parameters": {
                "type": "object",
                "required": ["city"],
                "properties": {"city": {"type": "string"}},
            },
        },
    }
]
TEXT = "Let me check."


def _sse(events: list[tuple[str | None, dict[str, Any]]], *, crlf: bool = False) -> bytes:
    sep = "\r\n" if crlf else "\n"
    out = []
    for name, payload in events:
        event = f"event: {name}{sep}" if name else ""
        out.append(f"{event}data: {json.dumps(payload)}{sep}{sep}")
    return "".join(out).encode()


def chat(cut: bool) -> bytes:
    def chunk(delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
        return {"id": "c1", "object": "chat.completion.chunk", "model": "m",
                "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}

    pieces = ['{"city":'] if cut else ['{"city":', '"Paris"}']
    events: list[tuple[str | None, dict[str, Any]]] = [
        (None, chunk({"role": "assistant", "content": TEXT})),
        (None, chunk({"tool_calls": [{"index": 0, "id": "call_1", "type": "function",
                                      "function": {"name": "get_weather", "arguments": ""}}]})),
        *[(None, chunk({"tool_calls": [{"index": 0, "function": {"arguments": p}}]}))
          for p in pieces],
        (None, chunk({}, "length" if cut else "tool_calls")),
        (None, {"id": "c1", "object": "chat.completion.chunk", "model": "m", "choices": [],
                "usage": {"prompt_tokens": 10, "completion_tokens": 20, "total_tokens": 30}}),
    ]
    return _sse(events) + b"data: [DONE]\n\n"


def responses(cut: bool) -> bytes:
    arguments = '{"city":' if cut else '{"city":"Paris"}'
    pieces = ['{"city":'] if cut else ['{"city":', '"Paris"}']
    message = {"type": "message", "id": "msg_1", "role": "assistant", "status": "completed",
               "content": [{"type": "output_text", "text": TEXT, "annotations": []}]}
    call = {"type": "function_call", "id": "fc_1", "call_id": "call_1", "name": "get_weather",
            "arguments": arguments, "status": "incomplete" if cut else "completed"}
    response = {"id": "resp_1", "model": "m", "output": [message, call],
                "usage": {"input_tokens": 10, "output_tokens": 20, "total_tokens": 30}}
    terminal = (
        ("response.incomplete", {**response, "status": "incomplete",
                                 "incomplete_details": {"reason": "max_output_tokens"}})
        if cut
        else ("response.completed", {**response, "status": "completed"})
    )
    return _sse([
        ("response.created", {"type": "response.created",
                              "response": {"id": "resp_1", "model": "m", "status": "in_progress",
                                           "output": []}}),
        ("response.output_item.added", {"type": "response.output_item.added", "output_index": 0,
                                        "item": {**message, "status": "in_progress",
                                                 "content": []}}),
        ("response.output_text.delta", {"type": "response.output_text.delta", "item_id": "msg_1",
                                        "output_index": 0, "content_index": 0, "delta": TEXT}),
        ("response.output_item.done", {"type": "response.output_item.done", "output_index": 0,
                                       "item": message}),
        ("response.output_item.added", {"type": "response.output_item.added", "output_index": 1,
                                        "item": {**call, "arguments": "",
                                                 "status": "in_progress"}}),
        *[("response.function_call_arguments.delta",
           {"type": "response.function_call_arguments.delta", "item_id": "fc_1",
            "output_index": 1, "delta": piece}) for piece in pieces],
        ("response.function_call_arguments.done",
         {"type": "response.function_call_arguments.done", "item_id": "fc_1", "output_index": 1,
          "arguments": arguments}),
        ("response.output_item.done", {"type": "response.output_item.done", "output_index": 1,
                                       "item": call}),
        (terminal[0], {"type": terminal[0], "response": terminal[1]}),
    ])


def anthropic(cut: bool) -> bytes:
    pieces = ["", '{"city": '] if cut else ["", '{"city": ', '"Paris"}']
    events: list[tuple[str | None, dict[str, Any]]] = [
        ("message_start", {"type": "message_start", "message": {
            "id": "msg_1", "type": "message", "role": "assistant", "model": "m", "content": [],
            "stop_reason": None, "usage": {"input_tokens": 10, "output_tokens": 1}}}),
        ("content_block_start", {"type": "content_block_start", "index": 0,
                                 "content_block": {"type": "text", "text": ""}}),
        ("content_block_delta", {"type": "content_block_delta", "index": 0,
                                 "delta": {"type": "text_delta", "text": TEXT}}),
        ("content_block_stop", {"type": "content_block_stop", "index": 0}),
        ("content_block_start", {"type": "content_block_start", "index": 1, "content_block": {
            "type": "tool_use", "id": "call_1", "name": "get_weather", "input": {}}}),
        *[("content_block_delta", {"type": "content_block_delta", "index": 1,
                                   "delta": {"type": "input_json_delta", "partial_json": p}})
          for p in pieces],
    ]
    if not cut:
        events.append(("content_block_stop", {"type": "content_block_stop", "index": 1}))
    events += [
        ("message_delta", {"type": "message_delta",
                           "delta": {"stop_reason": "max_tokens" if cut else "tool_use",
                                     "stop_sequence": None},
                           "usage": {"output_tokens": 20}}),
        ("message_stop", {"type": "message_stop"}),
    ]
    return _sse(events)


def gemini(cut: bool) -> bytes:
    # Gemini sends calls whole: the cut turn is cut while the call's text was being written,
    # as Vertex streams it (partialArgs with willContinue, no end piece).
    base = {"modelVersion": "m", "responseId": "r1"}
    first = {"candidates": [{"content": {"parts": [{"text": TEXT}], "role": "model"},
                             "index": 0}], **base}
    usage = {"promptTokenCount": 10, "candidatesTokenCount": 20, "totalTokenCount": 30}
    if cut:
        last = {"candidates": [{"content": {"parts": [{"functionCall": {
            "name": "get_weather", "partialArgs": [
                {"jsonPath": "$.city", "stringValue": "Par", "willContinue": True}],
            "willContinue": True}}], "role": "model"}, "finishReason": "MAX_TOKENS",
            "index": 0}], "usageMetadata": usage, **base}
    else:
        last = {"candidates": [{"content": {"parts": [{"functionCall": {
            "name": "get_weather", "args": {"city": "Paris"}}}], "role": "model"},
            "finishReason": "STOP", "index": 0}], "usageMetadata": usage, **base}
    return _sse([(None, first), (None, last)], crlf=True)


def ollama(cut: bool) -> bytes:
    stamp = {"model": "m", "created_at": "2025-01-01T00:00:00Z"}
    lines = [
        {**stamp, "message": {"role": "assistant", "content": TEXT}, "done": False},
        {**stamp, "message": {"role": "assistant", "content": "", "tool_calls": [
            {"function": {"name": "get_weather", "arguments": {"city": "Paris"}}}]},
         "done": False},
        {**stamp, "message": {"role": "assistant", "content": ""}, "done": True,
         "done_reason": "length" if cut else "stop", "prompt_eval_count": 10, "eval_count": 20},
    ]
    return "".join(json.dumps(line) + "\n" for line in lines).encode()


FORMATS = {
    "openai-chat": chat,
    "openai-responses": responses,
    "anthropic": anthropic,
    "gemini": gemini,
    "ollama": ollama,
}


def essence(turn: toolwire.Turn) -> dict[str, Any]:
    """The turn without its raw fields (ids, raw finish value, raw text, model, provider)."""
    return {
        "text": turn.text,
        "calls": [(call.name, call.arguments, call.may_run, call.truncated) for call in turn.calls],
        "stop_reason": turn.stop_reason,
        "truncated": turn.truncated,
        "cut_by": turn.cut_by,
        "usage": (turn.usage.input_tokens, turn.usage.output_tokens) if turn.usage else None,
        "errors": turn.errors,
    }


async def test_the_same_turn_in_five_formats_is_the_same_turn() -> None:
    turns = {name: await toolwire.collect(build(False), name, tools=TOOLS)
             for name, build in FORMATS.items()}
    expected = {
        "text": TEXT,
        "calls": [("get_weather", {"city": "Paris"}, True, False)],
        "stop_reason": "tool_calls",
        "truncated": False,
        "cut_by": None,
        "usage": (10, 20),
        "errors": (),
    }
    for name, turn in turns.items():
        assert essence(turn) == expected, name


async def test_the_same_cut_turn_in_five_formats_is_cut_at_the_limit() -> None:
    for name, build in FORMATS.items():
        turn = await toolwire.collect(build(True), name, tools=TOOLS)
        assert turn.stop_reason == "length", name
        assert turn.truncated, name
        assert turn.cut_by == "token_limit", name
        assert "finish_reason" in turn.truncation_evidence, name
        assert turn.text == TEXT, name
        if name == "ollama":
            # Ollama parses calls server-side: a call it sent is whole; the last one is still
            # cut by the limit (its last value may be short), so it never runs either.
            assert [(c.name, c.may_run, c.truncated) for c in turn.calls] == [
                ("get_weather", False, True)
            ]
        else:
            (call,) = turn.calls
            assert (call.name, call.may_run, call.truncated) == ("get_weather", False, True), name
            assert call.verdict is not None
            assert call.verdict.reason == "truncated", name
