"""Each repair function on its own, then each repair kind through parse_arguments."""

from __future__ import annotations

import pytest

from toolwire.judge import DEFAULT_POLICY, STRICT_POLICY, Policy, parse_arguments
from toolwire.judge._python_literal import PythonStringError, read_python_string
from toolwire.judge._reader import ReadError, read_object
from toolwire.judge._scan import scan
from toolwire.judge._text_repairs import (
    close_wrapping,
    open_wrapping,
    strip_fence,
    strip_template_markers,
)
from toolwire.judge._token_repairs import (
    escape_control_chars,
    escape_invalid_backslashes,
    read_bare_key,
    read_mismatched_key,
    read_quote_token_string,
    read_single_quoted_key,
)


def cut(text: str, span: tuple[int, ...] | None) -> str | None:
    return None if span is None else text[span[0] : span[1]]


# -- text repairs -------------------------------------------------------------------------------


def test_strip_template_markers() -> None:
    text = '<tool_call>{"q":"hi"}</tool_call>'
    assert cut(text, strip_template_markers(text)) == '{"q":"hi"}'
    text = '{"q":1} <|tool_call_end|><|im_end|>'
    assert cut(text, strip_template_markers(text)) == '{"q":1}'
    assert strip_template_markers('{"body":"<tool_call|>"}') is None
    text = '{"a":1}<tool_call|>{"b":2}'
    assert strip_template_markers(text) is None  # between objects: not an edge
    assert strip_template_markers('{toolkits:[<|"|>x<|"|>]}') is None  # quote tokens stay


def test_strip_fence() -> None:
    text = '```json\n{"a": 1}\n```'
    assert cut(text, strip_fence(text)) == '{"a": 1}'
    text = '```{"a": 1}```'
    assert cut(text, strip_fence(text)) == '{"a": 1}'
    assert strip_fence('```json\n{"a": 1}') is None  # never closed: maybe cut off
    assert strip_fence('{"a": "```"}') is None


def test_wrapping_braces() -> None:
    text = '{{"a":1}}'
    assert open_wrapping(text, 0, len(text)) == (1, 1)
    assert close_wrapping(text, 8, len(text), 1) == 9
    text = "{ {\n{{tool:1}}}}"
    assert open_wrapping(text, 0, len(text)) == (3, 5)
    assert open_wrapping('{"a":{"b":1}}', 0, 13) == (0, 0)
    assert close_wrapping('{{"a":1}, "b": 2}', 8, 17, 1) is None
    too_deep = "{" * 18 + "}" * 18
    assert open_wrapping(too_deep, 0, len(too_deep)) == (0, 0)
    read = read_object('{{note:"see {ref:1}"}}', 0, DEFAULT_POLICY)
    assert (read.value, read.repairs) == ({"note": "see {ref:1}"}, ["wrapping_braces", "bare_keys"])
    with pytest.raises(ReadError, match=r"found '\{'"):
        read_object('{{"a":1}, "b": 2}', 0, DEFAULT_POLICY)


# -- token repairs ------------------------------------------------------------------------------


def test_read_bare_key() -> None:
    assert read_bare_key("path: 1", 0) == ("path", 5)
    assert read_bare_key("Basic LLM Chain:1", 0) == ("Basic LLM Chain", 16)
    assert read_bare_key("hi, bye]", 0) is None  # a bare value is never a key
    assert read_bare_key('"a":1', 0) is None


def test_read_single_quoted_key() -> None:
    assert read_single_quoted_key("'city':\"Paris\"", 0) == ("city", 7)
    assert read_single_quoted_key("'it\\'s' :1", 0) == ("it's", 9)
    assert read_single_quoted_key("'a' 1", 0) is None


