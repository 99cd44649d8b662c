"""The facts of a Gemini ``generateContent`` / ``streamGenerateContent`` request body.

Read: ``generationConfig.maxOutputTokens``, ``generationConfig.stopSequences``, the function
declarations of ``tools[]`` and ``toolConfig``. The model is in the URL
(``/v1beta/models/{model}:streamGenerateContent``), not in the body, so it stays ``None``. The
REST spelling (camelCase) is read first; the snake_case spelling of google-genai config dumps is
accepted too.

Function declarations are turned into the ``{"name", "description", "parameters"}`` shape the
judge's ``Toolset`` reads, with ``parameters`` as JSON Schema, because Gemini's own shape is not
JSON Schema as it stands:

- ``parameters`` is Gemini's OpenAPI-subset ``Schema``: the google-genai SDK sends
  ``"type": "OBJECT"`` / ``"STRING"`` (upper case), ``nullable: true`` instead of a ``null``
  type, and int64 keywords (``maxItems``, ``minLength``...) may come as JSON strings;
- ``parametersJsonSchema`` (the newer field) is JSON Schema already and is used as is;
- a function with no parameters has neither field.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from ...core.errors import ConfigurationError
from ...core.request import RequestFacts, limit_from, stop_sequences_from

__all__ = [
    "CONFIG_KEYS",
    "LIMIT_KEYS",
    "function_declarations",
    "json_schema_from_gemini",
    "read_gemini_request",
]

#: Where the generation settings are (REST spelling first, then the SDK dump's), and the keys
#: in them that set the output-token limit: what :func:`read_gemini_request` reads, and what a
#: healing retry raises.
CONFIG_KEYS = ("generationConfig", "generation_config")
LIMIT_KEYS = ("maxOutputTokens", "max_output_tokens")

_NO_PARAMETERS: dict[str, Any] = {"type": "object", "properties": {}}
_SUBSCHEMA_MAPS = ("properties", "patternProperties", "$defs", "definitions")
_SUBSCHEMAS = ("items", "additionalProperties", "not")
_SUBSCHEMA_LISTS = ("anyOf", "oneOf", "allOf", "prefixItems")
_INTEGER_KEYWORDS = (
    "maxItems",
    "minItems",
    "maxLength",
    "minLength",
    "maxProperties",
    "minProperties",
)


def _get(body: Mapping[str, Any], camel: str, snake: str) -> Any:
    value = body.get(camel)
    return body.get(snake) if value is None else value


def read_gemini_request(body: Mapping[str, Any]) -> RequestFacts:
    """``generationConfig.maxOutputTokens`` / ``stopSequences``, the functions, ``toolConfig``."""
    config = _get(body, *CONFIG_KEYS) or {}
    if not isinstance(config, Mapping):
        raise ConfigurationError(
            f"request generationConfig must be an object, got {type(config).__name__}"
        )
    tools = _get(body, "tools", "tools")
    return RequestFacts(
        max_tokens=limit_from(config, *LIMIT_KEYS),
        stop_sequences=stop_sequences_from(
            _get(config, "stopSequences", "stop_sequences"), "generationConfig.stopSequences"
        ),
        tools=function_declarations(tools) if tools is not None else None,
        tool_choice=_get(body, "toolConfig", "tool_config"),
        model=None,
    )


def function_declarations(tools: object) -> tuple[dict[str, Any], ...]:
    """Every ``functionDeclarations`` entry of ``tools``, as the judge's Toolset reads it.

    Tools without declarations (``googleSearch``, ``codeExecution``...) offer no function, so a
    request with only those offers none: any function call is then an unknown tool.
    """
    if not isinstance(tools, Sequence) or isinstance(tools, str | bytes):
        raise ConfigurationError(f"request tools must be a list, got {type(tools).__name__}")
    found: list[dict[str, Any]] = []
    for tool in tools:
        if not isinstance(tool, Mapping):
            raise ConfigurationError(f"each request tool must be an object, got {tool!r}")
        declarations = _get(tool, "functionDeclarations", "function_declarations") or ()
        if not isinstance(declarations, Sequence):
            raise ConfigurationError("functionDeclarations must be a list")
        for declaration in declarations:
            found.append(_declaration(declaration))
    return tuple(found)


def _declaration(declaration: object) -> dict[str, Any]:
    if not isinstance(declaration, Mapping):
        raise ConfigurationError(f"a function declaration must be an object, got {declaration!r}")
    name = declaration.get("name")
    json_schema = _get(declaration, "parametersJsonSchema", "parameters_json_schema")
    if json_schema is not None:
        parameters: Any = json_schema
    else:
        schema = declaration.get("parameters")
        parameters = json_schema_from_gemini(schema) if schema is not None else _NO_PARAMETERS
    normalized: dict[str, Any] = {"name": name, "parameters": parameters}
    if declaration.get("description") is not None:
        normalized["description"] = declaration["description"]
    return normalized


def json_schema_from_gemini(schema: Any) -> Any:
    """Gemini's OpenAPI-subset ``Schema`` as JSON Schema (lower-case types, ``nullable``...)."""
    if not isinstance(schema, Mapping):
        return schema
    out: dict[str, Any] = {}
    for key, value in schema.items():
        if key == "type" and isinstance(value, str):
            if value.upper() != "TYPE_UNSPECIFIED":
                out["type"] = value.lower()
        elif key in _SUBSCHEMA_MAPS and isinstance(value, Mapping):
            out[key] = {name: json_schema_from_gemini(sub) for name, sub in value.items()}
        elif key in _SUBSCHEMAS:
            out[key] = json_schema_from_gemini(value)
        elif key in _SUBSCHEMA_LISTS and isinstance(value, list):
            out[key] = [json_schema_from_gemini(sub) for sub in value]
        elif key in _INTEGER_KEYWORDS and isinstance(value, str) and value.isdigit():
            out[key] = int(value)
        elif key != "nullable":
            out[key] = value
    if schema.get("nullable") is True:
        kind = out.get("type")
        if isinstance(kind, str):
            out["type"] = [kind, "null"]
        if isinstance(out.get("enum"), list) and None not in out["enum"]:
            out["enum"] = [*out["enum"], None]
    return out
