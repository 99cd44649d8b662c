"""A scripted loopback server that speaks the Anthropic Messages streaming protocol.

Each ``POST /v1/messages`` takes the next scripted :class:`Reply`; every request body is
recorded (decoded JSON) so that a test can assert what the *next* request carried. The thread,
the script and the HTTP plumbing are shared by every provider's server (``loopback.py``).

Like the real API, the server refuses (HTTP 400, ``invalid_request_error``) a request whose
history is not well formed: a ``tool_use`` without a ``tool_result`` first in the very next user
message, a ``tool_result`` that answers no ``tool_use`` of the message before, a ``tool_use``
``input`` that is not an object, an id outside ``^[a-zA-Z0-9_-]+$`` or used twice, an empty text
block, or a ``thinking`` block whose signature is not one this server issued for that text (the
real API verifies signatures). The check is written here with the standard library on purpose,
so that it shares no code with toolwire's own check.

Replies are SSE bodies with ``event:`` lines, sent with ``Transfer-Encoding: chunked``, one
HTTP chunk per event.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any

from .loopback import STREAMS, Loopback, LoopbackHandler, Reply, ScriptedServer

#: The real recording of a ``make_file`` call cut at ``max_tokens`` with no content_block_stop.
CUT_MAKE_FILE = STREAMS / "anthropic" / "max_tokens_mid_tool_input_no_block_stop.sse"
CUT_MAKE_FILE_ID = "toolu_01EKqbqmZrGRXy18eN7m9kvY"
#: The derived recording of an ``overloaded_error`` event after two text deltas.
OVERLOADED = STREAMS / "anthropic" / "error_overloaded_mid_stream.derived.sse"

_ID = re.compile(r"^[a-zA-Z0-9_-]+$")


@dataclass
class ScriptedMessagesServer(ScriptedServer[Reply]):
    """The script, what was received, and the thinking signatures issued."""

    #: signature -> the thinking text it signs (what this server sent).
    signatures: dict[str, str] = field(default_factory=dict)

    def next_reply(self, request: dict[str, Any]) -> Reply:
        reply = self.take(request)
        if reply is None:
            return Reply(_error_body("api_error", "no scripted reply left"), status=500)
        return reply


def history_errors(messages: list[Any], signatures: dict[str, str]) -> list[str]:
    """What the Messages API refuses in a history (independent of toolwire on purpose)."""
    errors: list[str] = []
    used: set[str] = set()
    expected: list[str] = []  # the tool_use ids the next message must answer first
    for position, message in enumerate(messages):
        where = f"messages.{position}"
        content = message.get("content")
        blocks = content if isinstance(content, list) else []
        if message.get("role") == "user":
            results = []
            for block in blocks:
                if block.get("type") != "tool_result":
                    break
                results.append(block.get("tool_use_id"))
            stray = [b for b in blocks[len(results) :] if b.get("type") == "tool_result"]
            if stray:
                errors.append(f"{where}: tool_result blocks must come first in the content")
            if sorted(results) != sorted(expected) or len(set(results)) != len(results):
                errors.append(
                    f"{where}: tool_use ids {expected} need exactly one tool_result each "
                    f"at the start of this message; got {results}"
                )
            expected = []
            continue
        if expected:
            errors.append(f"{where}: tool_use ids {expected} were found without tool_result")
        expected = []
        for block in blocks:
            kind = block.get("type")
            if kind == "text" and not block.get("text"):
                errors.append(f"{where}: text content blocks must be non-empty")
            elif kind == "thinking":
                if signatures.get(block.get("signature", "")) != block.get("thinking"):
                    errors.append(f"{where}: Invalid `signature` in `thinking` block")
            elif kind == "tool_use":
                call_id = block.get("id")
                if not isinstance(call_id, str) or not _ID.match(call_id):
                    errors.append(f"{where}: tool_use.id should match ^[a-zA-Z0-9_-]+$")
                elif call_id in used:
                    errors.append(f"{where}: tool_use ids must be unique: {call_id}")
                if not isinstance(block.get("input"), dict):
                    errors.append(f"{where}: tool_use.input: Input should be a valid dictionary")
                used.add(call_id)
                expected.append(call_id)
    if expected:
        errors.append(f"tool_use ids {expected} were found without tool_result blocks")
    return errors


def _error_body(kind: str, message: str) -> bytes:
    return json.dumps({"type": "error", "error": {"type": kind, "message": message}}).encode()


class _Handler(LoopbackHandler[ScriptedMessagesServer]):
    def do_POST(self) -> None:
        request = self.read_json()
        reply = self.script.next_reply(request)
        problems = [] if self.path == "/v1/messages" else [f"unknown path {self.path}"]
        if not isinstance(request.get("max_tokens"), int):
            problems.append("max_tokens: Field required")
        problems += history_errors(request.get("messages", []), self.script.signatures)
        if problems:
            self.script.refuse(problems)
            self.send_body(400, _error_body("invalid_request_error", "; ".join(problems)))
            return
        self.send_sse_reply(reply)


def running_server() -> Loopback[ScriptedMessagesServer]:
    """Serve a :class:`ScriptedMessagesServer` in a ``with`` block."""
    return Loopback(ScriptedMessagesServer(), _Handler)


# -- building replies, in the Messages event format ---------------------------------------------


def _event(payload: dict[str, Any]) -> bytes:
    return f"event: {payload['type']}\ndata: {json.dumps(payload)}\n\n".encode()


def _pieces(text: str, size: int = 7) -> list[str]:
    return [text[i : i + size] for i in range(0, len(text), size)]


def messages_reply(
    server: ScriptedMessagesServer,
    *blocks: tuple[str, ...],
    stop_reason: str = "tool_use",
    msg_id: str = "msg_scripted",
) -> bytes:
    """A turn of blocks: ``("text", text)``, ``("thinking", text)``, ``("tool_use", id, name,
    raw input)``. A thinking block is signed, and the signature remembered by ``server``.
    """
    events = [
        _event(
            {
                "type": "message_start",
                "message": {
                    "id": msg_id,
                    "type": "message",
                    "role": "assistant",
                    "model": "claude-scripted",
                    "content": [],
                    "stop_reason": None,
                    "usage": {"input_tokens": 100, "output_tokens": 1},
                },
            }
        ),
        _event({"type": "ping"}),
    ]
    for index, block in enumerate(blocks):
        kind = block[0]
        if kind == "text":
            start: dict[str, Any] = {"type": "text", "text": ""}
            deltas = [{"type": "text_delta", "text": piece} for piece in _pieces(block[1])]
        elif kind == "thinking":
            signature = f"sig-{msg_id}-{index}"
            server.signatures[signature] = block[1]
            start = {"type": "thinking", "thinking": "", "signature": ""}
            deltas = [{"type": "thinking_delta", "thinking": p} for p in _pieces(block[1])]
            deltas.append({"type": "signature_delta", "signature": signature})
        else:
            start = {"type": "tool_use", "id": block[1], "name": block[2], "input": {}}
            deltas = [{"type": "input_json_delta", "partial_json": ""}]
            deltas += [{"type": "input_json_delta", "partial_json": p} for p in _pieces(block[3])]
        events.append(
            _event({"type": "content_block_start", "index": index, "content_block": start})
        )
        events += [
            _event({"type": "content_block_delta", "index": index, "delta": delta})
            for delta in deltas
        ]
        events.append(_event({"type": "content_block_stop", "index": index}))
    events.append(
        _event(
            {
                "type": "message_delta",
                "delta": {"stop_reason": stop_reason, "stop_sequence": None},
                "usage": {"output_tokens": 50},
            }
        )
    )
    events.append(_event({"type": "message_stop"}))
    return b"".join(events)
