"""Values of the text families (XML parameters, GLM's ``<arg_value>``) typed by the offered
tool's schema where that is certain, and left as text everywhere else.

The rule is llama.cpp's for Qwen3-Coder's values (``common/parsers/qwen3-coder.cpp``: a property
that admits no string is read as JSON; one that admits a string and other types tries those
first): ``stages/text_calls/_values.py``. Schemas here are written the ways real tools write
them: pydantic's ``Optional[int]`` (``anyOf: [{"type": "integer"}, {"type": "null"}]``) and
``Optional[Model]`` (a ``$ref`` to ``$defs``), OpenAPI's ``nullable: true`` (Gemini-style
schemas), a type list (``["string", "null"]``).
"""

from __future__ import annotations

import math
from typing import Any

import msgspec
import pytest
from _toolwire_testdata import examples
from hypothesis import given, settings
from hypothesis import strategies as st

from toolwire.core.json_text import json_text
from toolwire.stages.text_calls._values import (
    admitted_types,
    arguments_json,
    inline_refs,
    typed_value,
)

from ._harness import run_text

NULLABLE_STRING = {"type": ["string", "null"]}
OPTIONAL_INT = {"anyOf": [{"type": "integer"}, {"type": "null"}]}
FILTER = {"type": "object", "properties": {"tag": {"type": "string"}}}

# (text as the model wrote it, the property's schema, the value it becomes)
TYPED: list[tuple[str, Any, Any]] = [
    ("null", NULLABLE_STRING, None),
    ("null", OPTIONAL_INT, None),
    (" null\n", {"type": "integer", "nullable": True}, None),
    ("42", OPTIONAL_INT, 42),
    ("7", {"type": "integer"}, 7),
    ("7.0", {"type": "integer"}, 7),
    ("-3", {"type": "number"}, -3),
    ("2.5", {"type": "number"}, 2.5),
    ("1e3", {"type": "number"}, 1000.0),
    ("12345678901234567890", {"type": "integer"}, 12345678901234567890),
    ("true", {"type": "boolean"}, True),
    ("false", {"type": ["boolean", "null"]}, False),
    ('{"tag": "a"}', {"anyOf": [FILTER, {"type": "null"}]}, {"tag": "a"}),
    ('{"tag": "a"}', {"oneOf": [{"type": "string"}, FILTER]}, {"tag": "a"}),
    ("[1, 2]", {"anyOf": [{"type": "array"}, {"type": "string"}]}, [1, 2]),
    ("[1, 2]", {"type": "array", "items": {"type": "integer"}}, [1, 2]),
    ("2", {"enum": [1, 2, 3]}, 2),
    ("true", {"const": True}, True),
    ("3", {"allOf": [{"type": "integer"}, {"minimum": 0}]}, 3),
]

# (text, schema): the value stays the text, exactly as written
UNTYPED: list[tuple[str, Any]] = [
    ("null", {"type": "string"}),  # a string property: "null" is text
    ("42", {"type": "string"}),
    ("7.5", {"type": "integer"}),  # never a fraction for an integer
    ("1e3", {"type": "integer"}),  # nor an exponent
    ("1e400", {"type": "number"}),  # no JSON number is infinite
    ("007", OPTIONAL_INT),  # not JSON
    ("True", {"type": "boolean"}),  # Python's spelling: not JSON, never guessed
    ("None", OPTIONAL_INT),
    ("'a'", {"type": "array"}),
    ('"quoted"', {"type": ["string", "null"]}),  # its quotes may be the text's own
    ("null", {"type": "integer"}),  # null not admitted
    ("{}", {"type": "array"}),
    ("42", {}),  # nothing known about the property
    ("42", None),
    ("42", {"description": "a count"}),
    ("42", {"anyOf": [{"type": "integer"}, {}]}),  # a branch that admits anything
    ("42", {"$ref": "https://example.com/schema.json"}),  # never fetched: unknown
    ("1", {"enum": ["1", 2]}),  # the typed reading is no member; the text is
    ("4", {"enum": [1, 2, 3]}),
    ("1", {"enum": [True]}),  # JSON's equality: 1 is not true
    ("true", {"type": "string", "enum": ["true"]}),
    ("[1]", {"anyOf": [{"type": "object"}, {"type": "string"}]}),
]


@pytest.mark.parametrize(("text", "schema", "value"), TYPED)
def test_a_value_is_typed_where_the_schema_is_certain(text: str, schema: Any, value: Any) -> None:
    typed = typed_value(text, schema)
    assert typed == value
    assert type(typed) is type(value)


@pytest.mark.parametrize(("text", "schema"), UNTYPED)
def test_a_value_stays_text_otherwise(text: str, schema: Any) -> None:
    assert typed_value(text, schema) == text


def test_admitted_types() -> None:
    assert admitted_types({"type": "number"}) == {"number", "integer"}
    assert admitted_types(OPTIONAL_INT) == {"integer", "null"}
    assert admitted_types({"enum": ["a", None]}) == {"string", "null"}
    assert admitted_types({"allOf": [{"type": ["string", "integer"]}, {"type": "integer"}]}) == {
        "integer"
    }
    assert admitted_types({"type": "integer", "nullable": True}) == {"integer", "null"}
    assert admitted_types({"anyOf": [{"type": "integer"}, True]}) is None
    assert admitted_types({"type": "date"}) is None  # no JSON type: unknown


