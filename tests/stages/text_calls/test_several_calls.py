"""Several calls in one reply: every call counts, once, in order, each with its own id.

The rule where prose stands between calls (``docs/text-calls.md``, "Several calls in one
reply"): blocks of special tokens count wherever they stand; blocks whose markers prose also
uses (``<tool_call>``, ``<function=``, ``<|tool_call_start|>``, a whole reply) count all
together when the reply ends in a block, and none counts when it ends in prose. Never only
the last one (before issue 28, only the block at the tail ran).

The forms are written here from the models' templates and the servers' parser sources: Llama
3.x's JSON calls "separated by ``;``" and one per line (meta-llama-Llama-3.2-3B-Instruct.jinja;
vLLM ``tool_parsers/llama_tool_parser.py`` reads JSON objects one after the other, ``;``
between them), Qwen's consecutive ``<tool_call>`` blocks (Qwen-Qwen2.5-7B-Instruct.jinja), a
call after a sentence (ollama#16686: ``I'll use the Glob tool...\\n\\n<function=Glob>``).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from _toolwire_testdata import examples
from hypothesis import given, settings
from hypothesis import strategies as st

from toolwire.core.events import (
    ToolCallReady,
    ToolCallRejected,
    ToolCallRepaired,
    ToolCallStarted,
)
from toolwire.stages.text_calls.deepseek import deepseek_token as _ds

from ._harness import run_text, visible_text

SCHEMA: dict[str, Any] = {"type": "object", "properties": {"n": {"type": "integer"}}}
NAMES = ("get_time", "get_weather", "Calendar.create_event")
TOOLS = [{"type": "function", "function": {"name": name, "parameters": SCHEMA}} for name in NAMES]

Render = Callable[[str, int], str]

#: Families whose markers prose also uses: they count only when the reply ends in a block.
AT_THE_TAIL: dict[str, Render] = {
    "hermes": lambda name, n: (
        f'<tool_call>\n{{"name": "{name}", "arguments": {{"n": {n}}}}}\n</tool_call>'
    ),
    "qwen3-coder": lambda name, n: (
        f"<tool_call>\n<function={name}>\n<parameter=n>\n{n}\n</parameter>\n</function>\n"
        "</tool_call>"
    ),
    "glm": lambda name, n: (
        f"<tool_call>{name}\n<arg_key>n</arg_key>\n<arg_value>{n}</arg_value>\n</tool_call>"
    ),
    "llama-function": lambda name, n: f'<function={name}>{{"n": {n}}}</function>',
    "lfm2": lambda name, n: f"<|tool_call_start|>[{name}(n={n})]<|tool_call_end|>",
}
#: Families of special tokens: a block counts wherever it stands.
ANYWHERE: dict[str, Render] = {
    "mistral": lambda name, n: f'[TOOL_CALLS]{name}[ARGS]{{"n": {n}}}',
    "kimi": lambda name, n: (
        f"<|tool_calls_section_begin|><|tool_call_begin|>functions.{name}:0"
        f'<|tool_call_argument_begin|>{{"n": {n}}}<|tool_call_end|><|tool_calls_section_end|>'
    ),
    "deepseek": lambda name, n: (
        f"{_ds('tool_calls_begin')}{_ds('tool_call_begin')}{name}{_ds('tool_sep')}"
        f'{{"n": {n}}}{_ds("tool_call_end")}{_ds("tool_calls_end")}'
    ),
    "gemma4": lambda name, n: f"<|tool_call>call:{name}{{n:{n}}}<tool_call|>",
    "harmony": lambda name, n: (
        f"<|start|>assistant<|channel|>commentary to=functions.{name} json<|message|>"
        f'{{"n": {n}}}<|call|>'
    ),
    "llama": lambda name, n: f'<|python_tag|>{{"name": "{name}", "parameters": {{"n": {n}}}}}',
}
FAMILIES = {**AT_THE_TAIL, **ANYWHERE}
PROSE = ("\nNow the next one.\n", " Then: ", "\n\nI will also check this:\n\n")
BLANKS = ("", "\n", "\n\n", " ")


def _calls(turn: Any) -> list[tuple[str, Any]]:
    return [(call.name, call.arguments) for call in turn.runnable]


def _assert_each_once(events: list[Any], count: int) -> None:
    started = [e for e in events if isinstance(e, ToolCallStarted)]
    ids = [e.call_id for e in started]
    assert len(ids) == count
    assert len(set(ids)) == count  # two calls never share an id
    assert [e.index for e in started] == list(range(count))
    judged = (ToolCallReady, ToolCallRepaired, ToolCallRejected)
    assert sorted(e.call.call_id for e in events if isinstance(e, judged)) == sorted(ids)


# -- Llama 3.x JSON calls --------------------------------------------------------------------

LLAMA_TWO = [
    '{"name": "get_time", "parameters": {"n": 1}}; {"name": "get_weather", "parameters": {"n": 2}}',
    '{"name": "get_time", "parameters": {"n": 1}};{"name": "get_weather", "parameters": {"n": 2}}',
    '{"name": "get_time", "parameters": {"n": 1}}\n{"name": "get_weather", "parameters": {"n": 2}}',
    '{"name": "get_time", "parameters": {"n": 1}}{"name": "get_weather", "parameters": {"n": 2}}',
    '{"name": "get_time", "parameters": {"n": 1}};\n{"name": "get_weather", "parameters": {"n": 2}}'
    ";",
    '```json\n{"name": "get_time", "arguments": {"n": 1}}\n'
    '{"name": "get_weather", "arguments": {"n": 2}}\n```',
    '<|python_tag|>{"name": "get_time", "parameters": {"n": 1}}; '
    '{"name": "get_weather", "parameters": {"n": 2}}<|eom_id|>',
    '<|python_tag|>{"name": "get_time", "parameters": {"n": 1}}\n'
    '{"name": "get_weather", "parameters": {"n": 2}}',
    '[{"name": "get_time", "arguments": {"n": 1}}]\n{"name": "get_weather", "arguments": {"n": 2}}',
]


@pytest.mark.parametrize("text", LLAMA_TWO)
def test_json_calls_one_after_the_other_all_count(text: str) -> None:
    turn, events = run_text([text], TOOLS)
    assert _calls(turn) == [("get_time", {"n": 1}), ("get_weather", {"n": 2})]
    assert visible_text(events) == ""
    _assert_each_once(events, 2)
    by_character, _ = run_text(list(text), TOOLS)
    assert _calls(by_character) == _calls(turn)


@pytest.mark.parametrize(
    "text",
    [
        # one value of the reply is no call: the reply is some other JSON, none runs
        '{"name": "get_time", "parameters": {"n": 1}}\n{"name": "Alice", "age": 30}',
        '{"name": "get_time", "parameters": {"n": 1}}; {"name": "rm_rf", "parameters": {}}',
        # prose after them: a JSON answer quoted in a reply, not the reply
        '{"name": "get_time", "parameters": {"n": 1}}\n{"name": "get_weather", "parameters": '
        '{"n": 2}}\nThese are the two calls I would make.',
    ],
)
def test_json_calls_count_only_when_every_value_of_the_reply_is_one(text: str) -> None:
    turn, _ = run_text([text], TOOLS)
    assert turn.calls == ()
    assert turn.text == text


def test_the_call_cut_after_complete_ones_is_truncated_and_they_run() -> None:
    """As in a list, or a structured stream: the next call starting closed the earlier one."""
    text = '{"name": "get_time", "parameters": {"n": 1}}\n{"name": "get_weather", "parameters": '
    text += '{"n":'
    turn, _ = run_text([text], TOOLS)
    assert [(c.name, c.truncated, c.may_run) for c in turn.calls] == [
        ("get_time", False, True),
        ("get_weather", True, False),
    ]


def test_a_python_tag_call_then_other_json_keeps_the_call() -> None:
    """After a line feed, JSON that is no call ends the calls (its text stays)."""
    text = '<|python_tag|>{"name": "get_time", "parameters": {"n": 1}}\n{"rows": [1, 2]}'
    turn, events = run_text([text], TOOLS)
    assert _calls(turn) == [("get_time", {"n": 1})]
    assert visible_text(events) == '\n{"rows": [1, 2]}'


# -- prose between calls ---------------------------------------------------------------------


@pytest.mark.parametrize("family", sorted(FAMILIES))
def test_prose_between_two_calls_both_count(family: str) -> None:
    render = FAMILIES[family]
    text = (
        "I'll check both.\n"
        + render("get_time", 1)
        + "\nNow the weather.\n"
        + render("get_weather", 2)
        + "\n"
    )
    turn, events = run_text([text], TOOLS)
    assert _calls(turn) == [("get_time", {"n": 1}), ("get_weather", {"n": 2})]
    assert visible_text(events) == "I'll check both.\n\nNow the weather.\n\n"
    _assert_each_once(events, 2)


@pytest.mark.parametrize("family", sorted(AT_THE_TAIL))
def test_prose_after_the_last_call_makes_none_count(family: str) -> None:
    render = AT_THE_TAIL[family]
    text = render("get_time", 1) + "\nand\n" + render("get_weather", 2) + "\nis how calls look."
    turn, _ = run_text([text], TOOLS)
    assert turn.calls == ()
    assert turn.text == text


def test_a_special_token_block_counts_whatever_stands_around_the_tail_blocks() -> None:
    text = (
        AT_THE_TAIL["hermes"]("get_time", 1)
        + " is the format; now: "
        + ANYWHERE["mistral"]("get_weather", 2)
        + " done."
    )
    turn, events = run_text([text], TOOLS)
    assert _calls(turn) == [("get_weather", {"n": 2})]
    first = AT_THE_TAIL["hermes"]("get_time", 1)
    assert visible_text(events) == first + " is the format; now:  done."


@settings(max_examples=examples(300), deadline=None)
@given(
    st.lists(
        st.tuples(st.sampled_from(sorted(FAMILIES)), st.sampled_from(NAMES)), min_size=1, max_size=5
    ),
    st.lists(st.sampled_from(BLANKS + PROSE), min_size=5, max_size=5),
    st.sampled_from(["", *PROSE]),
    st.lists(st.integers(min_value=0, max_value=2000), max_size=6),
)
def test_every_call_appears_exactly_once_with_its_own_id(
    written: list[tuple[str, str]], separators: list[str], ending: str, cuts: list[int]
) -> None:
    """Calls of any families, anything between them: every call that counts by the rule runs
    exactly once, in the order written, with an id of its own, whatever the stream's split."""
    text = "".join(
        separators[number] + FAMILIES[family](name, number)
        for number, (family, name) in enumerate(written)
    )
    text += ending
    ends_in_prose = ending.strip() != ""
    expected = [
        (name, {"n": number})
        for number, (family, name) in enumerate(written)
        if not (ends_in_prose and family in AT_THE_TAIL)
    ]
    points = sorted({cut % (len(text) + 1) for cut in cuts})
    chunks = [text[a:b] for a, b in zip([0, *points], [*points, len(text)], strict=True)]
    turn, events = run_text(chunks, TOOLS)
    assert _calls(turn) == expected
    assert len(turn.calls) == len(expected)  # nothing else became a (rejected) call
    _assert_each_once(events, len(expected))


