"""A scripted loopback server that speaks Ollama's native ``POST /api/chat`` NDJSON stream.

Each request takes the next scripted :class:`Reply`; every request body is recorded (decoded
JSON) so that a test can assert what the *next* request carried. The thread, the script and the
HTTP plumbing are shared by every provider's server (``loopback.py``).

It refuses a request the way Ollama does, with ``{"error": "..."}`` and an HTTP status, and the
checks are written here with the standard library on purpose, sharing no code with toolwire:

- what Go's decoder refuses (``api.ChatRequest`` in ollama/ollama ``api/types.go``): a body that
  is no JSON object, a ``content`` or ``tool_name`` that is no string, a ``tool_calls`` entry
  without a ``function`` object, and ``arguments`` that are not a JSON object (they are decoded
  into an ordered map: a Chat-Completions-style string is a 400), a non-int ``num_predict``;
- ``model is required`` (``ChatHandler``);
- stricter than Ollama, which renders whatever history it gets: every call must be answered by
  one ``role: tool`` message right after its assistant message, in order, naming its tool in
  ``tool_name`` (and its ``tool_call_id`` when both sides carry ids). A loop that loses a
  result or replays a bad call must fail loudly here, not confuse a model later.

Replies are NDJSON bodies sent with ``Transfer-Encoding: chunked``, one HTTP chunk per line, as
``streamResponse`` flushes them. A reply cut with ``drop`` closes the connection after
``events`` lines without the terminating chunk.
"""

from __future__ import annotations

import json
from typing import Any

from .loopback import Loopback, LoopbackHandler, Reply, ScriptedServer

CREATED = "2025-11-04T16:43:33.123456Z"
MODEL = "qwen3:8b"


class ScriptedOllama(ScriptedServer[Reply]):
    """The server's script and what it received; thread-safe for one test at a time."""

    def next_reply(self, request: Any) -> Reply:
        """The next scripted reply; a request Ollama refuses is recorded and takes none."""
        with self._lock:
            problems = request_errors(request)
            if problems:
                self.record(request)
                self.refuse(problems)
                return Reply(json.dumps({"error": "; ".join(problems)}).encode(), status=400)
            reply = self.take(request)
            if reply is None:
                return Reply(b'{"error":"no scripted reply left"}', status=500)
            return reply


def request_errors(request: Any) -> list[str]:
    """What Ollama refuses in a chat request, plus the strict pairing of calls and results."""
    if not isinstance(request, dict):
        return ["json: cannot unmarshal into Go value of type api.ChatRequest"]
    errors: list[str] = []
    if not request.get("model"):
        errors.append("model is required")
    options = request.get("options") or {}
    if not isinstance(options.get("num_predict", 0), int):
        errors.append("option num_predict must be of type integer")
    pending: list[tuple[str | None, str]] = []
    for position, message in enumerate(request.get("messages") or ()):
        for key in ("role", "content", "tool_name", "tool_call_id", "thinking"):
            if key in message and not isinstance(message[key], str):
                errors.append(f"json: cannot unmarshal into Go struct field Message.{key}")
        if message.get("role") == "tool":
            if not pending:
                errors.append(f"message {position}: a tool result with no call to answer")
                continue
            call_id, name = pending.pop(0)
            if message.get("tool_name") != name:
                errors.append(
                    f"message {position}: tool_name {message.get('tool_name')!r} "
                    f"answers a call of {name!r}"
                )
            given = message.get("tool_call_id")
            if call_id is not None and given is not None and given != call_id:
                errors.append(f"message {position}: tool_call_id {given!r} is not {call_id!r}")
            continue
        if pending:
            errors.append(f"message {position}: calls {pending} have no result")
            pending.clear()
        for call in message.get("tool_calls") or ():
            function = call.get("function")
            if not isinstance(function, dict):
                errors.append(f"message {position}: a tool call without a function object")
                continue
            if not isinstance(function.get("arguments", {}), dict):
                errors.append(
                    "json: cannot unmarshal "
                    f"{type(function['arguments']).__name__} into Go struct field "
                    "ToolCallFunction.messages.tool_calls.function.arguments of type "
                    "map[string]interface {}"
                )
            pending.append((call.get("id"), function.get("name")))
    if pending:
        errors.append(f"the last calls {pending} have no result")
    return errors


