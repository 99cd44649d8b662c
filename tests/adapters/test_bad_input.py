"""Broken provider streams and bad use: typed errors, nothing received before is lost."""

from __future__ import annotations

import json
from typing import Any

import pytest
from _toolwire_testdata import aiter_items, chat_chunk, sse_body

import toolwire
import toolwire.events
import toolwire.lowlevel
from toolwire.core.errors import ConfigurationError, SourceTypeError, ToolwireError
from toolwire.core.events import Finish, ProviderError, StreamEnd
from toolwire.core.mapper import RAW_CAP

pytestmark = pytest.mark.anyio

TEXT_AND_PARTIAL_CALL = [
    chat_chunk({"role": "assistant", "content": "Let me check"}),
    chat_chunk({"content": "."}),
    chat_chunk({"tool_calls": [{"index": 0, "id": "call_1", "function": {"name": "lookup"}}]}),
    chat_chunk({"tool_calls": [{"index": 0, "function": {"arguments": '{"q": "ber'}}]}),
]


async def test_data_line_that_is_not_json() -> None:
    body = sse_body(
        [
            chat_chunk({"content": "Hi"}),
            "this is { not json",
            chat_chunk({"content": "!"}),
            chat_chunk({}, "stop"),
        ]
    )
    turn = await toolwire.collect(body, judge=False)
    assert turn.text == "Hi!"
    assert len(turn.errors) == 1
    error = turn.errors[0]
    assert (error.kind, error.fatal, error.raw) == ("not_json", False, "this is { not json")
    # A non-fatal error does not change how the turn ended.
    assert (turn.stop_reason, turn.truncated) == ("end_turn", False)


@pytest.mark.parametrize(
    "payload",
    ['{"choices": 5}', '{"choices": [{"delta": "text"}]}', "[1, 2]", '"just a string"'],
)
async def test_unknown_chunk_shape(payload: str) -> None:
    body = sse_body([chat_chunk({"content": "Hi"}), payload, chat_chunk({}, "stop")])
    turn = await toolwire.collect(body, judge=False)
    assert turn.text == "Hi"
    assert [(e.kind, e.fatal, e.raw) for e in turn.errors] == [("unknown_shape", False, payload)]
    assert turn.stop_reason == "end_turn"


async def test_in_band_error_after_text_and_a_partial_call() -> None:
    error_payload = {
        "error": {"message": "The server had an error", "type": "server_error", "code": None}
    }
    body = sse_body([*TEXT_AND_PARTIAL_CALL, error_payload], done=False)
    events = [e async for e in toolwire.stream(body, judge=False)]
    errors = [e for e in events if isinstance(e, ProviderError)]
    assert len(errors) == 1
    assert errors[0].message == "The server had an error"
    assert errors[0].kind == "error_payload"
    assert errors[0].code == "server_error"
    assert errors[0].fatal is True
    assert '"server_error"' in errors[0].raw
    assert isinstance(events[-2], Finish)
    assert isinstance(events[-1], StreamEnd)
    assert events[-1].terminated is False

    turn = await toolwire.collect(body, judge=False)
    assert turn.text == "Let me check."
    assert [(c.call_id, c.name, c.arguments_raw, c.truncated) for c in turn.calls] == [
        ("call_1", "lookup", '{"q": "ber', True)
    ]
    assert turn.stop_reason == "error"
    assert turn.finish_raw is None
    assert turn.errors == tuple(errors)


async def test_in_band_error_raw_text_is_capped() -> None:
    message = "x" * 5000
    payload = json.dumps({"error": {"message": message, "type": "server_error"}})
    body = sse_body([chat_chunk({"content": "a"}), payload], done=False)
    turn = await toolwire.collect(body, judge=False)
    (error,) = turn.errors
    assert error.message == message  # the message itself is the provider's, kept whole
    assert len(error.raw) < 600
    assert error.raw.startswith('{"error": {"message": "xxx')
    assert error.raw[:RAW_CAP] == payload[:RAW_CAP]
    assert error.raw.endswith(f"({len(payload)} characters)")
    assert turn.stop_reason == "error"


async def test_long_not_json_line_is_capped() -> None:
    line = "<html>" + "y" * 10_000
    turn = await toolwire.collect(sse_body([line, chat_chunk({}, "stop")]), judge=False)
    (error,) = turn.errors
    assert error.kind == "not_json"
    assert error.raw.startswith("<html>yyy")
    assert len(error.raw) <= RAW_CAP + 40


@pytest.mark.parametrize(
    "payload",
    [
        {"error": "upstream timed out"},
        {"object": "error", "message": "vLLM says no", "type": "BadRequestError", "code": 400},
    ],
)
async def test_other_error_payload_shapes(payload: dict[str, Any]) -> None:
    body = sse_body([chat_chunk({"content": "a"}), payload], done=False)
    turn = await toolwire.collect(body, judge=False)
    assert turn.text == "a"
    (error,) = turn.errors
    assert error.fatal is True
    assert error.message in ("upstream timed out", "vLLM says no")
    assert turn.stop_reason == "error"


