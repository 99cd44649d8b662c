"""The healing session, sans-I/O: what the client gets, and when and how the model is asked again.

Each test feeds the session the judged events of in-memory responses (the pipeline run over
recorded or hand-built bytes) and reads what it sends and the retry requests it writes.
"""

from __future__ import annotations

from typing import Any

import pytest
from _toolwire_testdata import chat_chunk, load_stream, sse_body

import toolwire
from toolwire.adapters.encoding import ACCEPTED_NOTE
from toolwire.adapters.openai_chat import ChatChunkEncoder, ChatWireFormat
from toolwire.core.wire import DONE, WireItem
from toolwire.heal import HealSession
from toolwire.heal.session import AttemptEnd

pytestmark = pytest.mark.anyio

CUT_WRITE = "llama-cpp-python/write_max_tokens_24_cut_mid_string.real.sse"
TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "write",
            "parameters": {
                "type": "object",
                "required": ["path", "content"],
                "properties": {"path": {"type": "string"}, "content": {"type": "string"}},
            },
        },
    },
    {
        "type": "function",
        "function": {
            "name": "read",
            "parameters": {
                "type": "object",
                "required": ["path"],
                "properties": {"path": {"type": "string"}},
            },
        },
    },
]
GOOD_WRITE = '{"path": "notes.txt", "content": "hello"}'


def _body(**extra: Any) -> dict[str, Any]:
    return {
        "model": "m",
        "messages": [{"role": "user", "content": "Write hello to notes.txt"}],
        "tools": TOOLS,
        "tool_choice": {"type": "function", "function": {"name": "write"}},
        "max_tokens": 24,
        "stream": True,
        "stream_options": {"include_usage": True},
        **extra,
    }


def _calls(*calls: tuple[str, str, str], text: str = "", usage: tuple[int, int] | None = None,
           finish: str = "tool_calls") -> bytes:
    chunks: list[dict[str, Any]] = [chat_chunk({"role": "assistant", "content": None})]
    if text:
        chunks.append(chat_chunk({"content": text}))
    for index, (call_id, name, raw) in enumerate(calls):
        chunks.append(chat_chunk({"tool_calls": [{"index": index, "id": call_id,
                                                  "type": "function",
                                                  "function": {"name": name, "arguments": raw}}]}))
    chunks.append(chat_chunk(finish_reason=finish))
    if usage is not None:
        chunks.append({**chat_chunk(), "choices": [], "usage": {
            "prompt_tokens": usage[0], "completion_tokens": usage[1],
            "total_tokens": usage[0] + usage[1]}})
    return sse_body(chunks)


class Exchange:
    """A session and the pipeline that judges each response for it."""

    def __init__(self, provider: str = "llama-cpp", body: dict[str, Any] | None = None,
                 *, usage: bool = True, **options: Any) -> None:
        self.pipeline = toolwire.Pipeline(provider)
        self.session = HealSession(
            body or _body(), self.pipeline.next_messages, wire=ChatWireFormat(provider),
            encoder=ChatChunkEncoder(usage=usage), **options,
        )
        self.sent: list[WireItem] = []

    async def respond(self, response: bytes) -> AttemptEnd:
        """One upstream response, fed event by event, then its end."""
        async for event in self.pipeline.stream(response, request=self.session.body):
            self.sent += self.session.feed(event)
        end = self.session.end_attempt()
        self.sent += end.items
        return end

    def deltas(self) -> list[dict[str, Any]]:
        return [
            choice["delta"] | ({"finish": choice["finish_reason"]}
                               if choice["finish_reason"] else {})
            for item in self.sent if isinstance(item, dict)
            for choice in item.get("choices", ())
        ]

    def calls(self) -> list[dict[str, Any]]:
        return [call for delta in self.deltas() for call in delta.get("tool_calls", ())]

    def finish_reasons(self) -> list[str]:
        return [delta["finish"] for delta in self.deltas() if "finish" in delta]


