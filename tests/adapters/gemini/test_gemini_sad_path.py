"""Gemini streams that go wrong: lost pieces, in-band errors, bodies that are no stream, HTTP
errors, streamed arguments the text cannot represent, and every finish value.
"""

from __future__ import annotations

import json
from typing import Any

import httpx
import pytest
from _toolwire_testdata import load_stream
from google.genai import types

import toolwire
from toolwire.adapters.gemini import (
    GeminiMapper,
    block_reason_from_gemini,
    finish_reason_from_gemini,
)
from toolwire.core.events import Finish, ProviderError, StreamEnd
from toolwire.judge import Policy

pytestmark = pytest.mark.anyio

SIGNATURE = "CiMBjz1rX25KieIB4d4AwFn8/WbsHTRNHBXso88PtemwfsSfRAp6AY89a1/e2Frm"
TWO_CALLS = "gemini/vertex_stream_function_call_arguments_two_calls.sse"


def chunk(*parts: dict[str, Any], finish: str | None = None, **extra: Any) -> dict[str, Any]:
    """One GenerateContentResponse with one candidate."""
    candidate: dict[str, Any] = {"content": {"role": "model", "parts": list(parts)}}
    if finish is not None:
        candidate["finishReason"] = finish
    return {"candidates": [candidate], "modelVersion": "gemini-test", **extra}


def body(*chunks: dict[str, Any] | bytes) -> bytes:
    """Gemini SSE framing: ``data:`` lines, CRLF separators, no terminator."""
    return b"".join(
        b"data: " + (c if isinstance(c, bytes) else json.dumps(c).encode()) + b"\r\n\r\n"
        for c in chunks
    )


def header(name: str) -> dict[str, Any]:
    return {"functionCall": {"name": name, "willContinue": True}}


def piece(path: str, more: bool = True, **value: Any) -> dict[str, Any]:
    arg = {"jsonPath": path, **value}
    return {"functionCall": {"partialArgs": [arg], "willContinue": more}}


END = {"functionCall": {}}


# -- a piece that cannot be read ----------------------------------------------------------------


@pytest.mark.parametrize(
    "unreadable",
    [
        b"{not json",
        b'{"candidates": "not a list"}',
        b'{"candidates": [{"content": {"parts": [{"functionCall": {"args": [1, 2]}}]}}]}',
    ],
    ids=["not_json", "unknown_shape", "args_not_an_object"],
)
async def test_an_unreadable_piece_mid_call_rejects_that_call_as_lost(unreadable: bytes) -> None:
    # {"path": "/home/me/"} would parse after its middle was lost: it must never run.
    stream = body(
        chunk(header("rm")),
        chunk(piece("$.path", stringValue="/home/me/", willContinue=True)),
        unreadable,
        chunk(piece("$.path", more=False, stringValue="")),
        chunk({"functionCall": {"name": "ls", "args": {"path": "/tmp"}}}, finish="STOP"),
    )
    turn = await toolwire.collect(stream, "gemini")
    rm, ls = turn.calls
    assert rm.arguments_raw == '{"path":"/home/me/"}'
    assert rm.outcome == "rejected"
    assert rm.verdict is not None
    assert rm.verdict.reason == "lost_in_transit"
    # A call that starts whole, with its name, after the loss is not touched by it.
    assert ls.may_run
    assert ls.arguments == {"path": "/tmp"}
    assert [e.kind for e in turn.errors] in (["not_json"], ["unknown_shape"])
    assert turn.stop_reason == "tool_calls"


async def test_a_lost_sdk_chunk_marks_the_open_call_too() -> None:
    objects: list[Any] = [
        types.GenerateContentResponse._from_response(response=c, kwargs={})
        for c in (chunk(header("rm")), chunk(piece("$.path", stringValue="/home/")))
    ]
    objects.append({"candidates": 3})
    objects.append(chunk(END, finish="STOP"))
    turn = await toolwire.collect(objects, "gemini")
    (rm,) = turn.calls
    assert rm.verdict is not None
    assert rm.verdict.reason == "lost_in_transit"
    assert turn.errors[0].kind == "unknown_shape"


