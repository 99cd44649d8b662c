"""Schema validation (JSON Schema and pydantic), envelopes, tool definitions, the Toolset."""

from __future__ import annotations

from typing import Any

import pydantic
import pytest

from toolwire.core.errors import ConfigurationError
from toolwire.judge import (
    STRICT_POLICY,
    SchemaChecker,
    Toolset,
    ToolSpec,
    parse_arguments,
    tool_schema_from,
)
from toolwire.judge._schema import checker_for, json_path

SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "path": {"type": "string"},
        "items": {"type": "array", "items": {"type": "object"}},
        "mode": {"enum": ["r", "w"]},
    },
    "required": ["path"],
    "additionalProperties": False,
}


class ReadFile(pydantic.BaseModel):
    model_config = pydantic.ConfigDict(extra="forbid")
    path: str
    limit: int = 10


def test_json_path() -> None:
    assert json_path(["items", 2, "name"]) == "$.items[2].name"
    assert json_path([]) == "$"
    assert json_path(["a b"]) == '$["a b"]'


def test_schema_ok_and_errors() -> None:
    assert parse_arguments('{"path": "a"}', tool="read", schema=SCHEMA).outcome == "ok"
    verdict = parse_arguments('{"items": [1], "mode": "x", "extra": true}', tool="r", schema=SCHEMA)
    assert verdict.reason == "schema"
    assert verdict.detail == (
        "$.extra: unexpected property (the tool does not accept it)\n"
        "$.items[0]: expected object, got integer\n"
        '$.mode: "x" is not one of "r", "w"\n'
        '$: missing required property "path"'
    )


def test_empty_arguments_meet_the_schema() -> None:
    verdict = parse_arguments("", tool="read", schema=SCHEMA)
    assert verdict.reason == "schema"
    assert verdict.detail == '$: missing required property "path"'
    assert parse_arguments("null", tool="ping", schema={"type": "object"}).outcome == "repaired"


def test_validators_are_cached_per_schema_object() -> None:
    assert checker_for(SCHEMA) is checker_for(SCHEMA)
    assert checker_for(dict(SCHEMA)) is not checker_for(SCHEMA)


def test_schema_dialect_is_respected() -> None:
    draft7 = {"$schema": "http://json-schema.org/draft-07/schema#", "type": "object",
              "properties": {"n": {"type": "integer"}}}  # fmt: skip
    assert parse_arguments('{"n": "1"}', tool="t", schema=draft7).reason == "schema"
    assert type(checker_for(draft7).validator).__name__ == "Draft7Validator"


def test_invalid_schema_is_a_configuration_error() -> None:
    with pytest.raises(ConfigurationError):
        parse_arguments("{}", tool="t", schema={"type": 12})


def test_pydantic_model() -> None:
    assert parse_arguments('{"path": "a"}', tool="read", schema=ReadFile).outcome == "ok"
    verdict = parse_arguments('{"limit": "x", "other": 1}', tool="read", schema=ReadFile)
    assert verdict.reason == "schema"
    assert verdict.detail is not None
    lines = verdict.detail.splitlines()
    assert '$: missing required property "path"' in lines
    assert "$.other: unexpected property (the tool does not accept it)" in lines
    assert any(line.startswith("$.limit: ") for line in lines)


def test_envelope() -> None:
    verdict = parse_arguments('{"arguments": {"path": "a"}}', tool="read", schema=SCHEMA)
    assert (verdict.outcome, verdict.arguments, verdict.repairs) == (
        "repaired",
        {"path": "a"},
        ("envelope",),
    )
    wrapped = parse_arguments('{"input": {"path": "a"}}', tool="read", schema=ReadFile)
    assert wrapped.repairs == ("envelope",)
    declared = {"type": "object", "properties": {"arguments": {"type": "string"}},
                "required": ["arguments"]}  # fmt: skip
    assert parse_arguments('{"arguments": {"x": 1}}', tool="t", schema=declared).reason == "schema"
    assert parse_arguments('{"arguments": {"path": 1}}', tool="r", schema=SCHEMA).reason == "schema"
    assert parse_arguments('{"arguments": {"path": "a"}}', tool="r").outcome == "ok"
    strict = parse_arguments('{"arguments": {"path": "a"}}', tool="r", schema=SCHEMA,
                             policy=STRICT_POLICY)  # fmt: skip
    assert strict.reason == "schema"


def test_unknown_tool() -> None:
    verdict = parse_arguments("{}", tool="reed", known_tools={"write": 1, "read": 2})
    assert verdict.reason == "unknown_tool"
    assert verdict.detail == "available tools: read, write"
    assert parse_arguments("{}", tool="read", known_tools=["read"]).outcome == "ok"


PARAMS = {"type": "object", "properties": {"q": {"type": "string"}}}


@pytest.mark.parametrize(
    "definition",
    [
        {"type": "function", "function": {"name": "search", "parameters": PARAMS}},
        {"type": "function", "name": "search", "parameters": PARAMS},
        {"name": "search", "input_schema": PARAMS},
        {"name": "search", "parameters": PARAMS},
        {"title": "search", **PARAMS},
    ],
)
def test_tool_schema_from_shapes(definition: dict[str, Any]) -> None:
    name, schema = tool_schema_from(definition)
    assert name == "search"
    assert isinstance(schema, dict)
    assert schema["properties"] == PARAMS["properties"]