@pytest.mark.parametrize("provider", ["llama-cpp", "openai-chat"])
async def test_a_rejected_call_is_asked_for_again_with_toolwire_s_message(
    anyio_backend: str, provider: str
) -> None:
    exchange = Exchange(provider)
    end = await exchange.respond(load_stream(CUT_WRITE))
    assert exchange.calls() == []  # nothing of the cut call reached the client
    retry = end.retry
    assert retry is not None
    # Only the llama-cpp profile knows that this server hides its length finish.
    cause = "token_limit" if provider == "llama-cpp" else "unknown"
    assert (retry.attempt, retry.cause, retry.causes) == (1, cause, (cause,))
    body = retry.body
    original = _body()
    # The same request (model, tools, tool_choice, limit, stream options), asked again.
    assert {k: v for k, v in body.items() if k != "messages"} == {
        k: v for k, v in original.items() if k != "messages"
    }
    user, assistant, result = body["messages"]
    assert user == original["messages"][0]
    (call,) = assistant["tool_calls"]
    assert call["function"]["arguments"] == "{}"  # replayed safely
    turn = await exchange.pipeline.collect(load_stream(CUT_WRITE), request=_body())
    message = turn.calls[0].verdict.message
    assert message is not None
    assert message.startswith("Tool call `write`")
    assert result["tool_call_id"] == call["id"]
    if provider == "llama-cpp":
        # The form llama-cpp-python's prompt really shows its model: a user message.
        assert assistant["content"] == ""
        assert result["role"] == "user"
        assert result["content"].endswith(message)
    else:
        assert assistant["content"] is None
        assert result == {"role": "tool", "tool_call_id": call["id"], "content": message}
    assert toolwire.Pipeline(provider).check_history(body["messages"]) == []


async def test_the_retry_s_call_takes_the_rejected_call_s_place(anyio_backend: str) -> None:
    exchange = Exchange()
    await exchange.respond(load_stream(CUT_WRITE))
    end = await exchange.respond(_calls(("call_fixed", "write", GOOD_WRITE)))
    assert end.retry is None
    assert [(c["index"], c["id"], c["function"]["arguments"]) for c in exchange.calls()] == [
        (0, "call_fixed", GOOD_WRITE)
    ]
    assert exchange.finish_reasons() == ["tool_calls"]
    assert exchange.sent[-1] is DONE
    assert exchange.session.outcome == "healed"


async def test_a_cut_at_the_limit_raises_max_tokens_up_to_the_ceiling(anyio_backend: str) -> None:
    exchange = Exchange(max_tokens_ceiling=40, max_retries=3)
    first = await exchange.respond(load_stream(CUT_WRITE))
    assert first.retry is not None
    assert (first.retry.max_tokens, first.retry.body["max_tokens"]) == (40, 40)
    second = await exchange.respond(load_stream(CUT_WRITE))
    assert second.retry is not None
    assert (second.retry.max_tokens, second.retry.body["max_tokens"]) == (None, 40)


async def test_without_a_ceiling_the_limit_stays(anyio_backend: str) -> None:
    exchange = Exchange()
    end = await exchange.respond(load_stream(CUT_WRITE))
    assert end.retry is not None
    assert (end.retry.max_tokens, end.retry.body["max_tokens"]) == (None, 24)


async def test_past_the_retries_a_limit_cut_finishes_length(anyio_backend: str) -> None:
    exchange = Exchange(max_retries=2)
    for _ in range(2):
        assert (await exchange.respond(load_stream(CUT_WRITE))).retry is not None
    end = await exchange.respond(load_stream(CUT_WRITE))
    assert end.retry is None
    assert exchange.calls() == []
    assert exchange.finish_reasons() == ["length"]
    assert exchange.sent[-1] is DONE
    assert exchange.session.outcome == "length"


async def test_past_the_retries_another_cause_is_an_in_band_error(anyio_backend: str) -> None:
    exchange = Exchange(max_retries=1)
    bad = _calls(("call_bad", "write", '{"path": "notes.txt"}'))
    assert (await exchange.respond(bad)).retry is not None
    end = await exchange.respond(bad)
    assert end.retry is None
    assert exchange.calls() == []
    (error,) = [item["error"] for item in exchange.sent if isinstance(item, dict)
                and "error" in item]
    assert error["type"] == "toolwire_heal_failed"
    assert error["code"] == "tool_call_rejected"
    assert "after 1 retry" in error["message"]
    turn = await exchange.pipeline.collect(bad, request=_body())
    assert turn.calls[0].verdict.message in error["message"]  # toolwire's true message
    assert exchange.sent[-1] == {"error": error}  # nothing after the error
    assert exchange.session.outcome == "failed"


async def test_no_retries_means_the_first_rejection_ends_it(anyio_backend: str) -> None:
    exchange = Exchange(max_retries=0)
    end = await exchange.respond(_calls(("call_bad", "nope", "{}")))
    assert end.retry is None
    assert exchange.session.outcome == "failed"


