"""Every recorded Gemini / Vertex stream replays to the values read from the file itself.

The expected values were written by reading each recording (``gemini/*.sse``; the wire quirks
are listed in ``tests/data/fixtures/streams/README.md``), not copied from toolwire's output. Usage
is ``(input, output, total, reasoning)`` with output = ``candidatesTokenCount`` +
``thoughtsTokenCount`` (Gemini counts thinking apart; ``maxOutputTokens`` limits both). Gemini
sends no call ids, so ids are toolwire's synthesized ones: checked by form, not by value.
The same streams are also fed as google-genai ``GenerateContentResponse`` objects.
"""

from __future__ import annotations

import re
import secrets
from dataclasses import dataclass
from typing import Any

import _recorded_turns as recorded
import msgspec
import pytest
from _recorded_turns import ExpectedTurn
from _toolwire_testdata import STREAMS, aiter_items, json_chunks, load_stream
from google.genai import types

import toolwire
from toolwire.adapters.gemini import PROVIDERS
from toolwire.core.events import ToolCallArgumentsDelta, ToolCallRejected, ToolCallStarted
from toolwire.core.turn import Turn
from toolwire.testing import check_mapper

pytestmark = pytest.mark.anyio

SYNTHESIZED = re.compile(r"toolwire-[0-9a-f]{16}-")


@dataclass(frozen=True)
class Call:
    name: str
    raw: str
    truncated: bool = False
    #: ``ok`` (an object is no repair, issue 18), ``rejected``... with the judge on; the reason
    #: when rejected.
    outcome: str = "ok"
    reason: str | None = None
    arguments: dict[str, Any] | None = None


@dataclass(frozen=True, kw_only=True)
class Expected(ExpectedTurn):
    response_id: str | None
    usage: tuple[int | None, int | None, int | None, int | None]
    finish_raw: str | None = "STOP"
    #: Argument deltas, in order, for every call.
    deltas: tuple[str, ...] | None = None


EXPECTED: dict[str, Expected] = {
    # The whole response in ONE event, functionCall and finishReason STOP in the same chunk, no
    # candidate index, CRLF separators.
    "gemini/function_call_single_chunk_with_stop_gemini2flash.sse": Expected(
        model="gemini-2.0-flash",
        response_id="1lpeaMTxIpW1nvgP-O3vwQY",
        calls=(Call("get_capital", '{"country":"France"}', arguments={"country": "France"}),),
        usage=(52, 5, 57, None),
        deltas=('{"country":"France"}',),
    ),
    # functionCall with thoughtSignature and no finishReason; the finish comes in a later chunk
    # whose only part is {"text": ""}; thoughtsTokenCount 202; ": " spacing, CRLF.
    "gemini/function_call_thought_signature_gemini3.sse": Expected(
        model="gemini-3-pro-preview",
        response_id="QUVVadTSNJ6_qtsPvN7J8Q0",
        calls=(Call("get_country", "{}", arguments={}),),
        usage=(29, 212, 241, 202),
        deltas=("{}",),
    ),
    # MALFORMED_FUNCTION_CALL with no content, no modelVersion/responseId: one synthesized call,
    # already rejected, with no name and no text.
    "gemini/malformed_function_call.derived.sse": Expected(
        model=None,
        response_id=None,
        calls=(Call("", "", outcome="rejected", reason="not_json"),),
        usage=(2595, None, 2595, None),
        finish_raw="MALFORMED_FUNCTION_CALL",
        deltas=(),
    ),
    # Vertex partialArgs: header + one piece with willContinue, then MAX_TOKENS and no end
    # piece: the call is never closed by the server.
    "gemini/max_tokens_mid_partial_args.derived.sse": Expected(
        model="gemini-3.1-pro-preview",
        response_id="dqHOab6xGLzWodAPkPuViA4",
        calls=(
            Call(
                "getWeather",
                '{"location":"Boston',
                truncated=True,
                outcome="rejected",
                reason="truncated",
            ),
        ),
        usage=(26, 140, 166, 132),
        stop="length",
        finish_raw="MAX_TOKENS",
        truncated=True,
        evidence=("finish_reason", "arguments_unterminated"),
        cut_by="token_limit",
        deltas=("{", '"location":"Boston'),
    ),
    # Text cut at maxOutputTokens=5 in a single event.
    "gemini/max_tokens_text_single_event.derived.sse": Expected(
        model="gemini-2.5-flash",
        response_id="R5MoavWNNp_8qtsP2fWD2A0",
        text="The capital of France is",
        usage=(15, 5, 20, None),
        stop="length",
        finish_raw="MAX_TOKENS",
        truncated=True,
        evidence=("finish_reason",),
        cut_by="token_limit",
        deltas=(),
    ),
    # Vertex streamFunctionCallArguments: header, partialArgs pieces (a string over two pieces,
    # the second without willContinue), an empty functionCall {} ending each call; two calls.
    "gemini/vertex_stream_function_call_arguments_two_calls.sse": Expected(
        model="gemini-3.1-pro-preview",
        response_id="dqHOab6xGLzWodAPkPuViA4",
        calls=(
            Call("getWeather", '{"location":"Boston"}', arguments={"location": "Boston"}),
            Call(
                "getWeather",
                '{"location":"San Francisco"}',
                arguments={"location": "San Francisco"},
            ),
        ),
        usage=(26, 155, 181, 132),
        deltas=("{", '"location":"Boston', '"', "}", "{", '"location":"San Francisco', '"', "}"),
    ),
}

