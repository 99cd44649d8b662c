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

With thinking on in the request (``thinking.type`` other than ``disabled``), it also refuses what
the API refuses of thinking blocks (the messages quote the API's own errors): a
``redacted_thinking`` block whose ``data`` this server never sent, an assistant message that holds
thinking but does not start with it, one that ends in a thinking block, and a tool-use cycle whose
first assistant message (the one after the last user message that is not only results) does not
start with a thinking block. With :attr:`ScriptedMessagesServer.prefix_checks` it also checks, as
the API does for models with preserved thinking, that nothing before a thinking block changed
since the block was produced: the request's ``system``, ``tools``, earlier messages and the blocks
before it in its message (the signature is bound to that prefix when the reply is sent).

A request with ``stream`` not ``true`` gets the reply folded into one ``message`` body.

Replies are SSE bodies with ``event:`` lines, sent with ``Transfer-Encoding: chunked``, one
HTTP chunk per event.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from .loopback import STREAMS, Loopback, LoopbackHandler, Reply, ScriptedServer, sse_events

#: The real recording of a ``make_file`` call cut at ``max_tokens`` with no content_block_stop.
CUT_MAKE_FILE = STREAMS / "anthropic" / "max_tokens_mid_tool_input_no_block_stop.sse"
CUT_MAKE_FILE_ID = "toolu_01EKqbqmZrGRXy18eN7m9kvY"
#: The derived recording of an ``overloaded_error`` event after two text deltas.
OVERLOADED = STREAMS / "anthropic" / "error_overloaded_mid_stream.derived.sse"

_ID = re.compile(r"^[a-zA-Z0-9_-]+$")

#: The tool of the thinking tests: write lines to a file.
MAKE_FILE: dict[str, Any] = {
    "name": "make_file",
    "input_schema": {
        "type": "object",
        "properties": {
            "filename": {"type": "string"},
            "lines_of_text": {"type": "array", "items": {"type": "string"}},
        },
        "required": ["filename", "lines_of_text"],
    },
}


@dataclass
class ScriptedMessagesServer(ScriptedServer[Reply]):
    """The script, what was received, and the thinking signatures issued."""

    #: signature -> the thinking text it signs (what this server sent).
    signatures: dict[str, str] = field(default_factory=dict)
    #: The ``data`` of every ``redacted_thinking`` block this server sent.
    redacted: set[str] = field(default_factory=set)
    #: Check thinking blocks' prefixes, as the API does for models with preserved thinking.
    prefix_checks: bool = False
    #: signature or redacted data -> the prefix it was produced after (when it was sent).
    prefixes: dict[str, str] = field(default_factory=dict)
    #: The ``anthropic-beta`` header of every request (``None`` when absent).
    betas: list[str | None] = field(default_factory=list)

    def next_reply(self, request: dict[str, Any]) -> Reply:
        reply = self.take(request)
        if reply is None:
            return Reply(_error_body("api_error", "no scripted reply left"), status=500)
        return reply


def history_errors(
    messages: list[Any],
    signatures: dict[str, str],
    *,
    thinking: bool = False,
    server: ScriptedMessagesServer | None = None,
    request: dict[str, Any] | None = None,
) -> list[str]:
    """What the Messages API refuses in a history (independent of toolwire on purpose).

    ``thinking``: the request turns thinking on (the thinking rules apply); ``server`` and
    ``request``: the redacted blocks it sent, and its prefix checks when it has them on.
    """
    errors: list[str] = []
    if thinking:
        errors += _thinking_errors(messages, server, request or {})
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


def thinking_on(request: dict[str, Any]) -> bool:
    """The request turns thinking on."""
    config = request.get("thinking")
    return isinstance(config, dict) and config.get("type") not in (None, "disabled")


def _thinking_errors(
    messages: list[Any], server: ScriptedMessagesServer | None, request: dict[str, Any]
) -> list[str]:
    errors: list[str] = []
    thinking_kinds = ("thinking", "redacted_thinking")
    last_prompt = -1  # the last user message that is not only tool results
    for position, message in enumerate(messages):
        blocks = _blocks(message.get("content"))
        if message.get("role") == "user":
            if not blocks or any(b.get("type") != "tool_result" for b in blocks):
                last_prompt = position
            continue
        where = f"messages.{position}"
        kinds = [b.get("type") for b in blocks]
        if any(kind in thinking_kinds for kind in kinds) and kinds[0] not in thinking_kinds:
            errors.append(
                f"{where}.content.0: If an assistant message contains any thinking blocks, the "
                f"first block must be thinking or redacted_thinking. Found {kinds[0]}."
            )
        if kinds and kinds[-1] == "thinking":
            errors.append(f"{where}: The final block in an assistant message cannot be `thinking`.")
        for index, block in enumerate(blocks):
            if block.get("type") == "redacted_thinking":
                if server is not None and block.get("data") not in server.redacted:
                    errors.append(f"{where}.content.{index}: Invalid `data` in `redacted_thinking`")
            if server is not None and server.prefix_checks and block.get("type") in thinking_kinds:
                key = _block_key(block)
                produced = server.prefixes.get(key)
                now = _prefix(request, messages[:position], blocks[:index])
                if produced is not None and produced != now:
                    errors.append(
                        f"{where}.content.{index}: the prefix of this thinking block changed "
                        "since it was produced (preserved thinking)"
                    )
    cycle = messages[last_prompt + 1 :]
    last_is_results = (
        bool(messages) and messages[-1].get("role") == "user" and last_prompt < (len(messages) - 1)
    )
    if last_is_results and cycle and cycle[0].get("role") == "assistant":
        first = _blocks(cycle[0].get("content"))
        kind = first[0].get("type") if first else None
        if kind not in thinking_kinds:
            errors.append(
                f"messages.{last_prompt + 1}.content.0.type: Expected `thinking` or "
                f"`redacted_thinking`, but found `{kind}`. When `thinking` is enabled, a final "
                "`assistant` message must start with a thinking block (preceeding the lastmost "
                "set of `tool_use` and `tool_result` blocks)."
            )
    return errors


def _blocks(content: Any) -> list[dict[str, Any]]:
    if isinstance(content, str):
        return [{"type": "text", "text": content}]
    return [b for b in content if isinstance(b, dict)] if isinstance(content, list) else []


def _block_key(block: dict[str, Any]) -> str:
    return str(block.get("signature") if block.get("type") == "thinking" else block.get("data"))


def _canonical(block: dict[str, Any]) -> Any:
    """A block as the prefix check compares it (the fields the API gave, not the SDK's extras)."""
    kind = block.get("type")
    if kind == "text":
        return [kind, block.get("text")]
    if kind == "thinking":
        return [kind, block.get("thinking"), block.get("signature")]
    if kind == "redacted_thinking":
        return [kind, block.get("data")]
    if kind == "tool_use":
        return [kind, block.get("id"), block.get("name"), block.get("input")]
    if kind == "tool_result":
        content = block.get("content")
        return [
            kind,
            block.get("tool_use_id"),
            _blocks_or_text(content),
            bool(block.get("is_error")),
        ]
    return {k: v for k, v in block.items() if v is not None}


def _blocks_or_text(content: Any) -> Any:
    return [_canonical(b) for b in _blocks(content)] if content is not None else None


def _prefix(request: dict[str, Any], messages: list[Any], before: list[dict[str, Any]]) -> str:
    """What a thinking block's reasoning was about: system, tools, the messages, the blocks."""
    history = [[m.get("role"), _blocks_or_text(m.get("content"))] for m in messages]
    head = [request.get("system"), request.get("tools")]
    return json.dumps([head, history, [_canonical(b) for b in before]], sort_keys=True)


def _payloads(body: bytes) -> Iterator[dict[str, Any]]:
    """The ``data:`` payload of each event of a streamed reply, decoded."""
    for event in sse_events(body):
        data = next((line[6:] for line in event.split(b"\n") if line.startswith(b"data: ")), None)
        if data is not None:
            yield json.loads(data)


def _streamed_blocks(body: bytes) -> list[dict[str, Any]]:
    """The content blocks of a streamed reply, whole (``tool_use`` input parsed when it is)."""
    blocks: list[dict[str, Any]] = []
    inputs: dict[int, str] = {}
    for payload in _payloads(body):
        kind = payload.get("type")
        if kind == "content_block_start":
            blocks.append(dict(payload["content_block"]))
        elif kind == "content_block_delta":
            block, delta = blocks[payload["index"]], payload["delta"]
            if delta["type"] == "text_delta":
                block["text"] = block.get("text", "") + delta["text"]
            elif delta["type"] == "thinking_delta":
                block["thinking"] = block.get("thinking", "") + delta["thinking"]
            elif delta["type"] == "signature_delta":
                block["signature"] = delta["signature"]
            elif delta["type"] == "input_json_delta":
                inputs[payload["index"]] = inputs.get(payload["index"], "") + delta["partial_json"]
    for index, text in inputs.items():
        try:
            blocks[index]["input"] = json.loads(text) if text else {}
        except json.JSONDecodeError:
            blocks[index]["input"] = {}  # cut: a whole message holds an object all the same
    return blocks


def bind_prefixes(server: ScriptedMessagesServer, request: dict[str, Any], body: bytes) -> None:
    """Bind each thinking block of a reply to the prefix it is produced after."""
    blocks = _streamed_blocks(body)
    for index, block in enumerate(blocks):
        if block.get("type") in ("thinking", "redacted_thinking"):
            prefix = _prefix(request, request.get("messages", []), blocks[:index])
            server.prefixes[_block_key(block)] = prefix


def _whole_message(body: bytes) -> bytes:
    """A streamed reply folded into the ``message`` body the API sends when not streaming."""
    message: dict[str, Any] = {}
    for payload in _payloads(body):
        if payload.get("type") == "message_start":
            message = dict(payload["message"])
        elif payload.get("type") == "message_delta":
            message.update(payload["delta"])
            message["usage"] = {**message.get("usage", {}), **payload.get("usage", {})}
    message["content"] = _streamed_blocks(body)
    return json.dumps(message).encode()


def _error_body(kind: str, message: str) -> bytes:
    return json.dumps({"type": "error", "error": {"type": kind, "message": message}}).encode()


class _Handler(LoopbackHandler[ScriptedMessagesServer]):
    def do_POST(self) -> None:
        request = self.read_json()
        reply = self.script.next_reply(request)
        problems = [] if self.path == "/v1/messages" else [f"unknown path {self.path}"]
        if not isinstance(request.get("max_tokens"), int):
            problems.append("max_tokens: Field required")
        self.script.betas.append(self.headers.get("anthropic-beta"))
        problems += history_errors(
            request.get("messages", []),
            self.script.signatures,
            thinking=thinking_on(request),
            server=self.script,
            request=request,
        )
        if problems:
            self.script.refuse(problems)
            self.send_body(400, _error_body("invalid_request_error", "; ".join(problems)))
            return
        if reply.status == 200:
            bind_prefixes(self.script, request, reply.body)
            if request.get("stream") is not True and reply.cut == "none":
                self.send_body(200, _whole_message(reply.body))
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
    """A turn of blocks: ``("text", text)``, ``("thinking", text)``, ``("redacted_thinking",
    data)``, ``("tool_use", id, name, raw input)``. A thinking block is signed, and the
    signature remembered by ``server``, as is a redacted block's ``data``.
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
        elif kind == "redacted_thinking":
            server.redacted.add(block[1])
            start = {"type": "redacted_thinking", "data": block[1]}
            deltas = []
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