async def test_stream_cut_with_no_finish_and_no_done() -> None:
    body = sse_body(TEXT_AND_PARTIAL_CALL, done=False)
    events = [e async for e in toolwire.stream(body, judge=False)]
    assert isinstance(events[-1], StreamEnd)
    assert events[-1].terminated is False
    turn = await toolwire.collect(body, judge=False)
    assert turn.stop_reason == "disconnected"
    assert turn.truncated is True
    assert "no_finish" in turn.truncation_evidence
    assert turn.truncation_evidence == ("arguments_unterminated", "no_finish")
    assert turn.text == "Let me check."
    assert [(c.arguments_raw, c.truncated) for c in turn.calls] == [('{"q": "ber', True)]
    assert turn.errors == ()


async def test_stream_cut_after_complete_looking_arguments_is_still_cut() -> None:
    # The arguments parse, but no finish and no [DONE] arrived: nothing says the call was whole.
    chunks = [
        chat_chunk({"tool_calls": [{"index": 0, "id": "c", "function": {"name": "f"}}]}),
        chat_chunk({"tool_calls": [{"index": 0, "function": {"arguments": '{"a": 1}'}}]}),
    ]
    turn = await toolwire.collect(sse_body(chunks, done=False), judge=False)
    assert (turn.stop_reason, turn.truncation_evidence) == ("disconnected", ("no_finish",))
    assert [c.truncated for c in turn.calls] == [True]


async def test_empty_body() -> None:
    # No response at all is not a truncation: nothing was cut.
    turn = await toolwire.collect(b"", judge=False)
    assert (turn.text, turn.calls, turn.stop_reason) == ("", (), "error")
    assert (turn.truncated, turn.truncation_evidence) == (False, ())
    assert [(e.kind, e.fatal) for e in turn.errors] == [("empty_response", True)]


async def test_keep_alive_comments_then_a_clean_end_is_no_response() -> None:
    # An event stream that sent only keep-alives and then ended cleanly carried no event: no
    # response, like an empty body (llama-cpp-python pings every 15 s before it sends nothing).
    turn = await toolwire.collect(b": ping\n\n: ping\n\n", judge=False)
    assert (turn.text, turn.calls, turn.stop_reason) == ("", (), "error")
    assert (turn.truncated, turn.truncation_evidence) == (False, ())
    assert [(e.kind, e.fatal) for e in turn.errors] == [("empty_response", True)]
    assert "no event in it (16 bytes of comments" in turn.errors[0].message


@pytest.mark.parametrize("provider", ["anthropic", "openai-responses", "gemini"])
async def test_keep_alive_comments_alone_are_no_response_in_every_sse_format(
    provider: str,
) -> None:
    turn = await toolwire.collect(b": ping\n\nevent: ping\n\n", provider, judge=False)
    assert [(e.kind, e.fatal) for e in turn.errors] == [("empty_response", True)]
    assert not turn.truncated


async def test_keep_alive_comments_then_a_drop_is_still_a_dropped_stream() -> None:
    # A read that failed after the pings: the stream dropped, nothing says the server was done.
    async def pings_then_reset() -> Any:
        yield b": ping\n\n"
        raise ConnectionResetError("reset by peer")

    turn = await toolwire.collect(pings_then_reset(), judge=False)
    assert "empty_response" not in [e.kind for e in turn.errors]
    assert turn.stop_reason == "disconnected"


async def test_done_only() -> None:
    turn = await toolwire.collect(b"data: [DONE]\n\n", judge=False)
    assert (turn.stop_reason, turn.truncated, turn.errors) == ("end_turn", False, ())


@pytest.mark.parametrize(
    "source", [42, None, object(), 3.5], ids=["int", "None", "object", "float"]
)
async def test_source_of_the_wrong_type(source: object) -> None:
    with pytest.raises(SourceTypeError, match="source must be"):
        await toolwire.collect(source, judge=False)  # type: ignore[arg-type]
    with pytest.raises(SourceTypeError):
        async for _ in toolwire.stream(source, judge=False):  # type: ignore[arg-type]
            pass


async def test_unawaited_coroutine_source_is_a_type_error() -> None:
    async def create() -> bytes:  # e.g. forgot `await client.chat.completions.create(...)`
        return b""

    coroutine = create()
    try:
        with pytest.raises(SourceTypeError):
            await toolwire.collect(coroutine, judge=False)  # type: ignore[arg-type]
    finally:
        coroutine.close()


def test_source_type_error_is_a_type_error_and_a_toolwire_error() -> None:
    assert issubclass(SourceTypeError, TypeError)
    assert issubclass(SourceTypeError, ToolwireError)
    assert issubclass(ToolwireError, Exception)


async def test_unknown_provider() -> None:
    with pytest.raises(ConfigurationError, match="unknown provider 'no-such-provider'"):
        await toolwire.collect(b"", provider="no-such-provider", judge=False)
    with pytest.raises(ConfigurationError):
        async for _ in toolwire.stream(b"", provider="no-such-provider", judge=False):
            pass


