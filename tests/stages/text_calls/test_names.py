"""Tool names as requests offer them, in every family's markup: dotted, namespaced, dashed, a
leading digit. A name counts when it is offered as written; nothing is stripped or completed.

Names of this shape are real: MCP tool names allow letters, digits, ``_``, ``-`` and ``.``
(Claude Code's ``mcp__server__tool``), OpenAI's Chat Completions allows ``^[a-zA-Z0-9_-]{1,64}$``,
and issue 28's independent set held ``Calendar.create_event``. Each family's form is written
here from its template (llama.cpp ``models/templates/``), none copied from a parser's tests.

And ``"arguments"`` given as a JSON string holding one object
(``{"name": "f", "arguments": "{\\"a\\": 1}"}``) is read as that object, by the judge's own
``double_encoded`` rule for structured calls.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from toolwire.stages.text_calls.deepseek import deepseek_token as _ds

from ._harness import run_text

Render = Callable[[str], str]

FORMS: dict[str, Render] = {
    "hermes": lambda n: f'<tool_call>{{"name": "{n}", "arguments": {{"a": 1}}}}</tool_call>',
    "json": lambda n: f'{{"name": "{n}", "arguments": {{"a": 1}}}}',
    "llama": lambda n: f'<|python_tag|>{{"name": "{n}", "parameters": {{"a": 1}}}}',
    "llama-function": lambda n: f'<function={n}>{{"a": 1}}</function>',
    "pythonic": lambda n: f"[{n}(a=1)]",
    "lfm2": lambda n: f"<|tool_call_start|>[{n}(a=1)]<|tool_call_end|>",
    "qwen3-coder": lambda n: (
        f"<tool_call>\n<function={n}>\n<parameter=a>\n1\n</parameter>\n</function>\n</tool_call>"
    ),
    "glm": lambda n: (
        f"<tool_call>{n}\n<arg_key>a</arg_key>\n<arg_value>1</arg_value>\n</tool_call>"
    ),
    "glm-markerless": lambda n: f'{n}\n{{"a": 1}}',
    "mistral": lambda n: f'[TOOL_CALLS]{n}[ARGS]{{"a": 1}}',
    "kimi": lambda n: (
        f"<|tool_calls_section_begin|><|tool_call_begin|>functions.{n}:0"
        '<|tool_call_argument_begin|>{"a": 1}<|tool_call_end|><|tool_calls_section_end|>'
    ),
    "deepseek": lambda n: (
        f"{_ds('tool_calls_begin')}{_ds('tool_call_begin')}{n}{_ds('tool_sep')}"
        f'{{"a": 1}}{_ds("tool_call_end")}{_ds("tool_calls_end")}'
    ),
    "harmony": lambda n: (
        f'<|channel|>commentary to=functions.{n} <|constrain|>json<|message|>{{"a": 1}}<|call|>'
    ),
    "harmony-recipient-first": lambda n: (
        f' to=functions.{n}<|channel|>commentary json<|message|>{{"a": 1}}'
    ),
    "harmony-stripped": lambda n: f'commentary to=functions.{n} json{{"a": 1}}',
    "gemma4": lambda n: f"<|tool_call>call:{n}{{a:1}}<tool_call|>",
    "functiongemma": lambda n: f"<start_function_call>call:{n}{{a:1}}<end_function_call>",
}
NAMES = ("Calendar.create_event", "mcp__my-server__get_time", "a-b", "3d_render", "functions.x")
SCHEMA = {"type": "object", "properties": {"a": {"type": "integer"}}}


def _tools(*names: str) -> list[dict[str, Any]]:
    return [{"type": "function", "function": {"name": n, "parameters": SCHEMA}} for n in names]


@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize("family", sorted(FORMS))
def test_an_offered_name_is_that_tool_in_every_family(family: str, name: str) -> None:
    text = FORMS[family](name)
    turn, _ = run_text([text], _tools(name))
    assert [(call.name, call.arguments) for call in turn.runnable] == [(name, {"a": 1})]
    by_character, _ = run_text(list(text), _tools(name))  # a name cut at a "." or "-"
    assert [call.name for call in by_character.runnable] == [name]


@pytest.mark.parametrize("family", sorted(FORMS))
def test_a_name_is_never_completed_or_stripped(family: str) -> None:
    """``Calendar.create`` is not ``Calendar.create_event``; ``functions.get_time`` (harmony's
    namespace aside) is not ``get_time``; ``Calendar.create_event`` is not ``create_event``."""
    for written, offered in [
        ("Calendar.create", "Calendar.create_event"),
        ("Calendar.create_event", "create_event"),
        ("mcp__fs__read", "mcp__fs__read-file"),
    ]:
        turn, _ = run_text([FORMS[family](written)], _tools(offered))
        assert turn.calls == (), (written, offered)


@pytest.mark.parametrize("family", ["hermes", "json", "llama", "mistral", "pythonic"])
def test_the_functions_prefix_is_no_namespace_outside_harmony_and_kimi(family: str) -> None:
    turn, _ = run_text([FORMS[family]("functions.get_time")], _tools("get_time"))
    assert turn.calls == ()


def test_in_harmony_and_kimi_functions_is_the_namespace() -> None:
    """A tool offered as ``functions.x`` is ``functions.functions.x`` there; ``x`` is ``x``."""
    for family in ("harmony", "kimi"):
        turn, _ = run_text([FORMS[family]("get_time")], _tools("functions.get_time"))
        assert turn.calls == (), family


ARGUMENTS_AS_A_STRING = [
    # a whole reply (Llama 3.x bare JSON) and after <|python_tag|>: the arguments a JSON string
    '{"name": "f", "arguments": "{\\"a\\": 1}"}',
    '{"name": "f", "parameters": "{\\"a\\": 1}"}',
    '<|python_tag|>{"name": "f", "parameters": "{\\"a\\": 1}"}',
    '[{"name": "f", "arguments": "{\\"a\\": 1}"}]',
    # inside a wrapper it was read before issue 28 too; the same rule
    '<tool_call>{"name": "f", "arguments": "{\\"a\\": 1}"}</tool_call>',
]


@pytest.mark.parametrize("text", ARGUMENTS_AS_A_STRING)
def test_arguments_given_as_a_json_string_holding_an_object(text: str) -> None:
    turn, _ = run_text([text], _tools("f"))
    (call,) = turn.runnable
    assert call.arguments == {"a": 1}
    assert call.verdict is not None
    assert call.verdict.repairs == ("double_encoded",)


@pytest.mark.parametrize(
    "text",
    [
        '{"name": "f", "arguments": "hello"}',
        '{"name": "f", "arguments": "[1, 2]"}',
        '{"name": "f", "arguments": "{\\"a\\": "}',
        '{"name": "f", "arguments": 3}',
        '<|python_tag|>{"name": "f", "parameters": "null"}',
    ],
)
def test_a_whole_reply_whose_arguments_string_holds_no_object_is_no_call(text: str) -> None:
    turn, _ = run_text([text], _tools("f"))
    assert turn.calls == ()
    assert turn.text == text