@pytest.mark.parametrize(
    ("pieces", "why"),
    [
        # Back into an object already closed: the key would be written twice.
        (
            [
                piece("$.a.x", numberValue=1),
                piece("$.b", numberValue=2),
                piece("$.a.y", numberValue=3),
            ],
            "already written",
        ),
        # An array index skipped.
        ([piece("$.items[0]", numberValue=1), piece("$.items[2]", numberValue=3)], "[1]"),
        # Two values in one piece.
        ([piece("$.a", stringValue="x", boolValue=True)], "exactly one value"),
        # No value at all.
        ([piece("$.a")], "exactly one value"),
        # A path toolwire cannot read, and the root itself.
        ([piece("a.b", numberValue=1)], "root"),
        ([piece("$", numberValue=1)], "must be an object"),
        # An index into an object, a key into an array.
        ([piece("$.a.b", numberValue=1), piece("$.a[1]", numberValue=1)], "index into an object"),
        # Text going on with a number.
        ([piece("$.a", stringValue="x"), piece("$.a", numberValue=1)], "already written"),
    ],
    ids=[
        "revisit",
        "skipped_index",
        "two_values",
        "no_value",
        "bad_path",
        "root",
        "index",
        "text_then_number",
    ],
)
async def test_streamed_pieces_that_cannot_be_written_lose_the_call(
    pieces: list[dict[str, Any]], why: str
) -> None:
    stream = body(chunk(header("f")), *(chunk(p) for p in pieces), chunk(END, finish="STOP"))
    turn = await toolwire.collect(stream, "gemini")
    (call,) = turn.calls
    assert call.verdict is not None
    assert call.verdict.reason == "lost_in_transit"
    (error,) = turn.errors
    assert error.kind == "protocol"
    assert why in error.message


async def test_nested_streamed_arguments_are_written_as_they_come() -> None:
    # The shape of Vercel ai's google-vertex-stream-tool-call-arguments-nested recording:
    # nested paths, array elements, an empty {"willContinue": true} piece between elements.
    stream = body(
        chunk(header("cookRecipe")),
        chunk(piece("$.recipe.ingredients[0].amount", stringValue="16 oz", willContinue=True)),
        chunk(piece("$.recipe.ingredients[0].amount", stringValue="")),
        chunk(piece("$.recipe.ingredients[0].name", stringValue="Noodles")),
        chunk({"functionCall": {"willContinue": True}}),
        chunk(piece("$.recipe.ingredients[1].amount", stringValue="1 lb")),
        chunk(piece("$.recipe.servings", numberValue=6)),
        chunk(piece("$.recipe['vegan?']", boolValue=False)),
        chunk(piece("$.note", nullValue=None)),
        chunk(END, finish="STOP"),
    )
    turn = await toolwire.collect(stream, "gemini")
    (call,) = turn.calls
    assert call.arguments_raw == (
        '{"recipe":{"ingredients":[{"amount":"16 oz","name":"Noodles"},{"amount":"1 lb"}],'
        '"servings":6,"vegan?":false},"note":null}'
    )
    assert call.may_run


async def test_a_last_piece_without_will_continue_ends_the_call() -> None:
    # Vercel ai's ...-missing-terminal-function-call recording: no empty functionCall {}; the
    # last partialArgs piece itself has no willContinue, then a {"text": ""} chunk with STOP.
    stream = body(
        chunk(header("writeItems")),
        chunk(piece("$.operations[0].action", stringValue="add", willContinue=True)),
        chunk(piece("$.operations[0].action", stringValue="")),
        chunk(piece("$.operations[0].price", numberValue=0.5)),
        chunk(piece("$.operations[1].price", more=False, numberValue=0.3)),
        chunk({"text": ""}, finish="STOP"),
    )
    turn = await toolwire.collect(stream, "gemini")
    (call,) = turn.calls
    assert call.arguments == {"operations": [{"action": "add", "price": 0.5}, {"price": 0.3}]}
    assert call.may_run
    assert not turn.truncated


