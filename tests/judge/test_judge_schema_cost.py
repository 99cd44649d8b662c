"""Checking arguments against a schema has a bounded cost (issue 29, H2).

A schema too costly to run is refused when it is compiled (a ``ConfigurationError``: the proxy
answers 400 naming the tool and the place); what is left is priced, so that the judge stage can
check a costly call away from the event loop; and an invalid call's problems are listed only
when listing them is cheap. The issue's shapes: ``pattern: "a\\w{1000}c"`` (342 B of schema,
seconds per 30 KB argument), ``items.anyOf`` of 500 ``const`` (4 s to list the errors of 400
items), and ``$defs`` that each name the previous one twice (2**n subschemas per value).
"""

from __future__ import annotations

import io
import json
import pickle
from typing import Any

import pytest

from toolwire.core.errors import ConfigurationError
from toolwire.core.verdict import Verdict
from toolwire.judge import DEFAULT_POLICY, Toolset, parse_arguments
from toolwire.judge._schema import FIRST_PROBLEM_ONLY, SchemaChecker
from toolwire.judge._schema_cost import (
    MAX_PATTERN_REPEAT,
    MAX_SUBSCHEMAS,
    REGEX_SIZE_LIMIT,
    pattern_shape,
)
from toolwire.judge._worker import (
    WorkerRequest,
    judge_in_worker,
    read_frame,
    unchecked_verdict,
    write_frame,
)
from toolwire.stages.judge import JudgeStage


def _with_pattern(pattern: str) -> dict[str, Any]:
    return {"type": "object", "properties": {"s": {"type": "string", "pattern": pattern}}}


def _doubling(steps: int) -> dict[str, Any]:
    """``$defs`` that each name the previous one twice: 2**steps subschemas for one value."""
    defs: dict[str, Any] = {"d0": {"anyOf": [{"const": 1}, {"const": 2}]}}
    for i in range(1, steps):
        ref = {"$ref": f"#/$defs/d{i - 1}"}
        defs[f"d{i}"] = {"anyOf": [ref, ref]}
    return {"$defs": defs, "type": "object",
            "properties": {"x": {"$ref": f"#/$defs/d{steps - 1}"}}}  # fmt: skip


def _branches(count: int) -> dict[str, Any]:
    """An array whose every item is checked against ``count`` ``const`` branches."""
    items = {"anyOf": [{"const": f"v{i}"} for i in range(count)]}
    return {"type": "object", "properties": {"xs": {"type": "array", "items": items}}}


# -- what is refused when the schema is compiled -------------------------------------------------

REPEATED: dict[str, tuple[dict[str, Any], str, str]] = {
    "the issue's pattern": (_with_pattern("a\\w{1000}c"), "$.properties.s.pattern", "1,000"),
    "nested counts multiply": (_with_pattern("(\\w{17}){16}"), "$.properties.s.pattern", "272"),
    "an open-ended count": (_with_pattern("^x{300,}$"), "$.properties.s.pattern", "300"),
    "a patternProperties key": (
        {"type": "object", "patternProperties": {"^k{500}$": {"type": "integer"}}},
        '$.patternProperties["^k{500}$"]',
        "500",
    ),
    "propertyNames": (
        {"type": "object", "propertyNames": {"pattern": "[a-z]{1,1024}"}},
        "$.propertyNames.pattern",
        "1,024",
    ),
    "behind a reference": (
        {
            "type": "object",
            "properties": {"s": {"$ref": "#/$defs/long"}},
            "$defs": {"long": {"type": "string", "pattern": "^.{0,4096}$"}},
        },
        '$["$defs"].long.pattern',
        "4,096",
    ),
}


@pytest.mark.parametrize("name", REPEATED)
def test_a_pattern_repeated_past_the_bound_is_refused_naming_the_tool_and_the_place(
    name: str,
) -> None:
    schema, where, times = REPEATED[name]
    with pytest.raises(ConfigurationError) as raised:
        Toolset([{"name": "lookup", "input_schema": schema}])
    message = str(raised.value)
    assert message.startswith("the schema of tool 'lookup' is too costly to check: ")
    assert f": {where}: " in message
    assert f"repeats a part {times} times" in message
    assert f"at most {MAX_PATTERN_REPEAT}" in message
    assert "maxLength" in message
    assert "\n" not in message
    # Every way in refuses it: parse_arguments on its first use, the judge stage when built.
    with pytest.raises(ConfigurationError, match="too costly"):
        parse_arguments("{}", tool="lookup", schema=schema)
    with pytest.raises(ConfigurationError, match="too costly"):
        JudgeStage(tools=[{"name": "lookup", "input_schema": schema}])


@pytest.mark.parametrize(
    "pattern",
    [
        "\\w{256}",  # at the bound
        "(\\w{16}){16}",
        "^[a-z0-9-]{1,255}$",
        "^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$",
        "a\\{1000}",  # an escaped brace is a literal, not a count
        "[{]{3}x{2}",
        "\\p{L}{3}",
        "^\\d{4}-\\d{2}-\\d{2}$",
    ],
)
def test_patterns_within_the_bounds_are_accepted(pattern: str) -> None:
    checker = SchemaChecker(_with_pattern(pattern), tool="t")
    assert checker.problems({"s": 1}) == ["$.s: expected string, got integer"]