@pytest.mark.parametrize("max_tokens", [0, -1, "10"])
async def test_bad_max_tokens(max_tokens: Any) -> None:
    with pytest.raises(ConfigurationError, match="max_tokens"):
        await toolwire.collect(b"", max_tokens=max_tokens, judge=False)


async def test_a_source_that_fails_mid_read_keeps_the_turn() -> None:
    # httpx raises RemoteProtocolError on a dropped connection: the rollout must survive it,
    # with what was received kept, the failure typed, and the open call cut (never run).
    closed = []

    async def source() -> Any:
        try:
            yield sse_body(
                [
                    chat_chunk({"content": "a"}),
                    chat_chunk(
                        {
                            "tool_calls": [
                                {
                                    "index": 0,
                                    "id": "c1",
                                    "function": {"name": "f", "arguments": "{}"},
                                }
                            ]
                        }
                    ),
                ],
                done=False,
            )
            raise ConnectionResetError("peer went away")
        finally:
            closed.append(True)

    turn = await toolwire.collect(source())
    assert closed == [True]
    assert turn.text == "a"
    (error,) = turn.errors
    assert (error.kind, error.code, error.fatal) == ("transport", "ConnectionResetError", True)
    assert "peer went away" in error.message
    assert turn.stop_reason == "disconnected"
    (call,) = turn.calls
    assert call.truncated
    assert call.outcome == "rejected"


async def test_a_bug_in_a_stage_is_not_taken_for_a_dropped_connection() -> None:
    def broken(event: toolwire.events.Event) -> Any:
        raise RuntimeError("stage bug")

    with pytest.raises(RuntimeError, match="stage bug"):
        await toolwire.collect(
            sse_body([chat_chunk({"content": "a"})]), stages=[toolwire.lowlevel.event_stage(broken)]
        )


async def test_bytes_and_str_reads_mix() -> None:
    body = sse_body([chat_chunk({"content": "é"}), chat_chunk({}, "stop")])
    reads: list[Any] = [body[:10], bytearray(body[10:30]), body[30:].decode()]
    turn = await toolwire.collect(aiter_items(reads), judge=False)
    assert (turn.text, turn.stop_reason) == ("é", "end_turn")


async def test_a_mapping_is_not_a_source() -> None:
    with pytest.raises(toolwire.SourceTypeError, match="mapping"):
        await toolwire.collect({"choices": []})  # type: ignore[arg-type]


async def test_max_tokens_true_is_not_a_limit() -> None:
    with pytest.raises(toolwire.ConfigurationError, match="max_tokens"):
        await toolwire.collect(b"", max_tokens=True)


def test_stream_checks_its_arguments_when_called_not_when_iterated() -> None:
    with pytest.raises(toolwire.ConfigurationError, match="stop_on"):
        toolwire.stream(b"", stop_on={"lenght"})
    with pytest.raises(toolwire.ConfigurationError, match="provider"):
        toolwire.stream(b"", provider="nope")


async def test_a_call_cut_by_a_dropped_stream_is_not_blamed_on_the_token_limit() -> None:
    body = sse_body(
        [
            chat_chunk(
                {
                    "tool_calls": [
                        {"index": 0, "id": "c9", "function": {"name": "write", "arguments": '{"a'}}
                    ]
                }
            )
        ],
        done=False,
    )
    turn = await toolwire.collect(body)
    (call,) = turn.calls
    assert turn.stop_reason == "disconnected"
    assert call.outcome == "rejected"
    assert call.verdict is not None
    assert call.verdict.reason == "truncated"
    message = call.verdict.message or ""
    assert message.startswith("Tool call `write` (id c9): the stream dropped after 3 characters")
    assert "output-token limit" not in message
    assert message.endswith("Call `write` again with the complete arguments.")


async def test_a_call_cut_by_an_in_band_error_says_the_provider_failed() -> None:
    body = sse_body(
        [
            chat_chunk(
                {
                    "tool_calls": [
                        {"index": 0, "id": "c9", "function": {"name": "write", "arguments": '{"a'}}
                    ]
                }
            ),
            {"error": {"message": "overloaded", "type": "server_error"}},
        ],
        done=False,
    )
    turn = await toolwire.collect(body)
    (call,) = turn.calls
    assert turn.stop_reason == "error"
    assert call.verdict is not None
    assert "the provider failed after 3 characters" in (call.verdict.message or "")


async def test_a_call_cut_at_the_token_limit_says_so() -> None:
    body = sse_body(
        [
            chat_chunk(
                {
                    "tool_calls": [
                        {"index": 0, "id": "c9", "function": {"name": "write", "arguments": '{"a'}}
                    ]
                }
            ),
            chat_chunk({}, "length"),
        ]
    )
    turn = await toolwire.collect(body)
    (call,) = turn.calls
    assert call.verdict is not None
    assert "cut off at the output-token limit after 3 characters" in (call.verdict.message or "")