# -- cost --------------------------------------------------------------------------------------

#: Hostile text for the shapes issue 28 added: blocks that wait for the reply's end, whole-reply
#: JSON one per line, harmony messages with no end token. 8x the text may take at most 24x the
#: CPU time (a quadratic path gives about 64x), as in ``test_linear.py``.
HOSTILE = {
    "blocks_then_prose": '<tool_call>{"name": "get_time", "arguments": {}}</tool_call> and so. ',
    "json_lines": '{"name": "get_time", "arguments": {}}\n',
    "python_tag_lines": '<|python_tag|>{"name": "get_time", "parameters": {}}\n',
    "harmony_open_bodies": '<|channel|>commentary to=functions.get_time json<|message|>{"a": [',
    "harmony_prose_bodies": "<|channel|>commentary to=functions.get_time json<|message|>text ",
}


def _cpu_time(text: str, size: int, runs: int = 3) -> float:
    import time

    from toolwire.stages.text_calls import TextCallStage

    from ._harness import events_of, run_steps

    events = events_of([text[i : i + size] for i in range(0, len(text), size)])
    best = float("inf")
    for _ in range(runs):
        start = time.process_time()
        run_steps([TextCallStage(None, TOOLS)], events)
        best = min(best, time.process_time() - start)
    return best


@pytest.mark.slow
@pytest.mark.parametrize("size", [4, 4096])
@pytest.mark.parametrize("shape", HOSTILE)
def test_hostile_text_costs_linear_time(shape: str, size: int) -> None:
    unit = HOSTILE[shape]
    small = unit * (20_000 // len(unit))
    large = unit * (160_000 // len(unit))
    _cpu_time(small, size, runs=1)
    ratio = _cpu_time(large, size) / _cpu_time(small, size)
    assert ratio < 24.0, f"{shape}: 8x the text took {ratio:.1f}x the time"
