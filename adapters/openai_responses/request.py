"""The facts of a Responses request body (``POST /v1/responses``)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ...core.errors import ConfigurationError
from ...core.request import RequestFacts, limit_from

__all__ = ["LIMIT_KEYS", "read_responses_request"]

#: The request key that sets the output-token limit: what :func:`read_responses_request` reads,
#: and what a healing retry raises.
LIMIT_KEYS = ("max_output_tokens",)


def read_responses_request(body: Mapping[str, Any]) -> RequestFacts:
    """``max_output_tokens``, the function tools, ``tool_choice`` and ``model``.

    ``tools`` keeps only the function tools (the flat ``{"type": "function", "name",
    "parameters"}`` shape, which the judge's ``Toolset`` reads as is): hosted tools
    (``web_search``, ``file_search``, ``code_interpreter``, ``mcp``...) run on the server and
    never reach the judge, and a request with only hosted tools has no function tool, so the
    model can call none. Responses has no stop sequences: ``stop_sequences`` is ``()``, which
    tells the finish decision that no stop sequence can have cut a call.
    """
    tools = body.get("tools")
    if tools is not None and not isinstance(tools, list | tuple):
        raise ConfigurationError(f"request tools must be a list, got {type(tools).__name__}")
    functions = (
        tuple(
            tool
            for tool in tools
            if not isinstance(tool, Mapping) or tool.get("type", "function") == "function"
        )
        if tools is not None
        else None
    )
    model = body.get("model")
    return RequestFacts(
        max_tokens=limit_from(body, *LIMIT_KEYS),
        stop_sequences=(),
        tools=functions,
        tool_choice=body.get("tool_choice"),
        model=model if isinstance(model, str) else None,
    )
