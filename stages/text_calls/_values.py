"""Text values typed by the tool's schema, for families whose values are not JSON.

Qwen3-Coder's ``<parameter=K>`` and GLM's ``<arg_value>`` hold plain text: ``1024`` is text
until the schema says what the parameter is. The rule, the one llama.cpp's parser applies to
these values (``common/parsers/qwen3-coder.cpp``: a property that admits no string is read as
JSON; one that admits a string and other types tries those types first, then the string):

1. The JSON types the property admits are read from its schema: ``type`` (one or a list; a
   ``number`` admits integers), OpenAPI's ``nullable: true``, the values of ``enum`` /
   ``const``, the union of ``anyOf`` / ``oneOf`` branches, the intersection of ``allOf``
   branches, a local ``$ref`` (inlined by :func:`inline_refs`). Anything that leaves a type
   unknown (no ``type`` anywhere, a branch that admits anything, a reference that does not
   resolve) means *unknown*, and the value stays text.
2. The value, blanks around it taken off, is read as one strict JSON value. When its type is
   admitted and is not a string, the value is that: ``null`` for a nullable property, an object
   or an array for an ``anyOf`` branch that is one, ``true`` / ``false``, a number (an integer
   for an ``integer`` property: ``7``, or ``7.0``, which is exactly one; never a fraction, never
   an exponent, never a float where only integers are admitted). A property with ``enum`` /
   ``const`` takes the typed value only when it is one of them (``"1"`` stays text for
   ``enum: ["1", 2]``).
3. Otherwise the value stays the string as written (``True``, ``None``, ``'a'``, ``007``, a
   fraction for an integer, a JSON string in quotes): never a guess, and the judge's schema
   check decides.

Nothing but JSON is read: a value is never evaluated, completed or case-folded.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from typing import Any

import msgspec

from ...core.json_text import json_text

__all__ = ["admitted_types", "arguments_json", "inline_refs", "typed_value"]

#: A JSON number that is exactly an integer though written with a zero fraction (``7.0``).
_WHOLE_FRACTION = re.compile(r"(-?(?:0|[1-9][0-9]*))\.0+")
#: How deep references and branches are followed: a schema's own nesting rarely passes 3, and
#: a reference cycle (``#`` inside itself) stops here, its types unknown.
_DEPTH = 8
_JSON_TYPES = frozenset({"null", "boolean", "integer", "number", "string", "object", "array"})


def _json_type(value: Any) -> str:
    if value is None:
        return "null"
    if value is True or value is False:
        return "boolean"
    if type(value) is int:
        return "integer"
    if type(value) is float:
        return "number"
    if type(value) is dict:
        return "object"
    if type(value) is list:
        return "array"
    return "string"


def admitted_types(schema: Any, depth: int = 0) -> frozenset[str] | None:
    """The JSON types ``schema`` admits (``integer`` whenever ``number`` is), or ``None`` when
    that is unknown or any type is admitted."""
    if depth > _DEPTH or not isinstance(schema, Mapping):
        return None
    known: frozenset[str] | None = None

    def narrow(types: frozenset[str]) -> None:
        nonlocal known
        known = types if known is None else known & types

    if "$ref" in schema:
        return None  # not inlined (it points outside the tool, or deeper than _DEPTH)
    declared = schema.get("type")
    if isinstance(declared, str) or (
        isinstance(declared, list) and all(isinstance(kind, str) for kind in declared)
    ):
        types = {declared} if isinstance(declared, str) else set(declared)
        if not types <= _JSON_TYPES:
            return None
        if "number" in types:
            types.add("integer")
        if schema.get("nullable") is True:
            types.add("null")
        narrow(frozenset(types))
    elif declared is not None:
        return None
    members = _members(schema)
    if members is not None:
        narrow(frozenset(_json_type(member) for member in members))
    for keyword in ("anyOf", "oneOf"):
        branches = schema.get(keyword)
        if isinstance(branches, Sequence) and not isinstance(branches, str) and branches:
            union: set[str] = set()
            for branch in branches:
                types_of = admitted_types(branch, depth + 1)
                if types_of is None:
                    return None  # a branch that admits anything (or is unknown)
                union |= types_of
            narrow(frozenset(union))
    branches = schema.get("allOf")
    if isinstance(branches, Sequence) and not isinstance(branches, str):
        for branch in branches:
            types_of = admitted_types(branch, depth + 1)
            if types_of is not None:
                narrow(types_of)
    return known


def _members(schema: Mapping[str, Any]) -> list[Any] | None:
    """The values ``enum`` / ``const`` allow (``None``: no such keyword)."""
    if "const" in schema:
        return [schema["const"]]
    members = schema.get("enum")
    if isinstance(members, Sequence) and not isinstance(members, str):
        return list(members)
    return None


def _same(member: Any, value: Any) -> bool:
    """JSON's equality: ``1`` is ``1.0`` but not ``true``."""
    kinds = {_json_type(member), _json_type(value)}
    return (kinds <= {"integer", "number"} or len(kinds) == 1) and member == value


