"""A constrained re-ask on Ollama's ``/api/chat``: ``format`` holding the call as a JSON object.

Ollama forces no tool: ``tool_choice`` is not read (ollama/ollama issues 11171 and 17921). Its
``format`` takes a JSON Schema (since v0.5.0, ollama/ollama commit 630e7dc, "api: structured
outputs - chat endpoint", PR 7900) and constrains the reply's text with llama.cpp's converter:
the schema whole since v0.5.2 (commit 9039c821, ``llama.SchemaToGrammar``), through llama.cpp's
server's ``json_schema`` since v0.30.0 (commit 9db4bdba, ``llm/llama_server.go``); v0.5.0 and
v0.5.1 kept only the root's ``$defs``, ``properties``, ``required``, ``title`` and ``type``, so
a key beside ``name`` and ``arguments`` could come too, and such a reply is not read as a call.
So the re-ask asks, as on llama-server,
for the call itself written as the whole reply, ``{"name": T, "arguments": {...}}``
(:func:`~toolwire.adapters.constraints.call_envelope`), which toolwire reads as a call left in
the text (Ollama is a local server: its text is read on every endpoint) and judges as any call.

**Without ``tools``.** With tools, Ollama runs a tool parser over the constrained text
(``server/routes.go``, ``ChatHandler``: ``tools.NewParser`` when ``len(req.Tools) > 0``, or the
model's built-in parser). The generic one, for a template whose calls are bare JSON (tag
``{``), names the tool whose name comes first anywhere in the reply (``tools/tools.go``,
``findTool``) and decodes the arguments into a Go ``map[string]any`` (an integer past 2**53
comes back changed); each built-in parser reads its own syntax, not checked here. Without tools
no generic parser runs and the reply stays text, which toolwire reads byte for byte. The cost:
for this one retry the prompt does not list the tools (the grammar still names the tool and
its keys); the next follow-up is built on the client's request, tools included, and the reply
is judged against the client's tools.

A tool the body does not offer once is not constrained (``tool_not_offered``); a request with
its own ``format`` is not either (``client_format``): the client's choice is kept.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from ...core.wire import Constraint
from ..constraints import (
    LLAMA_CPP,
    NO_PARAMETERS,
    call_envelope,
    find_tool,
    function_name,
    schema_checked,
    skipped,
)

__all__ = ["MECHANISM", "constrained_ollama"]

#: The name telemetry and the docs give it.
MECHANISM: Final = "format=call"


def constrained_ollama(body: Mapping[str, Any], tool: str) -> Constraint:
    """``body`` asking for a call to ``tool`` in ``format``, without ``tools`` (see the module
    docstring), or why it cannot: ``tool_not_offered``, ``client_format``,
    ``schema_unsupported``."""
    entry = find_tool(body.get("tools"), tool, function_name)
    if entry is None:
        return skipped(tool, "tool_not_offered")
    if body.get("format") not in (None, ""):
        return skipped(tool, "client_format", "format")
    function = entry.get("function")
    schema = function.get("parameters", NO_PARAMETERS) if isinstance(function, Mapping) else None
    if schema is None:
        schema = NO_PARAMETERS
    refused = schema_checked(tool, schema, LLAMA_CPP)
    if refused is not None:
        return refused
    asked = {key: value for key, value in body.items() if key != "tools"}
    asked["format"] = call_envelope(tool, schema)
    return Constraint(tool=tool, body=asked, mechanism=MECHANISM, enforces_schema=True)
