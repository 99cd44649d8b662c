"""The facts of a Chat Completions request body (``POST /v1/chat/completions``)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ...core.errors import ConfigurationError
from ...core.request import RequestFacts, limit_from, stop_sequences_from

__all__ = ["LIMIT_KEYS", "read_chat_request"]

#: The request keys that set the output-token limit, newest first: what :func:`read_chat_request`
#: reads, and what a healing retry raises.
LIMIT_KEYS = ("max_completion_tokens", "max_tokens")


def read_chat_request(body: Mapping[str, Any]) -> RequestFacts:
    """``max_completion_tokens`` (or the older ``max_tokens``), ``stop``, ``tools``..."""
    tools = body.get("tools")
    if tools is not None and not isinstance(tools, list | tuple):
        raise ConfigurationError(f"request tools must be a list, got {type(tools).__name__}")
    model = body.get("model")
    return RequestFacts(
        max_tokens=limit_from(body, *LIMIT_KEYS),
        stop_sequences=stop_sequences_from(body.get("stop")),
        tools=tuple(tools) if tools is not None else None,
        tool_choice=body.get("tool_choice"),
        model=model if isinstance(model, str) else None,
    )
