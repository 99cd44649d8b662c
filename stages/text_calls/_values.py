"""Text values typed by the tool's schema, for families whose values are not JSON.

Qwen3-Coder's ``<parameter=K>`` and GLM's ``<arg_value>`` hold plain text: ``1024`` is text
until the schema says the parameter is an integer (Qwen's own parser and Ollama's type values
the same way). A value is typed only when the property declares exactly one type (``null``
besides it allowed) and the text reads as that type exactly (``"1024"`` for ``integer``,
``true``/``false`` for ``boolean``, a JSON object for ``object``); otherwise it stays the
string, and the judge's schema check decides. Nothing is guessed.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

import msgspec

from ...core.json_text import json_text

__all__ = ["arguments_json", "typed_value"]

_INTEGER = re.compile(r"-?(?:0|[1-9][0-9]*)")
_NUMBER = re.compile(r"-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?")
_CONTAINERS: dict[str, type] = {"object": dict, "array": list}


def _single_type(schema: Mapping[str, Any] | None) -> str | None:
    if not isinstance(schema, Mapping):
        return None
    declared = schema.get("type")
    if isinstance(declared, str):
        return declared
    if isinstance(declared, list):
        others = [kind for kind in declared if kind != "null"]
        if len(others) == 1 and isinstance(others[0], str):
            return others[0]
    return None


def typed_value(text: str, schema: Mapping[str, Any] | None) -> Any:
    """``text`` as the one type the property's schema declares, when it reads as exactly that."""
    kind = _single_type(schema)
    if kind is None or kind == "string":
        return text
    value = text.strip()
    if kind == "integer" and _INTEGER.fullmatch(value):
        return int(value)
    if kind == "number" and _NUMBER.fullmatch(value):
        return msgspec.json.decode(value)
    if kind == "boolean" and value in ("true", "false"):
        return value == "true"
    if kind == "null" and value == "null":
        return None
    container = _CONTAINERS.get(kind)
    if container is not None:
        try:
            decoded = msgspec.json.decode(value)
        except (msgspec.DecodeError, UnicodeEncodeError):  # (a lone surrogate)
            return text
        if isinstance(decoded, container):
            return decoded
    return text


def arguments_json(pairs: list[tuple[str, str]], properties: Mapping[str, Any]) -> str | None:
    """One JSON object of the pairs, each value typed by its property; ``None`` when a key
    repeats (two values for one parameter have no single reading)."""
    arguments: dict[str, Any] = {}
    for key, text in pairs:
        if key in arguments:
            return None
        arguments[key] = typed_value(text, properties.get(key))
    return json_text(arguments)  # a lone surrogate in a value: the judge says so
