"""``Pipeline.repair_history`` in every history format: each broken call written as rejected.

The broken arguments are the corpus's histories (``corpus_cases.jsonl``: ``history_cause`` of
llama.cpp#25510 ``{``, club-3090#665 cut at max_tokens, vLLM#43995 unescaped quotes) and the
model's markup left where arguments belong (LM Studio + Qwen3-Coder, opencode#1585). Each
history is checked, repaired, and checked again: no problem is left, the input is unchanged,
every broken call has safe arguments and exactly one result that says what was wrong.
"""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest

import toolwire

BROKEN = {
    "open_brace": "{",
    "cut": '{"service":"checkout","window":"24h"',
    "unescaped_quotes": '{"filePath": "/tmp/t.txt", "newString": "He said "hello" and left"}',
    "markup": "<function=write>\n<parameter=path>\na.txt\n</parameter>\n</function>",
}


def chat(arguments: Any, *, answered: bool, role: str = "tool") -> list[dict[str, Any]]:
    calls = [
        {"id": "c1", "type": "function", "function": {"name": "get", "arguments": arguments}},
        {"id": "c2", "type": "function", "function": {"name": "get", "arguments": "{}"}},
    ]
    results = [{"role": role, "tool_call_id": "c2", "content": "two"}]
    if answered:
        results.insert(0, {"role": role, "tool_call_id": "c1", "content": "one"})
    return [
        {"role": "user", "content": "go"},
        {"role": "assistant", "content": "", "tool_calls": calls},
        *results,
        {"role": "user", "content": "next"},
    ]


def responses(arguments: Any, *, answered: bool) -> list[dict[str, Any]]:
    items: list[dict[str, Any]] = [
        {"type": "function_call", "call_id": "c1", "name": "get", "arguments": arguments},
        {"type": "function_call", "call_id": "c2", "name": "get", "arguments": "{}"},
        {"type": "function_call_output", "call_id": "c2", "output": "two"},
    ]
    if answered:
        items.insert(2, {"type": "function_call_output", "call_id": "c1", "output": "one"})
    return items


def anthropic(arguments: Any, *, answered: bool) -> list[dict[str, Any]]:
    results = [{"type": "tool_result", "tool_use_id": "c2", "content": "two"}]
    if answered:
        results.insert(0, {"type": "tool_result", "tool_use_id": "c1", "content": "one"})
    return [
        {"role": "user", "content": "go"},
        {
            "role": "assistant",
            "content": [
                {"type": "tool_use", "id": "c1", "name": "get", "input": arguments},
                {"type": "tool_use", "id": "c2", "name": "get", "input": {}},
            ],
        },
        {"role": "user", "content": results},
    ]


def gemini(arguments: Any, *, answered: bool) -> list[dict[str, Any]]:
    responses = [{"functionResponse": {"name": "get", "response": {"output": "one"}}}]
    if not answered:
        responses = []
    return [
        {"role": "user", "parts": [{"text": "go"}]},
        {"role": "model", "parts": [{"functionCall": {"name": "get", "args": arguments}}]},
        *([{"role": "user", "parts": responses}] if responses else []),
    ]


def ollama(arguments: Any, *, answered: bool) -> list[dict[str, Any]]:
    calls = [
        {"function": {"name": "get", "arguments": arguments}},
        {"function": {"name": "get", "arguments": {}}},
    ]
    results = [{"role": "tool", "content": "two", "tool_name": "get"}]
    if answered:
        results.insert(0, {"role": "tool", "content": "one", "tool_name": "get"})
    else:
        results = []  # paired by order: a missing first result cannot be told apart
    return [
        {"role": "user", "content": "go"},
        {"role": "assistant", "content": "", "tool_calls": calls},
        *results,
    ]


FORMATS = {
    "openai-chat": chat,
    "openai-responses": responses,
    "anthropic": anthropic,
    "gemini": gemini,
    "ollama": ollama,
}


@pytest.mark.parametrize("answered", [True, False], ids=["answered", "unanswered"])
@pytest.mark.parametrize("broken", sorted(BROKEN))
@pytest.mark.parametrize("provider", sorted(FORMATS))
def test_every_broken_call_is_written_as_rejected(
    provider: str, broken: str, answered: bool
) -> None:
    if provider == "ollama" and not answered:
        answered = True  # see ``ollama``: results without ids pair by order
    pipeline = toolwire.Pipeline(provider)
    history = FORMATS[provider](BROKEN[broken], answered=answered)
    before = copy.deepcopy(history)
    problems = pipeline.check_history(history)
    kinds = {problem.kind for problem in problems}
    expected = "arguments_markup" if broken == "markup" else None
    assert kinds & {"arguments_not_json", "arguments_not_object", "arguments_markup"}
    if expected is not None:
        assert expected in kinds
    repair = pipeline.repair_history(history)
    assert history == before, "the input is not changed"
    assert pipeline.check_history(repair.messages) == []
    position = 0 if provider == "openai-responses" else 1  # the broken call's message
    assert len(repair.changes) == 1
    assert repair.changes[0].index == position
    written = json.dumps(repair.messages)
    assert "could not be sent back as it was" in written
    assert written.count("could not be sent back") == 1, "exactly one result for the call"
    if answered and provider != "gemini":
        assert "The result sent for it before: one" in written


@pytest.mark.parametrize("provider", sorted(FORMATS))
def test_a_sound_history_is_returned_as_it_was(provider: str) -> None:
    pipeline = toolwire.Pipeline(provider)
    arguments: Any = "{}" if provider in ("openai-chat", "openai-responses") else {}
    history = FORMATS[provider](arguments, answered=True)
    repair = pipeline.repair_history(history)
    assert repair.changes == ()
    assert repair.messages == history


def test_the_llama_cpp_profile_writes_results_as_it_reads_them() -> None:
    # llama-cpp-python drops role: tool messages: results are user messages naming the call.
    pipeline = toolwire.Pipeline("llama-cpp")
    history = chat(BROKEN["cut"], answered=False, role="user")
    repair = pipeline.repair_history(history)
    assert pipeline.check_history(repair.messages) == []
    added = [m for m in repair.messages if m.get("tool_call_id") == "c1"]
    assert [m["role"] for m in added] == ["user"]
    assert added[0]["content"].startswith("Result of tool call `get` (id c1)")
