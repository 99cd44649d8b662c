"""Hostile text costs linear time: 8x the text may take at most 24x the CPU time (a quadratic
path gives about 64x). See docs/development.md (timing tests)."""

from __future__ import annotations

import time

import pytest

from toolwire.core.events import TextDelta
from toolwire.stages.text_calls import TextCallStage

from ._harness import events_of, run_steps

pytestmark = pytest.mark.slow

TOOLS = [{"type": "function", "function": {"name": "get_time", "parameters": {}}}]
SMALL = 20_000
GROWTH = 8
MAX_RATIO = 24.0

SHAPES = {
    "openers": "<tool_call>",
    "openers_with_json": '<tool_call>{"name": "get_time", "arguments": {',
    "unclosed_fences": "```\nx\n``",
    "backticks": "`",
    "function_tags": "<function=get_time>\n<parameter=a>\n",
    "harmony_headers": "<|start|>assistant<|channel|>commentary to=functions.get_time<|message|>",
    # LLM-jp's run of calls closed by <|end|> that never ends in a call (harmony.py)
    "harmony_end_runs": "<|start|>assistant to=functions.get_time<|channel|>commentary json"
    "<|message|>{}<|end|>",
    "mistral_markers": "[TOOL_CALLS]",
    "pythonic": "[get_time(a=[",
    "think": "<think><tool_call>",
    # Reasoning (``reasoning.py``): JSON never closed in a thought, drafts each released by a
    # closer the prompt opened, calls after an implicit end that prose follows.
    "think_json": '<think><tool_call>{"name": "get_time", "arguments": {',
    "prompt_opened_closers": "[TOOL_CALLS]get_time[ARGS]{}</think>",
    "implicit_ends": '<think><tool_call>{"name": "get_time", "arguments": {}}</tool_call> x',
    "prose": "a < b and [c] are {not} calls. ",
    # XML-parameter families: values never closed, nesting never closed.
    "dsml_values": '<\uff5cDSML\uff5cfunction_calls><\uff5cDSML\uff5cinvoke name="get_time">'
    '<\uff5cDSML\uff5cparameter name="a" string="true">x',
    "kimi_k3_values": '<|open|>tools<|sep|><|open|>call tool="get_time" index="1"<|sep|>'
    '<|open|>argument key="a" type="string"<|sep|>x',
    "minimax_m3_nesting": ']<]minimax[>[<tool_call>]<]minimax[>[<invoke name="get_time">'
    "]<]minimax[>[<a>]<]minimax[>[<b>",
}


def _best(text: str, size: int, runs: int = 3) -> float:
    chunks = [text[i : i + size] for i in range(0, len(text), size)]
    events = events_of(chunks)
    best = float("inf")
    for _ in range(runs):
        start = time.process_time()
        run_steps([TextCallStage(None, TOOLS)], events)
        best = min(best, time.process_time() - start)
    return best


@pytest.mark.parametrize("size", [4, 4096])
@pytest.mark.parametrize("shape", SHAPES)
def test_time_grows_linearly(shape: str, size: int) -> None:
    unit = SHAPES[shape]
    small = unit * (SMALL // len(unit))
    large = unit * (SMALL * GROWTH // len(unit))
    _best(small, size, runs=1)
    ratio = _best(large, size) / _best(small, size)
    assert ratio < MAX_RATIO, f"{shape}: {GROWTH}x the text took {ratio:.1f}x the time"


def test_a_million_openers_stay_text() -> None:
    text = "<tool_call>" * 1_000_000
    out = run_steps([TextCallStage(None, TOOLS)], events_of([text]))
    assert "".join(e.text for e in out if isinstance(e, TextDelta)) == text