async def test_an_accepted_call_goes_out_at_once_and_is_not_repeated(anyio_backend: str) -> None:
    exchange = Exchange("openai-chat")
    first = _calls(("call_read", "read", '{"path": "a.txt"}'),
                   ("call_write", "write", '{"path": 1}'), text="Reading and writing.")
    end = await exchange.respond(first)
    # The valid read and the text went out before the retry.
    assert [c["id"] for c in exchange.calls()] == ["call_read"]
    assert end.retry is not None
    results = {m["tool_call_id"]: m["content"] for m in end.retry.body["messages"]
               if m["role"] == "tool"}
    assert results["call_read"] == ACCEPTED_NOTE
    assert "call_write" in results
    assert results["call_write"] != ACCEPTED_NOTE
    # The retry repeats the read (not sent again), apologizes (held), and fixes the write.
    retry = _calls(("call_read2", "read", '{ "path":"a.txt" }'),
                   ("call_write2", "write", GOOD_WRITE), text="Sorry about that.")
    await exchange.respond(retry)
    assert [(c["index"], c["id"]) for c in exchange.calls()] == [(0, "call_read"),
                                                                 (1, "call_write2")]
    text = "".join(delta.get("content") or "" for delta in exchange.deltas())
    assert text == "Reading and writing."
    assert exchange.finish_reasons() == ["tool_calls"]


async def test_a_retry_answered_in_words_is_the_answer(anyio_backend: str) -> None:
    exchange = Exchange()
    await exchange.respond(load_stream(CUT_WRITE))
    await exchange.respond(_calls(text="That file is too large to write.", finish="stop"))
    text = "".join(delta.get("content") or "" for delta in exchange.deltas())
    assert text == "That file is too large to write."
    assert exchange.calls() == []
    assert exchange.finish_reasons() == ["stop"]
    assert exchange.session.outcome == "healed"


async def test_usage_is_the_sum_of_every_response(anyio_backend: str) -> None:
    exchange = Exchange("openai-chat")
    await exchange.respond(_calls(("c1", "write", "{"), usage=(100, 24)))
    await exchange.respond(_calls(("c2", "write", GOOD_WRITE), usage=(180, 15)))
    usage = [item["usage"] for item in exchange.sent if isinstance(item, dict) and "usage" in item]
    assert usage == [{"prompt_tokens": 280, "completion_tokens": 39, "total_tokens": 319}]


async def test_usage_is_not_sent_to_a_client_that_did_not_ask(anyio_backend: str) -> None:
    exchange = Exchange("openai-chat", usage=False)
    await exchange.respond(_calls(("c1", "write", GOOD_WRITE), usage=(100, 24)))
    assert not [item for item in exchange.sent if isinstance(item, dict) and "usage" in item]
    assert exchange.session.total_usage is not None


async def test_a_server_error_is_passed_on_and_not_retried(anyio_backend: str) -> None:
    exchange = Exchange("openai-chat")
    error = {"message": "overloaded", "type": "server_error", "code": None}
    body = sse_body([chat_chunk({"tool_calls": [{"index": 0, "id": "c", "type": "function",
                                                 "function": {"name": "write",
                                                              "arguments": '{"pa'}}]}),
                     {"error": error}], done=False)
    end = await exchange.respond(body)
    assert end.retry is None
    assert exchange.sent[-1] == {"error": error}
    assert exchange.session.outcome == "upstream_error"


async def test_a_stream_that_dropped_with_nothing_to_heal_drops(anyio_backend: str) -> None:
    exchange = Exchange("openai-chat")
    end = await exchange.respond(sse_body([chat_chunk({"content": "Hel"})], done=False))
    assert end.dropped
    assert exchange.finish_reasons() == []
    assert DONE not in exchange.sent
    assert exchange.session.outcome == "dropped"


async def test_a_call_cut_by_a_drop_is_sent_again_as_it_was_not_asked_for_again(
    anyio_backend: str,
) -> None:
    """A drop is the network's fault, not the model's (issue 18): the same request goes again,
    with no message to the model (tests/heal/test_session_faults.py has the whole policy)."""
    exchange = Exchange("openai-chat")
    body = sse_body([chat_chunk({"tool_calls": [{"index": 0, "id": "c", "type": "function",
                                                 "function": {"name": "write",
                                                              "arguments": '{"path"'}}]})],
                    done=False)
    end = await exchange.respond(body)
    assert end.retry is not None
    assert end.retry.resend
    assert end.retry.cause == "upstream_dropped"
    assert end.retry.body == _body()


async def test_rewritten_says_whether_the_body_may_pass_byte_for_byte(anyio_backend: str) -> None:
    clean = Exchange("openai-chat")
    await clean.respond(_calls(("c", "write", GOOD_WRITE)))
    assert not clean.session.rewritten
    repaired = Exchange("openai-chat")
    await repaired.respond(_calls(("c", "write", '{"path": "a", "content": "b",}')))
    assert repaired.session.rewritten
    corrected = Exchange()
    await corrected.respond(load_stream(CUT_WRITE))
    assert corrected.session.rewritten
