"""One answer for one text: the judge's verdict on a call and the turn's truncation agree.

Issue 28: a llama-cpp-python stream replayed with ``--provider openai-chat --max-tokens 100``
ended its call's arguments inside a string. The judge rejected the call as ``truncated`` ("Why
it stopped is not known"), but the turn said ``truncated: false``: the adapter's cheap rule
(``core/jsonscan.py``) counts brackets inside strings too, and a raw line feed made strict JSON
fail before the end, so the rule saw no bracket left open. The judge reads the text whole; when
it finds the call cut, the turn is cut (``cut_by="unknown"``, all that is known).

The streams are written here in llama-cpp-python 0.3.36's own chunk shape (every chunk carries
the legacy ``function_call`` delta and ``tool_calls``; ``finish_reason: tool_calls`` even at
``max_tokens``), as recorded in ``tests/data/fixtures/streams/llama-cpp-python/``.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from _toolwire_testdata import examples
from hypothesis import given, settings
from hypothesis import strategies as st

import toolwire
from toolwire.adapters.registry import open_mapper
from toolwire.core.events import Event, Finish, StreamEnd, TextDelta
from toolwire.core.mapper import MapperSettings
from toolwire.core.turn import TurnBuilder
from toolwire.stages.judge import JudgeStage
from toolwire.stages.text_calls import TextCallStage

TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "write",
            "parameters": {
                "type": "object",
                "properties": {"path": {"type": "string"}, "content": {"type": "string"}},
            },
        },
    },
    {"type": "function", "function": {"name": "get_time", "parameters": {"type": "object"}}},
]
#: Cut inside the content string (the 100th token), after a raw line feed (strict JSON fails
#: there, not at the end) and with more closing brackets than opening ones inside the string.
CUT_IN_A_STRING = ['{ "path": "run.sh", "content": "', "if [ -n x ]; then\n", "  echo }}"]


def _chunk(delta: dict[str, Any], finish: str | None = None) -> bytes:
    chunk = {
        "id": "chatcmpl-5d0c",
        "object": "chat.completion.chunk",
        "created": 1796028372,
        "model": "smollm2-135m",
        "choices": [{"index": 0, "finish_reason": finish, "logprobs": None, "delta": delta}],
    }
    return b"data: " + json.dumps(chunk).encode() + b"\n\n"


def llama_cpp_python_stream(fragments: list[str]) -> bytes:
    """One forced ``write`` call whose arguments arrive in ``fragments``."""
    empty = {"role": None, "content": None, "function_call": None, "tool_calls": None}
    body = _chunk({"role": "assistant", "content": None, "function_call": None, "tool_calls": None})
    for fragment in fragments:
        call = {"name": "write", "arguments": fragment}
        tool_call = {"index": 0, "id": "call__0_write_cmpl-5d0c", "type": "function"}
        body += _chunk(
            {**empty, "function_call": call, "tool_calls": [{**tool_call, "function": call}]}
        )
    return body + _chunk(empty, "tool_calls") + b"data: [DONE]\n\n"


def _events(body: bytes, max_tokens: int | None = 100) -> list[Event]:
    """The mapper's events and the judge's, as a pipeline's fused loop gives them."""
    mapper = open_mapper("openai-chat", MapperSettings(max_tokens=max_tokens))
    events = [*mapper.feed_bytes(body), *mapper.finish()]
    step = JudgeStage(TOOLS).start()
    out: list[Event] = []
    for event in events:
        out.extend(step.feed(event))
    out.extend(step.finish())
    return out


def _turn(events: list[Event]) -> toolwire.Turn:
    builder = TurnBuilder()
    for event in events:
        builder.add(event)
    return builder.build()


pytestmark = pytest.mark.anyio


