"""Validating parsed arguments against a tool's parameters (JSON Schema or a pydantic model).

Validators are compiled once per schema object and cached (by identity, bounded), because
building a ``jsonschema`` validator costs far more than validating one small object: the hot
path must not rebuild them. Schemas are treated as immutable once used. Every error becomes one
line ``<json path>: <what is wrong>``, sorted, so that messages are deterministic.

A schema that cannot be used (not a JSON Schema, a dialect jsonschema does not know, a ``$ref``
that points nowhere or to another document) is a ``ConfigurationError`` naming the tool, raised
when the schema is compiled; no ``jsonschema`` or ``referencing`` exception ever leaves here,
and no reference is ever fetched (see ``_schema_refs``).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping
from typing import Any

import jsonschema
import pydantic
from jsonschema.exceptions import SchemaError, ValidationError
from jsonschema.protocols import Validator
from referencing.exceptions import Unresolvable

from ..core.errors import ConfigurationError
from ._schema_refs import OFFLINE_REGISTRY, bad_reference

__all__ = ["MAX_SCHEMA_ERRORS", "SchemaChecker", "checker_for", "json_path"]

#: At most this many schema errors are listed; the rest are counted.
MAX_SCHEMA_ERRORS = 20

_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_CACHE_SIZE = 256
_cache: dict[int, tuple[object, SchemaChecker]] = {}


def json_path(parts: Iterable[str | int]) -> str:
    """Render a location as a JSONPath: ``("items", 2, "name")`` is ``$.items[2].name``."""
    out = ["$"]
    for part in parts:
        if isinstance(part, int):
            out.append(f"[{part}]")
        elif _IDENTIFIER.fullmatch(part):
            out.append(f".{part}")
        else:
            out.append(f"[{json.dumps(part, ensure_ascii=False)}]")
    return "".join(out)


def _json_type(value: object) -> str:
    """The JSON name of a Python value's type."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "array"
    return "object"


def _quote(value: object) -> str:
    return json.dumps(value, ensure_ascii=False, default=str)


def _jsonschema_lines(error: ValidationError) -> list[tuple[str, str]]:
    """Translate one jsonschema error into ``(path, problem)`` pairs."""
    parts = [p for p in error.absolute_path if isinstance(p, str | int)]
    path = json_path(parts)
    instance = error.instance
    if error.validator == "required" and isinstance(instance, dict):
        required = error.validator_value if isinstance(error.validator_value, list) else []
        for name in required:
            if name not in instance and error.message == f"{name!r} is a required property":
                return [(path, f"missing required property {_quote(name)}")]
    if error.validator == "type":
        expected = error.validator_value
        names = " or ".join(expected) if isinstance(expected, list) else str(expected)
        return [(path, f"expected {names}, got {_json_type(instance)}")]
    if error.validator == "additionalProperties" and isinstance(instance, dict):
        schema = error.schema if isinstance(error.schema, Mapping) else {}
        declared = schema.get("properties", {})
        patterns = list(schema.get("patternProperties", {}))
        extras = [
            key
            for key in instance
            if key not in declared and not any(re.search(p, key) for p in patterns)
        ]
        if extras:
            return [
                (json_path([*parts, key]), "unexpected property (the tool does not accept it)")
                for key in extras
            ]
    if error.validator == "enum" and isinstance(error.validator_value, list):
        allowed = ", ".join(_quote(v) for v in error.validator_value)
        return [(path, f"{_quote(instance)} is not one of {allowed}")]
    return [(path, error.message)]


def _pydantic_lines(error: pydantic.ValidationError) -> list[tuple[str, str]]:
    """Translate a pydantic validation error into ``(path, problem)`` pairs."""
    lines: list[tuple[str, str]] = []
    for item in error.errors(include_url=False):
        loc = [p for p in item["loc"] if isinstance(p, str | int)]
        if item["type"] == "missing" and loc:
            lines.append((json_path(loc[:-1]), f"missing required property {_quote(loc[-1])}"))
        elif item["type"] == "extra_forbidden":
            lines.append((json_path(loc), "unexpected property (the tool does not accept it)"))
        else:
            lines.append((json_path(loc), str(item["msg"])))
    return lines


