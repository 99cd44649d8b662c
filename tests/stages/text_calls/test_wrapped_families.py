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
    test_family_functools,
    test_family_gigachat,
    test_family_granite,
    test_family_granite_fc,
    test_family_internlm,
    test_family_jamba,
    test_family_llama4,
    test_family_longcat,
    test_family_nemotron,
    test_family_olmo3,
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
        test_family_functools,
        test_family_gigachat,
        test_family_granite,
        test_family_granite_fc,
        test_family_internlm,
        test_family_jamba,
        test_family_llama4,
        test_family_longcat,
        test_family_nemotron,
        test_family_olmo3,
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
