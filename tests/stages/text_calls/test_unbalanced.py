"""A complete wrapper around an offered tool's call whose JSON lacks a closing bracket: a call,
rejected (never run, never completed) with a true message, not text (issue 27).

Issue 27's case: SmolLM2 on llama-server writes ``<tool_call>[{...}]</tool_call>``
(``tests/demo/recordings/text_calls_chatml.json`` holds its complete form) and once wrote it
with one ``}`` missing; the block was left as text, so the agent saw markup and healing could
not ask again. The other rows of ``families.py`` that hold JSON between an opener and a closer
are held to the same rule, from their data.
"""

from __future__ import annotations

from typing import Any

import pytest

from toolwire.stages.text_calls._shapes import COHERE_CALL, NAME_KEYED_CALL
from toolwire.stages.text_calls.families import WRAPPED_FAMILIES

from ._harness import run_text, visible_text

TOOLS = [
    {
        "type": "function",
        "function": {
            "name": name,
            "parameters": {"type": "object", "properties": {"path": {}, "content": {}, "tags": {}}},
        },
    }
    for name in ("write_file", "get_weather")
]

REJECTED = [
    # Issue 27: the call object's "}" missing inside a list.
    '<tool_call>[{"name": "write_file", "arguments": {"path": "a.txt", "content": "Bonjour"}]'
    "</tool_call>",
    # The call object's "}" missing (the arguments read whole, but the "}" may belong anywhere).
    '<tool_call>\n{"name": "write_file", "arguments": {"path": "a.txt", "content": "hi"}\n'
    "</tool_call>",
    # An array's "]" missing inside the arguments.
    '<tool_call>{"name": "write_file", "arguments": {"tags": ["a", "b"}}</tool_call>',
    # Two missing (the arguments' and the call's), a closer inside a string before the real one.
    '<tool_call>{"name": "write_file", "arguments": {"content": "</tool_call>"</tool_call>',
]


@pytest.mark.parametrize("text", REJECTED)
def test_a_complete_wrapper_around_an_unbalanced_call_is_a_rejected_call(text: str) -> None:
    turn, events = run_text([text], TOOLS)
    (call,) = turn.calls
    assert (call.name, call.origin, call.text_family) == ("write_file", "text", "hermes")
    assert call.verdict is not None
    assert (call.verdict.outcome, call.verdict.reason) == ("rejected", "not_json")
    assert not call.may_run
    assert not call.truncated  # the wrapper was closed: nothing was cut
    assert not turn.truncated
    assert call.arguments is None  # never completed
    message = call.verdict.message or ""
    assert message.startswith("Tool call `write_file`")
    assert "was not run: the call is not valid JSON" in message
    assert "a closing bracket is missing" in message
    assert "Why it stopped" not in message
    written = text[len("<tool_call>") : text.rindex("</tool_call>")].strip()
    assert call.arguments_raw == written  # the call as written, quoted to the model
    assert visible_text(events) == ""  # the markup left the text, as for any recovered call
    assert turn.stop_reason == "tool_calls"


@pytest.mark.parametrize("size", [1, 2, 5, 13])
def test_any_split_gives_the_same_rejected_call(size: int) -> None:
    text = REJECTED[0]
    whole, _ = run_text([text], TOOLS)
    split, _ = run_text([text[i : i + size] for i in range(0, len(text), size)], TOOLS)
    key = [
        (c.name, c.arguments_raw, c.outcome, c.verdict.reason if c.verdict else None)
        for c in whole.calls
    ]
    assert [
        (c.name, c.arguments_raw, c.outcome, c.verdict.reason if c.verdict else None)
        for c in split.calls
    ] == key


NOT_CALLS = [
    # Not an offered tool: no name is guessed.
    '<tool_call>{"name": "delete_all", "arguments": {"path": "/"}</tool_call>',
    # No call object inside: JSON in a wrapper is not a call.
    '<tool_call>{"path": {"a": 1}</tool_call>',
    # A bracket too many is not one missing.
    '<tool_call>{"name": "write_file", "arguments": {}}}</tool_call>',
    # A bracket missing and another too many: no one reading.
    '<tool_call>[{"name": "write_file", "arguments": {"a": [1}}]]</tool_call>',
    # Prose after it: the wrapper counts only at the tail of the reply.
    'A model writes <tool_call>{"name": "write_file", "arguments": {}</tool_call> then stops.',
    # In a code fence: documentation.
    '```\n<tool_call>{"name": "write_file", "arguments": {}</tool_call>\n```',
    # Inside reasoning: a draft.
    '<think><tool_call>{"name": "write_file", "arguments": {}</tool_call></think>Done.',
]


@pytest.mark.parametrize("text", NOT_CALLS)
def test_not_a_call(text: str) -> None:
    turn, events = run_text([text], TOOLS)
    assert turn.calls == ()
    assert visible_text(events) == text


def test_a_string_left_open_before_the_closer_is_still_a_cut_call() -> None:
    """The closer is inside the open string by JSON's rules: the text ends inside the call."""
    turn, _ = run_text(
        ['<tool_call>{"name": "write_file", "arguments": {"path": "a</tool_call>'], TOOLS
    )
    (call,) = turn.calls
    assert call.truncated
    assert call.verdict is not None
    assert call.verdict.reason == "truncated"


def _body(shape: Any, listed: bool) -> str:
    """A call of ``get_weather`` in ``shape`` with its object's closing brace missing."""
    if shape == COHERE_CALL:
        call = '{"tool_call_id": "0", "tool_name": "get_weather", "parameters": {"path": "x"}'
    elif shape == NAME_KEYED_CALL:
        call = '{"get_weather": {"path": "x"}'
    else:
        call = '{"name": "get_weather", "arguments": {"path": "x"}'
    return f"[{call}]" if listed else call


ROWS = [row for row in WRAPPED_FAMILIES if row.closer and row.grammar != "pythonic"]


@pytest.mark.parametrize("row", ROWS, ids=[f"{row.family} {row.opener}" for row in ROWS])
def test_every_json_family_with_a_closer_rejects_it(row: Any) -> None:
    """Every row of ``families.py`` whose JSON call stands between an opener and a closer."""
    if row.name_end:  # the name outside the JSON (Solar Open, PLaMo 3): only the arguments
        named = "a1b2c3d4e5" + row.id_end if row.id_end else ""
        body = named + "get_weather" + row.name_end + '{"path": "x"'
    else:
        body = _body(row.shape, listed=not row.bare)
    text = row.opener + "".join(row.then) + body + row.closer
    turn, _ = run_text([text], TOOLS)
    assert [(c.name, c.text_family, c.outcome) for c in turn.calls] == [
        ("get_weather", row.family, "rejected")
    ]
    (call,) = turn.calls
    assert call.verdict is not None
    assert call.verdict.reason == "not_json"