def test_a_pattern_that_compiles_too_large_is_refused_as_too_costly_not_as_backtracking() -> None:
    # Thirty Unicode letters compile to about 1.3 MB (the engine's own limit is 10 MiB).
    with pytest.raises(ConfigurationError) as raised:
        Toolset([{"name": "t", "input_schema": _with_pattern("a\\p{L}{30}c")}])
    message = str(raised.value)
    assert ": $.properties.s.pattern: " in message
    assert f"compiles to more than {REGEX_SIZE_LIMIT:,} bytes" in message
    assert "linear time" not in message
    # A pattern the engine cannot run at all is still refused as before.
    with pytest.raises(ConfigurationError, match="linear time"):
        Toolset([{"name": "t", "input_schema": _with_pattern("(?=a)\\w{3}")}])


def test_references_that_double_at_each_step_are_refused() -> None:
    # 30 steps: 2 KB of schema, 2**30 subschemas for one value (0.12 s per value at 22 steps).
    with pytest.raises(ConfigurationError) as raised:
        Toolset([{"name": "t", "input_schema": _doubling(30)}])
    message = str(raised.value)
    assert message.startswith("the schema of tool 't' is too costly to check: $: ")
    assert f"more than {MAX_SUBSCHEMAS:,} subschemas" in message
    assert "$ref" in message
    # A few steps are fine, and are counted through their references.
    assert SchemaChecker(_doubling(6)).cost.subschemas > 2**6


def test_more_branches_for_one_value_than_the_bound_are_refused() -> None:
    with pytest.raises(ConfigurationError, match="subschemas"):
        SchemaChecker(_branches(MAX_SUBSCHEMAS + 1))
    assert SchemaChecker(_branches(500)).cost.subschemas == 501


def test_a_recursive_schema_is_priced_per_level_not_refused() -> None:
    recursive = {"$ref": "#/$defs/node", "$defs": {"node": {"type": "object",
                 "properties": {"next": {"$ref": "#/$defs/node"}}}}}  # fmt: skip
    assert SchemaChecker(recursive).cost.subschemas < 10
    self_ref = {"anyOf": [{"$ref": "#"}, {"type": "string"}]}
    assert SchemaChecker(self_ref).cost.subschemas < 10


def test_a_pattern_in_definitions_nothing_uses_is_never_run_so_never_refused() -> None:
    unused = {"type": "object", "$defs": {"d": {"pattern": "a{5000}"}}}
    assert parse_arguments("{}", tool="t", schema=unused).outcome == "ok"


# -- how a schema is priced ----------------------------------------------------------------------

SHAPES = [
    ("a", 1, 1),
    ("a\\w{1000}c", 1000, 1002),
    ("(\\w{16}){16}", 256, 256),
    ("(a|bc){2}", 2, 6),
    ("^\\d{4}-\\d{2}-\\d{2}$", 4, 12),
    ("x{3}?y+z*", 3, 5),
    ("a{,5}", 5, 5),
    ("[{]{5}", 5, 5),
    ("a\\{1000}", 1, 7),
    ("\\p{L}{3}\\u{1F600}", 3, 4),
    ("(?<year>\\d{4})(?:-\\d{2}){2}", 4, 10),
    ("(?<=a)b{10}", 10, 11),
    ("a{0}b", 1, 1),
]


@pytest.mark.parametrize(("pattern", "repeat", "positions"), SHAPES)
def test_pattern_shape(pattern: str, repeat: int, positions: int) -> None:
    shape = pattern_shape(pattern)
    assert (shape.repeat, shape.positions) == (repeat, positions)


def test_different_members_cost_the_costliest_and_the_same_value_costs_the_sum() -> None:
    cheap, dear = "^ab$", "a[ab]{40}c"
    cheap_ns, dear_ns = pattern_shape(cheap).ns_per_char, pattern_shape(dear).ns_per_char
    members = {"properties": {"a": {"pattern": cheap}, "b": {"pattern": dear}}}
    assert SchemaChecker(members).cost.pattern_ns == dear_ns
    same_value = {"allOf": [{"pattern": cheap}, {"pattern": dear}]}
    assert SchemaChecker(same_value).cost.pattern_ns == cheap_ns + dear_ns
    # Two keywords may check the same item: they add up too.
    both = {"items": {"pattern": dear}, "contains": {"pattern": dear}}
    assert SchemaChecker(both).cost.pattern_ns == 2 * dear_ns
    # A reference costs what it points to, each time it is used.
    twice = {"$defs": {"d": {"pattern": dear}},
             "anyOf": [{"$ref": "#/$defs/d"}, {"$ref": "#/$defs/d"}]}  # fmt: skip
    assert SchemaChecker(twice).cost.pattern_ns == 2 * dear_ns


