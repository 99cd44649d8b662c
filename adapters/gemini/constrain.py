"""A constrained re-ask on the Gemini API and Vertex AI: function calling mode ``ANY``.

``toolConfig.functionCallingConfig: {"mode": "ANY", "allowedFunctionNames": [T]}``: "the model
is constrained to always predicting function calls only", limited to the names allowed (the
API reference, ``FunctionCallingConfig.Mode``; the same on Vertex AI). The arguments are the
model's, and the judge checks them as ever. Only Google serves this endpoint, so there is one
way (``Provider.served_by_local_servers`` is false). The request's own ``toolConfig`` keeps its
other members (``retrievalConfig``), in the key spelling the request used (``tool_config`` or
``toolConfig``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ...core.wire import Constraint
from ..constraints import skipped

__all__ = ["constrained_gemini"]

_DECLARATION_KEYS = ("functionDeclarations", "function_declarations")


def constrained_gemini(body: Mapping[str, Any], tool: str) -> Constraint:
    """``body`` asking for a call to ``tool`` (see the module docstring), or why it cannot."""
    declared = [
        declaration
        for entry in body.get("tools") or ()
        if isinstance(entry, Mapping)
        for key in _DECLARATION_KEYS
        for declaration in entry.get(key) or ()
        if isinstance(declaration, Mapping) and declaration.get("name") == tool
    ]
    if len(declared) != 1:
        return skipped(tool, "tool_not_offered")
    snake = "tool_config" in body
    config_key, calling_key, names_key = (
        ("tool_config", "function_calling_config", "allowed_function_names")
        if snake
        else ("toolConfig", "functionCallingConfig", "allowedFunctionNames")
    )
    config = body.get(config_key)
    calling = {"mode": "ANY", names_key: [tool]}
    asked = {
        **body,
        config_key: {**(config if isinstance(config, Mapping) else {}), calling_key: calling},
    }
    return Constraint(tool=tool, body=asked, mechanism="functionCallingConfig=ANY")
