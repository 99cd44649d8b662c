"""A constrained re-ask on the Responses API: ``tool_choice`` names the function.

Per kind of upstream (:data:`FORCING`):

- the API itself: ``tool_choice: {"type": "function", "name": T}`` forces a call to ``T`` (the
  Responses reference, ``ToolChoiceFunction``). A function tool is strict unless it says
  ``"strict": false`` (the reference: ``strict`` defaults to true), and the API keeps a strict
  tool's arguments to its schema; it took the schema on the first request, so it is not
  checked again here. A tool sent with ``"strict": false`` is forced, its schema not promised;
- llama-server, which converts ``/v1/responses`` to a Chat request, every member it does not
  convert passed on as it came (b11434 ``server_chat_convert_responses_to_chatcmpl``): the
  Chat profile's way, the ``json_schema`` field holding the call as a JSON object
  (:mod:`toolwire.adapters.openai_chat.constrain` says why not ``tool_choice``);
- any other local server: no way known (vLLM's Responses took only ``auto``: vllm-project/vllm
  issue 23227).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from ...core.wire import Constraint
from ..constraints import (
    FORMAT_KEYS,
    HOSTED,
    LLAMA_CPP,
    NO_PARAMETERS,
    Forcing,
    call_envelope,
    find_tool,
    forcing_for,
    schema_checked,
    skipped,
)

__all__ = ["FORCING", "constrained_responses"]

#: The kinds of upstream that force one function on ``/v1/responses``, and how.
FORCING: Final[Mapping[str, Forcing]] = {
    HOSTED: Forcing(mechanism="tool_choice=function"),
    "llama-server": Forcing(mechanism="json_schema=call", engine=LLAMA_CPP),
}


def constrained_responses(
    body: Mapping[str, Any], tool: str, *, upstream: str, local: bool
) -> Constraint:
    """``body`` asking for a call to ``tool`` (see the module docstring), or why it cannot."""
    forcing = forcing_for(FORCING, upstream, local)
    if forcing is None:
        return skipped(tool, "no_mechanism")
    entry = find_tool(
        body.get("tools"),
        tool,
        lambda item: item.get("name") if item.get("type") == "function" else None,
    )
    if entry is None:
        return skipped(tool, "tool_not_offered")
    schema = entry.get("parameters", NO_PARAMETERS)
    refused = schema_checked(tool, schema, forcing.engine)
    if refused is not None:
        return refused
    asked = dict(body)
    if forcing.engine is not None:  # llama-server: the call written as its JSON object
        taken = next((key for key in (*FORMAT_KEYS, "text") if body.get(key) is not None), None)
        if taken is not None:
            return skipped(tool, "client_format", taken)
        asked["json_schema"] = call_envelope(tool, schema)
        enforced = True
    else:
        asked["tool_choice"] = {"type": "function", "name": tool}
        enforced = entry.get("strict") is not False
    return Constraint(tool=tool, body=asked, mechanism=forcing.mechanism, enforces_schema=enforced)
