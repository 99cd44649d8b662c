"""Reasoning never runs: a call drafted inside any reasoning wrapper is never a runnable call.

The wrappers are ``stages/text_calls/reasoning.py`` (``REASONING_WRAPPERS``, each with where it
was learnt); the calls are one example per registered family (``examples.py``). The property
is metamorphic: a text with a call inside a wrapper gives the same runnable calls as the same
text with that call replaced by a word, whatever prose and other calls surround it and however
the text is split into deltas. Issue 28: ``[THINK]... [TOOL_CALLS]f[ARGS]{...} ...[/THINK]
[TOOL_CALLS]f[ARGS]{...}`` (Magistral) ran the tool twice.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

import pytest
from _toolwire_testdata import examples as quick_examples
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from toolwire.core.events import ReasoningDelta
from toolwire.stages.text_calls import BUILT_IN_READERS, text_call_families
from toolwire.stages.text_calls.reasoning import REASONING_WRAPPERS

from ._harness import run_text, visible_text
from .examples import EXAMPLE_CALLS, EXAMPLE_TOOLS

#: (family, example text) for every registered family that has an example.
EXAMPLES = [
    (family, text) for family in text_call_families() for text in EXAMPLE_CALLS.get(family, ())
]
#: (opener, closer, implicit ends) of every wrapper that has an opener in the text.
WRAPPED = [
    (opener, closer, wrapper.implicit_ends)
    for wrapper in REASONING_WRAPPERS
    for opener in wrapper.openers
    for closer in wrapper.closers
]
#: (closer, implicit ends) of every wrapper the generation prompt may open.
PROMPT_OPENED = [
    (closer, wrapper.implicit_ends)
    for wrapper in REASONING_WRAPPERS
    if wrapper.opened_by_prompt
    for closer in wrapper.closers
]
#: Prose that holds no marker of any family (no brackets, tags, backticks or underscores).
PROSE = st.text(alphabet="abcxyz XYZ.,:!?\n", max_size=12)


def _runnable(chunks: list[str]) -> list[tuple[str, Any]]:
    turn, _ = run_text(chunks, EXAMPLE_TOOLS)
    return [(call.name, call.arguments) for call in turn.runnable]


def _no_more_than(got: list[tuple[str, Any]], expected: list[tuple[str, Any]]) -> bool:
    """Every call in ``got`` is one of ``expected`` (counted): the draft added none. (A draft
    may take calls away: a fence it opens in reasoning the prompt opened runs to the end.)"""
    counted = Counter(repr(call) for call in expected)
    counted.subtract(repr(call) for call in got)
    return all(count >= 0 for count in counted.values())


def _split(text: str, cuts: list[int]) -> list[str]:
    points = sorted({cut % (len(text) + 1) for cut in cuts})
    return [text[a:b] for a, b in zip([0, *points], [*points, len(text)], strict=True)]


def test_every_built_in_family_has_an_example() -> None:
    """A family added to the registry must add its example to ``examples.py``."""
    missing = sorted({reader.family for reader in BUILT_IN_READERS} - set(EXAMPLE_CALLS))
    assert not missing, f"no example call in tests/stages/text_calls/examples.py for {missing}"


@pytest.mark.parametrize(("family", "text"), EXAMPLES)
def test_an_example_is_a_call_on_its_own(family: str, text: str) -> None:
    turn, _ = run_text([text], EXAMPLE_TOOLS)
    assert turn.runnable, f"the {family} example is not read as a call"
    assert {call.text_family for call in turn.calls} == {family}


@settings(max_examples=quick_examples(600), deadline=None)
@given(
    st.sampled_from(EXAMPLES),
    st.sampled_from(WRAPPED),
    st.lists(PROSE, min_size=4, max_size=4),
    st.sampled_from([None, *EXAMPLES]),
    st.booleans(),
    st.lists(st.integers(min_value=0, max_value=10_000), max_size=6),
)
def test_a_call_inside_reasoning_never_runs(
    draft: tuple[str, str],
    wrapped: tuple[str, str, tuple[str, ...]],
    prose: list[str],
    other: tuple[str, str] | None,
    other_first: bool,
    cuts: list[int],
) -> None:
    opener, closer, _ = wrapped
    call = draft[1]
    assume(closer not in call and opener not in call)
    around = other[1] if other is not None else ""
    before, after = (around, "") if other_first else ("", around)

    def text(inside: str) -> str:
        return f"{prose[0]}{before}{opener}{prose[1]}{inside}{prose[2]}{closer}{prose[3]}{after}"

    expected = _runnable([text("word")])
    assert _runnable(_split(text(call), cuts)) == expected


@settings(max_examples=quick_examples(400), deadline=None)
@given(
    st.sampled_from(EXAMPLES),
    st.sampled_from(PROMPT_OPENED),
    st.lists(PROSE, min_size=3, max_size=3),
    st.sampled_from([None, *EXAMPLES]),
    st.lists(st.integers(min_value=0, max_value=10_000), max_size=6),
)
def test_a_call_before_a_closer_the_prompt_opened_never_runs(
    draft: tuple[str, str],
    prompt_opened: tuple[str, tuple[str, ...]],
    prose: list[str],
    other: tuple[str, str] | None,
    cuts: list[int],
) -> None:
    """The template opened the reasoning (``<think>`` in the generation prompt): the output
    holds only its closer, and everything before the closer is reasoning."""
    closer, _ = prompt_opened
    call = draft[1]
    assume(closer not in call)
    after = other[1] if other is not None else ""

    def text(inside: str) -> str:
        return f"{prose[0]}{inside}{prose[1]}{closer}{prose[2]}{after}"

    assert _no_more_than(_runnable(_split(text(call), cuts)), _runnable([text("word")]))


@settings(max_examples=quick_examples(400), deadline=None)
@given(
    st.sampled_from(EXAMPLES),
    st.sampled_from(WRAPPED),
    st.lists(PROSE, min_size=3, max_size=3),
    st.sampled_from([None, *EXAMPLES]),
    st.lists(st.integers(min_value=0, max_value=10_000), max_size=6),
)
def test_a_call_in_reasoning_never_closed_never_runs(
    draft: tuple[str, str],
    wrapped: tuple[str, str, tuple[str, ...]],
    prose: list[str],
    other: tuple[str, str] | None,
    cuts: list[int],
) -> None:
    """Reasoning opened and never closed (the output was cut in it): all of it is reasoning.
    A call that starts with one of the wrapper's implicit ends is the servers' exception,
    tested below."""
    opener, closer, implicit = wrapped
    call = draft[1]
    assume(closer not in call and opener not in call)
    assume(not any(marker in call for marker in implicit))
    before = other[1] if other is not None else ""

    def text(inside: str) -> str:
        return f"{prose[0]}{before}{opener}{prose[1]}{inside}{prose[2]}"

    assert _no_more_than(_runnable(_split(text(call), cuts)), _runnable([text("word")]))


def test_the_magistral_draft_and_the_real_call_run_once() -> None:
    """Issue 28's shape: the draft in ``[THINK]`` and the call after it are the same call."""
    call = '[TOOL_CALLS]get_weather[ARGS]{"city": "Paris"}'
    text = f"[THINK]I will call {call} to check.[/THINK]{call}"
    turn, events = run_text([text], EXAMPLE_TOOLS)
    assert [(c.name, c.arguments) for c in turn.runnable] == [("get_weather", {"city": "Paris"})]
    assert visible_text(events) == f"[THINK]I will call {call} to check.[/THINK]"


