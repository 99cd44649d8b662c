"""A scripted loopback server that speaks the OpenAI Responses streaming protocol.

Each ``POST /v1/responses`` takes the next scripted reply (an SSE body of Responses events,
sent with ``Transfer-Encoding: chunked``, one HTTP chunk per event); every request body is
recorded so that a test can assert what the next request carried. The thread, the script and
the HTTP plumbing are shared by every provider's server (``loopback.py``).

Like the real API, the server refuses (HTTP 400, ``invalid_request_error``) an ``input`` that is
not well formed, with the API's own words:

- a ``function_call`` with no ``function_call_output`` ("No tool output found for function
  call ..."), an output whose ``call_id`` no earlier call has ("No tool call found for function
  call output ..."), a second output for one call;
- ``arguments`` that are not a string holding a JSON object (strict backends refuse what does
  not parse; the API's own validation of replayed arguments is not documented);
- a reasoning item with nothing after it ("... was provided without its required following
  item"), a reasoning item whose ``encrypted_content`` is not what this server sent (requests
  use ``store: false``, so the item must come back whole), and a ``function_call`` replayed
  with the ``id`` of an item this server generated after a reasoning item, without that
  reasoning item before it ("... was provided without its required 'reasoning' item ...").

The check is written here with the standard library on purpose: it shares no code with
toolwire's own history check.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from .loopback import Loopback, LoopbackHandler, ScriptedServer

MODEL = "gpt-scripted"


@dataclass
class Reply:
    """One scripted answer: the events of a Responses stream."""

    events: list[dict[str, Any]]

    def body(self) -> list[bytes]:
        """The SSE events, numbered, each framed as OpenAI frames them."""
        framed = []
        for number, event in enumerate(self.events):
            payload = {**event, "sequence_number": number}
            framed.append(f"event: {event['type']}\ndata: {json.dumps(payload)}\n\n".encode())
        return framed


@dataclass
class ScriptedResponsesServer(ScriptedServer[Reply]):
    """The server's script, what it received, and what it generated (to check replays)."""

    #: Reasoning items this server sent: id -> encrypted_content.
    reasoning_sent: dict[str, str] = field(default_factory=dict)
    #: Function-call item ids this server sent after a reasoning item: fc id -> rs id.
    reasoning_of_call: dict[str, str] = field(default_factory=dict)

    def next_reply(self, request: dict[str, Any]) -> Reply | None:
        with self._lock:
            reply = self.take(request)
            if reply is not None:
                self._remember(reply)
            return reply

    def _remember(self, reply: Reply) -> None:
        reasoning: str | None = None
        for event in reply.events:
            if event["type"] != "response.output_item.done":
                continue
            item = event["item"]
            if item["type"] == "reasoning":
                reasoning = item["id"]
                self.reasoning_sent[item["id"]] = item["encrypted_content"]
            elif item["type"] == "function_call" and reasoning is not None:
                self.reasoning_of_call[item["id"]] = reasoning

    def input_errors(self, items: list[dict[str, Any]]) -> list[str]:
        """What the API refuses in an ``input`` (see the module docstring)."""
        errors: list[str] = []
        calls: set[str] = set()
        answered: set[str] = set()
        seen_reasoning: set[str] = set()
        for position, item in enumerate(items):
            kind = item.get("type", "message")
            following = items[position + 1] if position + 1 < len(items) else None
            if kind == "reasoning":
                seen_reasoning.add(item.get("id", ""))
                if following is None or (
                    following.get("type", "message") == "message"
                    and following.get("role") == "user"
                ):
                    errors.append(
                        f"Item '{item.get('id')}' of type 'reasoning' was provided without its "
                        "required following item."
                    )
                if self.reasoning_sent.get(item.get("id", "")) != item.get("encrypted_content"):
                    errors.append(
                        f"Encrypted content for item {item.get('id')} could not be verified."
                    )
            elif kind == "function_call":
                errors.extend(self._call_errors(item, calls, seen_reasoning))
            elif kind == "function_call_output":
                call_id = item.get("call_id")
                if call_id not in calls:
                    errors.append(
                        f"No tool call found for function call output with call_id {call_id}."
                    )
                elif call_id in answered:
                    errors.append(f"Duplicate function call output for call_id {call_id}.")
                answered.add(call_id)
        for call_id in sorted(calls - answered):
            errors.append(f"No tool output found for function call {call_id}.")
        return errors

    def _call_errors(
        self, item: dict[str, Any], calls: set[str], seen_reasoning: set[str]
    ) -> Iterator[str]:
        call_id = item.get("call_id")
        if not isinstance(call_id, str) or not isinstance(item.get("name"), str):
            yield "Missing required parameter: 'call_id' / 'name'."
            return
        calls.add(call_id)
        arguments = item.get("arguments")
        try:
            parsed = json.loads(arguments) if isinstance(arguments, str) else None
        except ValueError:
            parsed = None
        if not isinstance(parsed, dict):
            yield f"Invalid 'arguments' for function call {call_id}: {arguments!r}"
        reasoning = self.reasoning_of_call.get(item.get("id", ""))
        if reasoning is not None and reasoning not in seen_reasoning:
            yield (
                f"Item '{item['id']}' of type 'function_call' was provided without its required "
                f"'reasoning' item: '{reasoning}'."
            )


