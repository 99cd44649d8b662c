"""The rules every row of ``stages/text_calls/families.py`` shares (``wrapped.py``), on top of each
family's own cases (``test_family_*.py``, the :class:`FamilyContract` tests): how the end of a
block is decided when its closing marker is a stop token, text, or absent, and where an
end-of-turn token belongs.

Every text here was written for these tests from the family's chat template (llama.cpp
``models/templates/``), the servers' parser source, or a model card, named next to it.
"""

from __future__ import annotations

from typing import Any

import pytest

from toolwire.stages.text_calls import text_call_families
from toolwire.stages.text_calls.families import WRAPPED_FAMILIES

from . import (
    test_family_apertus,
    test_family_cohere,
    test_family_command_r,
    test_family_dots,
    test_family_functionary,
    test_family_functools,
    test_family_gigachat,
    test_family_granite,
    test_family_granite_fc,
    test_family_inkling,
    test_family_internlm,
    test_family_jamba,
    test_family_k2_horizon,
    test_family_llama4,
    test_family_longcat,
    test_family_minimax_m1,
    test_family_nemotron,
    test_family_olmo3,
    test_family_plamo3,
    test_family_solar_open,
    test_family_step_audio2,
)
from ._family_contract import LENGTH, TOOLS, FamilyContract, runnable
from ._harness import run_text, visible_text

ONE = [("get_weather", {"city": "Paris"})]
#: Each family module's contract class, by family (``llama`` here is its Llama 4 row).
CONTRACTS: dict[str, type[FamilyContract]] = {
    module.__dict__[name].family: module.__dict__[name]
    for module in (
        test_family_apertus,
        test_family_cohere,
        test_family_command_r,
        test_family_dots,
        test_family_functionary,
        test_family_functools,
        test_family_gigachat,
        test_family_granite,
        test_family_granite_fc,
        test_family_inkling,
        test_family_internlm,
        test_family_jamba,
        test_family_k2_horizon,
        test_family_llama4,
        test_family_longcat,
        test_family_minimax_m1,
        test_family_nemotron,
        test_family_olmo3,
        test_family_plamo3,
        test_family_solar_open,
        test_family_step_audio2,
    )
    for name in dir(module)
    if name.startswith("Test")
}
#: Rows whose families are tested in ``test_families.py`` (they were read before the table).
EARLIER = {"hermes", "lfm2", "gemma-tool-code"}


def test_every_row_is_registered_and_has_its_cases() -> None:
    rows = {row.family for row in WRAPPED_FAMILIES}
    assert rows <= set(text_call_families())
    assert rows == set(CONTRACTS) | EARLIER


@pytest.mark.parametrize(
    ("family", "text"),
    [
        # Apertus: vLLM's and Ollama's parsers read the list without <|tools_suffix|>.
        ("apertus", '<|tools_prefix|>[{"get_weather": {"city": "Paris"}}]'),
        # InternLM: <|action_end|> is a stop word (lmdeploy/model.py), so it may not be sent.
        (
            "internlm",
            '<|action_start|><|plugin|>\n{"name": "get_weather", "parameters": {"city": "Paris"}}',
        ),
        # GigaChat 3.1 (GigaChat3.1-10B-A1.8B.jinja): <|function_call|>{...}, no closer.
        ("gigachat", '<|function_call|>{"name": "get_weather", "arguments": {"city": "Paris"}}'),
        # Granite 3.x: no closer at all.
        ("granite", '<|tool_call|>[{"name": "get_weather", "arguments": {"city": "Paris"}}]'),
    ],
)
def test_a_whole_body_ends_the_call_where_no_closer_is_written(family: str, text: str) -> None:
    """The model stopped after a whole body: a call. The token limit stopped it: cut, since
    the output may have gone on (``docs/text-calls.md``)."""
    turn, _ = run_text([text], TOOLS)
    assert [(call.name, call.arguments) for call in turn.runnable] == ONE
    assert turn.calls[0].text_family == family
    (cut,) = run_text([text], TOOLS, finish=LENGTH)[0].calls
    assert cut.truncated
    assert not cut.may_run


