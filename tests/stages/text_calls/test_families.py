"""One table of cases per family reader: what is a call, with which arguments, and what is not."""

from __future__ import annotations

from typing import Any

import pytest

from toolwire.core.errors import ConfigurationError
from toolwire.core.events import Finish
from toolwire.stages.text_calls import (
    Found,
    ReadContext,
    ReadResult,
    TextCall,
    TextCallReader,
    readers_for,
    register_text_call_reader,
    registry,
    text_call_families,
)
from toolwire.stages.text_calls.deepseek import deepseek_token as _ds

from ._harness import run_text

SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "city": {"type": "string"},
        "n": {"type": "integer"},
        "on": {"type": "boolean"},
        "tags": {"type": "array"},
    },
}
TOOLS = [
    {"type": "function", "function": {"name": name, "parameters": SCHEMA}}
    for name in ("get_weather", "get_time")
]

# (family, text, expected runnable calls as (name, arguments))
CALLS: list[tuple[str, str, list[tuple[str, dict[str, Any]]]]] = [
    (
        "hermes",
        '<tool_call>{"name": "get_weather", "arguments": {"city": "Paris"}}</tool_call>',
        [("get_weather", {"city": "Paris"})],
    ),
    (
        "hermes",
        '<tool_call>[{"name": "get_weather", "arguments": {"city": "a</tool_call>b"}}]</tool_call>',
        [("get_weather", {"city": "a</tool_call>b"})],
    ),
    (
        "hermes",
        'Let me check.\n<tool_call>\n{"name": "get_weather", "arguments": {"city": "X",}}'
        '\n</tool_call>\n<tool_call>{"name": "get_time", "arguments": {}}</tool_call>\n',
        [("get_weather", {"city": "X"}), ("get_time", {})],
    ),
    (
        "hermes",
        '<think>draft <tool_call>{"name": "get_time", "arguments": {}}</tool_call></think>'
        '<tool_call>{"name": "get_weather", "arguments": {"city": "Y"}}</tool_call>',
        [("get_weather", {"city": "Y"})],
    ),
    (
        "json",
        '{"name": "get_weather", "arguments": {"city": "Paris"}}',
        [("get_weather", {"city": "Paris"})],
    ),
    ("json", '  ```json\n[{"name": "get_time", "parameters": {}}]\n```  ', [("get_time", {})]),
    (
        "json",
        '{"type": "function", "name": "get_time", "parameters": {"n": 1}}',
        [("get_time", {"n": 1})],
    ),
    (
        "json",
        '{"tool_calls": [{"name": "get_time", "arguments": {}, "id": "1"}]}',
        [("get_time", {})],
    ),
    (
        "llama",
        '<|python_tag|>{"name": "get_time", "parameters": {"n": 2}}<|eom_id|>',
        [("get_time", {"n": 2})],
    ),
    (
        "llama",
        '<function=get_weather>{"city": "Oslo"}</function>',
        [("get_weather", {"city": "Oslo"})],
    ),
    (
        "pythonic",
        "[get_weather(city='Paris', on=True), get_time()]",
        [("get_weather", {"city": "Paris", "on": True}), ("get_time", {})],
    ),
    ("lfm2", "<|tool_call_start|>[get_time(n=3)]<|tool_call_end|>", [("get_time", {"n": 3})]),
    (
        "gemma-tool-code",
        '```tool_code\nget_weather(city="Rome")\n```',
        [("get_weather", {"city": "Rome"})],
    ),
    (
        "qwen3-coder",
        "<tool_call>\n<function=get_weather>\n<parameter=city>\nNew York\n"
        "</parameter>\n<parameter=n>\n7\n</parameter>\n</function>\n</tool_call>",
        [("get_weather", {"city": "New York", "n": 7})],
    ),
    (
        "glm",
        "<tool_call>get_weather\n<arg_key>on</arg_key>\n<arg_value>true</arg_value>\n</tool_call>",
        [("get_weather", {"on": True})],
    ),
    ("glm-markerless", 'get_time\n{"n": 5}', [("get_time", {"n": 5})]),
    ("mistral", '[TOOL_CALLS]get_time[CALL_ID]a1b2c3d4e[ARGS]{"n": 1}', [("get_time", {"n": 1})]),
    (
        "kimi",
        "<|tool_calls_section_begin|><|tool_call_begin|>functions.get_time:0"
        '<|tool_call_argument_begin|>{"n": 4}<|tool_call_end|><|tool_calls_section_end|>',
        [("get_time", {"n": 4})],
    ),
    (
        "deepseek",
        f"{_ds('tool_calls_begin')}{_ds('tool_call_begin')}get_time{_ds('tool_sep')}{{}}"
        f"{_ds('tool_call_end')}{_ds('tool_calls_end')}",
        [("get_time", {})],
    ),
    (
        "harmony",
        '<|channel|>commentary to=functions.get_time <|constrain|>json<|message|>{"n": 9}<|call|>',
        [("get_time", {"n": 9})],
    ),
    ("harmony", 'commentary to=functions.get_time json{"n": 8}', [("get_time", {"n": 8})]),
    (
        "gemma4",
        '<|tool_call>call:get_weather{city:<|"|>a "b" c<|"|>}<tool_call|>',
        [("get_weather", {"city": 'a "b" c'})],
    ),
    (
        "functiongemma",
        "<start_function_call>call:get_weather{city:<escape>Lyon<escape>}<end_function_call>",
        [("get_weather", {"city": "Lyon"})],
    ),
]