class _Handler(LoopbackHandler[ScriptedResponsesServer]):
    def do_POST(self) -> None:
        request = self.read_json()
        reply = self.script.next_reply(request)
        items = request.get("input")
        problems = self.script.input_errors(items) if isinstance(items, list) else []
        if self.path != "/v1/responses" or not request.get("stream"):
            problems.append(f"this server streams POST /v1/responses only, not {self.path}")
        if problems or reply is None:
            self.script.refuse(problems or ["no scripted reply left"])
            message = "; ".join(problems) or "no scripted reply left"
            body = {"error": {"message": message, "type": "invalid_request_error", "code": None}}
            self.send_json(400, body)
            return
        self.send_stream(reply.body(), "text/event-stream")


def running_server() -> Loopback[ScriptedResponsesServer]:
    """Serve a :class:`ScriptedResponsesServer` (``base_url`` ends in ``/v1``) in a ``with``."""
    return Loopback(ScriptedResponsesServer(), _Handler, base_path="/v1")


# -- building replies, in the shapes the recordings show ------------------------------------------


class ReplyBuilder:
    """The events of one scripted response, output item by output item."""

    def __init__(self, response_id: str) -> None:
        self.response = {"id": response_id, "object": "response", "model": MODEL, "output": []}
        self.events: list[dict[str, Any]] = [
            {"type": "response.created", "response": {**self.response, "status": "in_progress"}},
            {
                "type": "response.in_progress",
                "response": {**self.response, "status": "in_progress"},
            },
        ]
        self.output: list[dict[str, Any]] = []

    def _item(
        self, added: dict[str, Any], middle: list[dict[str, Any]], done: dict[str, Any]
    ) -> None:
        index = len(self.output)
        self.events.append(
            {"type": "response.output_item.added", "output_index": index, "item": added}
        )
        self.events.extend({**event, "output_index": index} for event in middle)
        self.events.append(
            {"type": "response.output_item.done", "output_index": index, "item": done}
        )
        self.output.append(done)

    def reasoning(self, item_id: str, secret: str) -> ReplyBuilder:
        item = {"id": item_id, "type": "reasoning", "summary": [], "encrypted_content": secret}
        self._item(item, [], item)
        return self

    def message(self, item_id: str, text: str) -> ReplyBuilder:
        part = {"type": "output_text", "annotations": [], "text": text}
        base = {"item_id": item_id, "content_index": 0}
        middle = [
            {"type": "response.output_text.delta", **base, "delta": text[i : i + 4]}
            for i in range(0, len(text), 4)
        ]
        middle.append({"type": "response.output_text.done", **base, "text": text})
        item = {"id": item_id, "type": "message", "role": "assistant", "status": "completed"}
        self._item(
            {**item, "status": "in_progress", "content": []}, middle, {**item, "content": [part]}
        )
        return self

    def call(
        self, item_id: str, call_id: str, name: str, arguments: str, *, status: str = "completed"
    ) -> ReplyBuilder:
        item = {"id": item_id, "type": "function_call", "call_id": call_id, "name": name}
        middle: list[dict[str, Any]] = [
            {
                "type": "response.function_call_arguments.delta",
                "item_id": item_id,
                "delta": arguments[i : i + 6],
                "obfuscation": "x" * (i % 7),
            }
            for i in range(0, len(arguments), 6)
        ]
        middle.append(
            {
                "type": "response.function_call_arguments.done",
                "item_id": item_id,
                "arguments": arguments,
            }
        )
        added = {**item, "status": "in_progress", "arguments": ""}
        self._item(added, middle, {**item, "status": status, "arguments": arguments})
        return self

    def completed(self, output_tokens: int = 40) -> Reply:
        return self._end("response.completed", "completed", None, output_tokens)

    def cut_at_max_output_tokens(self, output_tokens: int) -> Reply:
        return self._end(
            "response.incomplete", "incomplete", {"reason": "max_output_tokens"}, output_tokens
        )

    def _end(self, kind: str, status: str, details: Any, output_tokens: int) -> Reply:
        usage = {
            "input_tokens": 50,
            "input_tokens_details": {"cached_tokens": 0},
            "output_tokens": output_tokens,
            "output_tokens_details": {"reasoning_tokens": 8},
            "total_tokens": 50 + output_tokens,
        }
        response = {
            **self.response,
            "status": status,
            "incomplete_details": details,
            "output": self.output,
            "usage": usage,
        }
        return Reply([*self.events, {"type": kind, "response": response}])
