"""End-of-turn tokens after a call: stop tokens a server usually swallows, but one that does not
stop on them (or renders special tokens) leaves them as text. Each family lists its own
(``TextCallReader.end_tokens``, data); written right after a block they are its markup: the
call counts with or without them, and with one the model ended the call itself.

The tokens come from the models' chat templates in llama.cpp's ``models/templates/``
(Qwen-Qwen2.5-7B-Instruct.jinja: ``<|im_end|>``; meta-llama-Llama-3.1-8B-Instruct.jinja:
``<|eom_id|>`` / ``<|eot_id|>``; GLM-4.6.jinja: ``<|observation|>``;
inclusionai-ling-3.0-flash.jinja: ``<|role_end|>`` after GLM-style calls;
mistralai-Mistral-Nemo-Instruct-2407.jinja: ``</s>``; deepseek-ai-DeepSeek-V3.1.jinja: its
end-of-sentence token; google-gemma-4-31B-it.jinja: ``<turn|>``; openai-gpt-oss-120b.jinja:
``<|call|>``).
"""

from __future__ import annotations

from typing import Any

import pytest
from _toolwire_testdata import examples
from hypothesis import given, settings
from hypothesis import strategies as st

from toolwire.core.events import Finish
from toolwire.stages.text_calls import BUILT_IN_READERS
from toolwire.stages.text_calls.deepseek import deepseek_token as _ds

from ._harness import run_text, visible_text

SCHEMA: dict[str, Any] = {"type": "object", "properties": {"n": {"type": "integer"}}}
TOOLS = [{"type": "function", "function": {"name": "get_time", "parameters": SCHEMA}}]
LIMIT = Finish(
    reason="length", raw="length", truncated=True, evidence=("finish_reason",), cut_by="token_limit"
)

#: One call of each family, written here in its template's form, without any end token.
SAMPLES: dict[str, str] = {
    "hermes": '<tool_call>\n{"name": "get_time", "arguments": {"n": 1}}\n</tool_call>',
    "glm": "<tool_call>get_time\n<arg_key>n</arg_key>\n<arg_value>1</arg_value>\n</tool_call>",
    "glm-markerless": 'get_time\n{"n": 1}',
    "llama": '<|python_tag|>{"name": "get_time", "parameters": {"n": 1}}',
    "json": '{"name": "get_time", "parameters": {"n": 1}}',
    "mistral": '[TOOL_CALLS]get_time[ARGS]{"n": 1}',
    "kimi": "<|tool_calls_section_begin|><|tool_call_begin|>functions.get_time:0"
    '<|tool_call_argument_begin|>{"n": 1}<|tool_call_end|><|tool_calls_section_end|>',
    "deepseek": f"{_ds('tool_calls_begin')}{_ds('tool_call_begin')}get_time{_ds('tool_sep')}"
    f'{{"n": 1}}{_ds("tool_call_end")}{_ds("tool_calls_end")}',
    "gemma4": "<|tool_call>call:get_time{n:1}<tool_call|>",
    "functiongemma": "<start_function_call>call:get_time{n:1}<end_function_call>",
    "harmony": '<|channel|>commentary to=functions.get_time <|constrain|>json<|message|>{"n": 1}',
}


def _end_tokens(family: str) -> tuple[str, ...]:
    """The end tokens the family's readers declare (their data, not this test's)."""
    tokens: list[str] = []
    for reader in BUILT_IN_READERS:
        if reader.family == family:
            tokens.extend(token for token in reader.end_tokens if token not in tokens)
    return tuple(tokens)


CASES = [(family, token) for family in SAMPLES for token in _end_tokens(family)]


def test_every_family_here_declares_its_end_tokens() -> None:
    assert {family for family, _ in CASES} == set(SAMPLES)
    assert "<|im_end|>" in _end_tokens("hermes")
    assert "<|role_end|>" in _end_tokens("glm")
    assert {"<|eom_id|>", "<|eot_id|>"} <= set(_end_tokens("llama"))


def _calls(turn: Any) -> list[tuple[str, Any, bool]]:
    return [(call.name, call.arguments, call.may_run) for call in turn.calls]


@pytest.mark.parametrize(("family", "token"), CASES)
@pytest.mark.parametrize("blanks", ["", "\n", " \n\n"])
def test_a_call_counts_with_its_end_token_after_it(family: str, token: str, blanks: str) -> None:
    text = SAMPLES[family] + blanks + token
    turn, events = run_text([text], TOOLS)
    assert _calls(turn) == [("get_time", {"n": 1}, True)]
    assert token not in visible_text(events)
    assert turn.raw_text == text
    assert turn.stop_reason == "tool_calls"


@pytest.mark.parametrize(("family", "token"), CASES)
def test_the_end_token_says_the_model_ended_the_call(family: str, token: str) -> None:
    """With the token written, the model ended the call: the limit did not cut it."""
    turn, _ = run_text([SAMPLES[family] + token], TOOLS, finish=LIMIT)
    assert _calls(turn) == [("get_time", {"n": 1}, True)]


@pytest.mark.parametrize("family", ["llama", "mistral", "harmony", "glm-markerless"])
def test_without_its_end_token_the_limit_cuts_a_call_with_no_end_marker(family: str) -> None:
    turn, _ = run_text([SAMPLES[family]], TOOLS, finish=LIMIT)
    assert [(call.name, call.truncated, call.may_run) for call in turn.calls] == [
        ("get_time", True, False)
    ]


@pytest.mark.parametrize(
    "text",
    [
        # the model went on past its end of turn (a made-up next turn): text after the block
        SAMPLES["hermes"] + "<|im_end|>\n<|im_start|>user\nthanks",
        SAMPLES["json"] + "<|eot_id|>\nAnything else?",
        # an end token is not a block: prose after it is still prose
        SAMPLES["hermes"] + "<|im_end|> is how the turn ends.",
    ],
)
def test_text_after_the_end_token_is_text_after_the_block(text: str) -> None:
    turn, _ = run_text([text], TOOLS)
    assert turn.calls == ()
    assert turn.text == text


def test_a_special_token_family_keeps_its_call_when_text_follows_the_end_token() -> None:
    text = SAMPLES["mistral"] + "</s>Done."
    turn, events = run_text([text], TOOLS)
    assert _calls(turn) == [("get_time", {"n": 1}, True)]
    assert visible_text(events) == "Done."


@settings(max_examples=examples(200), deadline=None)
@given(
    st.sampled_from(CASES),
    st.sampled_from(["", " ", "\n", "\n\n"]),
    st.lists(st.integers(min_value=0, max_value=500), max_size=6),
)
def test_any_split_of_a_call_and_its_end_token_gives_the_call(
    case: tuple[str, str], blanks: str, cuts: list[int]
) -> None:
    """The token may arrive in pieces, in the same delta as the call or in a later one."""
    family, token = case
    text = SAMPLES[family] + blanks + token
    points = sorted({cut % (len(text) + 1) for cut in cuts})
    chunks = [text[a:b] for a, b in zip([0, *points], [*points, len(text)], strict=True)]
    turn, events = run_text(chunks, TOOLS)
    assert _calls(turn) == [("get_time", {"n": 1}, True)]
    assert visible_text(events) == ""