RECORDINGS = sorted(f"gemini/{path.name}" for path in (STREAMS / "gemini").iterdir())


def test_every_recording_has_expectations() -> None:
    assert sorted(EXPECTED) == RECORDINGS


def test_the_recordings_use_gemini_framing() -> None:
    # CRLF event separators and ": " key spacing (in the Gemini API recordings; the Vertex ones
    # were re-serialized compactly by their recorder): the mapper must not depend on either.
    body = load_stream("gemini/function_call_thought_signature_gemini3.sse")
    assert body.count(b"\r\n\r\n") == 2
    assert b"\n\n" not in body.replace(b"\r\n", b"")
    assert b'"candidates": [' in body
    assert b'"candidates":[' in load_stream(
        "gemini/vertex_stream_function_call_arguments_two_calls.sse"
    )


def assert_turn(turn: Turn, expected: Expected, *, judged: bool = False) -> None:
    assert turn.text == expected.text
    assert turn.reasoning == ""
    assert [(c.name, c.index, c.arguments_raw, c.truncated) for c in turn.calls] == [
        (c.name, index, c.raw, c.truncated) for index, c in enumerate(expected.calls)
    ]
    ids = [c.call_id for c in turn.calls]
    assert all(SYNTHESIZED.match(i) for i in ids), ids
    assert all(c.id_synthesized for c in turn.calls)
    assert len(set(ids)) == len(ids)
    if judged:
        for call, want in zip(turn.calls, expected.calls, strict=True):
            assert call.outcome == want.outcome
            assert call.verdict is not None
            assert call.verdict.reason == want.reason
            if want.outcome == "ok":
                assert call.verdict.repairs == ()
                assert call.arguments == want.arguments
                assert call.may_run
            else:
                assert not call.may_run
    else:
        # The malformed call is rejected by the adapter itself: no judge is needed for it.
        assert [c.outcome for c in turn.calls] == [
            "rejected" if c.outcome == "rejected" and c.reason == "not_json" else "unjudged"
            for c in expected.calls
        ]
    recorded.assert_finish(turn, expected)
    assert turn.cut_by == expected.cut_by
    assert turn.usage is not None
    assert recorded.usage_row(turn.usage) == expected.usage
    assert turn.errors == ()
    assert turn.model == expected.model
    assert turn.response_id == expected.response_id
    assert turn.provider == "gcp.gemini"


@pytest.mark.parametrize("name", RECORDINGS)
async def test_recording_bytes_replay(name: str) -> None:
    turn = await toolwire.collect(load_stream(name), "gemini", judge=False)
    assert_turn(turn, EXPECTED[name])


@pytest.mark.parametrize("name", RECORDINGS)
@pytest.mark.parametrize("read_size", [1, 7, 64, 65536])
async def test_recording_as_async_reads(name: str, read_size: int) -> None:
    reads = recorded.in_reads(load_stream(name), read_size)
    turn = await toolwire.collect(aiter_items(reads), "gemini", judge=False)
    assert_turn(turn, EXPECTED[name])


@pytest.mark.parametrize("name", RECORDINGS)
async def test_recording_judged(name: str) -> None:
    turn = await toolwire.collect(load_stream(name), "gemini")
    assert_turn(turn, EXPECTED[name], judged=True)


async def test_a_call_cut_at_max_tokens_says_so() -> None:
    turn = await toolwire.collect(
        load_stream("gemini/max_tokens_mid_partial_args.derived.sse"), "gemini"
    )
    (call,) = turn.calls
    assert call.verdict is not None
    assert call.verdict.message is not None
    assert "output-token limit" in call.verdict.message
    assert '{"location":"Boston' in call.verdict.message


async def test_the_malformed_call_message_is_true() -> None:
    turn = await toolwire.collect(
        load_stream("gemini/malformed_function_call.derived.sse"), "gemini"
    )
    (call,) = turn.calls
    message = call.verdict.message if call.verdict is not None else None
    assert message is not None
    assert "could not parse it (finish reason MALFORMED_FUNCTION_CALL)" in message
    assert "no function name or arguments were received" in message
    assert "Call the function again" in message
    assert turn.rejected == (call,)
    assert turn.runnable == ()