def test_local_references_are_followed() -> None:
    """pydantic's Optional[Model]: ``anyOf`` of a ``$ref`` and null."""
    root: dict[str, Any] = {
        "type": "object",
        "$defs": {"Filter": FILTER, "Level": {"enum": [1, 2]}},
        "properties": {
            "filter": {"anyOf": [{"$ref": "#/$defs/Filter"}, {"type": "null"}], "default": None},
            "level": {"$ref": "#/$defs/Level", "description": "how deep"},
            "loop": {"$ref": "#/properties/loop"},
        },
    }
    properties = {key: inline_refs(schema, root) for key, schema in root["properties"].items()}
    assert typed_value('{"tag": "x"}', properties["filter"]) == {"tag": "x"}
    assert typed_value("null", properties["filter"]) is None
    assert typed_value("2", properties["level"]) == 2
    assert typed_value("3", properties["level"]) == "3"
    assert typed_value("2", properties["loop"]) == "2"  # a reference to itself: unknown


def test_arguments_json_types_each_value_and_refuses_a_repeated_key() -> None:
    properties = {"n": OPTIONAL_INT, "s": NULLABLE_STRING}
    assert arguments_json([("n", "null"), ("s", "null"), ("x", "1")], properties) == (
        '{"n":null,"s":null,"x":"1"}'
    )
    assert arguments_json([("n", "1"), ("n", "2")], properties) is None


PYDANTIC_TOOL = {
    "type": "function",
    "function": {
        "name": "search",
        "parameters": {
            "type": "object",
            "$defs": {"Filter": FILTER},
            "properties": {
                "query": {"type": "string"},
                "limit": {"anyOf": [{"type": "integer"}, {"type": "null"}], "default": None},
                "filter": {"anyOf": [{"$ref": "#/$defs/Filter"}, {"type": "null"}]},
                "exact": {"type": ["boolean", "null"]},
            },
            "required": ["query"],
        },
    },
}


@pytest.mark.parametrize(
    "text",
    [
        # Qwen3-Coder's XML (Qwen3-Coder.jinja writes a value as its text, objects as JSON)
        "<tool_call>\n<function=search>\n<parameter=query>\nnull\n</parameter>\n"
        '<parameter=limit>\nnull\n</parameter>\n<parameter=filter>\n{"tag": "a"}\n'
        "</parameter>\n<parameter=exact>\ntrue\n</parameter>\n</function>\n</tool_call>",
        # GLM 4.5-4.7 (GLM-4.6.jinja: <arg_value> holds a string as is, anything else as JSON)
        "<tool_call>search\n<arg_key>query</arg_key>\n<arg_value>null</arg_value>\n"
        "<arg_key>limit</arg_key>\n<arg_value>null</arg_value>\n<arg_key>filter</arg_key>\n"
        '<arg_value>{"tag": "a"}</arg_value>\n<arg_key>exact</arg_key>\n'
        "<arg_value>true</arg_value>\n</tool_call>",
    ],
)
def test_the_xml_families_type_by_the_offered_schema(text: str) -> None:
    turn, _ = run_text([text], [PYDANTIC_TOOL])
    (call,) = turn.runnable
    assert call.arguments == {"query": "null", "limit": None, "filter": {"tag": "a"}, "exact": True}


def test_a_number_out_of_range_stays_text_and_the_schema_rejects_it() -> None:
    """``1e400`` matched a number's spelling and msgspec refused it with a ValidationError the
    old typing did not catch: the stage raised out of the pipeline."""
    tool = {
        "type": "function",
        "function": {"name": "f", "parameters": {"properties": {"x": {"type": "number"}}}},
    }
    text = (
        "<tool_call>\n<function=f>\n<parameter=x>\n1e400\n</parameter>\n</function>\n</tool_call>"
    )
    turn, _ = run_text([text], [tool])
    (call,) = turn.calls
    assert call.arguments_raw == '{"x":"1e400"}'
    assert not call.may_run


# -- properties -----------------------------------------------------------------------------

_SCALARS = (
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=8)
)
JSON_VALUES = st.recursive(
    _SCALARS,
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=4), inner, max_size=3)
    ),
    max_leaves=8,
)


def _json_type(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    return {int: "integer", float: "number", str: "string", list: "array", dict: "object"}[
        type(value)
    ]


@settings(max_examples=examples(300), deadline=None)
@given(JSON_VALUES, st.sampled_from(["alone", "with null", "any of", "one of string"]))
def test_a_value_typed_by_its_schema_round_trips(value: Any, shape: str) -> None:
    """A JSON value written as text comes back as itself, when the schema admits its type."""
    kind = _json_type(value)
    if kind == "string":
        return  # strings are the text itself
    shapes: dict[str, dict[str, Any]] = {
        "alone": {"type": kind},
        "with null": {"type": [kind, "null"]},
        "any of": {"anyOf": [{"type": kind}, {"type": "null"}]},
        "one of string": {"oneOf": [{"type": "string"}, {"type": kind}]},
    }
    schema = shapes[shape]
    typed = typed_value(json_text(value), schema)
    assert typed == value
    assert type(typed) is type(value)


@settings(max_examples=examples(300), deadline=None)
@given(
    st.text(max_size=20) | JSON_VALUES.map(json_text),
    st.sampled_from([e[1] for e in TYPED] + [e[1] for e in UNTYPED]),
)
def test_a_typed_value_is_exactly_what_the_text_says(text: str, schema: Any) -> None:
    """Never a guess: the value is the text, or the one JSON reading of the text."""
    typed = typed_value(text, schema)
    if typed is text or (isinstance(typed, str) and typed == text):
        return
    read = msgspec.json.decode(text.strip())
    assert typed == read
    if isinstance(read, float) and not isinstance(typed, float):
        assert math.isfinite(read)
        assert read == int(read)
