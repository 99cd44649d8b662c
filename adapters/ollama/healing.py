"""Ollama's native chat API as a healing wire format: ``POST /api/chat`` requests and bodies.

:data:`OLLAMA` binds the :class:`~toolwire.adapters.ollama.encoder.OllamaLineEncoder` (whose
docstring says what a client receives) with the requests and whole bodies. A request is healed
when it offers ``tools``; it streams unless it says ``"stream": false`` (Ollama's default), and
a whole body (one ``ChatResponse`` with ``done: true``) is read as the one-line stream it is.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import msgspec

from ...core.turn import Turn
from ...core.wire import Constraint, HealPlan, HealSettings, NextMessages, WireItem
from .. import encoding
from ..encoding import json_object
from ..repaired_requests import planned
from .constrain import constrained_ollama
from .encoder import OllamaLineEncoder
from .history import OllamaHistory, broken_calls
from .request import LIMIT_KEYS, OPTIONS_KEY

__all__ = ["OLLAMA", "OllamaWireFormat", "open_ollama_format"]

_encode = msgspec.json.Encoder().encode
_HISTORY = OllamaHistory()


class OllamaWireFormat:
    """``POST /api/chat`` requests and ``ChatResponse`` bodies, for healing. Stateless."""

    provider = "ollama"
    path = "/api/chat"

    def plan_request(self, content: bytes) -> HealPlan | None:
        """Heal a body with a ``messages`` list and ``tools``; it goes upstream as is (the
        counters always come on the last line), but for earlier calls whose ``arguments`` are
        no object (Ollama decodes them into a map and refuses the request, HTTP 400), written
        as rejected calls (:func:`~toolwire.adapters.repaired_requests.repaired_history`),
        healed or not."""
        body = json_object(content)
        if body is None or not isinstance(body.get("messages"), list):
            return None
        tools = body.get("tools")
        return planned(
            body,
            "messages",
            _HISTORY,
            broken_calls,
            heals=isinstance(tools, list) and bool(tools),
            streaming=body.get("stream") is not False,
            media_type="application/x-ndjson",
        )

    def encoder(self, plan: HealPlan) -> OllamaLineEncoder:
        """A new encoder."""
        return OllamaLineEncoder()

    def frame(self, items: Iterable[WireItem]) -> bytes:
        """One JSON line per item (NDJSON, as Ollama's ``streamResponse`` writes it)."""
        return b"".join(_encode(item) + b"\n" for item in items if isinstance(item, dict))

    def follow_up_body(
        self, body: Mapping[str, Any], turn: Turn, next_messages: NextMessages
    ) -> dict[str, Any]:
        """``messages`` with the assistant turn and one ``role: tool`` message per call."""
        return encoding.follow_up_body(body, turn, next_messages)

    def raised_limit(
        self, body: Mapping[str, Any], ceiling: int
    ) -> tuple[dict[str, Any], int | None]:
        """``options.num_predict`` doubled, up to ``ceiling`` (a positive one only)."""
        return encoding.raised_limit_in(body, ceiling, (OPTIONS_KEY,), LIMIT_KEYS)

    def read_body(self, content: bytes) -> dict[str, Any] | None:
        """``content`` decoded, when it is a finished ``ChatResponse`` (not an error)."""
        body = json_object(content)
        if body is None or "error" in body or body.get("done") is not True:
            return None
        return body if isinstance(body.get("message"), dict) else None

    def body_as_stream(self, body: Mapping[str, Any]) -> bytes:
        """The one-line stream a whole body is (its ``done`` line carries everything)."""
        return self.frame([dict(body)])

    def healed_body(self, first: Mapping[str, Any], items: Iterable[WireItem]) -> dict[str, Any]:
        """The client's ``ChatResponse``: ``first`` with the content, thinking, calls, finish
        and counters sent; its other fields (durations, ``created_at``...) kept."""
        body = dict(first)
        message = dict(first.get("message") or {})
        content, thinking = "", ""
        calls: list[Any] = []
        for item in items:
            if not isinstance(item, dict):
                continue
            sent = item.get("message") or {}
            content += sent.get("content") or ""
            thinking += sent.get("thinking") or ""
            calls += sent.get("tool_calls") or []
            if item.get("done"):
                for key in ("done_reason", "prompt_eval_count", "eval_count"):
                    if key in item:
                        body[key] = item[key]
        message["content"] = content
        for key, value in (("thinking", thinking), ("tool_calls", calls)):
            if value:
                message[key] = value
            else:
                message.pop(key, None)
        body["message"] = message
        return body

    def empty_body(self, items: Sequence[WireItem]) -> dict[str, Any]:
        """The first line's model and creation time, as a finished ``ChatResponse`` with an
        empty message (:meth:`healed_body` adds what was sent, the finish and counters)."""
        line = next((item for item in items if isinstance(item, dict)), {})
        body = {key: value for key, value in line.items() if key != "message"}
        body.update(message={"role": "assistant", "content": ""}, done=True)
        return body

    def error_body(self, items: Iterable[WireItem]) -> dict[str, Any] | None:
        """The ``{"error": ...}`` line the items end in."""
        return encoding.error_item(items)

    def constrained(self, body: Mapping[str, Any], tool: str) -> Constraint:
        """See :func:`toolwire.adapters.ollama.constrain.constrained_ollama` (``format``
        holding the call as a JSON object, the retry without ``tools``)."""
        return constrained_ollama(body, tool)


#: Ollama's native chat API, healed.
OLLAMA = OllamaWireFormat()


def open_ollama_format(settings: HealSettings) -> OllamaWireFormat:
    """Ollama's healing format (it has no setting to take)."""
    return OLLAMA
