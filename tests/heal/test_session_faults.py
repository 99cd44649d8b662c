"""The session's policy for the network's faults, and for a retry that changes a sent call.

Sans-I/O, as ``test_session.py``: each test feeds the session the judged events of in-memory
responses. A failed read is an async source that raises the httpx exception a real transport
raises (``tests/heal/test_fault_table.py`` injects the real faults on loopback).
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest
from _toolwire_testdata import chat_chunk, sse_body

from toolwire.heal.faults import exception_fault

from .test_session import GOOD_WRITE, Exchange, _body, _calls

pytestmark = pytest.mark.anyio


def _call(index: int, call_id: str, arguments: str) -> dict[str, Any]:
    """A chunk that opens ``write`` call ``index`` with (part of) its arguments."""
    call = {"index": index, "id": call_id, "type": "function"}
    return chat_chunk(
        {"tool_calls": [{**call, "function": {"name": "write", "arguments": arguments}}]}
    )


CUT_CALL = sse_body(
    [chat_chunk({"content": "Writing it."}), _call(0, "c", '{"path": "no')], done=False
)


async def _failing(body: bytes, error: Exception) -> AsyncIterator[bytes]:
    yield body
    raise error


async def _respond(exchange: Exchange, source: Any) -> Any:
    async for event in exchange.pipeline.stream(source, request=exchange.session.body):
        exchange.sent += exchange.session.feed(event)
    end = exchange.session.end_attempt()
    exchange.sent += end.items
    return end


def _error(exchange: Exchange) -> dict[str, Any]:
    (error,) = [
        item["error"] for item in exchange.sent if isinstance(item, dict) and "error" in item
    ]
    assert isinstance(error, dict)
    return error


def _named(name: str) -> Exception:
    """An exception of a class called ``name``: faults are told apart by class name."""
    return type(name, (Exception,), {})(f"litellm.{name}: Connection error.")


@pytest.mark.parametrize(
    ("error", "kind"),
    [
        (httpx.ReadTimeout(""), "timeout"),
        (httpx.ConnectTimeout(""), "timeout"),
        (httpx.ReadError(""), "dropped"),
        (httpx.ConnectError("refused"), "dropped"),
        (
            httpx.RemoteProtocolError(
                "peer closed connection without sending complete message body"
            ),
            "dropped",
        ),
        (httpx.RemoteProtocolError("illegal chunk header: b'zz'"), "protocol_error"),
        (httpx.DecodingError("bad gzip"), "protocol_error"),
        (TimeoutError(), "timeout"),
        # Named as LiteLLM's and the openai SDK's (which toolwire does not import here).
        (_named("Timeout"), "timeout"),
        (_named("APITimeoutError"), "timeout"),
        (_named("APIConnectionError"), "dropped"),
    ],
)
def test_each_exception_is_told_as_the_fault_it_is(error: Exception, kind: str) -> None:
    assert exception_fault(error).kind == kind


async def test_a_stall_ends_the_exchange_at_once_with_a_typed_timeout(anyio_backend: str) -> None:
    exchange = Exchange("openai-chat", max_retries=2)
    end = await _respond(exchange, _failing(CUT_CALL, httpx.ReadTimeout("timed out")))
    assert end.retry is None  # no retry: a second wait would be the same wait
    error = _error(exchange)
    assert (error["type"], error["code"]) == ("toolwire_upstream_error", "upstream_timeout")
    assert "not of the model" in error["message"]
    assert "the model sent" not in error["message"]
    assert exchange.session.error_status == 504
    assert exchange.session.outcome == "upstream_error"


async def test_a_stall_with_no_call_cut_is_the_same_typed_timeout(anyio_backend: str) -> None:
    exchange = Exchange("openai-chat")
    text = sse_body([chat_chunk({"content": "Hel"})], done=False)
    end = await _respond(exchange, _failing(text, httpx.ReadTimeout("")))
    assert not end.dropped
    assert _error(exchange)["code"] == "upstream_timeout"
    assert [d.get("content") for d in exchange.deltas() if d.get("content")] == ["Hel"]


async def test_a_second_drop_ends_with_upstream_dropped_and_the_usage_spent(
    anyio_backend: str,
) -> None:
    exchange = Exchange("openai-chat")
    usage = {
        **chat_chunk(),
        "choices": [],
        "usage": {"prompt_tokens": 7, "completion_tokens": 3, "total_tokens": 10},
    }
    # The first response's call is rejected (asked again); the retry drops twice.
    first = _calls(("c1", "write", '{"path": 1}'), usage=(20, 5))
    end = await exchange.respond(first)
    assert end.retry is not None
    assert not end.retry.resend
    broken = sse_body([usage, _call(0, "c2", '{"pa')], done=False)
    end = await _respond(exchange, _failing(broken, httpx.ReadError("")))
    assert end.retry is not None
    assert end.retry.resend
    assert end.retry.body == exchange.session.body  # the same request, as it went
    end = await _respond(exchange, _failing(broken, httpx.ReadError("")))
    assert end.retry is None
    error = _error(exchange)
    assert error["code"] == "upstream_dropped"
    assert "sent the request again once" in error["message"]
    # What the three responses spent, summed, in the format's usage shape.
    assert error["usage"]["prompt_tokens"] == 20 + 7 + 7
    assert error["usage"]["completion_tokens"] == 5 + 3 + 3


async def test_a_drop_after_a_call_went_out_is_not_sent_again(anyio_backend: str) -> None:
    """The model, asked the same thing again, might write that call differently: the client
    would run both. The exchange ends with the typed error; the call sent stands."""
    exchange = Exchange("openai-chat")
    body = sse_body([_call(0, "c1", GOOD_WRITE), _call(1, "c2", '{"pa')], done=False)
    end = await _respond(exchange, _failing(body, httpx.ReadError("")))
    assert end.retry is None
    assert [call["id"] for call in exchange.calls()] == ["c1"]
    assert _error(exchange)["code"] == "upstream_dropped"


async def test_the_remnant_of_a_piece_a_drop_cut_is_no_unreadable_piece(
    anyio_backend: str,
) -> None:
    """A drop in the middle of an event leaves half of it: that is the drop, not garbage."""
    exchange = Exchange("openai-chat")
    end = await _respond(
        exchange, _failing(CUT_CALL + b'data: {"id": "chatcmpl-', httpx.ReadError(""))
    )
    assert end.retry is not None
    assert end.retry.resend


async def test_a_give_up_reports_the_usage_spent(anyio_backend: str) -> None:
    exchange = Exchange("openai-chat", max_retries=1)
    await exchange.respond(_calls(("c1", "write", '{"path": 1}'), usage=(20, 5)))
    await exchange.respond(_calls(("c2", "write", '{"path": 2}'), usage=(30, 6)))
    error = _error(exchange)
    assert error["code"] == "tool_call_rejected"
    assert error["usage"] == {"prompt_tokens": 50, "completion_tokens": 11, "total_tokens": 61}


async def test_a_retry_that_changes_a_sent_call_sends_it_too(anyio_backend: str) -> None:
    """The choice (docs/healing.md, "A retry that changes a sent call"): a retry's call that
    differs from one already sent goes out, and the client runs both. toolwire cannot tell a
    "correction" of the accepted call from the replacement of the rejected one (often the same
    tool), the accepted call already reached the client and cannot be taken back, and the
    model was told it runs. Only an identical call (same name, same arguments) is held back."""
    exchange = Exchange("openai-chat", _body(tool_choice="auto"))
    first = _calls(("c_ok", "write", GOOD_WRITE), ("c_bad", "write", '{"path": 1}'))
    await exchange.respond(first)
    changed = '{"path": "notes.txt", "content": "hello, corrected"}'
    retry = _calls(
        ("r1", "write", changed),
        ("r2", "write", GOOD_WRITE),  # identical to c_ok: not sent again
        ("r3", "write", '{"path": "other.txt", "content": "x"}'),
    )
    await exchange.respond(retry)
    sent = [(call["id"], json.loads(call["function"]["arguments"])) for call in exchange.calls()]
    assert sent == [
        ("c_ok", json.loads(GOOD_WRITE)),
        ("r1", json.loads(changed)),
        ("r3", {"path": "other.txt", "content": "x"}),
    ]
