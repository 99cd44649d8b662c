"""Schema regexes run in linear time, and a pattern that would need backtracking is refused
when the schema is compiled (issue 19, part 1).

``"^(a+)+$"`` against 27 ``a`` and a ``!`` took 12 s with Python's backtracking ``re`` (each
extra character doubles it), on the event loop of a shared proxy. Every place a schema applies a
regex is covered: ``pattern``, ``patternProperties`` (and the ``additionalProperties`` it
exempts), ``propertyNames``; ``format: regex`` is an annotation (never run on the arguments).
"""

from __future__ import annotations

import time
from typing import Any

import pytest

from toolwire.core.errors import ConfigurationError
from toolwire.judge import Toolset, parse_arguments
from toolwire.stages.judge import JudgeStage

EVIL = "^(a+)+$"
#: 30 characters: about 100 s with a backtracking engine.
HOSTILE = "a" * 29 + "!"
#: Far below what backtracking takes; far above what a linear engine needs (microseconds).
FAST = 0.5


def _timed(raw: str, schema: dict[str, Any]) -> tuple[float, Any]:
    start = time.perf_counter()
    verdict = parse_arguments(raw, tool="t", schema=schema)
    return time.perf_counter() - start, verdict


def _quoted(value: str) -> str:
    return '"' + value + '"'


CATASTROPHIC: dict[str, tuple[dict[str, Any], str]] = {
    "pattern": (
        {"type": "object", "properties": {"s": {"type": "string", "pattern": EVIL}}},
        '{"s": ' + _quoted(HOSTILE) + "}",
    ),
    "patternProperties": (
        {"type": "object", "patternProperties": {EVIL: {"type": "integer"}}},
        "{" + _quoted(HOSTILE) + ": 1}",
    ),
    "additionalProperties beside patternProperties": (
        {
            "type": "object",
            "patternProperties": {EVIL: {"type": "integer"}},
            "additionalProperties": False,
        },
        "{" + _quoted(HOSTILE) + ": 1}",
    ),
    "propertyNames": (
        {"type": "object", "propertyNames": {"pattern": EVIL}},
        "{" + _quoted(HOSTILE) + ": 1}",
    ),
    "a long argument": (
        {"type": "object", "properties": {"s": {"type": "string", "pattern": EVIL}}},
        '{"s": ' + _quoted("a" * 100_000 + "!") + "}",
    ),
}


@pytest.mark.parametrize("name", CATASTROPHIC)
def test_a_catastrophic_pattern_is_judged_in_linear_time(name: str) -> None:
    schema, raw = CATASTROPHIC[name]
    seconds, verdict = _timed(raw, schema)
    assert seconds < FAST, f"{name}: {seconds:.2f} s"
    # The key does not match, so it is simply not constrained by patternProperties alone.
    expected = "ok" if name == "patternProperties" else "rejected"
    assert verdict.outcome == expected


def test_the_catastrophic_pattern_still_says_what_is_wrong() -> None:
    schema, raw = CATASTROPHIC["pattern"]
    _, verdict = _timed(raw, schema)
    assert verdict.detail == f'$.s: "{HOSTILE}" does not match "{EVIL}"'
    closed, hostile_key = CATASTROPHIC["additionalProperties beside patternProperties"]
    _, extra = _timed(hostile_key, closed)
    assert extra.detail == f'$["{HOSTILE}"]: unexpected property (the tool does not accept it)'
    _, ok = _timed('{"aaa": 1}', CATASTROPHIC["patternProperties"][0])
    assert ok.outcome == "ok"


def test_a_format_regex_argument_is_an_annotation_never_run() -> None:
    schema = {"type": "object", "properties": {"r": {"type": "string", "format": "regex"}}}
    seconds, verdict = _timed('{"r": "(?=x)(a+)+\\\\1"}', schema)
    assert (verdict.outcome, seconds < FAST) == ("ok", True)


BACKTRACKING: dict[str, tuple[dict[str, Any], str]] = {
    "lookahead in pattern": (
        {"properties": {"s": {"pattern": "^(?=.*\\d)\\w+$"}}},
        "$.properties.s.pattern",
    ),
    "lookbehind in pattern": (
        {"properties": {"s": {"pattern": "(?<!x)y"}}},
        "$.properties.s.pattern",
    ),
    "backreference in pattern": (
        {"properties": {"s": {"pattern": "^(a)\\1$"}}},
        "$.properties.s.pattern",
    ),
    "named backreference in $defs": (
        {
            "properties": {"s": {"$ref": "#/$defs/d"}},
            "$defs": {"d": {"pattern": "(?<q>['\"]).*\\k<q>"}},
        },
        '$["$defs"].d.pattern',
    ),
    "lookahead as a patternProperties key": (
        {"patternProperties": {"^(?!x-)": {"type": "string"}}},
        '$.patternProperties["^(?!x-)"]',
    ),
    "lookahead in propertyNames": (
        {"type": "object", "propertyNames": {"pattern": "^(?!_)"}},
        "$.propertyNames.pattern",
    ),
}