async def test_a_header_while_a_streamed_call_is_open_leaves_that_call_unfinished() -> None:
    stream = body(
        chunk(header("a")),
        chunk(piece("$.x", numberValue=1)),
        chunk({"functionCall": {"name": "b", "args": {}}}, finish="STOP"),
    )
    turn = await toolwire.collect(stream, "gemini")
    first, second = turn.calls
    assert first.arguments_raw == '{"x":1'
    assert first.outcome == "rejected"
    assert second.may_run
    assert [e.kind for e in turn.errors] == ["protocol"]


async def test_a_piece_with_no_call_open_is_reported_not_made_a_call() -> None:
    stream = body(chunk(piece("$.x", numberValue=1)), chunk({"text": "hi"}, finish="STOP"))
    turn = await toolwire.collect(stream, "gemini")
    assert turn.calls == ()
    assert turn.text == "hi"
    assert [e.kind for e in turn.errors] == ["protocol"]


# -- an in-band error -------------------------------------------------------------------------


async def test_an_in_band_error_is_fatal_and_cuts_the_open_call() -> None:
    error = {"error": {"code": 503, "message": "The model is overloaded.", "status": "UNAVAILABLE"}}
    stream = body(
        chunk({"text": "Let me check."}),
        chunk(header("getWeather")),
        chunk(piece("$.location", stringValue="Bos", willContinue=True)),
        error,
        chunk(piece("$.location", more=False, stringValue="ton")),
    )
    mapper = GeminiMapper()
    events = mapper.feed_bytes(stream)
    assert mapper.done  # nothing after the error is read
    events += mapper.finish()
    errors = [e for e in events if isinstance(e, ProviderError)]
    assert [(e.kind, e.code, e.fatal, e.message) for e in errors] == [
        ("error_payload", "503", True, "The model is overloaded.")
    ]
    turn = await toolwire.collect(stream, "gemini")
    assert turn.text == "Let me check."
    assert turn.stop_reason == "error"
    (call,) = turn.calls
    assert call.truncated
    assert call.outcome == "rejected"
    assert call.arguments_raw == '{"location":"Bos'
    assert turn.cut_by == "error"


# -- bodies that are no stream, HTTP errors, drops --------------------------------------------


@pytest.mark.parametrize(
    "junk",
    [
        b"<html><body>502 Bad Gateway</body></html>",
        b'{"error": {"code": 400, "message": "API key not valid.", "status": "INVALID_ARGUMENT"}}',
        # streamGenerateContent without ?alt=sse answers a JSON array, not an event stream.
        b'[{"candidates": [{"content": {"parts": [{"text": "hi"}]}, "finishReason": "STOP"}]}]',
    ],
    ids=["html", "json_error", "json_array"],
)
async def test_a_body_that_is_not_a_stream_is_an_error_not_a_truncation(junk: bytes) -> None:
    turn = await toolwire.collect(junk, "gemini")
    assert (turn.stop_reason, turn.truncated, turn.calls) == ("error", False, ())
    assert [e.kind for e in turn.errors] == ["not_a_stream"]
    assert junk[:20].decode() in turn.errors[0].message


async def test_an_empty_body_is_no_response() -> None:
    turn = await toolwire.collect(b"", "gemini")
    assert (turn.stop_reason, turn.truncated) == ("error", False)
    assert [e.kind for e in turn.errors] == ["empty_response"]


