"""Every Anthropic Messages recording replays to the values read from the file itself.

The expected values below were written by reading each recording (joining its ``text_delta`` /
``thinking_delta`` / ``input_json_delta`` pieces by hand), not copied from toolwire's output. The
same streams are fed as ``anthropic`` SDK ``MessageStreamEvent`` objects and must give the same
turn; ``toolwire.testing.check_mapper`` passes on every one of them.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

import _recorded_turns as recorded
import pytest
from _recorded_turns import Call as RecordedCall
from _recorded_turns import ExpectedTurn
from _toolwire_testdata import STREAMS, aiter_items, json_chunks, load_stream
from anthropic.types import (
    RawContentBlockDeltaEvent,
    RawContentBlockStartEvent,
    RawContentBlockStopEvent,
    RawMessageDeltaEvent,
    RawMessageStartEvent,
    RawMessageStopEvent,
)
from pydantic import BaseModel

import toolwire
from toolwire.adapters.anthropic import PROVIDERS, recorded_content
from toolwire.core.turn import Turn
from toolwire.testing import check_mapper

pytestmark = pytest.mark.anyio

FOLDER = "anthropic"


@dataclass(frozen=True)
class Call(RecordedCall):
    #: The judge's outcome with the default policy and no tool schemas.
    outcome: str = "ok"


@dataclass(frozen=True, kw_only=True)
class Expected(ExpectedTurn):
    response_id: str
    finish_raw: str | None = "tool_use"
    #: (input, output, total, reasoning) tokens of the last usage report.
    usage: tuple[int | None, int | None, int | None, int | None] | None = None
    #: ``message_stop`` is in the file.
    terminated: bool = True
    #: (code, message) of the fatal in-band error, if any.
    error: tuple[str, str] | None = None
    #: The ``type`` of every content block kept for replay, in order.
    blocks: tuple[str, ...] = ()


PARIS_TEXT = "I" + "'ll check the current weather in Paris for you."
TAX_TEXT = (
    "I"
    + "'ll create a comprehensive tax guide for"
    + " someone with multiple W2s an"
    + "d save it in a file called taxes.txt. Let"
    + " me do that for you now."
)
# The partial_json pieces of block 1, JSON-unescaped by hand ("\n" in the file is a newline).
TAX_ARGUMENTS = (
    '{"filename": "taxes.txt'
    + '", "lines_of_text": [\n"# COMPREHENSIVE TAX GUIDE FOR INDIVIDUALS WITH MULTIPLE W-2s",'
    + '\n"",\n"## INTRODUCTION",\n"",'
    + '\n"Filing taxes'
)
CODE_TEXT = (
    "I'll calculate that expression for you right away!"
    + "Following"
    + " the standard **order of operations (PEMDAS/BODMAS)** \u2014 multiplication is"
    + " performed before addition and subtraction \u2014 here's the breakdown:\n\n"
    + "| Step | Operation | Result |\n|------|-----------|--------|\n| 1\ufe0f"
    + "\u20e3 | `6544 \xd7 65464` | `428,394,416"
    + "` |\n| 2\ufe0f\u20e3 | `65465 - 428,394,416` | `-428,328,951"
    + "` |\n| 3\ufe0f\u20e3 | `-428,328,951 - 6` | `-428,328,957` |\n| 4\ufe0f"
    + "\u20e3 | `-428,328,957 + 1.02255` | **`-428,328,955.97745`** |\n\n### "
    + "\u2705 Final Answer: **-428,330,955.97745**"
)
NO_ARGS_REASONING = (
    "The user wants me to:\n1"
    + ". Use the fixed_version tool\n2. Tell them the version\n3. Make a short joke about it"
    + "\n\nLet me first call the fixed_version tool to see what version it returns."
)

EXPECTED: dict[str, Expected] = {
    "text_then_tool_use.sse": Expected(
        model="claude-sonnet-4-20250514",
        response_id="msg_019Q1hrJbZG26Fb9BQhrkHEr",
        text=PARIS_TEXT,
        # The first input_json_delta is "" (README: Anthropic quirks); the rest joined.
        calls=(Call("toolu_01NRLabsLyVHZPKxbKvkfSMn", "get_weather", 0, '{"location": "Paris"}'),),
        usage=(377, 65, None, None),
        blocks=("text", "tool_use"),
    ),
    # content_block_stop IS sent for the cut tool_use block: it is left for the finish, whose
    # max_tokens names the cause.
    "max_tokens_mid_tool_input.derived.sse": Expected(
        model="claude-sonnet-4-20250514",
        response_id="msg_019Q1hrJbZG26Fb9BQhrkHEr",
        text=PARIS_TEXT,
        calls=(
            Call(
                "toolu_01NRLabsLyVHZPKxbKvkfSMn",
                "get_weather",
                0,
                '{"location": "P',
                truncated=True,
                outcome="rejected",
            ),
        ),
        stop="length",
        finish_raw="max_tokens",
        truncated=True,
        evidence=("finish_reason", "arguments_unterminated"),
        cut_by="token_limit",
        usage=(377, 48, None, None),
        blocks=("text", "tool_use"),
    ),
    # NO content_block_stop for the tool block, whitespace padding before every closing "}",
    # no trailing newline at EOF.
    "max_tokens_mid_tool_input_no_block_stop.sse": Expected(
        model="claude-3-7-sonnet-20250219",
        response_id="msg_01UdjYBBipA9omjYhicnevgq",
        text=TAX_TEXT,
        calls=(
            Call(
                "toolu_01EKqbqmZrGRXy18eN7m9kvY",
                "make_file",
                0,
                TAX_ARGUMENTS,
                truncated=True,
                outcome="rejected",
            ),
        ),
        stop="length",
        finish_raw="max_tokens",
        truncated=True,
        evidence=("finish_reason", "arguments_unterminated"),
        cut_by="token_limit",
        usage=(450, 124, None, None),
        blocks=("text", "tool_use"),
    ),
    # A no-argument tool: only partial_json "" arrives; the input is the start block's {}.
    "thinking_then_tool_use_no_args_padded.sse": Expected(
        model="claude-haiku-4-5-20251001",
        response_id="msg_01JdU4xqNHXL9QCFWkwCDKGr",
        reasoning=NO_ARGS_REASONING,
        calls=(Call("toolu_01825dXWLSoJwCst1qTsiWdb", "fixed_version", 0, "{}"),),
        # output_tokens_details.thinking_tokens: 53 (a newer field).
        usage=(598, 92, None, 53),
        blocks=("thinking", "tool_use"),
    ),
    # server_tool_use (bash_code_execution) and its result: run by Anthropic, never a call.
    "thinking_text_server_tool_use_text.sse": Expected(
        model="claude-sonnet-4-6",
        response_id="msg_01Js8aWE7YbmiaUPneGiCskE",
        reasoning="Let" + " me calculate this mathematical expression.",
        text=CODE_TEXT,
        stop="end_turn",
        finish_raw="end_turn",
        # message_delta's input_tokens (4714) replaces message_start's (2293).
        usage=(4714, 304, None, None),
        blocks=("thinking", "text", "server_tool_use", "bash_code_execution_tool_result", "text"),
    ),
    # event: error (overloaded_error) after two text deltas; nothing follows.
    "error_overloaded_mid_stream.derived.sse": Expected(
        model="claude-sonnet-4-20250514",
        response_id="msg_019Q1hrJbZG26Fb9BQhrkHEr",
        text=PARIS_TEXT,
        stop="error",
        finish_raw=None,
        usage=(377, 1, None, None),
        terminated=False,
        error=("overloaded_error", "Overloaded"),
        blocks=("text",),
    ),
}

RECORDINGS = sorted(path.name for path in (STREAMS / FOLDER).iterdir() if path.suffix == ".sse")


def body_of(name: str) -> bytes:
    return load_stream(f"{FOLDER}/{name}")


def test_every_recording_has_expectations() -> None:
    assert RECORDINGS == sorted(EXPECTED)


def test_expected_raw_strings_are_what_they_claim() -> None:
    for name, expected in EXPECTED.items():
        for call in expected.calls:
            if call.truncated:
                with pytest.raises(json.JSONDecodeError):
                    json.loads(call.raw)
            else:
                assert isinstance(json.loads(call.raw), dict), name


def assert_turn(turn: Turn, expected: Expected) -> None:
    assert turn.text == expected.text
    assert turn.reasoning == expected.reasoning
    assert recorded.call_rows(turn) == recorded.expected_rows(expected.calls)
    assert all(not c.id_synthesized and c.provider_id is None for c in turn.calls)
    recorded.assert_finish(turn, expected)
    assert turn.cut_by == expected.cut_by
    assert turn.usage is not None
    assert recorded.usage_row(turn.usage) == expected.usage
    if expected.error is None:
        assert turn.errors == ()
    else:
        (error,) = turn.errors
        assert (error.kind, error.code, error.message, error.fatal) == (
            "error_payload",
            *expected.error,
            True,
        )
    assert turn.model == expected.model
    assert turn.response_id == expected.response_id
    assert turn.provider == "anthropic"


@pytest.mark.parametrize("name", RECORDINGS)
async def test_recording_bytes_replay(name: str) -> None:
    turn = await toolwire.collect(body_of(name), "anthropic", judge=False)
    assert_turn(turn, EXPECTED[name])
    assert all(c.outcome == "unjudged" for c in turn.calls)


@pytest.mark.parametrize("name", RECORDINGS)
@pytest.mark.parametrize("read_size", [1, 7, 64, 65536])
async def test_recording_as_async_reads(name: str, read_size: int) -> None:
    reads = recorded.in_reads(body_of(name), read_size)
    turn = await toolwire.collect(aiter_items(reads), "anthropic", judge=False)
    assert_turn(turn, EXPECTED[name])


@pytest.mark.parametrize("name", RECORDINGS)
async def test_recording_judged(name: str) -> None:
    turn = await toolwire.collect(body_of(name), "anthropic")
    assert_turn(turn, EXPECTED[name])
    assert [c.outcome for c in turn.calls] == [c.outcome for c in EXPECTED[name].calls]
    for call in turn.calls:
        assert call.verdict is not None
        if call.outcome == "ok":
            assert call.verdict.repairs == ()
            assert call.arguments == json.loads(call.arguments_raw)
        else:
            assert call.verdict.reason == "truncated"
            message = call.verdict.message or ""
            # The finish said max_tokens: the message names the limit, never "not known".
            assert "cut off at the output-token limit" in message
            assert "not known" not in message


async def test_no_argument_tool_is_ok_not_repaired() -> None:
    # thinking_then_tool_use_no_args_padded.sse: the one input_json_delta is "". The protocol's
    # input is then the start block's {}: the judge sees "{}", not "" (an "empty" repair).
    turn = await toolwire.collect(body_of("thinking_then_tool_use_no_args_padded.sse"), "anthropic")
    (call,) = turn.calls
    assert call.verdict is not None
    assert (call.outcome, call.verdict.repairs, call.arguments) == ("ok", (), {})


@pytest.mark.parametrize("name", RECORDINGS)
async def test_recording_event_sequence(name: str) -> None:
    """Started once per call, before its deltas; complete once; Finish then StreamEnd last."""
    events = [e async for e in toolwire.stream(body_of(name), "anthropic", judge=False)]
    expected = EXPECTED[name]
    recorded.assert_stream_ends(events, terminated=expected.terminated)
    started, complete = recorded.started_and_complete(events)
    assert [e.call_id for e in started] == [c.call_id for c in expected.calls]
    assert [e.call_id for e in complete] == [c.call_id for c in expected.calls]
    for call in expected.calls:
        assert recorded.joined_deltas(events, call.call_id) == call.raw
        (done,) = [e for e in complete if e.call_id == call.call_id]
        # A whole block closes on its content_block_stop; a cut one at the finish.
        assert done.closed_by == ("finish" if call.truncated else "call_end")


@pytest.mark.parametrize("name", RECORDINGS)
def test_check_mapper_passes(name: str) -> None:
    check_mapper(PROVIDERS["anthropic"].open_mapper, body_of(name))


@pytest.mark.parametrize("name", RECORDINGS)
async def test_content_blocks_are_kept_for_replay(name: str) -> None:
    turn = await toolwire.collect(body_of(name), "anthropic")
    blocks = recorded_content(turn)
    assert blocks is not None
    assert tuple(block["type"] for block in blocks) == EXPECTED[name].blocks


async def test_thinking_signature_and_server_tool_are_kept_exactly() -> None:
    name = "thinking_text_server_tool_use_text.sse"
    turn = await toolwire.collect(body_of(name), "anthropic")
    blocks = recorded_content(turn)
    assert blocks is not None
    chunks = json_chunks(body_of(name))
    (signature,) = [
        c["delta"]["signature"]
        for c in chunks
        if c["type"] == "content_block_delta" and c["delta"]["type"] == "signature_delta"
    ]
    assert blocks[0] == {
        "type": "thinking",
        "thinking": "Let me calculate this mathematical expression.",
        "signature": signature,
    }
    # Nine input_json_delta pieces, escaped quotes split across pieces, parsed once whole.
    assert blocks[2] == {
        "type": "server_tool_use",
        "id": "srvtoolu_01MwXaweAHve88x6s3Fc8x6Q",
        "name": "bash_code_execution",
        "input": {"command": 'echo "65465-6544 * 65464-6+1.02255" | bc -l'},
    }
    (result_start,) = [
        c["content_block"] for c in chunks if c["type"] == "content_block_start" and c["index"] == 3
    ]
    assert blocks[3] == result_start
    assert turn.calls == ()  # never a toolwire call: never judged, never dispatched


# -- the anthropic SDK object path ------------------------------------------------------------

SDK_EVENTS: dict[str, type[BaseModel]] = {
    "message_start": RawMessageStartEvent,
    "content_block_start": RawContentBlockStartEvent,
    "content_block_delta": RawContentBlockDeltaEvent,
    "content_block_stop": RawContentBlockStopEvent,
    "message_delta": RawMessageDeltaEvent,
    "message_stop": RawMessageStopEvent,
}


def sdk_events(name: str) -> list[BaseModel]:
    """The recording as ``client.messages.create(stream=True)`` yields it.

    The SDK skips ``ping`` and raises on ``error`` (tested end to end), so neither is an object.
    """
    return [
        SDK_EVENTS[chunk["type"]].model_validate(chunk)
        for chunk in json_chunks(body_of(name))
        if chunk["type"] in SDK_EVENTS
    ]


SDK_RECORDINGS = [name for name in RECORDINGS if EXPECTED[name].error is None]


@pytest.mark.parametrize("name", SDK_RECORDINGS)
async def test_sdk_objects_give_the_same_turn(name: str) -> None:
    from_bytes = await toolwire.collect(body_of(name), "anthropic")
    bytes_blocks = recorded_content(from_bytes)
    from_objects = await toolwire.collect(aiter_items(sdk_events(name)), "anthropic")
    assert from_objects == from_bytes
    assert recorded_content(from_objects) == bytes_blocks


async def test_sdk_objects_from_a_plain_list_and_as_dicts() -> None:
    name = "text_then_tool_use.sse"
    from_list = await toolwire.collect(sdk_events(name), "anthropic", judge=False)
    assert_turn(from_list, EXPECTED[name])
    chunks: list[dict[str, Any]] = json_chunks(body_of(name))
    from_dicts = await toolwire.collect(aiter_items(chunks), "anthropic", judge=False)
    assert_turn(from_dicts, EXPECTED[name])


async def test_sdk_partial_json_is_never_trusted() -> None:
    # The SDK's own accumulator completes the cut buffer of the no-block-stop recording into a
    # valid-looking object; toolwire keeps the raw pieces and rejects the call.
    from anthropic.lib.streaming._messages import accumulate_event

    name = "max_tokens_mid_tool_input_no_block_stop.sse"
    snapshot: Any = None
    buffers: dict[int, bytes] = {}
    for event in sdk_events(name):
        snapshot = accumulate_event(event=event, current_snapshot=snapshot, json_bufs=buffers)  # type: ignore[arg-type]
    # What the SDK's final message would hand a tool: the cut last line silently dropped.
    assert snapshot.content[1].input == {
        "filename": "taxes.txt",
        "lines_of_text": [
            "# COMPREHENSIVE TAX GUIDE FOR INDIVIDUALS WITH MULTIPLE W-2s",
            "",
            "## INTRODUCTION",
            "",
        ],
    }
    turn = await toolwire.collect(aiter_items(sdk_events(name)), "anthropic")
    (call,) = turn.calls
    assert call.arguments_raw == TAX_ARGUMENTS
    assert call.outcome == "rejected"
