"""A constrained re-ask in Chat Completions: each server's own way to force one tool's call.

One request shape, several servers, each reading it its own way; what each takes is data on
its profile (:attr:`~.profiles.ServerProfile.forcing`, a :class:`ChatForcing`), read in its
source or documentation (``docs/healing.md`` has the table, with versions):

- ``function``: ``tool_choice: {"type": "function", "function": {"name": T}}``. OpenAI (with
  ``strict: true`` on the tool: its Structured Outputs keep the arguments to the schema),
  vLLM and SGLang (their structured outputs build the tool's schema into the grammar),
  llama-cpp-python's ``chatml-function-calling`` (the prompt ends in ``functions.T:`` and the
  arguments are sampled under ``LlamaGrammar.from_json_schema`` of the tool's parameters; on a
  schema it cannot convert it falls back to any JSON, silently, which is why the engine is
  checked here first).
- ``call_json_schema``: llama-server. It reads ``tool_choice`` as a string only (b11434
  ``oaicompat_chat_params_parse``: an object is "Wrong type supplied" and ``auto`` is used), and
  its ``required`` lets the model write text before the call (the tool parser's
  ``content_before_tools``) and then never end without a call: on six of the demo's re-asks
  at 64 and 256 tokens, with SmolLM2-135M, 11 of 12 ran to their ``max_tokens``
  (``bench/bench_constrained_reask.py --probe-required``). Its ``json_schema`` request field
  (grammar sampling of the text, from the first token) is asked instead for the call itself as
  a JSON object, ``{"name": T, "arguments": {...}}`` (:func:`~toolwire.adapters.constraints
  .call_envelope`), which toolwire reads as a call left in the text, as it reads every call of
  this server's profile, and judges as any call.
- ``call_response_format``: Ollama's ``/v1``. It reads no ``tool_choice`` (ollama/ollama issues
  11171, 17921: accepted and ignored); its ``response_format`` of type ``json_schema`` becomes
  the native request's ``format`` (``openai/openai.go``, ``FromChatRequest``; since v0.5.0,
  commit 630e7dc), a grammar of the reply's text by llama.cpp's converter. It is asked for the
  same call object, and the retry goes without ``tools`` (``without_tools``): with tools,
  Ollama runs a tool parser over the constrained text (``docs/healing.md`` says why that is not
  wanted; :mod:`toolwire.adapters.ollama.constrain`).

The body is the follow-up as it was (same messages, the true message of the rejection
included); only the forcing keys change. A tool the body does not offer once, by that name, is
not constrained (``tool_not_offered``); neither is a request that asks for its own structured
output (``client_format``): the model's choice and the client's are kept, never replaced.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal

import msgspec

from ...core.wire import Constraint
from ..constraints import (
    FORMAT_KEYS,
    NO_PARAMETERS,
    SchemaEngine,
    call_envelope,
    find_tool,
    function_name,
    schema_checked,
    skipped,
)

__all__ = ["ChatForcing", "constrained_chat"]


class ChatForcing(msgspec.Struct, frozen=True, kw_only=True):
    """How one Chat Completions server is asked for a call to one tool (a profile's data).

    ``how``: ``function`` (the named function), ``call_json_schema`` (the ``json_schema``
    field holding :func:`~toolwire.adapters.constraints.call_envelope`) or
    ``call_response_format`` (the same schema as ``response_format: {"type": "json_schema"}``).
    ``strict``: the tool is sent with ``strict: true`` (OpenAI). ``without_tools``: the
    constrained retry goes without ``tools`` and ``tool_choice``, so that no tool parser of the
    server reads the constrained text (Ollama). ``engine``: the schema the server's engine
    keeps to whole (a schema past it is not constrained); ``None``: the server forces the tool
    and does not promise its schema.
    """

    how: Literal["function", "call_json_schema", "call_response_format"]
    engine: SchemaEngine | None
    strict: bool = False
    without_tools: bool = False

    @property
    def mechanism(self) -> str:
        """The name telemetry and the docs give it."""
        if self.how == "call_json_schema":
            return "json_schema=call"
        if self.how == "call_response_format":
            return "response_format=call"
        return "tool_choice=function+strict" if self.strict else "tool_choice=function"


def constrained_chat(body: Mapping[str, Any], tool: str, forcing: ChatForcing | None) -> Constraint:
    """``body`` asking for a call to ``tool`` the way ``forcing`` says (see the module
    docstring), or why it cannot: ``no_mechanism``, ``tool_not_offered``, ``client_format``,
    ``schema_unsupported``."""
    if forcing is None:
        return skipped(tool, "no_mechanism")
    tools = body.get("tools")
    entry = find_tool(tools, tool, function_name)
    if entry is None or not isinstance(tools, list):
        return skipped(tool, "tool_not_offered")
    if forcing.how != "function":
        taken = next((key for key in FORMAT_KEYS if body.get(key) is not None), None)
        if taken is not None:
            return skipped(tool, "client_format", taken)
    function = entry["function"]
    schema = function.get("parameters", NO_PARAMETERS)
    refused = schema_checked(tool, schema, forcing.engine)
    if refused is not None:
        return refused
    asked = dict(body)
    if forcing.how == "call_json_schema":
        asked["json_schema"] = call_envelope(tool, schema)
    elif forcing.how == "call_response_format":
        asked["response_format"] = {
            "type": "json_schema",
            "json_schema": {"name": tool, "schema": call_envelope(tool, schema)},
        }
    else:
        asked["tool_choice"] = {"type": "function", "function": {"name": tool}}
        if forcing.strict and function.get("strict") is not True:
            strict = {**entry, "function": {**function, "strict": True}}
            asked["tools"] = [strict if _named(item, tool) else item for item in tools]
    if forcing.without_tools:
        for key in ("tools", "tool_choice", "parallel_tool_calls"):
            asked.pop(key, None)
    return Constraint(
        tool=tool,
        body=asked,
        mechanism=forcing.mechanism,
        enforces_schema=forcing.engine is not None,
    )


def _named(item: object, tool: str) -> bool:
    return isinstance(item, Mapping) and function_name(item) == tool