@pytest.mark.parametrize(
    "text",
    [
        # A closer the model writes as text, missing at the end of the output: the markup is cut.
        '<TOOLCALL>[{"name": "get_weather", "arguments": {"city": "Paris"}}]',
        '<|START_ACTION|>[{"tool_call_id": "0", "tool_name": "get_weather", "parameters": '
        '{"city": "Paris"}}]',
        '<tool_calls>[{"name": "get_weather", "arguments": {"city": "Paris"}}]',
        '<function_calls>\nget_weather(city="Paris")\n',
        'Action: ```json\n[{"tool_name": "get_weather", "parameters": {"city": "Paris"}}]',
    ],
)
def test_a_missing_closer_that_is_text_cuts_the_call(text: str) -> None:
    turn, _ = run_text([text], TOOLS)
    assert turn.runnable == ()
    assert [call.truncated for call in turn.calls] == [True]
    assert turn.cut_by == "unknown"


@pytest.mark.parametrize(
    ("text", "visible"),
    [
        # Cohere2MoE.jinja: <|END_ACTION|><|END_OF_TURN_TOKEN|>.
        (
            'Sure.\n<|START_ACTION|>[{"tool_call_id": "0", "tool_name": "get_weather", '
            '"parameters": {"city": "Paris"}}]<|END_ACTION|><|END_OF_TURN_TOKEN|>',
            "Sure.\n",
        ),
        # An optional closer left out, the end token right after the body (Apertus).
        (
            'On it. <|tools_prefix|>[{"get_weather": {"city": "Paris"}}]<|assistant_end|>',
            "On it. ",
        ),
        # No closer, the end token after the list (Granite 3.3 ends turns with it).
        (
            '<|tool_call|>[{"name": "get_weather", "arguments": {"city": "Paris"}}]\n'
            "<|end_of_text|>",
            "",
        ),
        # LFM2.5 on a server that does not stop on ChatML's end token (little-coder#42).
        (
            '<|tool_call_start|>[get_weather(city="Paris")]<|tool_call_end|><|im_end|>',
            "",
        ),
    ],
)
def test_an_end_token_belongs_to_the_markup(text: str, visible: str) -> None:
    turn, events = run_text([text], TOOLS)
    assert [(call.name, call.arguments) for call in turn.runnable] == ONE
    assert visible_text(events) == visible
    # The model ended its turn there: complete, even when the turn hit the token limit.
    assert runnable(text, finish=LENGTH) == ONE


def test_another_familys_end_token_is_text_after_the_block() -> None:
    text = '<|tool_call|>[{"name": "get_weather", "arguments": {"city": "Paris"}}]<|END_ACTION|>'
    turn, _ = run_text([text], TOOLS)
    assert turn.calls == ()
    assert turn.text == text


def test_calls_in_several_families_in_one_reply_all_count() -> None:
    text = (
        '<tool_call>{"name": "get_weather", "arguments": {"city": "Paris"}}</tool_call>\n'
        '<TOOLCALL>[{"name": "get_time", "arguments": {"n": 2}}]</TOOLCALL>'
    )
    turn, _ = run_text([text], TOOLS)
    runnable_calls: list[tuple[str, Any]] = [(c.name, c.arguments) for c in turn.runnable]
    assert runnable_calls == [("get_weather", {"city": "Paris"}), ("get_time", {"n": 2})]
    assert [call.text_family for call in turn.calls] == ["hermes", "nemotron"]


def test_a_split_inside_the_tool_code_fence_opener() -> None:
    # Before the table too (the scanner reads "```" as a fence when "tool_code" has not come).
    text = '```tool_code\nget_weather(city="Paris")\n```'
    assert runnable(text) == ONE
    turn, _ = run_text([text[:4], text[4:]], TOOLS)
    assert [(call.name, call.arguments) for call in turn.runnable] == ONE


