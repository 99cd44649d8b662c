"""The facts of a Messages request body (``POST /v1/messages``)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ...core.errors import ConfigurationError
from ...core.request import RequestFacts, limit_from, stop_sequences_from

__all__ = ["LIMIT_KEYS", "read_anthropic_request"]

#: The request key that sets the output-token limit: what :func:`read_anthropic_request` reads,
#: and what a healing retry raises.
LIMIT_KEYS = ("max_tokens",)

#: The schema of a tool whose definition has none (built-in and server tools): any object.
_ANY_OBJECT: dict[str, Any] = {"type": "object"}


def read_anthropic_request(body: Mapping[str, Any]) -> RequestFacts:
    """``max_tokens``, ``stop_sequences``, ``tools``, ``tool_choice`` and ``model``.

    Client tools are ``{"name", "description", "input_schema"}``, which ``toolwire.Toolset``
    reads as they are. Built-in tools (``{"type": "bash_20250124", "name": "bash"}``, the text
    editor, computer use) and server tools (``web_search_...``) have a name and no schema: they
    are kept by name with "any object" as schema, so that a call to ``bash`` is not taken for an
    unknown tool.
    """
    tools = body.get("tools")
    if tools is not None and not isinstance(tools, list | tuple):
        raise ConfigurationError(f"request tools must be a list, got {type(tools).__name__}")
    model = body.get("model")
    return RequestFacts(
        max_tokens=limit_from(body, *LIMIT_KEYS),
        stop_sequences=stop_sequences_from(body.get("stop_sequences"), "stop_sequences"),
        tools=tuple(_tool(tool) for tool in tools) if tools is not None else None,
        tool_choice=body.get("tool_choice"),
        model=model if isinstance(model, str) else None,
    )


def _tool(definition: Any) -> Any:
    if (
        isinstance(definition, Mapping)
        and "input_schema" not in definition
        and isinstance(definition.get("name"), str)
        and isinstance(definition.get("type"), str)
    ):
        return {"name": definition["name"], "input_schema": _ANY_OBJECT}
    return definition