@pytest.mark.parametrize(
    ("text", "shown"),
    [
        # A Qwen3 thinking template puts <think> in the prompt: only </think> is in the output.
        # (A <tool_call> block that prose follows was never taken out of the text.)
        (
            'Let me call <tool_call>{"name": "get_time", "arguments": {}}</tool_call> first.'
            "</think>\n\nIt is noon.",
            None,
        ),
        # Cohere's generation prompt opens <|START_THINKING|> (llama.cpp cohere2moe.cpp). The
        # draft was read before its closer came: its markup is put back just before the closer.
        (
            "[TOOL_CALLS]get_time[ARGS]{} maybe<|END_THINKING|>No call needed.",
            " maybe[TOOL_CALLS]get_time[ARGS]{}<|END_THINKING|>No call needed.",
        ),
        # Apriel's prompt ends with "Here are my reasoning steps:" (its template).
        (
            "I could run [TOOL_CALLS]get_time[ARGS]{}\n[BEGIN FINAL RESPONSE]\nIt is noon.",
            "I could run \n[TOOL_CALLS]get_time[ARGS]{}[BEGIN FINAL RESPONSE]\nIt is noon.",
        ),
    ],
)
def test_calls_before_a_closer_with_no_opener_are_drafts(text: str, shown: str | None) -> None:
    turn, events = run_text([text], EXAMPLE_TOOLS)
    assert turn.calls == ()
    assert visible_text(events) == (shown or text)
    assert turn.raw_text is None  # nothing was taken out