class _Handler(LoopbackHandler[ScriptedOllama]):
    def do_POST(self) -> None:
        raw = self.read_body()
        if self.path != "/api/chat":
            self.send_body(404, b"404 page not found", "text/plain")
            return
        try:
            request = json.loads(raw or b"null")
        except ValueError as error:
            self.send_json(400, {"error": str(error)})
            return
        reply = self.script.next_reply(request)
        if reply.status == 200 and isinstance(request, dict) and request.get("stream") is False:
            # "stream": false: one ChatResponse, the lines folded as Ollama's handler does.
            self.send_json(200, whole_response(reply.body), "application/json; charset=utf-8")
            return
        self.send_reply(
            reply, _lines, "application/x-ndjson", error_type="application/json; charset=utf-8"
        )


def _lines(body: bytes) -> list[bytes]:
    """An NDJSON body split into its lines, each with its ``\\n``."""
    return [part + b"\n" for part in body.split(b"\n") if part.strip()]


def whole_response(body: bytes) -> dict[str, Any]:
    """The ``"stream": false`` answer of an NDJSON reply: the done line, with the content,
    thinking and calls of every line."""
    lines = [json.loads(line) for line in _lines(body)]
    last = dict(lines[-1])
    message: dict[str, Any] = {"role": "assistant", "content": ""}
    for line in lines:
        sent = line.get("message", {})
        message["content"] += sent.get("content", "")
        if sent.get("thinking"):
            message["thinking"] = message.get("thinking", "") + sent["thinking"]
        if sent.get("tool_calls"):
            message.setdefault("tool_calls", []).extend(sent["tool_calls"])
    last["message"] = message
    return last


def running_ollama() -> Loopback[ScriptedOllama]:
    """Serve a :class:`ScriptedOllama` in a ``with`` block (its ``base_url`` is Ollama's host)."""
    return Loopback(ScriptedOllama(), _Handler)


# -- building replies, in the shape of api.ChatResponse --------------------------------------


def chat_line(
    *, content: str = "", thinking: str = "", calls: list[dict[str, Any]] | None = None
) -> dict[str, Any]:
    """One ``done: false`` line."""
    message: dict[str, Any] = {"role": "assistant", "content": content}
    if thinking:
        message["thinking"] = thinking
    if calls:
        message["tool_calls"] = calls
    return {"model": MODEL, "created_at": CREATED, "message": message, "done": False}


def done_line(
    reason: str = "stop", *, eval_count: int = 20, calls: list[dict[str, Any]] | None = None
) -> dict[str, Any]:
    """The last line, with ``done_reason`` and the counters."""
    last = chat_line(calls=calls)
    last.update(
        done=True,
        done_reason=reason,
        total_duration=912345678,
        load_duration=12345678,
        prompt_eval_count=211,
        prompt_eval_duration=45678901,
        eval_count=eval_count,
        eval_duration=812345678,
    )
    return last


def ollama_call(name: str, arguments: dict[str, Any], index: int, call_id: str) -> dict[str, Any]:
    """A whole ``api.ToolCall`` as Ollama (v0.12.10+) writes it."""
    return {"id": call_id, "function": {"index": index, "name": name, "arguments": arguments}}


def ndjson(*lines: dict[str, Any]) -> bytes:
    """Compact JSON lines, as Go's ``json.Marshal`` and ``streamResponse`` write them."""
    return b"".join(json.dumps(item, separators=(",", ":")).encode() + b"\n" for item in lines)