async def test_an_http_error_status_is_an_error_that_quotes_the_body() -> None:
    payload = {
        "error": {"code": 429, "message": "Resource exhausted.", "status": "RESOURCE_EXHAUSTED"}
    }

    def handler(request: httpx.Request) -> httpx.Response:
        assert request.url.path == "/v1beta/models/gemini-test:streamGenerateContent"
        return httpx.Response(429, json=payload)

    async with httpx.AsyncClient(
        transport=httpx.MockTransport(handler), base_url="http://test"
    ) as client:
        request = client.build_request(
            "POST", "/v1beta/models/gemini-test:streamGenerateContent?alt=sse", json={}
        )
        response = await client.send(request, stream=True)
        turn = await toolwire.collect(response, "gemini")
    assert (turn.stop_reason, turn.truncated, turn.calls) == ("error", False, ())
    (error,) = turn.errors
    assert (error.kind, error.code, error.fatal) == ("http_status", "429", True)
    assert "Resource exhausted." in error.message


async def test_an_ok_http_response_reads_like_its_body() -> None:
    def handler(request: httpx.Request) -> httpx.Response:
        return httpx.Response(
            200, content=load_stream(TWO_CALLS), headers={"content-type": "text/event-stream"}
        )

    async with httpx.AsyncClient(transport=httpx.MockTransport(handler)) as client:
        response = await client.send(client.build_request("POST", "http://t/x"), stream=True)
        turn = await toolwire.collect(response, "gemini")
    assert [c.arguments for c in turn.calls] == [
        {"location": "Boston"},
        {"location": "San Francisco"},
    ]


async def test_a_body_that_ends_without_a_finish_reason_dropped() -> None:
    # A whole call had arrived, then nothing: the turn is disconnected, not a normal end, and
    # the call generated last is cut even though the server parsed it (docs/design.md: with
    # a drop the last call may be short; issue 18 made Gemini's whole calls follow that rule).
    stream = body(chunk({"functionCall": {"name": "ls", "args": {"path": "/"}}}))
    events = [e async for e in toolwire.stream(stream, "gemini")]
    finish = next(e for e in events if isinstance(e, Finish))
    assert (finish.reason, finish.evidence) == ("disconnected", ("no_finish",))
    assert isinstance(events[-1], StreamEnd)
    assert events[-1].terminated is False
    turn = await toolwire.collect(stream, "gemini")
    assert turn.calls[0].truncated
    assert not turn.calls[0].may_run


async def test_a_drop_mid_streamed_call_never_runs_it() -> None:
    stream = load_stream(TWO_CALLS)
    cut = stream.index(b"San Francisco") + 5
    turn = await toolwire.collect(stream[:cut], "gemini")
    assert turn.stop_reason == "disconnected"
    boston, san_francisco = turn.calls
    assert boston.may_run
    assert boston.arguments == {"location": "Boston"}
    # The second call's header came; the line with its piece was cut (not JSON): lost.
    assert san_francisco.arguments_raw == "{"
    assert not san_francisco.may_run
    assert san_francisco.truncated
    assert [e.kind for e in turn.errors] == ["not_json"]


# -- the finish vocabulary --------------------------------------------------------------------

FINISH_TABLE = {
    "STOP": "end_turn",
    "MAX_TOKENS": "length",
    "SAFETY": "content_filter",
    "RECITATION": "content_filter",
    "BLOCKLIST": "content_filter",
    "PROHIBITED_CONTENT": "content_filter",
    "SPII": "content_filter",
    "IMAGE_SAFETY": "content_filter",
    "IMAGE_PROHIBITED_CONTENT": "content_filter",
    "IMAGE_RECITATION": "content_filter",
    "ESCALATION": "content_filter",
    "MODEL_ARMOR": "content_filter",
    "PUP_LIMITED_DISABLED": "content_filter",
    "MALFORMED_FUNCTION_CALL": "tool_calls",
    "UNEXPECTED_TOOL_CALL": "unknown",
    "TOO_MANY_TOOL_CALLS": "unknown",
    "LANGUAGE": "unknown",
    "OTHER": "unknown",
    "FINISH_REASON_UNSPECIFIED": "unknown",
    "NO_IMAGE": "unknown",
    "IMAGE_OTHER": "unknown",
    "CONTINUATION": "unknown",
    "MALFORMED_RESPONSE": "unknown",
    "MISSING_THOUGHT_SIGNATURE": "unknown",
}


