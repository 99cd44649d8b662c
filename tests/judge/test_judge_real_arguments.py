"""Real malformed arguments from public reports (``corpus/real_arguments.jsonl``, see its README):
each gets its reviewed verdict, and every rejection tells the model something true and usable.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from toolwire.judge import QUOTE_LIMIT, parse_arguments

CORPUS = Path(__file__).parent / "corpus" / "real_arguments.jsonl"
CASES: list[dict[str, Any]] = [json.loads(line) for line in CORPUS.read_text().splitlines()]


def _judged(case: dict[str, Any]) -> Any:
    cut = case["finish_reason"] in ("length", "max_tokens")
    return parse_arguments(
        case["arguments"],
        tool=case["tool_name"] or "tool",
        schema=case["schema"],
        truncated=True if cut else None,
    )


def test_the_corpus_is_real_and_sourced() -> None:
    assert len(CASES) == 33
    assert len({case["id"] for case in CASES}) == len(CASES)
    for case in CASES:
        assert case["source"].startswith("https://github.com/"), case["id"]
        assert isinstance(case["arguments"], str)
        try:
            decoded = json.loads(case["arguments"])
        except json.JSONDecodeError:
            continue
        # The one strict-JSON text is a string holding the object (double encoding).
        assert isinstance(decoded, str), case["id"]


@pytest.mark.parametrize("case", CASES, ids=[case["id"] for case in CASES])
def test_each_real_case_gets_its_reviewed_verdict(case: dict[str, Any]) -> None:
    verdict = _judged(case)
    expected = case["expected"]
    assert verdict.outcome == expected["outcome"]
    if verdict.outcome == "rejected":
        assert verdict.reason == expected["reason"]
        assert verdict.arguments is None
    else:
        assert list(verdict.repairs) == expected["repairs"]
        assert verdict.arguments == expected["arguments"]


@pytest.mark.parametrize(
    "case",
    [case for case in CASES if case["expected"]["outcome"] == "rejected"],
    ids=lambda case: case["id"],
)
def test_each_rejection_names_the_tool_and_quotes_what_came(case: dict[str, Any]) -> None:
    verdict = _judged(case)
    message = verdict.message
    assert message is not None
    assert f"`{case['tool_name'] or 'tool'}`" in message
    head = case["arguments"][: min(QUOTE_LIMIT, 40)].strip()
    assert head.splitlines()[0] in message
    # No stream here says the token limit cut anything, so no message may say it did.
    assert "token limit" not in message
    assert "token-limit" not in message
