"""Streaming: any split of the text gives the same calls and the same visible text; ordinary
text is not held; text that may open a call is held only until it is known."""

from __future__ import annotations

from typing import Any

import msgspec
from hypothesis import given, settings
from hypothesis import strategies as st

from toolwire.core.events import TextDelta, ToolCallStarted

from ._harness import corpus_cases, events_of, run_steps, run_text, tools_for, visible_text

CASES = [c for c in corpus_cases() if c["kind"] in ("text_call", "negative", "cut_call")]


def _summary(chunks: list[str], tools: Any) -> tuple[Any, ...]:
    turn, events = run_text(chunks, tools)
    calls = [(c.name, c.arguments_raw, c.truncated, c.outcome, c.text_family) for c in turn.calls]
    return calls, visible_text(events), turn.raw_text, turn.stop_reason


@settings(max_examples=300, deadline=None)
@given(st.sampled_from(CASES), st.lists(st.integers(min_value=0, max_value=10_000), max_size=12))
def test_any_split_gives_the_same_turn(case: dict[str, Any], cuts: list[int]) -> None:
    text = case["text"]
    tools = tools_for(case)
    points = sorted({cut % (len(text) + 1) for cut in cuts})
    chunks = [text[a:b] for a, b in zip([0, *points], [*points, len(text)], strict=True)]
    assert _summary(chunks, tools) == _summary([text], tools)


def test_every_corpus_case_one_character_at_a_time() -> None:
    for case in CASES:
        tools = tools_for(case)
        text = case["text"]
        assert _summary(list(text), tools) == _summary([text], tools), case["id"]


TOOLS = [{"type": "function", "function": {"name": "get_time", "parameters": {}}}]


def _emitted_per_delta(chunks: list[str]) -> list[str]:
    from toolwire.stages.text_calls import TextCallStage

    step = TextCallStage(None, TOOLS).start()
    return [
        "".join(e.text for e in step.feed(TextDelta(text=c)) if isinstance(e, TextDelta))
        for c in chunks
    ]


def test_ordinary_text_passes_at_once() -> None:
    chunks = ["Hello", ", this is ", "plain text (with a < b", " and [1] too) ", "done."]
    emitted = _emitted_per_delta(chunks)
    assert emitted[:2] == chunks[:2]
    assert "".join(emitted) == "".join(chunks)


def test_a_possible_opener_is_held_until_known() -> None:
    chunks = ["Sure. <tool", "ing is", " fun", "ny."]
    # " fun" may grow into "functools[" (Firefunction v2, Phi-4-mini): held one delta.
    assert _emitted_per_delta(chunks) == ["Sure. ", "<tooling is", " ", "funny."]


def test_a_whole_reply_candidate_is_held_until_its_first_key() -> None:
    emitted = _emitted_per_delta(['{"cit', 'y": "Paris"', "}"])
    # Held while it may be a call object; released whole at its first key that no call has.
    assert emitted == ["", '{"city": "Paris"', "}"]


def test_a_structured_call_cancels_recovery_for_the_turn() -> None:
    text = '<tool_call>{"name": "get_time", "arguments": {}}</tool_call>'
    structured = ToolCallStarted(call_id="c1", name="get_time", index=0)
    from toolwire.stages.text_calls import TextCallStage

    out = run_steps([TextCallStage(None, TOOLS)], events_of([text], before_finish=[structured]))
    assert visible_text(out) == text
    assert [e for e in out if isinstance(e, ToolCallStarted)] == [structured]


@settings(max_examples=200, deadline=None)
@given(
    st.sampled_from(CASES),
    st.integers(min_value=1, max_value=9),
    st.integers(min_value=1, max_value=50),
)
def test_a_batch_gives_what_its_events_give(case: dict[str, Any], size: int, batch: int) -> None:
    """``feed_batch`` (the fused loop's fast path) gives the text and events of ``feed``."""
    from toolwire.stages.text_calls import TextCallStage

    text = case["text"]
    events = events_of([text[i : i + size] for i in range(0, len(text), size)])

    def run(batch_size: int) -> tuple[str, list[Any]]:
        out = run_steps([TextCallStage(None, tools_for(case))], events, batch=batch_size)
        others = [
            msgspec.structs.replace(e, call_id="") if hasattr(e, "call_id") else e
            for e in out
            if not isinstance(e, TextDelta)
        ]
        return visible_text(out), others

    assert run(batch) == run(0)