async def test_a_call_the_judge_finds_cut_cuts_the_turn(anyio_backend: str) -> None:
    body = llama_cpp_python_stream(CUT_IN_A_STRING)
    turn = await toolwire.collect(body, "openai-chat", tools=TOOLS, max_tokens=100)
    (call,) = turn.calls
    assert call.verdict is not None
    assert (call.verdict.reason, call.truncated, call.may_run) == ("truncated", True, False)
    assert "Why it stopped is not known" in (call.verdict.message or "")
    assert turn.truncated
    assert turn.cut_by == "unknown"
    assert "arguments_unterminated" in turn.truncation_evidence
    assert turn.stop_reason == "tool_calls"  # the server said tool_calls; only the cut is added


def test_the_finish_is_amended_once_and_only_after_a_cut_call() -> None:
    cut = _events(llama_cpp_python_stream(CUT_IN_A_STRING))
    finishes = [event for event in cut if isinstance(event, Finish)]
    assert [(f.truncated, f.cut_by, f.evidence) for f in finishes] == [
        (True, "unknown", ("arguments_unterminated",))
    ]
    whole = _events(llama_cpp_python_stream(['{ "path": "a.py", ', '"content": "x"}']))
    (finish,) = [event for event in whole if isinstance(event, Finish)]
    assert not finish.truncated
    assert not _turn(whole).truncated


def test_a_batch_gives_what_its_events_give() -> None:
    """The fused loop's ``feed_batch``: the finish comes in a later batch than the call."""
    mapper = open_mapper("openai-chat", MapperSettings(max_tokens=100))
    events = [*mapper.feed_bytes(llama_cpp_python_stream(CUT_IN_A_STRING)), *mapper.finish()]
    step = JudgeStage(TOOLS).start()
    batched: list[Event] = []
    for start in range(0, len(events), 2):
        batched.extend(step.feed_batch(events[start : start + 2]))  # type: ignore[attr-defined]
    assert batched == _events(llama_cpp_python_stream(CUT_IN_A_STRING))


_JSONISH = st.text(alphabet='{}[]":, \nab\\', max_size=24)


@settings(max_examples=examples(400), deadline=None)
@given(st.lists(_JSONISH, min_size=1, max_size=4))
def test_the_turn_is_cut_exactly_when_a_call_is_judged_cut(fragments: list[str]) -> None:
    """Whatever the arguments text, with no other evidence of a cut (the server says
    ``tool_calls``, no limit is known), the turn is cut exactly when its call is."""
    fragments = ['{ "path": "a", "content": "', *fragments]
    turn = _turn(_events(llama_cpp_python_stream(fragments), max_tokens=None))
    (call,) = turn.calls
    assert turn.truncated == call.truncated
    if turn.truncated:
        assert turn.cut_by == "unknown"


def _text_turn(text: str) -> toolwire.Turn:
    stages = [TextCallStage(None, TOOLS), JudgeStage(TOOLS)]
    current: list[Event] = [
        TextDelta(text=text),
        Finish(reason="end_turn", raw="stop"),
        StreamEnd(),
    ]
    for stage in stages:
        step = stage.start()
        produced: list[Event] = []
        for event in current:
            produced.extend(step.feed(event))
        produced.extend(step.finish())
        current = produced
    return _turn(current)


def test_arguments_unterminated_inside_closed_markup_are_not_json_not_a_cut() -> None:
    """Kimi's end marker came after the arguments: the text was not cut, a bracket is missing."""
    text = (
        "<|tool_calls_section_begin|><|tool_call_begin|>functions.write:0"
        '<|tool_call_argument_begin|>{"path": "a.py", "content": "x"<|tool_call_end|>'
        "<|tool_calls_section_end|>"
    )
    turn = _text_turn(text)
    (call,) = turn.calls
    assert call.verdict is not None
    assert (call.verdict.reason, call.truncated, call.may_run) == ("not_json", False, False)
    message = call.verdict.message or ""
    assert "was not run: its arguments are not valid JSON" in message
    assert "a closing bracket or quote is missing" in message
    assert "Why it stopped" not in message
    assert not turn.truncated