def _whose(tool: str | None) -> str:
    return "a tool schema" if tool is None else f"the schema of tool {tool!r}"


class SchemaChecker:
    """A compiled check for one tool's parameters: a JSON Schema or a pydantic model.

    ``tool`` only names the tool in a ``ConfigurationError`` raised while compiling.
    """

    __slots__ = ("json_schema", "model", "tool", "validator")

    def __init__(
        self, schema: Mapping[str, Any] | type[pydantic.BaseModel], *, tool: str | None = None
    ) -> None:
        self.tool = tool
        self.model: type[pydantic.BaseModel] | None = None
        self.validator: Validator | None = None
        if isinstance(schema, type) and issubclass(schema, pydantic.BaseModel):
            self.model = schema
            self.json_schema: dict[str, Any] = schema.model_json_schema()
            return
        if not isinstance(schema, Mapping):
            raise ConfigurationError(
                f"{_whose(tool)} must be a JSON Schema object or a pydantic model, "
                f"not {type(schema).__name__} {schema!r:.80}"
            )
        self.json_schema = dict(schema)
        self.validator = _compile(self.json_schema, tool)

    def declares(self, name: str) -> bool:
        """True when the parameters declare a property called ``name``."""
        if self.model is not None:
            fields = self.model.model_fields
            return name in fields or any(f.alias == name for f in fields.values())
        properties = self.json_schema.get("properties")
        return isinstance(properties, Mapping) and name in properties

    def problems(self, arguments: dict[str, Any]) -> list[str]:
        """Every way ``arguments`` fails the parameters, one ``path: problem`` line each."""
        pairs: list[tuple[str, str]] = []
        try:
            if self.model is not None:
                try:
                    self.model.model_validate(arguments)
                except pydantic.ValidationError as invalid:
                    pairs = _pydantic_lines(invalid)
            elif self.validator is not None:
                for problem in self.validator.iter_errors(arguments):
                    pairs.extend(_jsonschema_lines(problem))
        except RecursionError:
            return ["$: the arguments are nested too deeply to validate"]
        except Unresolvable as error:  # compiling checks every reference; never expected
            raise ConfigurationError(
                f"{_whose(self.tool)} has a $ref that cannot be resolved: {error}"
            ) from None
        lines = sorted(f"{path}: {problem}" for path, problem in pairs)
        if len(lines) > MAX_SCHEMA_ERRORS:
            rest = len(lines) - MAX_SCHEMA_ERRORS
            lines = [*lines[:MAX_SCHEMA_ERRORS], f"... and {rest} more"]
        return lines


def _compile(schema: dict[str, Any], tool: str | None) -> Validator:
    """A validator for a JSON Schema, or ``ConfigurationError`` saying why there is none."""
    try:
        cls = jsonschema.validators.validator_for(schema, default=jsonschema.Draft202012Validator)
    except jsonschema.exceptions.UnknownType as error:  # pragma: no cover - defensive
        raise ConfigurationError(f"{_whose(tool)} is not a JSON Schema: {error}") from None
    try:
        cls.check_schema(schema)
    except SchemaError as error:
        where = json_path([p for p in error.absolute_path if isinstance(p, str | int)])
        raise ConfigurationError(
            f"{_whose(tool)} is not a valid JSON Schema: {where}: {error.message}"
        ) from None
    problem = bad_reference(schema, cls)
    if problem is not None:
        raise ConfigurationError(f"{_whose(tool)} cannot be used: {problem}")
    validator: Validator = cls(schema, registry=OFFLINE_REGISTRY)
    return validator


def checker_for(
    schema: Mapping[str, Any] | type[pydantic.BaseModel], *, tool: str | None = None
) -> SchemaChecker:
    """The compiled checker for ``schema``, built once per schema object.

    ``tool`` names the tool in the ``ConfigurationError`` raised for an unusable schema.
    """
    entry = _cache.get(id(schema))
    if entry is not None and entry[0] is schema:
        return entry[1]
    checker = SchemaChecker(schema, tool=tool)
    if len(_cache) >= _CACHE_SIZE:
        try:
            _cache.pop(next(iter(_cache)), None)
        except (RuntimeError, StopIteration):  # another thread changed the cache meanwhile
            pass
    _cache[id(schema)] = (schema, checker)
    return checker