def test_read_mismatched_key() -> None:
    text = "\"parameters':{'city':\"Paris\"}"
    assert read_mismatched_key(text, 0) == ("parameters", 13)
    assert read_mismatched_key("'city\":1", 0) == ("city", 7)
    assert read_mismatched_key('"a":1', 0) is None
    assert read_mismatched_key("\"it's a key' :1", 0) == ("it's a key", 14)
    assert read_mismatched_key("\"a\nb':1", 0) is None  # never across a line
    assert read_mismatched_key("\"a':1", 0, 3) is None  # never past the end given


def test_read_quote_token_string() -> None:
    assert read_quote_token_string('<|"|>say "hi"<|"|>}', 0) == ('say "hi"', 18)
    assert read_quote_token_string('<|">discord<|">]', 0) == ("discord", 15)
    assert read_quote_token_string('<|"|>never closed', 0) is None
    assert read_quote_token_string("<b>", 0) is None


def test_trailing_commas() -> None:
    read = read_object('{"a": [1, ], "b": {"c": 2,},\n}', 0, DEFAULT_POLICY)
    assert (read.value, read.repairs) == ({"a": [1], "b": {"c": 2}}, ["trailing_commas"])
    for two_commas in ("[1,,]", "{,}", '{"a": 1,,}'):
        with pytest.raises(ReadError):
            read_object('{"x": ' + two_commas + "}", 0, DEFAULT_POLICY)
    with pytest.raises(ReadError, match="trailing comma") as info:
        read_object('{"a": 1 , }', 0, DEFAULT_POLICY.without("trailing_commas"))
    assert info.value.position == 8


def test_escape_control_chars() -> None:
    assert escape_control_chars("a\nb\tc") == "a\\u000ab\\u0009c"
    assert escape_control_chars("plain") == "plain"


def test_escape_invalid_backslashes() -> None:
    assert escape_invalid_backslashes("C:\\Users\\me") == "C:\\\\Users\\\\me"
    assert escape_invalid_backslashes("a\\nb\\u0041") == "a\\nb\\u0041"
    assert escape_invalid_backslashes("\\users") == "\\\\users"  # \u without four hex digits


def test_read_python_string() -> None:
    assert read_python_string("'it\\'s'", 0) == ("it's", 7, False)
    assert read_python_string("'\\x41\\n\\d'", 0) == ("A\n\\d", 10, False)
    assert read_python_string('"\\N{BULLET}"', 0) == ("\u2022", 12, False)
    assert read_python_string("'a\\\nb'", 0) == ("ab", 6, False)  # a line continuation
    assert read_python_string("'a\nb'", 0) == ("a\nb", 5, True)  # a raw line feed: reported
    with pytest.raises(PythonStringError):
        read_python_string("'a\nb", 0)
    with pytest.raises(PythonStringError):
        read_python_string("'''a'''", 0)
    with pytest.raises(PythonStringError):
        read_python_string("'ab'", 0, 3)  # never past the end given


def test_read_object_records_repairs_in_text_order() -> None:
    read = read_object('{a:<|"|>x<|"|>, "b": [1,],}', 0, DEFAULT_POLICY)
    assert read.value == {"a": "x", "b": [1]}
    assert read.repairs == ["bare_keys", "quote_tokens", "trailing_commas"]


def test_read_object_python_mode() -> None:
    read = read_object("{'a': True, 'b': [None, 'x'],}", 0, DEFAULT_POLICY, python=True)
    assert read.value == {"a": True, "b": [None, "x"]}
    assert read.repairs == ["python_literal"]
    with pytest.raises(ReadError):
        read_object("{'a': true}", 0, DEFAULT_POLICY, python=True)
    with pytest.raises(ReadError):
        read_object("{1: 2}", 0, DEFAULT_POLICY, python=True)


def test_read_object_refuses_disallowed_repairs() -> None:
    with pytest.raises(ReadError):
        read_object("{a:1}", 0, STRICT_POLICY)
    with pytest.raises(ReadError, match="unquoted value"):
        read_object('{"a": src/main.rs}', 0, DEFAULT_POLICY)


