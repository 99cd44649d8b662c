"""Tool definitions in every common shape, normalized to a name and a parameters schema.

Accepted shapes (the first that matches wins):

- OpenAI Chat Completions: ``{"type": "function", "function": {"name", "parameters"}}``
- OpenAI Responses (flat): ``{"type": "function", "name", "parameters"}``
- Anthropic: ``{"name", "input_schema"}``
- legacy OpenAI ``functions``: ``{"name", "parameters"}``
- a bare JSON Schema whose ``title`` is the tool name
- a pydantic ``BaseModel`` subclass (name: ``model_config["title"]`` or the class name)

Anything else raises :class:`~toolwire.core.errors.ConfigurationError`: a tool that cannot
be named or validated is a bug in the caller's setup, found at construction, not mid-stream.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

import pydantic

from ..core.errors import ConfigurationError
from ._schema import SchemaChecker

__all__ = ["ToolRegistry", "ToolSpec", "Toolset", "tool_schema_from"]

#: The parameters of a tool that declares none: any object.
_NO_PARAMETERS: dict[str, Any] = {"type": "object", "properties": {}}


def _is_model(value: object) -> bool:
    return isinstance(value, type) and issubclass(value, pydantic.BaseModel)


def tool_schema_from(
    definition: object,
) -> tuple[str, dict[str, Any] | type[pydantic.BaseModel]]:
    """Return ``(name, schema)`` for a tool definition in any supported shape.

    The schema is the parameters' JSON Schema dict, or the pydantic model class itself (so
    that validation uses the model; its JSON Schema is ``model_json_schema()``).
    """
    if _is_model(definition):
        model: type[pydantic.BaseModel] = definition  # type: ignore[assignment]
        title = model.model_config.get("title")
        return (title if isinstance(title, str) and title else model.__name__), model
    if not isinstance(definition, Mapping):
        raise ConfigurationError(f"cannot read a tool definition from {definition!r}")
    function = definition.get("function")
    if definition.get("type") == "function" and isinstance(function, Mapping):
        name, parameters = function.get("name"), function.get("parameters")
    elif definition.get("type") == "function" and "name" in definition:
        name, parameters = definition.get("name"), definition.get("parameters")
    elif "name" in definition and "input_schema" in definition:
        name, parameters = definition.get("name"), definition.get("input_schema")
    elif "name" in definition and "parameters" in definition:
        name, parameters = definition.get("name"), definition.get("parameters")
    elif "title" in definition and ("properties" in definition or "type" in definition):
        name, parameters = definition.get("title"), definition
    else:
        raise ConfigurationError(
            "a tool definition needs a name and parameters (OpenAI, Anthropic, a JSON Schema "
            f"with a title, or a pydantic model); got keys {sorted(map(str, definition))}"
        )
    if not isinstance(name, str) or not name:
        raise ConfigurationError(f"a tool name must be a non-empty string, not {name!r}")
    if parameters is None:
        parameters = _NO_PARAMETERS
    if _is_model(parameters):
        return name, parameters
    if not isinstance(parameters, Mapping):
        raise ConfigurationError(f"the parameters of tool {name!r} must be a JSON Schema dict")
    return name, dict(parameters)


@dataclass(frozen=True, slots=True)
class ToolSpec:
    """One tool: its name, its parameters' JSON Schema, its model (if any), its checker."""

    name: str
    json_schema: dict[str, Any]
    model: type[pydantic.BaseModel] | None
    checker: SchemaChecker

    @property
    def schema(self) -> SchemaChecker:
        """What to pass as ``parse_arguments(schema=...)``: the compiled checker."""
        return self.checker

    @classmethod
    def from_definition(cls, definition: object) -> ToolSpec:
        """Build a spec from any definition :func:`tool_schema_from` accepts."""
        name, schema = tool_schema_from(definition)
        checker = SchemaChecker(schema, tool=name)
        return cls(name, checker.json_schema, checker.model, checker)


class Toolset:
    """The tools of one request, by name; what the judge stage consults for every call.

    ``name in toolset`` and iteration work like a collection of names, so a ``Toolset`` can be
    passed as ``known_tools=`` directly, and ``toolset.get(name).checker`` as ``schema=``.
    """

    __slots__ = ("_specs",)

    def __init__(self, definitions: Iterable[object] = ()) -> None:
        specs: dict[str, ToolSpec] = {}
        for definition in definitions:
            spec = (
                definition
                if isinstance(definition, ToolSpec)
                else ToolSpec.from_definition(definition)
            )
            if spec.name in specs:
                raise ConfigurationError(f"two tools are named {spec.name!r}")
            specs[spec.name] = spec
        self._specs = specs

    def get(self, name: str) -> ToolSpec | None:
        """The tool called ``name``, or ``None``."""
        return self._specs.get(name)

    def names(self) -> tuple[str, ...]:
        """Every tool name, sorted."""
        return tuple(sorted(self._specs))

    def __contains__(self, name: object) -> bool:
        return name in self._specs

    def __iter__(self) -> Iterator[str]:
        return iter(self.names())

    def __len__(self) -> int:
        return len(self._specs)

    def __repr__(self) -> str:
        return f"Toolset({list(self.names())!r})"


#: Another name for :class:`Toolset`.
ToolRegistry = Toolset