@pytest.mark.parametrize("name", BACKTRACKING)
def test_a_pattern_that_needs_backtracking_is_refused_naming_the_tool_and_the_place(
    name: str,
) -> None:
    schema, where = BACKTRACKING[name]
    with pytest.raises(ConfigurationError) as raised:
        parse_arguments("{}", tool="lookup", schema=schema)
    message = str(raised.value)
    assert "'lookup'" in message
    assert f": {where}: " in message
    assert "linear time" in message
    assert "\n" not in message
    assert raised.value.__cause__ is None


def test_a_pattern_in_definitions_nothing_refers_to_is_never_run_so_not_refused() -> None:
    unused = {"type": "object", "$defs": {"d": {"pattern": "(?=x)"}}}
    assert parse_arguments("{}", tool="t", schema=unused).outcome == "ok"


@pytest.mark.parametrize("name", BACKTRACKING)
def test_the_toolset_and_the_judge_stage_refuse_it_when_built(name: str) -> None:
    definition = {
        "type": "function",
        "function": {"name": "lookup", "parameters": BACKTRACKING[name][0]},
    }
    with pytest.raises(ConfigurationError, match=r"'lookup'.*linear time"):
        Toolset([definition])
    with pytest.raises(ConfigurationError, match=r"'lookup'.*linear time"):
        JudgeStage(tools=[definition])


def test_the_toolset_judges_a_catastrophic_pattern_in_linear_time() -> None:
    schema, raw = CATASTROPHIC["pattern"]
    tools = Toolset([{"name": "t", "input_schema": schema}])
    spec = tools.get("t")
    assert spec is not None
    start = time.perf_counter()
    verdict = parse_arguments(raw, tool="t", schema=spec.schema, known_tools=tools)
    assert time.perf_counter() - start < FAST
    assert verdict.reason == "schema"


def test_a_pattern_does_not_match_before_a_final_newline() -> None:
    # Python's ``$`` also matched before a final "\n" (ECMA-262's does not): a path checked
    # with ``^[a-z]+$`` let "notes\n" through.
    schema = {"type": "object", "properties": {"p": {"type": "string", "pattern": "^[a-z]+$"}}}
    assert parse_arguments('{"p": "notes\\n"}', tool="t", schema=schema).reason == "schema"
    assert parse_arguments('{"p": "notes"}', tool="t", schema=schema).outcome == "ok"


# -- what the new validator must not change -----------------------------------------------------


def test_types_are_named_in_the_schema_order() -> None:
    schema = {"type": "object", "properties": {"n": {"type": ["integer", "null"]}}}
    verdict = parse_arguments('{"n": "1"}', tool="t", schema=schema)
    assert verdict.detail == "$.n: expected integer or null, got string"
    via_ref = {
        "type": "object",
        "properties": {"n": {"$ref": "#/$defs/n"}},
        "$defs": {"n": {"type": ["string", "boolean"]}},
    }
    assert parse_arguments('{"n": 1.5}', tool="t", schema=via_ref).detail == (
        "$.n: expected string or boolean, got number"
    )


def test_an_unknown_dialect_is_read_as_draft_2020_12_as_before() -> None:
    schema = {"$schema": "https://example.com/my-dialect", "properties": {"n": {"type": "integer"}}}
    assert parse_arguments('{"n": "x"}', tool="t", schema=schema).reason == "schema"


def test_arguments_nested_past_the_limit_under_a_recursive_schema_are_rejected_not_a_crash() -> (
    None
):
    # The validator descends on the native stack: 20,000 levels crashed the process.
    recursive = {"$ref": "#/$defs/node", "$defs": {"node": {"type": "object",
                 "properties": {"next": {"$ref": "#/$defs/node"}}}}}  # fmt: skip
    deep: dict[str, Any] = {}
    for _ in range(100_000):
        deep = {"next": deep}
    checker = Toolset([{"name": "t", "input_schema": recursive}]).get("t")
    assert checker is not None
    assert checker.checker.problems(deep) == ["$: the arguments are nested too deeply to validate"]
    shallow: dict[str, Any] = {}
    for _ in range(50):
        shallow = {"next": shallow}
    assert checker.checker.problems(shallow) == []
    # Without a reference the schema's own depth bounds the descent: any depth is fine.
    flat = Toolset([{"name": "f", "input_schema": {"type": "object"}}]).get("f")
    assert flat is not None
    assert flat.checker.problems(deep) == []


def test_a_schema_nested_too_deep_to_compile_is_a_configuration_error() -> None:
    schema: dict[str, Any] = {"type": "string"}
    for _ in range(5_000):
        schema = {"type": "object", "properties": {"a": schema}}
    with pytest.raises(ConfigurationError, match="'deep'"):
        Toolset([{"name": "deep", "input_schema": schema}])
