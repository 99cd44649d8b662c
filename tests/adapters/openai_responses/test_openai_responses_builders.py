"""Hand-built Responses stream events, in the shapes the recordings show (no tests here).

The name follows the test-file naming of this adapter; the sad-path, history and loop tests
import these builders.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any

RESPONSE: dict[str, Any] = {
    "id": "resp_test",
    "object": "response",
    "created_at": 1770803615,
    "model": "gpt-test",
    "status": "in_progress",
    "output": [],
    "usage": None,
}

USAGE = {
    "input_tokens": 20,
    "input_tokens_details": {"cached_tokens": 0},
    "output_tokens": 12,
    "output_tokens_details": {"reasoning_tokens": 0},
    "total_tokens": 32,
}

RM_TOOL = {
    "type": "function",
    "name": "rm",
    "parameters": {
        "type": "object",
        "required": ["path"],
        "properties": {"path": {"type": "string"}},
    },
}


def sse(events: Iterable[dict[str, Any] | str], *, numbered: bool = True) -> bytes:
    """Frame events like OpenAI: ``event:`` then ``data:``; a str is sent verbatim as data.

    With ``numbered``, every event (a verbatim str too: it stands for one event that could not
    be read) takes the next ``sequence_number``.
    """
    parts = []
    for number, event in enumerate(events):
        if isinstance(event, str):
            parts.append(f"data: {event}\n\n")
            continue
        payload = dict(event)
        if numbered:
            payload["sequence_number"] = number
        parts.append(f"event: {payload['type']}\ndata: {json.dumps(payload)}\n\n")
    return "".join(parts).encode()


def created() -> dict[str, Any]:
    return {"type": "response.created", "response": RESPONSE}


def call_item(
    item_id: str, call_id: str, name: str, arguments: str = "", status: str = "in_progress"
) -> dict[str, Any]:
    return {
        "id": item_id,
        "type": "function_call",
        "status": status,
        "arguments": arguments,
        "call_id": call_id,
        "name": name,
    }


def call_added(index: int, item_id: str, call_id: str, name: str) -> dict[str, Any]:
    return {
        "type": "response.output_item.added",
        "output_index": index,
        "item": call_item(item_id, call_id, name),
    }


def arguments_delta(index: int, item_id: str | None, delta: str) -> dict[str, Any]:
    event: dict[str, Any] = {
        "type": "response.function_call_arguments.delta",
        "output_index": index,
        "delta": delta,
        "obfuscation": "pad",
    }
    if item_id is not None:
        event["item_id"] = item_id
    return event


def arguments_done(index: int, item_id: str, arguments: str) -> dict[str, Any]:
    return {
        "type": "response.function_call_arguments.done",
        "output_index": index,
        "item_id": item_id,
        "arguments": arguments,
    }


def call_done(
    index: int, item_id: str, call_id: str, name: str, arguments: str, status: str = "completed"
) -> dict[str, Any]:
    return {
        "type": "response.output_item.done",
        "output_index": index,
        "item": call_item(item_id, call_id, name, arguments, status),
    }


def whole_call(
    index: int, item_id: str, call_id: str, name: str, arguments: str, piece: int = 5
) -> list[dict[str, Any]]:
    """A function call as OpenAI streams it: added, deltas, .done, item done."""
    deltas = [
        arguments_delta(index, item_id, arguments[i : i + piece])
        for i in range(0, len(arguments), piece)
    ]
    return [
        call_added(index, item_id, call_id, name),
        *deltas,
        arguments_done(index, item_id, arguments),
        call_done(index, item_id, call_id, name, arguments),
    ]


def message_item(item_id: str, text: str, status: str = "completed") -> dict[str, Any]:
    return {
        "id": item_id,
        "type": "message",
        "status": status,
        "role": "assistant",
        "content": [{"type": "output_text", "annotations": [], "text": text}],
    }


def whole_message(index: int, item_id: str, text: str, piece: int = 4) -> list[dict[str, Any]]:
    """An assistant message: added, output_text deltas, output_text.done, item done."""
    base = {"item_id": item_id, "output_index": index, "content_index": 0}
    return [
        {
            "type": "response.output_item.added",
            "output_index": index,
            "item": {**message_item(item_id, "", "in_progress"), "content": []},
        },
        *(
            {"type": "response.output_text.delta", **base, "delta": text[i : i + piece]}
            for i in range(0, len(text), piece)
        ),
        {"type": "response.output_text.done", **base, "text": text},
        {
            "type": "response.output_item.done",
            "output_index": index,
            "item": message_item(item_id, text),
        },
    ]


def terminal(
    kind: str = "response.completed",
    *,
    output: list[dict[str, Any]] | None = None,
    usage: dict[str, Any] | None = None,
    **fields: Any,
) -> dict[str, Any]:
    status = {"response.completed": "completed", "response.incomplete": "incomplete"}.get(
        kind, "failed"
    )
    response = {**RESPONSE, "status": status, "output": output or [], "usage": usage or USAGE}
    response.update(fields)
    return {"type": kind, "response": response}
