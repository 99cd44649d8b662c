"""The facts of an Ollama ``/api/chat`` request body.

Ollama puts the generation settings in ``options`` (``api.Options``): ``num_predict`` is the
output-token limit and ``options.stop`` the stop sequences. ``num_predict`` ``-1`` means "no
limit" and ``-2`` "fill the context" (Ollama's docs), so only a positive value is a limit.
``format`` and ``think`` change what the model writes, not how a turn ends: they are not read.
Ollama has no ``tool_choice``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ...core.errors import ConfigurationError
from ...core.request import RequestFacts, stop_sequences_from

__all__ = ["LIMIT_KEYS", "OPTIONS_KEY", "read_ollama_request"]

#: Where the generation settings are, and the key in them that sets the output-token limit:
#: what :func:`read_ollama_request` reads, and what a healing retry raises.
OPTIONS_KEY = "options"
LIMIT_KEYS = ("num_predict",)


def _num_predict(options: Mapping[str, Any]) -> int | None:
    (key,) = LIMIT_KEYS
    value = options.get(key)
    if value is None:
        return None
    if type(value) is not int:
        raise ConfigurationError(f"request options.{key} must be an int, got {value!r}")
    return value if value > 0 else None


def read_ollama_request(body: Mapping[str, Any]) -> RequestFacts:
    """``options.num_predict``, ``options.stop``, ``tools`` and ``model`` of a chat request."""
    options = body.get(OPTIONS_KEY)
    if options is None:
        options = {}
    elif not isinstance(options, Mapping):
        raise ConfigurationError(f"request options must be an object, got {type(options).__name__}")
    tools = body.get("tools")
    if tools is not None and not isinstance(tools, list | tuple):
        raise ConfigurationError(f"request tools must be a list, got {type(tools).__name__}")
    model = body.get("model")
    return RequestFacts(
        max_tokens=_num_predict(options),
        stop_sequences=stop_sequences_from(options.get("stop"), "options.stop"),
        tools=tuple(tools) if tools is not None else None,
        tool_choice=None,
        model=model if isinstance(model, str) else None,
    )