def test_after_a_closer_with_no_opener_the_reply_starts_again() -> None:
    draft = '<tool_call>{"name": "get_time", "arguments": {}}</tool_call>'
    real = '{"name": "get_weather", "arguments": {"city": "Oslo"}}'
    turn, _ = run_text([f"I think {draft} hmm.</think>\n{real}"], EXAMPLE_TOOLS)
    assert [(c.name, c.arguments) for c in turn.runnable] == [("get_weather", {"city": "Oslo"})]


def test_a_draft_released_by_a_late_closer_reads_the_same_in_any_split() -> None:
    """The closer comes after the draft was read (and its markup held back from the text):
    the markup is put back just before the closer, the same for every split."""
    text = "thinking [TOOL_CALLS]get_time[ARGS]{} more</think>It is noon."
    whole = run_text([text], EXAMPLE_TOOLS)
    for size in (1, 3, 7):
        chunks = [text[i : i + size] for i in range(0, len(text), size)]
        split = run_text(chunks, EXAMPLE_TOOLS)
        assert split[0].calls == whole[0].calls == ()
        assert visible_text(split[1]) == visible_text(whole[1])


@pytest.mark.parametrize(
    ("text", "runs"),
    [
        # llama.cpp (qwen3-coder.cpp, ling3.cpp) and vLLM (Qwen3, Kimi K2) end an unclosed
        # <think> at the call's opener: a call that ends the reply counts...
        ('<think>It is time.\n<tool_call>{"name": "get_time", "arguments": {}}</tool_call>', 1),
        (
            "<think>Check.<|tool_calls_section_begin|><|tool_call_begin|>functions.get_time:0"
            "<|tool_call_argument_begin|>{}<|tool_call_end|><|tool_calls_section_end|>",
            1,
        ),
        # ... one that more reasoning follows is a draft ...
        (
            '<think>Maybe <tool_call>{"name": "get_time", "arguments": {}}</tool_call> or not',
            0,
        ),
        # ... and so is one the closer follows, with only the call after the closer running.
        (
            '<think><tool_call>{"name": "get_time", "arguments": {}}</tool_call></think>'
            '<tool_call>{"name": "get_weather", "arguments": {"city": "Rome"}}</tool_call>',
            1,
        ),
        # A mention of the opener in a thought does not end the thought.
        (
            "<think>I could use <tool_call> tags. [TOOL_CALLS]get_time[ARGS]{}",
            0,
        ),
    ],
)
def test_an_implicit_end_counts_only_at_the_tail(text: str, runs: int) -> None:
    turn, _ = run_text([text], EXAMPLE_TOOLS)
    assert len(turn.runnable) == runs
    if runs and "get_weather" in text:
        assert [c.name for c in turn.runnable] == ["get_weather"]


def test_harmony_analysis_is_reasoning_but_a_call_addressed_on_it_is_not() -> None:
    draft = '[TOOL_CALLS]get_time[ARGS]{"n": 1}'
    analysis = f"<|channel|>analysis<|message|>Use {draft} now.<|end|>"
    assert run_text([analysis], EXAMPLE_TOOLS)[0].calls == ()
    # gpt-oss addresses functions on the analysis channel too (vllm-mlx#562): the recipient
    # before the channel makes it a call, not reasoning.
    call = '<|start|>assistant to=functions.get_time<|channel|>analysis<|message|>{"n": 2}<|call|>'
    turn, _ = run_text([call], EXAMPLE_TOOLS)
    assert [(c.name, c.arguments) for c in turn.runnable] == [("get_time", {"n": 2})]


def test_reasoning_the_server_split_off_is_never_read() -> None:
    """``reasoning_content`` arrives as ``ReasoningDelta``; the stage reads only text."""
    draft = '<tool_call>{"name": "get_time", "arguments": {}}</tool_call>'
    turn, events = run_text([], EXAMPLE_TOOLS, before_finish=[ReasoningDelta(text=draft)])
    assert turn.calls == ()
    assert [e for e in events if isinstance(e, ReasoningDelta)] == [ReasoningDelta(text=draft)]