SOLAR_CALL = (
    "<|tool_call:begin|>a1b2c3d4e5<|tool_call:name|>get_weather<|tool_call:args|>"
    '{"city": "Paris"}<|tool_call:end|>'
)


def test_a_group_closer_that_is_a_stop_token_may_be_left_out() -> None:
    """Solar Open's ``<|calls|>`` ends the message (upstage-Solar-Open-100B.jinja): a server
    that stops on it never sends it. A group whose calls all closed is complete at ``stop``,
    cut at the token limit."""
    text = "<|tool_calls|>" + SOLAR_CALL
    assert runnable(text) == ONE
    (cut,) = run_text([text], TOOLS, finish=LENGTH)[0].calls
    assert cut.truncated
    assert not cut.may_run


@pytest.mark.parametrize(
    "text",
    [
        # PLaMo 3's group closer is text the model writes (vLLM's structural tag ends with it).
        "<|plamo:begin_tool_requests:plamo|><|plamo:begin_tool_request:plamo|>"
        "<|plamo:begin_tool_name:plamo|>get_weather<|plamo:end_tool_name:plamo|>"
        "<|plamo:begin_tool_arguments:plamo|><|plamo:constrain|>json<|plamo:msg|>"
        '{"city": "Paris"}<|plamo:end_tool_arguments:plamo|><|plamo:end_tool_request:plamo|>',
        # K2 Horizon's: vLLM reads no call without </ifm|tool_calls>; here the text stops
        # inside it.
        '<ifm|tool_calls><ifm|tool_call>{"name": "get_weather", "arguments": {"city": "Paris"}}'
        "</ifm|tool_call></ifm|tool_c",
    ],
)
def test_a_group_whose_closer_never_came_is_cut(text: str) -> None:
    turn, _ = run_text([text], TOOLS)
    assert turn.runnable == ()
    assert [call.truncated for call in turn.calls] == [True]


@pytest.mark.parametrize(
    ("text", "family"),
    [
        # The same <tool_calls> opener: Jamba's list, MiniMax-M1's objects a line, HY V4's XML.
        (
            '<tool_calls>[{"name": "get_weather", "arguments": {"city": "Paris"}}]</tool_calls>',
            "jamba",
        ),
        (
            '<tool_calls>\n{"name": "get_weather", "arguments": {"city": "Paris"}}\n</tool_calls>',
            "minimax-m1",
        ),
        (
            "<tool_calls><tool_call>get_weather<arg_key>city</arg_key><arg_value>Paris"
            "</arg_value></tool_call></tool_calls>",
            "hy-v4",
        ),
        # K2 Horizon's and dots's JSON and XML forms share their wrappers.
        (
            "<ifm|tool_calls><ifm|tool_call>get_weather<ifm|arg_key>city</ifm|arg_key>"
            "<ifm|arg_value>Paris</ifm|arg_value></ifm|tool_call></ifm|tool_calls>",
            "k2-horizon",
        ),
        (
            '<dots_function_call>{"name": "get_weather", "arguments": {"city": "Paris"}}'
            "</dots_function_call>",
            "dots",
        ),
    ],
)
def test_rows_that_share_an_opener_read_exclusive_grammars(text: str, family: str) -> None:
    turn, _ = run_text([text], TOOLS)
    assert [(call.name, call.arguments) for call in turn.runnable] == ONE
    assert [call.text_family for call in turn.calls] == [family]


def test_a_name_in_the_markup_is_read_whole_and_offered() -> None:
    """Solar Open's id and name stand between special tokens; an unoffered name, a name the
    id's marker does not follow, or arguments that are no object: no call."""
    assert runnable("<|tool_calls|>" + SOLAR_CALL.replace("get_weather", "get_weathe")) == []
    assert runnable("<|tool_calls|>" + SOLAR_CALL.replace("<|tool_call:name|>", " ")) == []
    text = SOLAR_CALL.replace('{"city": "Paris"}', '["Paris"]')
    assert run_text([text], TOOLS)[0].calls == ()
