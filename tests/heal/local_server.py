"""A scripted local model server on loopback that serves every endpoint a local server serves.

llama-server answers ``/v1/chat/completions``, ``/v1/messages`` and ``/v1/responses`` with one
model and one tool parser; Ollama (and SGLang) ``/api/chat`` too. A model whose calls the
parser misses leaves them in the text on each of them. This server plays that: each request,
on whichever endpoint, takes the next scripted :class:`Output` (the text the model wrote and
how its turn ended) and sends it as that endpoint sends text, streamed or whole as the request
asks.

And it reads each request's history the way the server would, so that a test can check that
what came back is something the server renders:

- ``/v1/messages`` and ``/v1/responses`` are turned into a Chat request as llama-server does
  (read in ggml-org/llama.cpp ``tools/server/server-chat.cpp``: ``tool_use`` blocks become
  ``tool_calls`` with their ``input`` as the arguments, ``tool_result`` blocks ``role: tool``
  messages; ``function_call`` items need ``call_id``, ``name`` and string ``arguments``,
  ``function_call_output`` items need ``call_id`` and ``output``, and an item of any other
  shape is refused with "Cannot determine type of 'item'"), then checked as a Chat history
  (``e2e.server.history_errors``: arguments that are a JSON object, each call answered);
- ``/api/chat`` is checked as Ollama checks it (``e2e.ollama_server.request_errors``).

A refused request is answered HTTP 400 and noted in ``refused``; ``chat_views`` keeps each
request's history as the server's Chat messages (Ollama's object arguments as JSON text), so
that a test reads one shape whatever the endpoint. Written with the standard library and
sharing no code with toolwire.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any, Literal

from e2e.loopback import NO_CACHE, Loopback, LoopbackHandler, ScriptedServer, sse_events
from e2e.ollama_server import MODEL as OLLAMA_MODEL
from e2e.ollama_server import chat_line, done_line, ndjson, request_errors, whole_response
from e2e.openai_responses_server import ReplyBuilder
from e2e.server import history_errors, text_reply

from .upstream import completion

__all__ = ["ENDPOINTS", "Endpoint", "LocalServer", "Output", "running_local_server"]

Endpoint = Literal["chat", "messages", "responses", "ollama"]
#: Each endpoint's path on the server's root.
ENDPOINTS: dict[Endpoint, str] = {
    "chat": "/v1/chat/completions",
    "messages": "/v1/messages",
    "responses": "/v1/responses",
    "ollama": "/api/chat",
}
_BY_PATH = {path: endpoint for endpoint, path in ENDPOINTS.items()}


@dataclass
class Output:
    """What the model wrote: ``text``, and whether it stopped (``stop``) or was cut at the
    output-token limit (``length``)."""

    text: str
    finish: Literal["stop", "length"] = "stop"


@dataclass
class LocalServer(ScriptedServer[Output]):
    """The script, every request, and what the server made of each history."""

    paths: list[str] = field(default_factory=list)
    #: Each accepted request's history as Chat messages (see the module docstring).
    chat_views: list[list[dict[str, Any]]] = field(default_factory=list)

    def reset(self) -> None:
        """Forget the script and everything received, for the next test."""
        with self._lock:
            self.replies.clear()
            self.requests.clear()
            self.refused.clear()
            self.paths.clear()
            self.chat_views.clear()


class _Refused(ValueError):
    """The server's conversion refused the request (its own words)."""


def chat_view(endpoint: Endpoint, request: dict[str, Any]) -> list[dict[str, Any]]:
    """The history of ``request`` as the server's Chat messages; :class:`_Refused` when the
    server cannot convert it."""
    if endpoint == "chat":
        return list(request.get("messages") or [])
    if endpoint == "messages":
        return _messages_to_chat(request)
    if endpoint == "responses":
        return _responses_to_chat(request)
    return [_ollama_message(message) for message in request.get("messages") or []]