def test_tool_schema_from_pydantic() -> None:
    assert tool_schema_from(ReadFile) == ("ReadFile", ReadFile)

    class Titled(pydantic.BaseModel):
        model_config = pydantic.ConfigDict(title="read_file")

    assert tool_schema_from(Titled)[0] == "read_file"


@pytest.mark.parametrize(
    "definition",
    [
        42,
        {"type": "object"},
        {"name": "", "parameters": {}},
        {"name": "x", "parameters": 3},
        {"name": "x", "parameters": {"type": 5}},
    ],
)
def test_unusable_definitions(definition: object) -> None:
    with pytest.raises(ConfigurationError):
        ToolSpec.from_definition(definition)


def test_toolset() -> None:
    tools = Toolset([{"name": "write", "input_schema": SCHEMA}, ReadFile])
    assert tools.names() == ("ReadFile", "write")
    assert "write" in tools
    assert list(tools) == ["ReadFile", "write"]
    spec = tools.get("write")
    assert spec is not None
    assert isinstance(spec.schema, SchemaChecker)
    verdict = parse_arguments("{}", tool="write", schema=spec.schema, known_tools=tools)
    assert verdict.reason == "schema"
    assert tools.get("nope") is None
    with pytest.raises(ConfigurationError):
        Toolset([ReadFile, ReadFile])


# -- schemas that cannot be used: a ConfigurationError naming the tool, when compiled ----------

UNUSABLE: dict[str, Any] = {
    "dangling $ref": {"type": "object", "properties": {"a": {"$ref": "#/definitions/missing"}}},
    "remote $ref": {"$ref": "https://example.com/schema.json"},
    "$ref to another document": {"properties": {"a": {"$ref": "other.json#/x"}}},
    "$ref to a missing anchor": {"$ref": "#nowhere"},
    "$ref to a non-schema": {"required": ["a"], "$ref": "#/required/0"},
    "dangling $dynamicRef": {"$dynamicRef": "#meta"},
    "draft-07 dangling $ref": {
        "$schema": "http://json-schema.org/draft-07/schema#",
        "properties": {"n": {"$ref": "#/definitions/zz"}},
    },
    "not a JSON Schema": {"type": 12},
    "invalid pattern": {"properties": {"a": {"pattern": "("}}},
}


@pytest.fixture
def no_network(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Record (and refuse) any attempt to fetch a URL: a schema is never fetched."""
    import urllib.request

    fetched: list[str] = []

    def refuse(request: Any, *args: Any, **kwargs: Any) -> Any:
        fetched.append(str(getattr(request, "full_url", request)))
        raise AssertionError("toolwire tried to fetch a schema")

    monkeypatch.setattr(urllib.request, "urlopen", refuse)
    return fetched


@pytest.mark.parametrize("name", UNUSABLE)
def test_unusable_schema_at_parse_arguments(name: str, no_network: list[str]) -> None:
    schema = UNUSABLE[name]
    for raw in ('{"a": "x"}', "[1]", "not json"):  # whatever the text, even a rejected one
        with pytest.raises(ConfigurationError, match="'read'") as info:
            parse_arguments(raw, tool="read", schema=dict(schema))
        assert type(info.value) is ConfigurationError
        assert info.value.__cause__ is None
        assert "\n" not in str(info.value)
    assert no_network == []


@pytest.mark.parametrize("name", UNUSABLE)
def test_unusable_schema_at_toolset_construction(name: str, no_network: list[str]) -> None:
    definition = {"name": "search", "parameters": UNUSABLE[name]}
    with pytest.raises(ConfigurationError, match="'search'"):
        ToolSpec.from_definition(definition)
    with pytest.raises(ConfigurationError, match="'search'"):
        Toolset([definition])
    assert no_network == []


def test_dangling_and_remote_refs_are_named() -> None:
    with pytest.raises(ConfigurationError, match="'#/definitions/missing' points to nothing"):
        parse_arguments("{}", tool="t", schema=UNUSABLE["dangling $ref"])
    with pytest.raises(ConfigurationError, match="never fetches"):
        parse_arguments("{}", tool="t", schema=UNUSABLE["remote $ref"])


def test_resolvable_refs_still_validate(no_network: list[str]) -> None:
    local = {
        "type": "object",
        "properties": {"item": {"$ref": "#/$defs/item"}},
        "$defs": {"item": {"type": "object", "required": ["id"]}},
    }
    assert parse_arguments('{"item": {"id": 1}}', tool="t", schema=local).outcome == "ok"
    assert parse_arguments('{"item": {}}', tool="t", schema=local).reason == "schema"
    embedded = {
        "$id": "https://tools.test/root.json",
        "properties": {"a": {"$ref": "other.json"}},
        "$defs": {"o": {"$id": "other.json", "type": "string"}},
    }
    assert parse_arguments('{"a": 1}', tool="t", schema=embedded).reason == "schema"
    # The official meta-schemas are known offline.
    meta = {"properties": {"s": {"$ref": "https://json-schema.org/draft/2020-12/schema"}}}
    assert parse_arguments('{"s": {"type": "string"}}', tool="t", schema=meta).outcome == "ok"
    assert no_network == []


def test_schema_that_is_not_an_object() -> None:
    with pytest.raises(ConfigurationError, match="'t'"):
        parse_arguments("{}", tool="t", schema=[1, 2])  # type: ignore[arg-type]
