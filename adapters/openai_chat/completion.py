"""Non-streamed requests: a whole ``chat.completion`` body, healed like a stream.

toolwire reads streams, so a ``chat.completion`` body is read as the one-chunk stream it is
equivalent to (:func:`completion_as_stream`: the message as one delta, its finish and usage,
then ``[DONE]``: the response was whole). The healing session then runs exactly as for a
stream, and :func:`completion_body` folds what it sends into the client's body: the first
response's body with the message, ``finish_reason`` and usage replaced, every other field kept.
A healing that fails is an HTTP error for the client, with the body :func:`error_status` finds.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

import msgspec

from ...core.wire import Done, WireItem
from ..encoding import error_item, json_object

__all__ = [
    "completion_as_stream",
    "completion_body",
    "empty_completion",
    "error_status",
    "read_completion",
]

_encode = msgspec.json.Encoder().encode
_REASONING_KEYS = ("reasoning_content", "reasoning")


def read_completion(content: bytes) -> dict[str, Any] | None:
    """``content`` decoded, when it is a ``chat.completion`` with one choice toolwire can read."""
    body = json_object(content)
    if body is None:
        return None
    choices = body.get("choices")
    if not isinstance(choices, list) or len(choices) != 1 or not isinstance(choices[0], dict):
        return None
    message = choices[0].get("message")
    if not isinstance(message, dict):
        return None
    content_value = message.get("content")
    if content_value is not None and not isinstance(content_value, str):
        return None
    calls = message.get("tool_calls")
    if calls is not None and not (
        isinstance(calls, list) and all(isinstance(call, dict) for call in calls)
    ):
        return None
    return body


def completion_as_stream(body: Mapping[str, Any]) -> bytes:
    """The SSE body equivalent to a ``chat.completion`` (read by :func:`read_completion`)."""
    choice = body["choices"][0]
    message = choice["message"]
    delta: dict[str, Any] = {"role": "assistant", "content": message.get("content")}
    for key in _REASONING_KEYS:
        if isinstance(message.get(key), str):
            delta[key] = message[key]
    calls = message.get("tool_calls")
    if calls:
        delta["tool_calls"] = [{**call, "index": index} for index, call in enumerate(calls)]
    elif isinstance(message.get("function_call"), dict):
        delta["function_call"] = message["function_call"]
    chunk: dict[str, Any] = {
        "id": body.get("id"),
        "object": "chat.completion.chunk",
        "model": body.get("model"),
        "choices": [{"index": 0, "delta": delta, "finish_reason": choice.get("finish_reason")}],
    }
    if isinstance(body.get("usage"), dict):
        chunk["usage"] = body["usage"]
    return b"data: " + _encode(chunk) + b"\n\ndata: [DONE]\n\n"


def error_status(items: Iterable[WireItem]) -> dict[str, Any] | None:
    """The error body (``{"error": {...}}``) when the session ended in an error, else ``None``."""
    return error_item(items)


def empty_completion(items: Iterable[WireItem]) -> dict[str, Any]:
    """A ``chat.completion`` with an empty message, with the id, creation time and model of the
    first chunk in ``items``: what :func:`completion_body` folds the chunks into when no
    upstream completion came (the upstream answered a tool-parser error)."""
    chunk = next((item for item in items if isinstance(item, dict) and "choices" in item), {})
    return {
        "id": chunk.get("id"),
        "object": "chat.completion",
        "created": chunk.get("created"),
        "model": chunk.get("model"),
        "choices": [
            {"index": 0, "message": {"role": "assistant", "content": None}, "finish_reason": None}
        ],
    }


def completion_body(
    first: Mapping[str, Any], items: Iterable[WireItem], *, reasoning_field: str
) -> dict[str, Any]:
    """The client's ``chat.completion``: ``first`` with what the session sent folded in.

    The message's text, reasoning and calls, the ``finish_reason`` and the usage come from the
    chunks; every other field of ``first`` (``system_fingerprint``, ``service_tier``,
    ``refusal``, ``annotations``, the usage details...) is kept.
    """
    text: list[str] = []
    reasoning: list[str] = []
    calls: list[dict[str, Any]] = []
    finish_reason: Any = None
    usage: dict[str, Any] | None = None
    for item in items:
        if isinstance(item, Done):
            continue
        if "usage" in item:
            usage = item["usage"]
        for choice in item.get("choices") or ():
            delta = choice["delta"]
            if delta.get("content"):
                text.append(delta["content"])
            if delta.get(reasoning_field):
                reasoning.append(delta[reasoning_field])
            for fragment in delta.get("tool_calls") or ():
                calls.append({key: value for key, value in fragment.items() if key != "index"})
            if choice.get("finish_reason") is not None:
                finish_reason = choice["finish_reason"]
    first_choice = first["choices"][0]
    message = {
        key: value
        for key, value in first_choice["message"].items()
        if key not in ("content", "tool_calls", "function_call", *_REASONING_KEYS)
    }
    message.setdefault("role", "assistant")
    # The first response's text always goes out; with none, its ``null`` or ``""`` is kept.
    # Text that did not go out was the markup of calls recovered from it: ``null``.
    kept = first_choice["message"].get("content")
    message["content"] = "".join(text) if text else (kept if not kept else None)
    if reasoning:
        message[reasoning_field] = "".join(reasoning)
    if calls:
        message["tool_calls"] = calls
    body = dict(first)
    body["choices"] = [{**first_choice, "message": message, "finish_reason": finish_reason}]
    if usage is not None:
        kept = first.get("usage")
        body["usage"] = {**(kept if isinstance(kept, dict) else {}), **usage}
    return body