def test_a_call_is_priced_from_its_text() -> None:
    checker = SchemaChecker(_with_pattern("a\\w{256}c"))
    small, large = '{"s": "ab"}', '{"s": "' + "ab" * 15_000 + '"}'
    assert not checker.costs_more_than(small, 5_000_000)
    assert checker.costs_more_than(large, 5_000_000)
    assert checker.costs_more_than(large, 5_000_000) == (checker.estimate_ns(large) > 5_000_000)
    plain = SchemaChecker({"type": "object", "properties": {"s": {"type": "string"}}})
    assert not plain.costs_more_than(large, 5_000_000)  # one value, whatever its length


# -- the yes/no check first, and a bounded list of problems ---------------------------------------


class _Recording:
    """A validator that records which of its methods the checker called."""

    def __init__(self, validator: Any) -> None:
        self.validator = validator
        self.calls: list[str] = []

    def __getattr__(self, name: str) -> Any:
        self.calls.append(name)
        return getattr(self.validator, name)


def _recorded(schema: dict[str, Any]) -> tuple[SchemaChecker, _Recording]:
    checker = SchemaChecker(schema)
    recording = _Recording(checker.validator)
    checker.validator = recording  # type: ignore[assignment]
    return checker, recording


def test_valid_arguments_get_only_the_yes_no_check() -> None:
    checker, recording = _recorded(_branches(500))
    assert checker.problems({"xs": ["v499"] * 400}) == []
    assert recording.calls == ["is_valid"]


def test_a_small_invalid_call_still_lists_every_problem() -> None:
    schema = {"type": "object", "properties": {"n": {"type": "integer"}, "m": {"type": "integer"}},
              "required": ["n", "m", "k"]}  # fmt: skip
    checker, recording = _recorded(schema)
    assert checker.problems({"n": "1", "m": "2"}) == [
        "$.m: expected integer, got string",
        "$.n: expected integer, got string",
        '$: missing required property "k"',
    ]
    assert recording.calls == ["is_valid", "iter_errors"]


def test_a_large_invalid_call_gets_its_first_problem_only() -> None:
    # 400 items against 500 branches: listing built 200,000 branch errors (4 s).
    checker, recording = _recorded(_branches(500))
    problems = checker.problems({"xs": ["zz"] * 400})
    assert problems == [
        "$.xs[0]: \"zz\" is not valid under any of the schemas listed in the 'anyOf' keyword",
        FIRST_PROBLEM_ONLY,
    ]
    assert recording.calls == ["is_valid", "validate"]
    verdict = parse_arguments(json.dumps({"xs": ["zz"] * 400}), tool="pick", schema=_branches(500))
    assert verdict.reason == "schema"
    assert verdict.message is not None
    assert "there may be more" in verdict.message


# -- the worker process's protocol, and the verdict when it could not finish ---------------------


def test_the_worker_judges_as_the_judge_does() -> None:
    schema = _with_pattern("^[a-z]{1,20}$")
    for raw in ('{"s": "abc"}', '{"s": "ABC"}', "{s: 'abc',}", '{"s": "ab'):
        request = WorkerRequest(
            raw=raw, tool="t", schema_json=json.dumps(schema).encode(), policy=DEFAULT_POLICY,
            truncated=None, arguments_form="string", call_id="c1",
        )  # fmt: skip
        assert judge_in_worker(request) == parse_arguments(
            raw, tool="t", schema=schema, call_id="c1"
        )


def test_frames_carry_every_value_the_judge_makes_exactly() -> None:
    verdict = Verdict(outcome="ok", arguments={"big": 10**30, "inf": float("inf"), "s": "é"})
    stream = io.BytesIO()
    write_frame(stream, verdict)
    stream.seek(0)
    frame = read_frame(stream)
    assert frame is not None
    assert pickle.loads(frame) == verdict
    assert read_frame(stream) is None  # the end
    assert read_frame(io.BytesIO(stream.getvalue()[:-1])) is None  # cut inside a frame


@pytest.mark.parametrize(
    ("why", "detail"),
    [
        ("slow", "the check did not finish within toolwire's 2 s budget"),
        ("busy", "no worker was free to check them within toolwire's 2 s budget"),
        ("broken", "the worker process that checks costly calls failed before it answered"),
    ],
)
def test_an_unchecked_call_blames_no_one(why: Any, detail: str) -> None:
    raw = '{"s": "' + "ab" * 400 + '"}'
    verdict = unchecked_verdict(raw=raw, tool="grep", call_id="c7", budget=2.0, why=why,
                                truncated=False)  # fmt: skip
    assert (verdict.outcome, verdict.reason, verdict.arguments) == ("rejected", "unchecked", None)
    assert verdict.detail is not None
    assert verdict.detail.startswith(detail)
    assert verdict.message is not None
    lines = verdict.message.splitlines()
    assert lines[0] == (
        "Tool call `grep` (id c7) was not run: toolwire could not finish checking its arguments "
        "against the parameters of `grep` in time. Nothing was found wrong with them."
    )
    assert lines[1].startswith(detail[0].upper() + detail[1:])
    assert lines[2].startswith("Received (first 500 of 809 characters): ")
    assert "smaller arguments" in lines[3]
    for blame in ("invalid", "do not match", "not valid", "malformed", "Fix"):
        assert blame not in verdict.message, blame