def test_read_object_end_of_text_is_flagged() -> None:
    with pytest.raises(ReadError) as info:
        read_object('{"a": [1, 2', 0, DEFAULT_POLICY)
    assert info.value.at_end


def test_scan() -> None:
    found = scan('Use {x} then {"path":"a"} or [x] or { }')
    assert found.groups == [(13, 25), (29, 32), (36, 39)]  # {x} is prose: it is not reported
    assert found.unterminated is None
    assert scan('{"a": "it\'s').unterminated == "string"
    assert scan("I can't do it").unterminated is None
    assert scan("{'a': 'b").unterminated == "string"
    assert scan('{a:<|"|>x').unterminated == "string"
    assert scan('{"a":1]').broken == 0
    assert scan("[" * 100_000).unterminated == "array"


# -- each kind through the public function, and each switch ---------------------------------

CASES = [
    ("", {}, ("empty",)),
    ("null", {}, ("null_as_empty",)),
    ('"{\\"a\\": 1}"', {"a": 1}, ("double_encoded",)),
    ('```json\n{"a": 1}\n```', {"a": 1}, ("fence",)),
    ('Here: {"a": 1}. Done', {"a": 1}, ("prose",)),
    ('<tool_call>{"a": 1}</tool_call>', {"a": 1}, ("template_markers",)),
    ('{{"a": 1}}', {"a": 1}, ("wrapping_braces",)),
    ("{a: 1}", {"a": 1}, ("bare_keys",)),
    ("{'a': \"x\"}", {"a": "x"}, ("single_quoted_keys",)),
    ('{"a": <|"|>x<|"|>}', {"a": "x"}, ("quote_tokens",)),
    ("{'a': 'x', 'b': None}", {"a": "x", "b": None}, ("python_literal",)),
    ('{"a": [1,],}', {"a": [1]}, ("trailing_commas",)),
    ('{"a": "x\ty"}', {"a": "x\ty"}, ("control_chars",)),
    ('{"a": "\\d+"}', {"a": "\\d+"}, ("invalid_escapes",)),
]


@pytest.mark.parametrize(("raw", "expected", "kinds"), CASES, ids=[c[2][0] for c in CASES])
def test_each_kind(raw: str, expected: dict[str, object], kinds: tuple[str, ...]) -> None:
    verdict = parse_arguments(raw, tool="t")
    assert verdict.outcome == "repaired"
    assert verdict.arguments == expected
    assert verdict.repairs == kinds


@pytest.mark.parametrize(("raw", "expected", "kinds"), CASES, ids=[c[2][0] for c in CASES])
def test_each_kind_can_be_turned_off(
    raw: str, expected: dict[str, object], kinds: tuple[str, ...]
) -> None:
    off = DEFAULT_POLICY.without(kinds[0])
    verdict = parse_arguments(raw, tool="t", policy=off)
    # Another repair may still read it (a fence is also prose around one object; a trailing
    # comma is also Python syntax), but never the kind that was turned off.
    assert kinds[0] not in verdict.repairs
    only = DEFAULT_POLICY.only(*kinds)
    assert parse_arguments(raw, tool="t", policy=only).repairs == kinds
    assert parse_arguments(raw, tool="t", policy=STRICT_POLICY).outcome == "rejected"


def test_composed_repairs_are_reported_in_order() -> None:
    verdict = parse_arguments('```json\n"{\\"a\\": 1}"\n```', tool="t")
    assert verdict.repairs == ("fence", "double_encoded")
    verdict = parse_arguments('<tool_call>{{a: <|"|>x<|"|>}}</tool_call>', tool="t")
    assert verdict.repairs == ("template_markers", "wrapping_braces", "bare_keys", "quote_tokens")
    assert verdict.arguments == {"a": "x"}
    verdict = parse_arguments('{a:"x"} and prose', tool="t")
    assert verdict.repairs == ("prose", "bare_keys")