def _allows(value: Any, schema: Any, depth: int = 0) -> bool:
    """No ``type``, ``enum`` or ``const`` of ``schema`` (its branches followed) rules ``value``
    out. Only these: the judge's schema check decides the rest."""
    if depth > _DEPTH or not isinstance(schema, Mapping):
        return True
    kind = _json_type(value)
    members = _members(schema)
    if members is not None and not any(_same(member, value) for member in members):
        return False
    types = admitted_types({"type": schema["type"]} if "type" in schema else {})
    if (
        types is not None
        and kind not in types
        and not (kind == "null" and schema.get("nullable") is True)
    ):
        return False
    for keyword in ("anyOf", "oneOf"):
        branches = schema.get(keyword)
        if isinstance(branches, list) and branches:
            if not any(_allows(value, branch, depth + 1) for branch in branches):
                return False
    branches = schema.get("allOf")
    if isinstance(branches, list):
        return all(_allows(value, branch, depth + 1) for branch in branches)
    return True


def typed_value(text: str, schema: Mapping[str, Any] | None) -> Any:
    """``text`` typed by the property's ``schema`` where that is certain (the module's rule),
    else ``text`` unchanged."""
    types = admitted_types(schema)
    if types is None or types <= {"string"}:
        return text
    value_text = text.strip()
    try:
        value = msgspec.json.decode(value_text)
    except (msgspec.DecodeError, UnicodeEncodeError):  # not JSON (a lone surrogate: no JSON)
        return text
    kind = _json_type(value)
    if kind == "string":
        return text  # a JSON string in quotes: its quotes may be the text's own
    if kind == "number":
        if not math.isfinite(value):
            return text
        if "number" not in types:  # only integers: a zero fraction is exactly one
            whole = _WHOLE_FRACTION.fullmatch(value_text)
            if whole is None:
                return text
            value, kind = int(whole.group(1)), "integer"
    if kind not in types or not _allows(value, schema):
        return text
    return value


def arguments_json(pairs: list[tuple[str, str]], properties: Mapping[str, Any]) -> str | None:
    """One JSON object of the pairs, each value typed by its property; ``None`` when a key
    repeats (two values for one parameter have no single reading)."""
    arguments: dict[str, Any] = {}
    for key, text in pairs:
        if key in arguments:
            return None
        arguments[key] = typed_value(text, properties.get(key))
    return json_text(arguments)  # a lone surrogate in a value: the judge says so


def _pointer(ref: str, root: Mapping[str, Any]) -> Any:
    """The part of ``root`` a local reference (``#/$defs/Name``) points to; ``None`` if none."""
    if ref == "#":
        return root
    if not ref.startswith("#/"):
        return None  # another document: toolwire never fetches schemas
    node: Any = root
    for part in ref[2:].split("/"):
        part = part.replace("~1", "/").replace("~0", "~")
        if isinstance(node, Mapping) and part in node:
            node = node[part]
        elif isinstance(node, list) and part.isdigit() and int(part) < len(node):
            node = node[int(part)]
        else:
            return None
    return node


def inline_refs(schema: Any, root: Mapping[str, Any], depth: int = 0) -> Any:
    """``schema`` with its local ``$ref`` s replaced by what they point to, where typing looks
    (the schema itself and its ``anyOf`` / ``oneOf`` / ``allOf`` branches), down to a depth;
    a reference that does not resolve, or is deeper, stays (its types are then unknown).

    pydantic writes ``Optional[Model]`` as ``anyOf: [{"$ref": "#/$defs/Model"}, {"type":
    "null"}]``: without the reference followed, nothing about it would be known.
    """
    if depth > _DEPTH or not isinstance(schema, Mapping):
        return schema
    result = dict(schema)
    ref = result.get("$ref")
    if isinstance(ref, str):
        target = _pointer(ref, root)
        if isinstance(target, Mapping) and depth < _DEPTH:
            del result["$ref"]
            inlined = inline_refs(target, root, depth + 1)
            if not result:
                return inlined
            # Keywords beside a reference apply too (JSON Schema 2019-09 and later).
            result = {"allOf": [inlined, inline_refs(result, root, depth + 1)]}
            return result
    for keyword in ("anyOf", "oneOf", "allOf"):
        branches = result.get(keyword)
        if isinstance(branches, list):
            result[keyword] = [inline_refs(branch, root, depth + 1) for branch in branches]
    return result
