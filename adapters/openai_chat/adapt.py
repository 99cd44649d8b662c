"""A client's Chat Completions request, rewritten into the form its server accepts. Sans-I/O.

Agents send back what the openai SDK gave them: an assistant message with ``"content": null``
next to its tool calls, then one ``role: tool`` message per result. OpenAI documents that
shape; not every server takes it. What each server needs is on its
:class:`~toolwire.adapters.openai_chat.profiles.ServerProfile`, the same data toolwire's own
history writer (:class:`~toolwire.adapters.openai_chat.history.OpenAIChatHistory`) follows, so
a client's history and toolwire's follow-ups reach the server in one form:

- ``assistant_content``: with ``empty_assistant_content`` set (``""`` for llama-cpp-python), an
  assistant ``content`` that is ``null``, or missing next to tool calls, becomes that value.
  llama-cpp-python 0.3.36 answers ``null`` with HTTP 500 (``Input should be a valid string``,
  its request validation) and a missing key with HTTP 500 too (its template reads
  ``message.content`` under ``StrictUndefined``). ``""`` and ``null`` tell the model the same
  thing: no text.
- ``tool_result_role``: with ``tool_result_role="user"``, each ``role: tool`` message becomes
  the ``role: user`` message the history writer writes (the text names the tool and the call,
  then quotes the result; ``tool_call_id`` stays, for toolwire's history check).
  llama-cpp-python's ``chatml-function-calling`` template renders a ``tool`` message as a bare
  ``<|im_start|>tool`` line: the model would never read the result.
- ``null_key``: keys the server refuses as ``null`` on an assistant message
  (``null_keys_refused``) are left out. The openai SDK's streaming helper sends
  ``function_call: null`` back; llama-cpp-python answers HTTP 500 (``Input should be a valid
  dictionary``).
- ``stream``: with ``streams_tool_calls_only_when_forced``, a streamed request with tools and
  ``tool_choice: "auto"`` is asked non-streamed (llama-cpp-python answers it with HTTP 200 and
  an empty body when the model picks a tool); the healing streams the judged answer back.

Nothing else changes: a body with nothing to adapt is returned as it came (the same object),
so the bytes the client sent go upstream. ``docs/providers.md`` lists each profile's rules.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Literal

import msgspec

from .profiles import ServerProfile

__all__ = ["AdaptationKind", "adapt_body", "adapt_messages", "result_text"]

#: What an adaptation changed (see the module docstring).
AdaptationKind = Literal["assistant_content", "null_key", "tool_result_role", "stream"]

_encode = msgspec.json.Encoder().encode


def result_text(name: str, call_id: str, content: str) -> str:
    """The text of a result sent as a user message: which call it answers, then the result."""
    return f"Result of tool call `{name}` (id {call_id}):\n{content}"


def adapt_messages(
    messages: Sequence[Any], profile: ServerProfile
) -> tuple[list[Any], dict[str, int]]:
    """``messages`` in the form ``profile``'s server accepts, and how many of each kind changed.

    A message that needs nothing is passed as the same object, and the input is never
    modified. Messages may be dicts or the openai SDK's message objects (what
    ``response.choices[0].message`` is): one that needs adapting comes back as a dict.
    """
    counts: dict[str, int] = {}  # AdaptationKind -> how many messages
    names: dict[str, str] = {}  # call id -> tool name, from the assistant messages so far
    adapted: list[Any] = []
    for original in messages:
        message = _as_mapping(original)
        kinds: list[AdaptationKind] = []
        if message is not None and message.get("role") == "assistant":
            _learn_names(message, names)
            empty = profile.empty_assistant_content
            content_missing = "content" not in message and bool(message.get("tool_calls"))
            content_null = "content" in message and message["content"] is None
            if empty is not None and (content_missing or content_null):
                message = {**message, "content": empty}
                kinds.append("assistant_content")
            refused = [k for k in profile.null_keys_refused if k in message and message[k] is None]
            if refused:
                message = {k: v for k, v in message.items() if k not in refused}
                kinds.append("null_key")
        elif message is not None and message.get("role") == "tool":
            if profile.tool_result_role == "user":
                message = _as_user_result(message, names)
                kinds.append("tool_result_role")
        adapted.append(message if kinds else original)
        for kind in kinds:
            counts[kind] = counts.get(kind, 0) + 1
    return adapted, counts


def adapt_body(
    body: Mapping[str, Any], profile: ServerProfile, *, stream: bool = True
) -> tuple[Mapping[str, Any], dict[str, int]]:
    """A request ``body`` adapted to ``profile`` (``body`` itself when nothing changes).

    ``stream=False`` leaves ``stream`` alone: only a caller that streams the whole answer back
    (the healing) may ask a streamed request whole.
    """
    messages = body.get("messages")
    if not isinstance(messages, list):
        return body, {}
    adapted, counts = adapt_messages(messages, profile)
    if (
        stream
        and profile.streams_tool_calls_only_when_forced
        and body.get("stream") is True
        and body.get("tool_choice") == "auto"
        and isinstance(body.get("tools"), list)
        and body["tools"]
    ):
        counts["stream"] = 1
    if not counts:
        return body, counts
    upstream = {**body, "messages": adapted}
    if "stream" in counts:
        upstream["stream"] = False
        upstream.pop("stream_options", None)  # only meaningful on a streamed request
    return upstream, counts


def _as_mapping(message: Any) -> Mapping[str, Any] | None:
    """A message as a mapping: a dict as is, an SDK object as the SDK would send it."""
    if isinstance(message, Mapping):
        return message
    dump = getattr(message, "model_dump", None)  # the openai SDK's pydantic messages
    if callable(dump):
        dumped = dump(mode="json", exclude_unset=True)
        if isinstance(dumped, dict):
            return dumped
    return None


def _learn_names(message: Mapping[str, Any], names: dict[str, str]) -> None:
    calls = message.get("tool_calls")
    if not isinstance(calls, list):
        return
    for call in calls:
        if not isinstance(call, Mapping):
            continue
        function = call.get("function")
        call_id = call.get("id")
        if isinstance(call_id, str) and isinstance(function, Mapping):
            name = function.get("name")
            if isinstance(name, str):
                names[call_id] = name


def _as_user_result(message: Mapping[str, Any], names: Mapping[str, str]) -> dict[str, Any]:
    """A ``role: tool`` message as the ``role: user`` result the history writer sends."""
    call_id = message.get("tool_call_id")
    call_id = call_id if isinstance(call_id, str) else ""
    name = names.get(call_id) or message.get("name")
    text = result_text(name if isinstance(name, str) else "unknown", call_id, _text(message))
    return {"role": "user", "tool_call_id": call_id, "content": text}


def _text(message: Mapping[str, Any]) -> str:
    """A tool message's content as text: a string as is, text parts joined, ``null`` empty."""
    content = message.get("content")
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = [
            part["text"]
            for part in content
            if isinstance(part, Mapping) and isinstance(part.get("text"), str)
        ]
        if len(parts) == len(content):
            return "\n".join(parts)
    return _encode(content).decode()