@pytest.mark.parametrize(
    "raw",
    ['{"a": 1}]', '{"a": 1} ]\n', 'Sure: {"a": 1}]', '{"a": 1}]}', '"{\\"a\\": 1}]"'],
)
def test_an_object_closing_an_array_never_opened_is_not_prose(raw: str) -> None:
    """``{...}]`` reads two ways: a stray ``]``, or ``[{...}]`` with its ``[`` lost, which is
    no arguments (``wrong_type``, as the whole array is). Real: Ollama issue 17638, gpt-oss."""
    verdict = parse_arguments(raw, tool="t")
    assert (verdict.outcome, verdict.reason) == ("rejected", "not_json")
    assert verdict.detail is not None
    assert "the object is followed by ']'" in verdict.detail
    assert parse_arguments("[" + raw.lstrip("Sure: "), tool="t").outcome == "rejected"


@pytest.mark.parametrize(
    ("raw", "position"), [('{"a": 1}]', 8), ('Sure: {"a": 1} ]', 14)]
)
def test_the_lost_array_is_told_where_the_object_ends(raw: str, position: int) -> None:
    assert parse_arguments(raw, tool="t").position == position


@pytest.mark.parametrize("raw", ['{"a": 1}}', '{"a": 1})', 'Here: {"a": 1}. Done', '{"a": 1} [ok]'])
def test_other_text_after_the_object_is_still_prose(raw: str) -> None:
    verdict = parse_arguments(raw, tool="t")
    assert (verdict.outcome, verdict.arguments, verdict.repairs[0]) == (
        "repaired", {"a": 1}, "prose"
    )


def test_object_form_is_no_repair() -> None:
    # An object is the provider's form (Gemini, Ollama), not a repair (issue 18): ``ok`` under
    # every policy; the call keeps ``arguments_form="object"``.
    verdict = parse_arguments('{"a": 1}', tool="t", arguments_form="object")
    assert (verdict.outcome, verdict.repairs) == ("ok", ())
    strict = parse_arguments('{"a": 1}', tool="t", arguments_form="object", policy=STRICT_POLICY)
    assert strict.outcome == "ok"


def test_strict_policy() -> None:
    assert parse_arguments('{"a": 1}', tool="t", policy=STRICT_POLICY).outcome == "ok"
    assert parse_arguments("", tool="t", policy=STRICT_POLICY).reason == "not_json"
    assert parse_arguments("null", tool="t", policy=STRICT_POLICY).reason == "wrong_type"


def test_policy_helpers() -> None:
    assert Policy().only("fence").allows("fence")
    assert not Policy().only("fence").allows("prose")
    assert not DEFAULT_POLICY.without("prose").allows("prose")
    assert hash(DEFAULT_POLICY) == hash(Policy())


def test_never_repaired() -> None:
    for raw, reason in [
        ('{"a": 1} {"a": 1}', "ambiguous"),
        ('{"a": x} {"b": 1}', "not_json"),
        ('{"a": {"b": 1}', "truncated"),
        ('[{"a": 1}]', "wrong_type"),
        ("{tags:[hi,bye]}", "not_json"),
        ('{tool:"X",{guild_id:"Y"}}', "not_json"),
        ('"not an object"', "wrong_type"),
        ('"{\\"a\\": "', "truncated"),
    ]:
        verdict = parse_arguments(raw, tool="t")
        assert (verdict.outcome, verdict.reason) == ("rejected", reason), raw


def test_duplicate_keys_last_wins() -> None:
    assert parse_arguments('{"a": 1, "a": 2}', tool="t").arguments == {"a": 2}
    assert parse_arguments("{a: 1, a: 2}", tool="t").arguments == {"a": 2}


def test_lone_surrogates_are_not_json() -> None:
    assert parse_arguments('{"a": "\\ud800"}', tool="t").reason == "not_json"
    assert parse_arguments('{"a": "\ud800"}', tool="t").reason == "not_json"
    assert parse_arguments('{"a": "\\ud83d\\ude00"}', tool="t").arguments == {"a": "\U0001f600"}
