"""Properties: valid objects pass unchanged, prefixes never pass, results are deterministic."""

from __future__ import annotations

import json
from typing import Any

from _toolwire_testdata import examples
from hypothesis import given, settings
from hypothesis import strategies as st

from toolwire.judge import parse_arguments

json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(),
    lambda children: (
        st.lists(children, max_size=5) | st.dictionaries(st.text(max_size=8), children, max_size=5)
    ),
    max_leaves=25,
)
json_objects = st.dictionaries(st.text(max_size=8), json_values, max_size=6)
dump_options = st.fixed_dictionaries(
    {
        "indent": st.sampled_from([None, 0, 2, "\t"]),
        "separators": st.sampled_from([None, (",", ":"), (", ", ": "), (" ,", " : ")]),
        "ensure_ascii": st.booleans(),
        "sort_keys": st.booleans(),
    }
)


def same(a: Any, b: Any) -> bool:
    """Type-strict equality (``True`` is not ``1``); ``-0.0`` equals ``0.0`` as in JSON."""
    if type(a) is not type(b):
        return False
    if isinstance(a, dict):
        return a.keys() == b.keys() and all(same(a[k], b[k]) for k in a)
    if isinstance(a, list):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b, strict=True))
    return bool(a == b)


@settings(max_examples=examples(300), deadline=None)
@given(json_objects, dump_options)
def test_valid_objects_pass_unchanged(value: dict[str, Any], options: dict[str, Any]) -> None:
    raw = json.dumps(value, **options)
    verdict = parse_arguments(raw, tool="t")
    assert verdict.outcome == "ok", (raw, verdict)
    assert verdict.repairs == ()
    assert same(verdict.arguments, value)


@settings(max_examples=examples(300), deadline=None)
@given(json_objects.filter(bool), dump_options, st.data())
def test_proper_prefixes_never_pass(
    value: dict[str, Any], options: dict[str, Any], data: st.DataObject
) -> None:
    raw = json.dumps(value, **options)
    cut = data.draw(st.integers(min_value=1, max_value=len(raw) - 1))
    verdict = parse_arguments(raw[:cut], tool="t")
    assert verdict.outcome == "rejected", (raw[:cut], verdict)
    assert verdict.arguments is None


@settings(max_examples=examples(300), deadline=None)
@given(st.text(alphabet=st.sampled_from("{}[]\":,'ab1 \\<|>\nnulTrue"), max_size=40))
def test_any_text_gives_a_deterministic_verdict(raw: str) -> None:
    first = parse_arguments(raw, tool="t", call_id="c1")
    second = parse_arguments(raw, tool="t", call_id="c1")
    assert first == second
    if first.outcome == "rejected":
        assert first.arguments is None
        assert first.reason is not None
        assert first.message is not None
    else:
        assert isinstance(first.arguments, dict)
        assert first.message is None
        assert (first.outcome == "repaired") == bool(first.repairs)


@settings(max_examples=examples(200), deadline=None)
@given(st.text(max_size=60))
def test_any_unicode_text_is_judged(raw: str) -> None:
    verdict = parse_arguments(raw, tool="t")
    assert verdict.outcome in {"ok", "repaired", "rejected"}
    if verdict.outcome != "rejected":
        assert isinstance(verdict.arguments, dict)