def test_the_table_covers_every_finish_reason_of_the_sdk() -> None:
    assert {reason.value for reason in types.FinishReason} <= set(FINISH_TABLE)
    for raw, reason in FINISH_TABLE.items():
        assert finish_reason_from_gemini(raw) == reason, raw
    assert finish_reason_from_gemini("A_REASON_ADDED_LATER") == "unknown"


@pytest.mark.parametrize("raw", [*FINISH_TABLE, "A_REASON_ADDED_LATER"])
async def test_every_finish_reason_through_a_stream(raw: str) -> None:
    turn = await toolwire.collect(body(chunk({"text": "Hi"}, finish=raw)), "gemini")
    assert turn.finish_raw == raw
    expected = FINISH_TABLE.get(raw, "unknown")
    assert turn.stop_reason == expected
    assert turn.truncated is (raw == "MAX_TOKENS")
    assert turn.truncation_evidence == (("finish_reason",) if raw == "MAX_TOKENS" else ())
    assert len(turn.calls) == (1 if raw == "MALFORMED_FUNCTION_CALL" else 0)


async def test_stop_with_calls_is_tool_calls_and_without_is_end_turn() -> None:
    with_call = body(chunk({"functionCall": {"name": "f", "args": {}}}, finish="STOP"))
    assert (await toolwire.collect(with_call, "gemini")).stop_reason == "tool_calls"
    text = body(chunk({"text": "Done."}, finish="STOP"))
    assert (await toolwire.collect(text, "gemini")).stop_reason == "end_turn"


async def test_content_filter_is_a_stop_condition() -> None:
    turn = await toolwire.collect(
        body(chunk({"text": "x"}, finish="SAFETY")), "gemini", stop_on={"content_filter"}
    )
    assert turn.stopped_by == ("content_filter",)


async def test_the_malformed_call_quotes_the_finish_message() -> None:
    said = "Malformed function call: print(default_api.set_limit(price=121.3 * 1.04))"
    stream = body(
        {"candidates": [{"finishReason": "MALFORMED_FUNCTION_CALL", "finishMessage": said}]}
    )
    turn = await toolwire.collect(stream, "gemini", stop_on={"malformed_tool_call"})
    (call,) = turn.calls
    assert call.verdict is not None
    assert call.verdict.message is not None
    assert f"The server said: {said}" in call.verdict.message
    assert turn.stopped_by == ("malformed_tool_call",)


@pytest.mark.parametrize(
    ("block", "reason"),
    [
        ("PROHIBITED_CONTENT", "content_filter"),
        ("SAFETY", "content_filter"),
        ("JAILBREAK", "content_filter"),
        ("OTHER", "unknown"),
        ("BLOCKED_REASON_UNSPECIFIED", "unknown"),
    ],
)
async def test_a_blocked_prompt_ends_the_turn(block: str, reason: str) -> None:
    # Vercel ai's issue-19758-prompt-block recording: promptFeedback and no candidate at all.
    stream = body(
        {
            "promptFeedback": {"blockReason": block},
            "usageMetadata": {"promptTokenCount": 9, "totalTokenCount": 9},
            "modelVersion": "gemini-3.7-flash",
            "responseId": "EXCPatOAKMrQjMcPteHVmQo",
        }
    )
    events = [e async for e in toolwire.stream(stream, "gemini")]
    assert isinstance(events[-1], StreamEnd)
    assert events[-1].terminated
    turn = await toolwire.collect(stream, "gemini")
    assert (turn.stop_reason, turn.finish_raw, turn.truncated) == (reason, block, False)
    assert block_reason_from_gemini(block) == reason
    (error,) = turn.errors
    assert (error.kind, error.code, error.fatal) == ("error_payload", block, False)
    assert "the prompt was blocked" in error.message


# -- text, thoughts, usage ----------------------------------------------------------------------


