"""A quote missing earlier is a mistake, not a cut: nobody tells the model it was cut off.

The scan that finds where a text stops pairs quotes in order, so one quote missing before the
end (``, description": "x"}``, from a real report: kimi-cli issue 2165) leaves the last quote
alone and the text looks cut inside a string. Told "your call was cut off" (or, on a server
that hides the token limit, "you hit the token limit, split the work"), a model shrinks a call
whose only fault was a quote. The judge says where the mistake is instead, and the finish
does not count such a text as evidence of a cut. A text that is really cut (a prefix of strict
JSON, or one the relaxed reader reads to its end) stays ``truncated``.
"""

from __future__ import annotations

import json
from typing import Any

import msgspec
import pytest
from _toolwire_testdata import chat_chunk, examples, sse_body
from hypothesis import given, settings
from hypothesis import strategies as st

import toolwire
from toolwire.core.jsonscan import unterminated
from toolwire.judge import STRICT_POLICY, parse_arguments

pytestmark = pytest.mark.anyio

#: Complete texts with one quote missing, and the column the mistake is told at.
MISQUOTED = [
    # The real one: the opening quote of a key is missing.
    (
        '{"command": "...", "run_in_background": true, '
        'description": "mesh15k baseline without transfer"}',
        47,
    ),
    ('{"a": "x", b": 2}', 12),  # a key's opening quote
    ('{"a": x", "b": 2}', 7),  # a value's opening quote
    ('{"a": "x, "b": 2}', 12),  # a value's closing quote, mid-object
    ('{"a": 1, b": {"c": 2}}', 10),  # an object after the mistake
]

#: Texts that may really be cut: each stays truncated.
CUT = [
    '{"a": "x", "b": "y}',  # a prefix of strict JSON: "y}..." may go on
    '{"a": "x", "b: 2}',  # the same
    "{'a': \"long text cut",  # the reader reads past the quotes to the end
    '{a: "long text cut',
    '{"data":{"envs":{"sd":{"namespaces":1}}}',  # a brace short: a prefix of strict JSON
]


@pytest.mark.parametrize(("raw", "column"), MISQUOTED)
def test_a_misquoted_text_is_not_json_at_its_mistake(raw: str, column: int) -> None:
    verdict = parse_arguments(raw, tool="run")
    assert verdict.outcome == "rejected"
    assert verdict.reason == "not_json"
    assert verdict.truncated is False
    assert verdict.detail is not None
    assert verdict.detail.endswith(f"at line 1, column {column}")
    assert verdict.position == column - 1
    assert verdict.message is not None
    assert "before the call was complete" not in verdict.message
    assert "not valid JSON" in verdict.message


@pytest.mark.parametrize(("raw", "column"), MISQUOTED[:2])
def test_a_misquoted_text_in_prose_or_under_the_strict_policy_is_not_json_too(
    raw: str, column: int
) -> None:
    in_prose = parse_arguments(f"Sure: {raw} ok", tool="run")
    assert (in_prose.reason, in_prose.position) == ("not_json", column - 1 + len("Sure: "))
    strict = parse_arguments(raw, tool="run", policy=STRICT_POLICY)
    assert (strict.reason, strict.position) == ("not_json", column - 1)


@pytest.mark.parametrize("raw", CUT)
def test_a_text_that_may_be_cut_stays_truncated(raw: str) -> None:
    verdict = parse_arguments(raw, tool="run")
    assert (verdict.outcome, verdict.reason, verdict.truncated) == ("rejected", "truncated", True)


def test_the_stream_saying_cut_still_makes_a_misquoted_text_truncated() -> None:
    """The token limit is evidence of its own: with it, what does not parse was cut."""
    verdict = parse_arguments(MISQUOTED[1][0], tool="run", truncated=True)
    assert verdict.reason == "truncated"
    assert verdict.detail is not None
    assert verdict.detail.startswith("the stream shows the call was cut off")


@pytest.mark.parametrize(("raw", "column"), MISQUOTED)
def test_the_finish_does_not_count_a_misquoted_text_as_stopped_inside(
    raw: str, column: int
) -> None:
    assert unterminated(raw) is False