@pytest.mark.parametrize("name", RECORDINGS)
async def test_recording_event_sequence(name: str) -> None:
    """Started once per call, before its deltas; complete once; Finish then StreamEnd last."""
    events = [e async for e in toolwire.stream(load_stream(name), "gemini", judge=False)]
    expected = EXPECTED[name]
    # No terminator in this protocol: a finish reason and a clean end of the body is one.
    recorded.assert_stream_ends(events, terminated=True)
    started, complete = recorded.started_and_complete(events)
    rejected = [e for e in events if isinstance(e, ToolCallRejected)]
    assert [e.call_id for e in started] == [e.call_id for e in complete]
    assert len(started) + len(rejected) == len(expected.calls)
    deltas = tuple(e.delta for e in events if isinstance(e, ToolCallArgumentsDelta))
    assert deltas == expected.deltas
    for call in complete:
        own = recorded.call_events(events, call.call_id)
        assert isinstance(own[0], ToolCallStarted)
        assert own[-1] is call
        assert call.arguments_form == "object"
        # A whole call stays open for the finish to decide; a streamed one ends on its end
        # piece (issue 18: the last whole call before MAX_TOKENS is cut, as Ollama's is).
        whole = "partialArgs" not in load_stream(name).decode()
        assert call.closed_by == ("finish" if call.truncated or whole else "call_end")


@pytest.mark.parametrize("name", RECORDINGS)
def test_conformance_kit(name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    # The kit compares the calls of a cut body with those of the whole body by call id. Gemini
    # sends none, and synthesized ids are random per stream, so the randomness is pinned here
    # (every run of the kit then synthesizes the same ids for the same calls).
    monkeypatch.setattr(secrets, "token_hex", lambda nbytes=None: "0" * 16)
    check_mapper(PROVIDERS["gemini"].open_mapper, load_stream(name))


# -- the google-genai SDK object path -----------------------------------------------------------


def sdk_chunks(name: str) -> list[types.GenerateContentResponse]:
    """The recording as the SDK gives it to users.

    ``_from_response`` is what the SDK runs on every streamed chunk: it drops fields its
    version does not know (``serviceTier``), then validates.
    """
    return [
        types.GenerateContentResponse._from_response(response=data, kwargs={})
        for data in json_chunks(load_stream(name))
    ]


def without_random_ids(turn: Turn) -> bytes:
    """The turn as JSON with the random part of synthesized ids replaced."""
    return SYNTHESIZED.sub("toolwire-X-", msgspec.json.encode(turn).decode()).encode()


@pytest.mark.parametrize("name", RECORDINGS)
async def test_sdk_objects_give_the_same_turn(name: str) -> None:
    from_bytes = await toolwire.collect(load_stream(name), "gemini", judge=False)
    from_objects = await toolwire.collect(aiter_items(sdk_chunks(name)), "gemini", judge=False)
    assert without_random_ids(from_objects) == without_random_ids(from_bytes)
    assert_turn(from_objects, EXPECTED[name])


@pytest.mark.parametrize("name", RECORDINGS)
async def test_sdk_objects_give_the_same_history(name: str) -> None:
    # The SDK holds thought signatures as bytes and dumps them as URL-safe base64; the history
    # must carry the signature exactly as the API sent it, whatever the source.
    messages = []
    for source in (load_stream(name), aiter_items(sdk_chunks(name))):
        turn = await toolwire.collect(source, "gemini")
        results = [
            toolwire.ToolResult(call_id=c.call_id, name=c.name, content="x", status="ok")
            for c in turn.calls
        ]
        if turn.calls:
            messages.append(toolwire.Pipeline("gemini").next_messages(turn, results)[0])
    if messages:
        first, second = messages
        assert first == second
        wire = [part.get("thoughtSignature") for part in first["parts"]]
        for data in json_chunks(load_stream(name)):
            for part in data["candidates"][0].get("content", {}).get("parts", []):
                if "thoughtSignature" in part:
                    assert part["thoughtSignature"] in wire


async def test_decoded_json_mappings_are_accepted_as_objects() -> None:
    name = "gemini/vertex_stream_function_call_arguments_two_calls.sse"
    turn = await toolwire.collect(json_chunks(load_stream(name)), "gemini", judge=False)
    assert_turn(turn, EXPECTED[name])


async def test_the_sdk_dump_extras_are_skipped() -> None:
    # What the SDK adds to its dump (sdkHttpResponse with the HTTP headers) is skipped like any
    # field the wire adds.
    chunk = sdk_chunks("gemini/max_tokens_text_single_event.derived.sse")[0]
    dumped = chunk.model_dump(mode="json", by_alias=True, exclude_none=True)
    dumped["sdkHttpResponse"] = {"headers": {"x": "y"}}
    turn = await toolwire.collect([dumped], "gemini", judge=False)
    assert_turn(turn, EXPECTED["gemini/max_tokens_text_single_event.derived.sse"])
