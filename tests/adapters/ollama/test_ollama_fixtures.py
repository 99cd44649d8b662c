"""Ollama ``/api/chat`` NDJSON streams replay to the values read from the bytes themselves.

The two recordings (``tests/data/fixtures/streams/ollama/``) are few, so realistic bodies are built
here from the shapes of Ollama's own structs (ollama/ollama ``api/types.go``: ``ChatResponse``
with ``Message``, ``ToolCall{id, function{index, name, arguments}}``, ``Metrics``; field order
as Go's ``json.Marshal`` writes them, compact). Every expected value was written by reading the
lines, not copied from toolwire's output. The other Ollama test modules import the builders.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

import _recorded_turns as recorded
import msgspec
import pytest
from _recorded_turns import Call, ExpectedTurn
from _toolwire_testdata import STREAMS, aiter_items, load_stream
from ollama import ChatResponse

import toolwire
from toolwire.adapters.ollama import PROVIDERS, finish_reason_from_ollama
from toolwire.core import accumulate
from toolwire.core.turn import Turn
from toolwire.testing import check_mapper

pytestmark = pytest.mark.anyio

# -- building lines the way Ollama writes them -------------------------------------------------

CREATED = "2025-07-07T20:22:19.184789Z"


def tool_call(
    name: str, arguments: Any, *, index: int | None = None, call_id: str | None = None
) -> dict[str, Any]:
    """One ``api.ToolCall``: ``id`` (since v0.12.10), ``function.index`` (always since 0.12.6)."""
    function: dict[str, Any] = {} if index is None else {"index": index}
    function.update(name=name, arguments=arguments)
    return {"function": function} if call_id is None else {"id": call_id, "function": function}


def line(
    *,
    content: str = "",
    thinking: str | None = None,
    calls: list[dict[str, Any]] | None = None,
    model: str = "qwen3:8b",
) -> dict[str, Any]:
    """A ``done: false`` line."""
    message: dict[str, Any] = {"role": "assistant", "content": content}
    if thinking:
        message["thinking"] = thinking
    if calls:
        message["tool_calls"] = calls
    return {"model": model, "created_at": CREATED, "message": message, "done": False}


def done(
    reason: str | None = "stop",
    *,
    prompt: int | None = 169,
    output: int | None = 15,
    content: str = "",
    calls: list[dict[str, Any]] | None = None,
    model: str = "qwen3:8b",
) -> dict[str, Any]:
    """The last line: ``done: true``, ``done_reason`` (``omitempty``) and the counters."""
    last = line(content=content, calls=calls, model=model)
    last["done"] = True
    if reason:
        last["done_reason"] = reason
    last["total_duration"] = 182242375
    last["load_duration"] = 41295167
    if prompt is not None:
        last["prompt_eval_count"] = prompt
    last["prompt_eval_duration"] = 24573166
    if output is not None:
        last["eval_count"] = output
    last["eval_duration"] = 115959084
    return last


def ndjson(*lines: dict[str, Any] | bytes) -> bytes:
    """Lines as Ollama streams them: compact JSON, one ``\\n`` after each."""
    return b"".join(
        (item if isinstance(item, bytes) else json.dumps(item, separators=(",", ":")).encode())
        + b"\n"
        for item in lines
    )


# -- expectations -----------------------------------------------------------------------------

#: Stands for "an id toolwire synthesized" (they are random per stream).
SYNTH = "<synthesized>"


@dataclass(frozen=True, kw_only=True)
class Expected(ExpectedTurn):
    finish_raw: str | None = "stop"
    #: (input, output) tokens, or None when no counter came.
    usage: tuple[int | None, int | None] | None = (169, 15)
    terminated: bool = True


def assert_turn(turn: Turn, expected: Expected) -> None:
    assert recorded.call_rows(turn, synthesized=SYNTH) == recorded.expected_rows(expected.calls)
    for call in turn.calls:
        if call.id_synthesized:
            assert call.call_id.startswith("toolwire-")
    assert turn.text == expected.text
    assert turn.reasoning == expected.reasoning
    recorded.assert_finish(turn, expected)
    assert turn.cut_by == expected.cut_by
    if expected.usage is None:
        assert turn.usage is None
    else:
        assert turn.usage is not None
        assert (turn.usage.input_tokens, turn.usage.output_tokens) == expected.usage
        # Ollama reports no total and no reasoning count: none is invented.
        assert (turn.usage.total_tokens, turn.usage.reasoning_tokens) == (None, None)
    assert turn.errors == ()
    assert turn.model == expected.model
    assert turn.response_id is None  # Ollama's lines carry no response id
    assert turn.provider == "ollama"


DOCS = "ollama/chat_stream_tool_call.docs-example.ndjson"
DERIVED = "ollama/chat_stream_two_calls_with_id_index_done_length.derived.ndjson"

RECORDED: dict[str, Expected] = {
    # The docs example: one call, arguments as an OBJECT, no id, no index; done_reason "stop"
    # with a call made is a tool_calls turn.
    DOCS: Expected(
        model="llama3.2",
        calls=(Call(SYNTH, "get_weather", 0, '{"city":"Tokyo"}'),),
    ),
    # Two whole calls in ONE line with ids and function.index, then done_reason "length": the
    # limit is named by the server; the call generated last is the one that may be short.
    DERIVED: Expected(
        model="qwen3",
        calls=(
            Call("call_gfuxaa3e", "get_weather", 0, '{"city":"Tokyo"}'),
            Call("call_9r4kq2vx", "get_weather", 1, '{"city":"Paris"}', True),
        ),
        stop="length",
        finish_raw="length",
        truncated=True,
        evidence=("finish_reason",),
        cut_by="token_limit",
    ),
}

THINK = "The user wants the weather in two cities. I will call the tool twice."

BUILT: dict[str, tuple[bytes, Expected]] = {
    # Parallel calls in one line, every one on index 0 and without ids (the generic parser of a
    # server older than v0.12.6 omitted index 0; builtin parsers count on their own): two
    # distinct calls, never merged, even with the same name.
    "parallel_same_name_no_ids": (
        ndjson(
            line(
                calls=[
                    tool_call("get_weather", {"city": "Tokyo"}, index=0),
                    tool_call("get_weather", {"city": "Paris"}, index=0),
                ]
            ),
            done(),
        ),
        Expected(
            model="qwen3:8b",
            calls=(
                Call(SYNTH, "get_weather", 0, '{"city":"Tokyo"}'),
                Call(SYNTH, "get_weather", 1, '{"city":"Paris"}'),
            ),
        ),
    ),
    # Calls across lines, each with index 0 and its own id (v0.12.10+): distinct calls.
    "calls_across_lines_same_index": (
        ndjson(
            line(calls=[tool_call("get_weather", {"city": "Tokyo"}, index=0, call_id="call_a1")]),
            line(calls=[tool_call("get_time", {"tz": "Asia/Tokyo"}, index=0, call_id="call_b2")]),
            done(output=31),
        ),
        Expected(
            model="qwen3:8b",
            calls=(
                Call("call_a1", "get_weather", 0, '{"city":"Tokyo"}'),
                Call("call_b2", "get_time", 1, '{"tz":"Asia/Tokyo"}'),
            ),
            usage=(169, 31),
        ),
    ),
    # Thinking (qwen3 with think on), then text, then a call with nested arguments.
    "thinking_text_then_call": (
        ndjson(
            line(thinking="The user wants "),
            line(thinking="the weather in two cities. I will call the tool twice."),
            line(content="Let me check"),
            line(content=" both."),
            line(
                calls=[
                    tool_call(
                        "get_weather",
                        {"cities": ["Tokyo", "Paris"], "units": {"temp": "c"}, "days": 2},
                        index=0,
                        call_id="call_n3",
                    )
                ]
            ),
            done(output=48),
        ),
        Expected(
            model="qwen3:8b",
            calls=(
                Call(
                    "call_n3",
                    "get_weather",
                    0,
                    '{"cities":["Tokyo","Paris"],"units":{"temp":"c"},"days":2}',
                ),
            ),
            text="Let me check both.",
            reasoning=THINK,
            usage=(169, 48),
        ),
    ),
    # A builtin parser (gemma4, glm46) flushes the call it is reading when generation stops:
    # the call arrives IN the done line with done_reason "length", and is cut.
    "length_with_call_in_the_done_line": (
        ndjson(
            line(content="Writing it."),
            done(
                "length",
                output=64,
                calls=[
                    tool_call(
                        "write", {"path": "notes.txt", "content": "hel"}, index=0, call_id="call_w"
                    )
                ],
            ),
        ),
        Expected(
            model="qwen3:8b",
            calls=(Call("call_w", "write", 0, '{"path":"notes.txt","content":"hel"}', True),),
            text="Writing it.",
            stop="length",
            finish_raw="length",
            truncated=True,
            evidence=("finish_reason",),
            cut_by="token_limit",
            usage=(169, 64),
        ),
    ),
    # Text cut by num_predict, no call.
    "length_text_only": (
        ndjson(
            line(content="The capital of"), line(content=" France is"), done("length", output=5)
        ),
        Expected(
            model="qwen3:8b",
            text="The capital of France is",
            stop="length",
            finish_raw="length",
            truncated=True,
            evidence=("finish_reason",),
            cut_by="token_limit",
            usage=(169, 5),
        ),
    ),
    # Plain text answer.
    "text_stop": (
        ndjson(line(content="Hello"), line(content="!"), done(output=2)),
        Expected(model="qwen3:8b", text="Hello!", stop="end_turn", usage=(169, 2)),
    ),
    # The runner's connection closed: DoneReasonConnectionClosed prints as "" and omitempty
    # drops it. A done line with no reason is no normal end.
    "done_without_reason": (
        ndjson(line(content="Hel"), done(None, output=None, prompt=None)),
        Expected(model="qwen3:8b", text="Hel", stop="unknown", finish_raw=None, usage=None),
    ),
    # An empty request only loads the model: done_reason "load", no turn was generated.
    "load": (
        ndjson(done("load", prompt=None, output=None)),
        Expected(model="qwen3:8b", stop="unknown", finish_raw="load", usage=None),
    ),
    # A provider id repeated on a second call (never two calls merged): the second is renamed.
    "repeated_id": (
        ndjson(
            line(calls=[tool_call("get_weather", {"city": "Tokyo"}, index=0, call_id="call_x")]),
            line(calls=[tool_call("get_weather", {"city": "Paris"}, index=0, call_id="call_x")]),
            done(),
        ),
        Expected(
            model="qwen3:8b",
            calls=(
                Call("call_x", "get_weather", 0, '{"city":"Tokyo"}'),
                Call("call_x~2", "get_weather", 1, '{"city":"Paris"}'),
            ),
        ),
    ),
    # A call without arguments: Ollama's MarshalJSON writes a nil map as {}.
    "no_argument_call": (
        ndjson(line(calls=[tool_call("get_time", {}, index=0, call_id="call_t")]), done()),
        Expected(model="qwen3:8b", calls=(Call("call_t", "get_time", 0, "{}"),)),
    ),
}


def all_bodies() -> dict[str, tuple[bytes, Expected]]:
    found = {name: (load_stream(name), expected) for name, expected in RECORDED.items()}
    found.update(BUILT)
    return found


BODIES = all_bodies()


def test_every_recording_has_expectations() -> None:
    folder = STREAMS / "ollama"
    assert sorted(RECORDED) == sorted(f"ollama/{p.name}" for p in folder.iterdir())


def test_the_expected_literals_parse() -> None:
    # A cross-check of the hand-written raw strings: each is the compact JSON of an object.
    for name, (_, expected) in BODIES.items():
        for call in expected.calls:
            assert isinstance(json.loads(call.raw), dict), name


@pytest.mark.parametrize("name", sorted(BODIES))
@pytest.mark.parametrize("read_size", [None, 1, 7, 64, 65536])
async def test_body_replays(name: str, read_size: int | None) -> None:
    body, expected = BODIES[name]
    source: Any = body if read_size is None else aiter_items(recorded.in_reads(body, read_size))
    turn = await toolwire.collect(source, "ollama", judge=False)
    assert_turn(turn, expected)
    assert all(c.outcome == "unjudged" for c in turn.calls)


@pytest.mark.parametrize("name", sorted(BODIES))
async def test_event_sequence(name: str) -> None:
    """Started once per call, complete once; Finish, then StreamEnd(terminated) last."""
    body, expected = BODIES[name]
    events = [e async for e in toolwire.stream(body, "ollama", judge=False)]
    recorded.assert_stream_ends(events, terminated=expected.terminated)
    started, complete = recorded.started_and_complete(events)
    assert [e.index for e in started] == list(range(len(expected.calls)))
    assert [e.call_id for e in complete] == [e.call_id for e in started]
    assert all(e.arguments_form == "object" for e in complete)
    closed_by = "end_of_stream" if expected.finish_raw is None else "finish"
    assert all(e.closed_by == closed_by for e in complete)


@pytest.mark.parametrize("name", sorted(BODIES))
def test_check_mapper(name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    # check_mapper's cut_anywhere keys runnable calls by call id, and synthesized ids are random
    # per stream: two id-less whole calls (parallel_same_name_no_ids) would fail it for nothing.
    # Fixing the random prefix makes a synthesized id the same in every run of the kit.
    monkeypatch.setattr(accumulate.secrets, "token_hex", lambda n: "0" * (2 * n))
    check_mapper(PROVIDERS["ollama"].open_mapper, BODIES[name][0])


WEATHER = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "parameters": {
            "type": "object",
            "properties": {"city": {"type": "string"}},
            "required": ["city"],
        },
    },
}


async def test_judged_docs_example() -> None:
    # An object is the arguments: ``ok``, not a repair (issue 18), never re-read as text; the
    # form stays visible as its ToolCallComplete's ``arguments_form``.
    turn = await toolwire.collect(load_stream(DOCS), "ollama", tools=[WEATHER])
    (call,) = turn.calls
    assert (call.outcome, call.arguments, call.may_run) == ("ok", {"city": "Tokyo"}, True)
    assert call.verdict is not None
    assert call.verdict.repairs == ()


async def test_judged_length_runs_the_first_call_and_never_the_last() -> None:
    turn = await toolwire.collect(load_stream(DERIVED), "ollama", tools=[WEATHER])
    first, second = turn.calls
    assert (first.call_id, first.outcome, first.arguments) == (
        "call_gfuxaa3e",
        "ok",  # an object is no repair (issue 18)
        {"city": "Tokyo"},
    )
    assert (second.call_id, second.outcome, second.may_run) == ("call_9r4kq2vx", "rejected", False)
    assert second.verdict is not None
    assert second.verdict.reason == "truncated"
    assert second.verdict.message is not None
    assert "output-token limit" in second.verdict.message
    assert [c.call_id for c in turn.runnable] == ["call_gfuxaa3e"]


async def test_usage_at_num_predict_from_the_request() -> None:
    # The request said num_predict 15 and the done line eval_count 15: two kinds of evidence.
    request = {"model": "qwen3", "messages": [], "options": {"num_predict": 15}}
    turn = await toolwire.collect(load_stream(DERIVED), "ollama", request=request, judge=False)
    assert turn.truncation_evidence == ("finish_reason", "usage_at_max_tokens")
    # And a stop with usage at the limit is a cut too (the docs example with num_predict 15).
    docs = await toolwire.collect(load_stream(DOCS), "ollama", request=request, judge=False)
    assert (docs.stop_reason, docs.truncation_evidence) == ("length", ("usage_at_max_tokens",))
    assert [c.truncated for c in docs.calls] == [True]


@pytest.mark.parametrize(
    ("raw", "reason"),
    [
        ("stop", "end_turn"),
        ("length", "length"),
        ("load", "unknown"),
        ("unload", "unknown"),
        ("", "unknown"),
        (None, "unknown"),
        ("connection_closed", "unknown"),
        ("max_tokens", "unknown"),
    ],
)
def test_done_reason_vocabulary(raw: str | None, reason: str) -> None:
    assert finish_reason_from_ollama(raw) == reason


# -- the ollama SDK's objects --------------------------------------------------------------------


def sdk_chunks(body: bytes) -> list[ChatResponse]:
    """The body as ``AsyncClient.chat(stream=True)`` yields it: ``ChatResponse(**part)``."""
    return [ChatResponse(**json.loads(raw)) for raw in body.splitlines() if raw.strip()]


def without_ids(turn: Turn) -> Turn:
    calls = tuple(
        msgspec.structs.replace(c, call_id="", id_synthesized=False, provider_id=None)
        for c in turn.calls
    )
    return msgspec.structs.replace(turn, calls=calls)


@pytest.mark.parametrize("name", sorted(BODIES))
async def test_sdk_objects_give_the_same_turn(name: str) -> None:
    body, _ = BODIES[name]
    from_bytes = await toolwire.collect(body, "ollama", judge=False)
    from_objects = await toolwire.collect(aiter_items(sdk_chunks(body)), "ollama", judge=False)
    # ollama-python 0.6's Message.ToolCall has no `id` (nor Function an `index`): pydantic drops
    # them, so SDK calls get synthesized ids. Everything else is the same.
    assert without_ids(from_objects) == without_ids(from_bytes)
    assert all(c.id_synthesized for c in from_objects.calls)


@pytest.mark.parametrize("name", sorted(BODIES))
async def test_decoded_mappings_give_the_same_turn_ids_included(name: str) -> None:
    body, expected = BODIES[name]
    mappings = [json.loads(raw) for raw in body.splitlines()]
    turn = await toolwire.collect(mappings, "ollama", judge=False)
    assert_turn(turn, expected)
