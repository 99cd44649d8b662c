"""A scripted loopback server that speaks the OpenAI Chat Completions streaming protocol.

Each ``POST /v1/chat/completions`` takes the next scripted :class:`Reply`; every request body is
recorded (decoded JSON) so that a test can assert what the *next* request carried. The thread,
the script and the HTTP plumbing are shared by every provider's server (``loopback.py``).

Like real backends, the server refuses a request whose history is not well formed: arguments
that do not parse (llama.cpp answers HTTP 500, vLLM HTTP 400) or a call without its result
(OpenAI answers HTTP 400). That check is written here with the standard library on purpose, so
that it does not share code with toolwire's own check.

Replies are SSE bodies, sent with ``Transfer-Encoding: chunked`` (as real servers do) in one
HTTP chunk per SSE event. :class:`Reply` can also cut the body: ``drop`` closes the connection
after some events without the terminating chunk (a broken connection), ``eof`` ends the body
cleanly after some events with no ``[DONE]`` (a server that stopped early).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from typing import Any

from .loopback import STREAMS, Loopback, LoopbackHandler, Reply, ScriptedServer

#: The real llama-cpp-python recording of a ``write`` call cut at ``max_tokens=24`` while the
#: server said ``finish_reason: tool_calls``.
CUT_WRITE = STREAMS / "llama-cpp-python" / "write_max_tokens_24_cut_mid_string.real.sse"
CUT_WRITE_CALL_ID = "call__0_write_cmpl-6c226a42-eaa0-4da1-a5b7-a0d80c86cbfa"


class ScriptedChatServer(ScriptedServer[Reply]):
    """The server's script and what it received; thread-safe for one test at a time."""

    def next_reply(self, request: dict[str, Any]) -> Reply:
        reply = self.take(request)
        if reply is None:
            return Reply(body=b'{"error": {"message": "no scripted reply left"}}', status=500)
        return reply


def history_errors(messages: list[dict[str, Any]]) -> list[str]:
    """What a strict backend refuses in a history (independent of toolwire on purpose)."""
    errors: list[str] = []
    pending: set[str] = set()
    for position, message in enumerate(messages):
        # A result is a ``role: tool`` message, or (the llama-cpp profile, whose server drops
        # tool messages from its prompt) a user message that keeps the ``tool_call_id``.
        if message.get("role") == "tool" or (
            message.get("role") == "user" and "tool_call_id" in message
        ):
            call_id = message.get("tool_call_id")
            if call_id not in pending:
                errors.append(f"message {position}: a tool result for unknown id {call_id!r}")
            pending.discard(call_id)
            continue
        if pending:
            errors.append(f"message {position}: calls {sorted(pending)} have no result")
            pending.clear()
        for call in message.get("tool_calls") or ():
            arguments = call["function"]["arguments"]
            try:
                parsed = json.loads(arguments)
            except ValueError:
                errors.append(f"message {position}: arguments do not parse: {arguments!r}")
                continue
            if not isinstance(parsed, dict):
                errors.append(f"message {position}: arguments are not an object")
            pending.add(call["id"])
    if pending:
        errors.append(f"the last calls {sorted(pending)} have no result")
    return errors


class _Handler(LoopbackHandler[ScriptedChatServer]):
    def do_POST(self) -> None:
        request = self.read_json()
        reply = self.script.next_reply(request)
        problems = history_errors(request.get("messages", []))
        if problems:
            self.script.refuse(problems)
            self.send_json(400, {"error": {"message": "; ".join(problems), "type": "invalid"}})
            return
        self.send_sse_reply(reply)


def running_server() -> Loopback[ScriptedChatServer]:
    """Serve a :class:`ScriptedChatServer` (``base_url`` ends in ``/v1``) in a ``with`` block."""
    return Loopback(ScriptedChatServer(), _Handler, base_path="/v1")


# -- building replies by hand, in the Chat chunk format ----------------------------------------


def chat_chunk(
    delta: dict[str, Any] | None = None, finish_reason: str | None = None
) -> dict[str, Any]:
    """One Chat Completions chunk with one choice (the shape llama.cpp and OpenAI send)."""
    return {
        "id": "chatcmpl-scripted",
        "object": "chat.completion.chunk",
        "created": 1796028372,
        "model": "scripted-model",
        "choices": [
            {"index": 0, "delta": delta or {}, "logprobs": None, "finish_reason": finish_reason}
        ],
    }


def sse(chunks: Iterable[dict[str, Any]], *, done: bool = True) -> bytes:
    """Frame chunks as an SSE body, ``data: [DONE]`` last unless ``done`` is false."""
    body = b"".join(b"data: " + json.dumps(chunk).encode() + b"\n\n" for chunk in chunks)
    return body + (b"data: [DONE]\n\n" if done else b"")


def _pieces(text: str, size: int) -> Iterator[str]:
    for start in range(0, len(text), size):
        yield text[start : start + size]


def tool_calls_reply(
    *calls: tuple[str, str, str], finish_reason: str = "tool_calls", piece: int = 7
) -> bytes:
    """A turn of parallel calls ``(id, name, raw arguments)``, arguments in small fragments.

    Each call opens on its own index with its id and name, as OpenAI streams parallel calls.
    """
    chunks = [chat_chunk({"role": "assistant", "content": None})]
    for index, (call_id, name, arguments) in enumerate(calls):
        header = {"index": index, "id": call_id, "type": "function"}
        chunks.append(
            chat_chunk({"tool_calls": [{**header, "function": {"name": name, "arguments": ""}}]})
        )
        for fragment in _pieces(arguments, piece):
            chunks.append(
                chat_chunk({"tool_calls": [{"index": index, "function": {"arguments": fragment}}]})
            )
    chunks.append(chat_chunk(finish_reason=finish_reason))
    return sse(chunks)


def text_reply(text: str, finish_reason: str = "stop") -> bytes:
    """A turn of plain text."""
    chunks = [chat_chunk({"role": "assistant", "content": ""})]
    chunks.extend(chat_chunk({"content": piece}) for piece in _pieces(text, 5))
    chunks.append(chat_chunk(finish_reason=finish_reason))
    return sse(chunks)


def cut_write_reply() -> bytes:
    """The recorded cut-off ``write`` turn, byte for byte."""
    return CUT_WRITE.read_bytes()
