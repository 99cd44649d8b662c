"""The evidence corpus (``corpus/``: real cases from public reports, each with its source, and
synthetic negatives and cuts), through the text-call stage and the judge.

The bar of issue 17: recall of the calls left in text >= 0.9, no false positive on any negative,
no cut or malformed call recovered as a runnable call, no crash. The exact figures are asserted
so that a change to them is a visible change here.
"""

from __future__ import annotations

from typing import Any

import pytest

from ._harness import corpus_cases, run_text, tools_for

KINDS = ("text_call", "negative", "cut_call", "out_of_scope")
CASES = [case for case in corpus_cases() if case["kind"] in KINDS]


def _runnable(case: dict[str, Any]) -> tuple[list[dict[str, Any]], Any]:
    turn, _ = run_text([case["text"]], tools_for(case))
    return [{"name": c.name, "arguments": c.arguments} for c in turn.runnable], turn


def test_recall_of_calls_left_in_text() -> None:
    expected_calls = [case for case in CASES if isinstance(case["expected"], list)]
    recovered = [case["id"] for case in expected_calls if _runnable(case)[0] == case["expected"]]
    missed = sorted({case["id"] for case in expected_calls} - set(recovered))
    # 55 of 56; the one missed is markup inside a structured call's *arguments* (LM Studio,
    # opencode#1585), not text: the judge rejects that call, the text stage never sees it.
    # (Issue 28 made syn-neg-json-lines-dataset, call objects one per line, a text call, and
    # added reports.jsonl, 26 of whose 26 cases with calls are recovered; two were missed
    # before: DeepSeek's DSML with its bars doubled, command-code#909, and LFM2.5's call with
    # ChatML's <|im_end|> left after it, little-coder#42. The cases once taken from servers' own
    # parser tests, Ollama's *_test.go and vLLM's, were removed: those suites are an independent
    # measure of this work, see the corpus README.)
    assert (len(recovered), len(expected_calls)) == (55, 56)
    assert missed == ["tc-opencode-1585-qwen3coder-xml-in-arguments"]
    assert len(recovered) / len(expected_calls) >= 0.9


@pytest.mark.parametrize(
    "case", [c for c in CASES if c["kind"] in ("negative", "out_of_scope")], ids=lambda c: c["id"]
)
def test_no_call_from_a_negative(case: dict[str, Any]) -> None:
    """Not even a rejected call: the text stays the text, unchanged."""
    turn, _events = run_text([case["text"]], tools_for(case))
    assert turn.calls == ()
    assert turn.text == case["text"]
    assert turn.raw_text is None


@pytest.mark.parametrize(
    "case",
    [c for c in CASES if c["expected"] in ("truncated", "malformed")],
    ids=lambda c: c["id"],
)
def test_cut_and_malformed_calls_never_run(case: dict[str, Any]) -> None:
    runnable, turn = _runnable(case)
    allowed = [
        {"name": call["name"], "arguments": call["arguments"]}
        for call in case.get("per_call", ())
        if "arguments" in call
    ]
    assert runnable == allowed
    if case["expected"] == "truncated" and turn.calls:
        assert all(call.truncated for call in turn.rejected)
        assert turn.truncated


def test_every_cut_call_with_a_name_is_reported_truncated() -> None:
    """A cut call is not silently text when its name is known: it is a truncated call."""
    cuts = [c for c in CASES if c["expected"] == "truncated"]
    reported = [c["id"] for c in cuts if run_text([c["text"]], tools_for(c))[0].calls]
    assert len(reported) >= 0.8 * len(cuts), (len(reported), len(cuts))


@pytest.mark.parametrize(
    "case", [c for c in CASES if isinstance(c["expected"], list)], ids=lambda c: c["id"]
)
def test_markup_leaves_the_text_and_the_raw_text_is_kept(case: dict[str, Any]) -> None:
    turn, _ = run_text([case["text"]], tools_for(case))
    if not turn.calls:
        return
    assert turn.raw_text == case["text"]
    assert len(turn.text) < len(case["text"])
    assert all(call.origin == "text" and call.text_family for call in turn.calls)


def test_the_corpus_keeps_its_provenance() -> None:
    """Every case names its public source (or what it was derived from)."""
    for case in corpus_cases():
        assert case.get("source") or case.get("derived_from"), case["id"]