async def test_thought_parts_are_reasoning_and_text_parts_text() -> None:
    stream = body(
        chunk({"text": "Thinking about ", "thought": True}),
        chunk({"text": "the weather.", "thought": True}),
        chunk({"text": "It is "}),
        chunk({"text": "sunny.", "thoughtSignature": SIGNATURE}, finish="STOP"),
    )
    turn = await toolwire.collect(stream, "gemini")
    assert (turn.reasoning, turn.text) == ("Thinking about the weather.", "It is sunny.")


async def test_usage_at_max_output_tokens_is_evidence() -> None:
    name = "gemini/max_tokens_text_single_event.derived.sse"
    request = {"contents": [], "generationConfig": {"maxOutputTokens": 5}}
    turn = await toolwire.collect(load_stream(name), "gemini", request=request)
    assert turn.truncation_evidence == ("finish_reason", "usage_at_max_tokens")


async def test_thinking_counts_against_max_output_tokens() -> None:
    # 8 candidate tokens + 132 thinking tokens: at a limit of 140, the output hit it.
    name = "gemini/max_tokens_mid_partial_args.derived.sse"
    turn = await toolwire.collect(load_stream(name), "gemini", max_tokens=140)
    assert turn.truncation_evidence == (
        "finish_reason",
        "usage_at_max_tokens",
        "arguments_unterminated",
    )


async def test_repeated_usage_is_reported_once() -> None:
    name = "gemini/function_call_thought_signature_gemini3.sse"
    events = [e async for e in toolwire.stream(load_stream(name), "gemini")]
    assert sum(type(e).__name__ == "Usage" for e in events) == 1


async def test_integral_numbers_read_the_same_from_the_sdk_and_the_bytes() -> None:
    # numberValue is a protobuf double: the wire says 50, the SDK's PartialArg holds 50.0.
    chunks = [
        chunk(header("set")),
        chunk(piece("$.level", numberValue=50)),
        chunk(piece("$.ratio", numberValue=0.25)),
        chunk(END, finish="STOP"),
    ]
    from_bytes = await toolwire.collect(body(*chunks), "gemini")
    objects = [types.GenerateContentResponse._from_response(response=c, kwargs={}) for c in chunks]
    sdk_piece = objects[1].model_dump()["candidates"][0]["content"]["parts"][0]
    assert repr(sdk_piece["function_call"]["partial_args"][0]["number_value"]) == "50.0"
    from_objects = await toolwire.collect(objects, "gemini")
    assert from_bytes.calls[0].arguments_raw == from_objects.calls[0].arguments_raw
    assert from_objects.calls[0].arguments_raw == '{"level":50,"ratio":0.25}'


async def test_a_streamed_call_past_the_size_limit_is_rejected_while_streaming() -> None:
    pieces = [piece("$.content", stringValue="x" * 50, willContinue=True) for _ in range(100)]
    stream = body(chunk(header("write")), *(chunk(p) for p in pieces), chunk(END, finish="STOP"))
    events = [e async for e in toolwire.stream(stream, "gemini", policy=Policy(max_bytes=1000))]
    deltas = [e for e in events if type(e).__name__ == "ToolCallArgumentsDelta"]
    assert sum(len(e.delta) for e in deltas) <= 1000  # no more deltas once past the limit
    turn = await toolwire.collect(stream, "gemini", policy=Policy(max_bytes=1000))
    (call,) = turn.calls
    assert call.verdict is not None
    assert call.verdict.reason == "too_large"
    assert call.verdict.raw_length == len('{"content":"') + 5000 + len('"}')


async def test_an_sdk_stream_that_raises_mid_call_is_a_drop() -> None:
    async def objects() -> Any:
        for data in (chunk(header("rm")), chunk(piece("$.path", stringValue="/home/me/"))):
            yield types.GenerateContentResponse._from_response(response=data, kwargs={})
        raise httpx.RemoteProtocolError("peer closed connection")

    turn = await toolwire.collect(objects(), "gemini")
    assert turn.stop_reason == "disconnected"
    (call,) = turn.calls
    assert call.truncated
    assert not call.may_run
    assert [e.kind for e in turn.errors] == ["transport"]