NOT_CALLS = [
    'Use `<tool_call>{"name": "get_time", "arguments": {}}</tool_call>` in the prompt.',
    'A model writes <tool_call>{"name": "get_time", "arguments": {}}</tool_call> then stops.',
    '<tool_call>{"name": "get_time", "arguments": {}}</tool_call>\nThat is the format.',
    '```\n<tool_call>{"name": "get_time", "arguments": {}}</tool_call>\n```',
    '{"name": "get_time", "arguments": {}, "description": "a schema"}',
    '{"name": "delete_everything", "arguments": {}}',
    'Here: {"name": "get_time", "arguments": {}}',
    "[get_time(x)]",
    "get_time(n=1)",
    "call:get_time{n:1}",
    "<|tool_calls_section_begin|><|tool_call_begin|>0<|tool_call_argument_begin|>{}"
    "<|tool_call_end|><|tool_calls_section_end|>",
    '<think>\n<tool_call>{"name": "get_time", "arguments": {}}</tool_call>\n</think>\nNo.',
]


@pytest.mark.parametrize(("family", "text", "expected"), CALLS)
def test_family_reads_its_calls(
    family: str, text: str, expected: list[tuple[str, dict[str, Any]]]
) -> None:
    turn, _ = run_text([text], TOOLS)
    assert [(call.name, call.arguments) for call in turn.runnable] == expected
    assert {call.text_family for call in turn.calls} == {family}
    assert turn.stop_reason == "tool_calls"


@pytest.mark.parametrize("family", sorted({case[0] for case in CALLS}))
def test_a_family_is_read_only_when_chosen(family: str) -> None:
    text = next(case[1] for case in CALLS if case[0] == family)
    others = [name for name in text_call_families() if name != family]
    assert run_text([text], TOOLS, families=others)[0].calls == ()
    assert run_text([text], TOOLS, families=[family])[0].calls != ()


@pytest.mark.parametrize("text", NOT_CALLS)
def test_not_a_call(text: str) -> None:
    turn, _ = run_text([text], TOOLS)
    assert turn.calls == ()
    assert turn.text == text


def test_without_tools_nothing_is_read() -> None:
    text = CALLS[0][1]
    assert run_text([text], None)[0].calls == ()
    assert run_text([text], [])[0].text == text


@pytest.mark.parametrize(
    "text",
    [
        '<tool_call>{"name": "get_weather", "arguments": {"city": "Par',
        '<tool_call>{"name": "get_weather", "arguments": {"city": "Paris"}}',
        "[TOOL_CALLS]get_time[ARGS]",
        "<tool_call>\n<function=get_weather>\n<parameter=city>\nPar",
        "[get_weather(city='Par",
    ],
)
def test_a_cut_call_is_truncated_and_never_runs(text: str) -> None:
    turn, _ = run_text([text], TOOLS)
    assert [call.name for call in turn.calls] in (["get_weather"], ["get_time"])
    assert turn.runnable == ()
    assert turn.calls[0].truncated
    assert turn.truncated
    assert turn.cut_by == "unknown"
    assert "arguments_unterminated" in turn.truncation_evidence


def test_a_cut_at_the_token_limit_says_so() -> None:
    finish = Finish(
        reason="length",
        raw="length",
        truncated=True,
        evidence=("finish_reason",),
        cut_by="token_limit",
    )
    text = '[TOOL_CALLS]get_time[ARGS]{"n": 1}'  # looks complete; the limit cut it there
    turn, _ = run_text([text], TOOLS, finish=finish)
    (call,) = turn.calls
    assert call.truncated
    assert not call.may_run
    assert call.verdict is not None
    assert call.verdict.reason == "truncated"
    assert turn.stop_reason == "length"


def test_a_closed_call_before_the_limit_is_complete() -> None:
    finish = Finish(
        reason="length",
        raw="length",
        truncated=True,
        evidence=("finish_reason",),
        cut_by="token_limit",
    )
    text = '<tool_call>{"name": "get_time", "arguments": {}}</tool_call>\n'
    turn, _ = run_text([text], TOOLS, finish=finish)
    assert [call.may_run for call in turn.calls] == [True]


def test_xml_values_stay_text_unless_the_schema_is_certain() -> None:
    text = (
        "<function=get_weather>\n<parameter=n>\nseven\n</parameter>\n<parameter=extra>\n1\n"
        "</parameter>\n</function>"
    )
    turn, _ = run_text([text], TOOLS, judge=False)
    assert turn.calls[0].arguments_raw == '{"n":"seven","extra":"1"}'


class _BangReader(TextCallReader):
    family = "bang-test"
    openers = ("!!call ",)

    def read(self, text: str, start: int, context: ReadContext) -> ReadResult:
        end = text.find("\n", start)
        if end < 0:
            return None
        name = text[start + len("!!call ") : end]
        if not context.offered(name):
            return None
        return Found(start, end + 1, (TextCall(name, "{}"),))


def test_a_user_reader_plugs_in(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(registry, "_REGISTRY", {k: list(v) for k, v in registry._REGISTRY.items()})
    reader = _BangReader()
    turn, _ = run_text(["ok\n!!call get_time\n"], TOOLS, families=[reader])
    assert [(call.name, call.text_family) for call in turn.calls] == [("get_time", "bang-test")]
    register_text_call_reader(reader)
    assert "bang-test" in text_call_families()
    assert reader in readers_for(["bang-test"])
    with pytest.raises(ConfigurationError):
        register_text_call_reader(object())  # type: ignore[arg-type]
    with pytest.raises(ConfigurationError):
        readers_for(["no-such-family"])