def _messages_to_chat(request: dict[str, Any]) -> list[dict[str, Any]]:
    if "messages" not in request:
        raise _Refused("'messages' is required")
    out: list[dict[str, Any]] = []
    if request.get("system"):
        out.append({"role": "system", "content": request["system"]})
    for message in request["messages"]:
        content = message.get("content")
        if not isinstance(content, list):
            out.append(message)
            continue
        texts: list[dict[str, Any]] = []
        calls: list[dict[str, Any]] = []
        results: list[dict[str, Any]] = []
        for block in content:
            kind = block.get("type")
            if kind == "text":
                texts.append(block)
            elif kind == "tool_use":
                arguments = json.dumps(block.get("input", {}))
                calls.append(
                    {
                        "id": block.get("id", ""),
                        "type": "function",
                        "function": {"name": block.get("name", ""), "arguments": arguments},
                    }
                )
            elif kind == "tool_result":
                result = block.get("content")
                if isinstance(result, list):
                    result = "".join(c.get("text", "") for c in result if c.get("type") == "text")
                results.append(
                    {
                        "role": "tool",
                        "tool_call_id": block.get("tool_use_id", ""),
                        "content": result if isinstance(result, str) else "",
                    }
                )
        if texts or calls:
            converted: dict[str, Any] = {"role": message.get("role"), "content": texts or ""}
            if calls:
                converted["tool_calls"] = calls
            out.append(converted)
        out.extend(results)
    return out


def _responses_to_chat(request: dict[str, Any]) -> list[dict[str, Any]]:
    if "input" not in request:
        raise _Refused("'input' is required")
    out: list[dict[str, Any]] = []
    if "instructions" in request:
        out.append({"role": "system", "content": request["instructions"]})
    items = request["input"]
    if isinstance(items, str):
        return [*out, {"role": "user", "content": items}]
    for item in items:
        after_assistant = bool(out) and out[-1].get("role") == "assistant"
        role, kind, content = item.get("role"), item.get("type"), item.get("content")
        if role in ("user", "system", "developer") and isinstance(content, str | list):
            out.append({"role": role, "content": content})
        elif role == "assistant" and kind == "message":
            parts = [content] if isinstance(content, str) else content or []
            texts = [{"type": "text", "text": _output_text(part)} for part in parts]
            if after_assistant:
                out[-1].setdefault("content", []).extend(texts)
            else:
                out.append({"role": "assistant", "content": texts})
        elif kind == "function_call" and all(
            isinstance(item.get(key), str) for key in ("arguments", "call_id", "name")
        ):
            call = {
                "id": item["call_id"],
                "type": "function",
                "function": {"name": item["name"], "arguments": item["arguments"]},
            }
            if after_assistant:
                out[-1].setdefault("tool_calls", []).append(call)
            else:
                out.append({"role": "assistant", "tool_calls": [call]})
        elif kind == "function_call_output" and isinstance(item.get("call_id"), str):
            out.append({"role": "tool", "tool_call_id": item["call_id"], "content": item["output"]})
        else:
            raise _Refused("Cannot determine type of 'item'")
    return out


def _output_text(part: Any) -> str:
    if isinstance(part, str):
        return part
    if part.get("type") not in ("output_text", "input_text") or not isinstance(
        part.get("text"), str
    ):
        raise _Refused("'type' must be one of 'output_text' or 'refusal'")
    text: str = part["text"]
    return text


def _ollama_message(message: dict[str, Any]) -> dict[str, Any]:
    calls = message.get("tool_calls")
    if not calls:
        return message
    return {
        **message,
        "tool_calls": [
            {
                "id": call.get("id", ""),
                "type": "function",
                "function": {
                    "name": call["function"]["name"],
                    "arguments": json.dumps(call["function"]["arguments"]),
                },
            }
            for call in calls
        ],
    }


# -- the model's text, as each endpoint sends it -------------------------------------------------


