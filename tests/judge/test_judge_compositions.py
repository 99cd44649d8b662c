"""Repairs compose when each step has one reading; every kind applied is reported, in order.

The rules are in ``docs/repairs.md`` ("How repairs compose"). Each case here was rejected before
although it has exactly one reading; the rejections at the end must stay rejections.
"""

from __future__ import annotations

from typing import Any

import pytest

from toolwire.judge import DEFAULT_POLICY, parse_arguments

ACCEPTED: list[tuple[str, dict[str, Any], tuple[str, ...]]] = [
    # A double-encoded string goes through every layer again.
    ('"{\'a\': 1}"', {"a": 1}, ("double_encoded", "single_quoted_keys")),
    ('"{a: 1, b: [1,],}"', {"a": 1, "b": [1]}, ("double_encoded", "bare_keys", "trailing_commas")),
    ('"```json\\n{\\"a\\": 1}\\n```"', {"a": 1}, ("double_encoded", "fence")),
    ('"<tool_call>{\\"a\\": 1}</tool_call>"', {"a": 1}, ("double_encoded", "template_markers")),
    ('"Sure: {\\"a\\": 1}"', {"a": 1}, ("double_encoded", "prose")),
    ('"{\'a\': True}"', {"a": True}, ("double_encoded", "python_literal")),
    ('"{{\\"a\\": 1}}"', {"a": 1}, ("double_encoded", "wrapping_braces")),
    ('```json\n"{a: 1}"\n```', {"a": 1}, ("fence", "double_encoded", "bare_keys")),
    # The Python reading takes the repairs that are not a matter of dialect.
    ("{'a': 'x\ny'}", {"a": "x\ny"}, ("python_literal", "control_chars")),
    (
        "{'note': 'line one\nline two', 'ok': True,}",
        {"note": "line one\nline two", "ok": True},
        ("python_literal", "control_chars"),
    ),
    (
        '{"parameters\': {\'city\': \'Paris\'}, "units": \'metric\'}',
        {"parameters": {"city": "Paris"}, "units": "metric"},
        ("python_literal", "single_quoted_keys"),
    ),
    (
        "{'a': <|\"|>say \"hi\"<|\"|>, 'b': None}",
        {"a": 'say "hi"', "b": None},
        ("python_literal", "quote_tokens"),
    ),
    ("{{'a': True}}", {"a": True}, ("wrapping_braces", "python_literal")),
    # A key closed by the wrong quote, with other layers around it.
    (
        '{{"parameters\':{\'city\':"Paris"}}}',
        {"parameters": {"city": "Paris"}},
        ("wrapping_braces", "single_quoted_keys"),
    ),
    (
        'Sure: {"parameters\':{\'city\':"Paris"}} ok',
        {"parameters": {"city": "Paris"}},
        ("prose", "single_quoted_keys"),
    ),
    # Several relaxed-syntax defects in one object, reported in text order.
    (
        '{a: "x\ny", \'b\': [1,], "c": "C:\\d",}',
        {"a": "x\ny", "b": [1], "c": "C:\\d"},
        ("bare_keys", "control_chars", "single_quoted_keys", "trailing_commas", "invalid_escapes"),
    ),
    (
        "<tool_call>```json\n{{a: 1,}}\n```</tool_call>",
        {"a": 1},
        ("template_markers", "fence", "wrapping_braces", "bare_keys", "trailing_commas"),
    ),
    ("{{a: 1}} thanks", {"a": 1}, ("prose", "wrapping_braces", "bare_keys")),
    ("```python\n{'a': True}\n```", {"a": True}, ("fence", "python_literal")),
]


IDS = [case[0][:40] for case in ACCEPTED]


@pytest.mark.parametrize(("raw", "expected", "repairs"), ACCEPTED, ids=IDS)
def test_composition_is_accepted(
    raw: str, expected: dict[str, Any], repairs: tuple[str, ...]
) -> None:
    verdict = parse_arguments(raw, tool="t")
    assert (verdict.outcome, verdict.arguments, verdict.repairs) == ("repaired", expected, repairs)


@pytest.mark.parametrize(("raw", "expected", "repairs"), ACCEPTED, ids=IDS)
def test_every_kind_of_a_composition_can_be_turned_off(
    raw: str, expected: dict[str, Any], repairs: tuple[str, ...]
) -> None:
    for kind in repairs:
        policy = DEFAULT_POLICY.without(kind)  # type: ignore[arg-type]
        assert kind not in parse_arguments(raw, tool="t", policy=policy).repairs, kind


def test_each_edge_repair_applies_once() -> None:
    # A fence inside a double-encoded string inside a fence is not peeled twice; what is left
    # is text around the one object.
    verdict = parse_arguments('```json\n"```json\\n{}\\n```"\n```', tool="t")
    assert verdict.repairs == ("fence", "double_encoded", "prose")


def test_object_form_then_double_encoded() -> None:
    # The object form is no repair (issue 18); what was inside it still is.
    verdict = parse_arguments('"{a: 1}"', tool="t", arguments_form="object")
    assert verdict.repairs == ("double_encoded", "bare_keys")


REJECTED = [
    # Mixed dialects: neither JSON with repairs nor a Python literal.
    ("{a: 'x'}", "not_json"),
    ("{'a': 'x', \"b\": true}", "not_json"),
    ("{'a': True, b: 1}", "not_json"),
    # A double-encoded string that does not hold exactly one object.
    ('"{\\"a\\": 1} {\\"b\\": 2}"', "ambiguous"),
    ('"just text"', "wrong_type"),
    ('"[1, 2]"', "wrong_type"),
    ('"null"', "wrong_type"),
    ('""', "wrong_type"),
    ('"Use {x} here"', "wrong_type"),
    ('"\\"{\\\\\\"a\\\\\\": 1}\\""', "wrong_type"),  # encoded twice: decoded once only
    ('"{\\"a\\": "', "truncated"),
    ('"{a: 1"', "truncated"),
    # A prefix of strict JSON is never complete, whatever would read it.
    ("{\"parameters': {'city': 'Paris'}}", "truncated"),
    ('{"a\': 1}', "truncated"),
]


@pytest.mark.parametrize(("raw", "reason"), REJECTED, ids=[c[0][:40] for c in REJECTED])
def test_still_rejected(raw: str, reason: str) -> None:
    verdict = parse_arguments(raw, tool="t")
    assert (verdict.outcome, verdict.reason) == ("rejected", reason)


def test_first_decisive_group_decides() -> None:
    # Groups are read in text order: a broken object before two good ones is the problem
    # reported (it was meant as an object), and two objects are ambiguous whatever follows.
    assert parse_arguments('{"b" 2} {"a": 1} {"a": 1}', tool="t").reason == "not_json"
    verdict = parse_arguments('{"a": 1} {"a": 2} {"b" 2}', tool="t")
    assert verdict.reason == "ambiguous"
    assert verdict.detail == "found more than one object; the first two at characters 0, 9"