@pytest.mark.parametrize(
    "raw",
    [
        *CUT,
        '{"a": [1 2], "b": "long text cut',  # a mistake, then a cut: a brace stays open
        '{"a": x, "code": "if (y) {z}',
        '{ "path": "C:\\\\Users\\\\',  # llama-cpp-python, cut at max_tokens (recorded)
    ],
)
def test_the_finish_still_sees_a_text_that_stops_inside_a_value(raw: str) -> None:
    assert unterminated(raw) is True


@pytest.mark.parametrize(
    "raw",
    ['{"a": x, "code": "func() {"}', '{"a": "x"}', "", '{"a": 1} trailing'],
)
def test_the_finish_sees_no_open_value_where_there_is_none(raw: str) -> None:
    assert unterminated(raw) is False


def test_a_lone_surrogate_is_scanned_not_raised() -> None:
    """An SDK object's string can hold a lone surrogate (``json.loads`` reads ``\\ud800``);
    msgspec cannot encode it. It was an UnicodeEncodeError out of the finish."""
    assert unterminated('{"a": "\ud800') is True
    assert unterminated('{"a": "\ud800"}') is False


async def test_a_misquoted_call_on_a_server_that_hides_the_limit_is_not_called_cut() -> None:
    """llama-cpp-python says ``tool_calls`` even at ``max_tokens``, so a call that stops inside
    a value there counts as cut by the limit (its profile). A misquoted complete call must not:
    the stop reason stays the server's and the model reads where its mistake is."""
    raw = MISQUOTED[0][0]
    body = sse_body(
        [
            chat_chunk({"role": "assistant"}),
            chat_chunk(
                {
                    "tool_calls": [
                        {
                            "index": 0,
                            "id": "call_1",
                            "type": "function",
                            "function": {"name": "run", "arguments": raw},
                        }
                    ]
                }
            ),
            chat_chunk({}, "tool_calls"),
        ]
    )
    turn = await toolwire.collect(body, "llama-cpp")
    assert turn.stop_reason == "tool_calls"
    assert turn.truncated is False
    assert turn.truncation_evidence == ()
    (call,) = turn.calls
    assert call.verdict is not None
    assert (call.verdict.reason, call.verdict.truncated) == ("not_json", False)
    assert call.verdict.message is not None
    assert "token limit" not in call.verdict.message
    assert "column 47" in call.verdict.message
    # The same call really cut, on the same server: the profile's evidence holds.
    cut = body.replace(b'transfer\\"}', b"trans")
    assert cut != body
    turn = await toolwire.collect(cut, "llama-cpp")
    assert turn.stop_reason == "length"
    assert turn.truncation_evidence == ("server_profile", "arguments_unterminated")


# Strings with no bracket (a bracket inside a string is one the count cannot tell from
# structure) and no single quote (``{'k": 1}`` reads as the key ``k`` closed by the wrong
# quote, the ``single_quoted_keys`` repair, whichever quote was lost).
_TEXT = st.text(alphabet=st.sampled_from(list("abc xyz019 .,:-_\\/")), max_size=12)
_VALUE = st.recursive(
    st.one_of(st.none(), st.booleans(), st.integers(-1000, 1000), _TEXT),
    lambda inner: st.one_of(
        st.lists(inner, max_size=3), st.dictionaries(_TEXT, inner, max_size=3)
    ),
    max_leaves=8,
)


def _strict_truncated(text: str) -> bool:
    try:
        msgspec.json.decode(text)
    except msgspec.DecodeError as error:
        return str(error) == "Input data was truncated"
    return False


@settings(max_examples=examples(500), deadline=None)
@given(st.dictionaries(_TEXT, _VALUE, min_size=1, max_size=4), st.booleans(), st.data())
def test_an_object_with_one_quote_lost_never_runs_and_counts_as_cut_only_as_a_prefix(
    value: dict[str, Any], spaced: bool, data: st.DataObject
) -> None:
    """Any object with any one of its quotes lost: the finish counts it as stopped inside a
    value exactly when it is a prefix of strict JSON (then it may be cut; otherwise a quote is
    missing), and the judge never lets it run (no reading of it is the one meant)."""
    text = json.dumps(value) if spaced else json.dumps(value, separators=(",", ":"))
    quotes = [at for at, char in enumerate(text) if char == '"' and text[at - 1] != "\\"]
    lost = data.draw(st.sampled_from(quotes))
    broken = text[:lost] + text[lost + 1 :]
    assert unterminated(broken) is _strict_truncated(broken)
    assert not parse_arguments(broken, tool="run").may_run