def _messages_body(output: Output, *, streamed: bool) -> bytes:
    stop_reason = "max_tokens" if output.finish == "length" else "end_turn"
    message = {
        "id": "msg_local",
        "type": "message",
        "role": "assistant",
        "model": "local-model",
        "content": [],
        "stop_reason": None,
        "stop_sequence": None,
        "usage": {"input_tokens": 40, "output_tokens": 0},
    }
    if not streamed:
        whole = {
            **message,
            "content": [{"type": "text", "text": output.text}],
            "stop_reason": stop_reason,
            "usage": {"input_tokens": 40, "output_tokens": 30},
        }
        return json.dumps(whole).encode()
    text = output.text
    events: list[dict[str, Any]] = [
        {"type": "message_start", "message": message},
        {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}},
        *(
            {
                "type": "content_block_delta",
                "index": 0,
                "delta": {"type": "text_delta", "text": text[i : i + 5]},
            }
            for i in range(0, len(text), 5)
        ),
        {"type": "content_block_stop", "index": 0},
        {
            "type": "message_delta",
            "delta": {"stop_reason": stop_reason, "stop_sequence": None},
            "usage": {"output_tokens": 30},
        },
        {"type": "message_stop"},
    ]
    return b"".join(
        f"event: {event['type']}\ndata: {json.dumps(event)}\n\n".encode() for event in events
    )


def _responses_events(output: Output) -> list[dict[str, Any]]:
    built = ReplyBuilder("resp_local").message("msg_local", output.text)
    reply = built.cut_at_max_output_tokens(64) if output.finish == "length" else built.completed()
    return reply.events


def _ollama_body(output: Output) -> bytes:
    text = output.text
    lines = [chat_line(content=text[i : i + 5]) for i in range(0, len(text), 5)]
    return ndjson(*lines, done_line(output.finish))


class _Handler(LoopbackHandler[LocalServer]):
    def do_POST(self) -> None:
        request = self.read_json()
        endpoint = _BY_PATH.get(self.path)
        script = self.script
        with script._lock:
            script.paths.append(self.path)
        if endpoint is None:
            self.send_json(404, {"error": {"message": f"no route {self.path}", "code": 404}})
            return
        try:
            view = chat_view(endpoint, request)
        except _Refused as refused:
            problems = [str(refused)]
        else:
            problems = request_errors(request) if endpoint == "ollama" else history_errors(view)
        if problems:
            script.record(request)
            script.refuse(problems)
            error = {"code": 400, "message": "; ".join(problems), "type": "invalid_request_error"}
            self.send_json(400, {"error": error})
            return
        output = script.take(request)
        with script._lock:
            script.chat_views.append(view)
        if output is None:
            self.send_json(500, {"error": {"message": "no scripted output left", "code": 500}})
            return
        # Ollama streams unless asked not to; the others only when asked.
        streamed = request.get("stream", endpoint == "ollama") is True
        self._send(endpoint, output, streamed=streamed)

    def _send(self, endpoint: Endpoint, output: Output, *, streamed: bool) -> None:
        if endpoint == "chat":
            if streamed:
                pieces = sse_events(text_reply(output.text, output.finish))
                self.send_stream(pieces, "text/event-stream", headers=NO_CACHE)
            else:
                self.send_body(200, completion(content=output.text, finish_reason=output.finish))
        elif endpoint == "messages":
            body = _messages_body(output, streamed=streamed)
            if streamed:
                self.send_stream(sse_events(body), "text/event-stream", headers=NO_CACHE)
            else:
                self.send_body(200, body)
        elif endpoint == "responses":
            events = _responses_events(output)
            if streamed:
                framed = [
                    f"event: {e['type']}\ndata: {json.dumps({**e, 'sequence_number': n})}\n\n"
                    for n, e in enumerate(events)
                ]
                self.send_stream([f.encode() for f in framed], "text/event-stream")
            else:
                self.send_json(200, events[-1]["response"])
        else:
            body = _ollama_body(output)
            if streamed:
                lines = [line + b"\n" for line in body.split(b"\n") if line.strip()]
                self.send_stream(lines, "application/x-ndjson")
            else:
                self.send_json(200, whole_response(body), "application/json; charset=utf-8")


def running_local_server() -> Loopback[LocalServer]:
    """Serve a :class:`LocalServer` (``base_url`` is its root, no ``/v1``) in a ``with`` block."""
    return Loopback(LocalServer(), _Handler)


#: The model name the Ollama endpoint's replies carry (requests may name any).
MODEL = OLLAMA_MODEL
