"""OpenAI Responses as a healing wire format: the encoder, the requests and the whole bodies.

The round trip is the contract: re-encoding a judged Responses stream and reading it back with
toolwire's own Responses mapper gives the same accepted calls, text and finish, and never a
rejected call, and what is read back is written again the same (one table of cases, both
directions); the official ``openai`` SDK reads what the encoder writes (its calls, status,
``incomplete_details``, usage) and raises on its ``error`` event. The rest pins down each rule of
``adapters/openai_responses/`` (``encoder.py``, ``healing.py``), through the healing session where
the session decides.
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any, NamedTuple

import anyio
import httpx
import openai
import pytest
from _toolwire_testdata import STREAMS, data_payloads, examples, load_stream
from heal.client import SDK_ON_TRIO_LEAK
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import toolwire
import toolwire.events
from toolwire.adapters.encoding import ACCEPTED_NOTE
from toolwire.adapters.openai_responses import RESPONSES, ResponsesEventEncoder
from toolwire.adapters.openai_responses.encoder import ReasoningPart
from toolwire.adapters.openai_responses.healing import ResponsesWireFormat
from toolwire.core.events import (
    Event,
    Finish,
    ProviderError,
    ResponseInfo,
    ToolCallComplete,
    ToolCallReady,
    Usage,
    Verdict,
)
from toolwire.core.results import rejected_result
from toolwire.core.wire import WireItem
from toolwire.heal import HealSession

pytestmark = [pytest.mark.anyio, pytest.mark.filterwarnings(SDK_ON_TRIO_LEAK)]

PROVIDER = "openai-responses"
RM_TOOL = {
    "type": "function",
    "name": "rm",
    "parameters": {
        "type": "object",
        "required": ["path"],
        "properties": {"path": {"type": "string"}},
    },
}
USAGE = {
    "input_tokens": 20,
    "input_tokens_details": {"cached_tokens": 4},
    "output_tokens": 12,
    "output_tokens_details": {"reasoning_tokens": 3},
    "total_tokens": 32,
}


def _request(**extra: Any) -> dict[str, Any]:
    return {"model": "gpt-test", "input": "Remove a.txt", "tools": [RM_TOOL], "stream": True,
            **extra}  # fmt: skip


def _recordings() -> list[str]:
    return sorted(path.name for path in (STREAMS / PROVIDER).iterdir() if path.suffix == ".sse")


def _payloads(body: bytes) -> list[dict[str, Any]]:
    return [json.loads(payload) for payload in data_payloads(body)]


# -- hand-built upstream streams ---------------------------------------------------------------


def _sse(events: list[dict[str, Any]]) -> bytes:
    """Frame events as OpenAI does, numbered 0, 1, 2..."""
    out = []
    for number, event in enumerate(events):
        payload = {**event, "sequence_number": number}
        out.append(f"event: {event['type']}\ndata: {json.dumps(payload)}\n\n")
    return "".join(out).encode()


def _response(status: str = "in_progress", **fields: Any) -> dict[str, Any]:
    return {"id": "resp_up1", "object": "response", "created_at": 1, "model": "gpt-test",
            "status": status, "output": [], "usage": None, **fields}  # fmt: skip


def _message(index: int, text: str, item_id: str = "msg_up1") -> list[dict[str, Any]]:
    item = {"id": item_id, "type": "message", "status": "completed", "role": "assistant",
            "content": [{"type": "output_text", "annotations": [], "text": text}]}  # fmt: skip
    where = {"item_id": item_id, "output_index": index, "content_index": 0}
    return [
        {"type": "response.output_item.added", "output_index": index,
         "item": {**item, "status": "in_progress", "content": []}},
        {"type": "response.output_text.delta", **where, "delta": text},
        {"type": "response.output_text.done", **where, "text": text},
        {"type": "response.output_item.done", "output_index": index, "item": item},
    ]  # fmt: skip


def _call(index: int, call_id: str, arguments: str, name: str = "rm") -> list[dict[str, Any]]:
    item = {"id": f"fc_{call_id}", "type": "function_call", "status": "completed",
            "arguments": arguments, "call_id": call_id, "name": name}  # fmt: skip
    where = {"item_id": item["id"], "output_index": index}
    return [
        {"type": "response.output_item.added", "output_index": index,
         "item": {**item, "status": "in_progress", "arguments": ""}},
        {"type": "response.function_call_arguments.delta", **where, "delta": arguments},
        {"type": "response.function_call_arguments.done", **where, "arguments": arguments},
        {"type": "response.output_item.done", "output_index": index, "item": item},
    ]  # fmt: skip


def _stream(*parts: list[dict[str, Any]]) -> bytes:
    """A completed response of ``parts`` (message and call items), with :data:`USAGE`."""
    events = [{"type": "response.created", "response": _response()}]
    for part in parts:
        events += part
    final = _response("completed", usage=USAGE)
    return _sse([*events, {"type": "response.completed", "response": final}])


async def _judged(body: bytes, request: Any = None) -> list[Event]:
    return [event async for event in toolwire.Pipeline(PROVIDER).stream(body, request=request)]


def _encoded(
    events: list[Event],
    request: Any = None,
    reasoning: ReasoningPart | None = None,
    created_at: int | None = None,
) -> bytes:
    encoder = ResponsesEventEncoder(request, reasoning=reasoning, created_at=created_at)
    return RESPONSES.frame(item for event in events for item in encoder.feed(event))


@asynccontextmanager
async def _sdk(
    body: bytes, seen: list[httpx.Request] | None = None
) -> AsyncIterator[openai.AsyncOpenAI]:
    """The official SDK, whose every request is answered with ``body`` as an event stream."""

    def reply(request: httpx.Request) -> httpx.Response:
        if seen is not None:
            seen.append(request)
        return httpx.Response(200, headers={"content-type": "text/event-stream"}, content=body)

    async with httpx.AsyncClient(transport=httpx.MockTransport(reply)) as http:
        async with openai.AsyncOpenAI(
            base_url="http://up/v1", api_key="sk-test", max_retries=0, http_client=http
        ) as client:
            yield client


# -- every recording, re-encoded and read back -------------------------------------------------


def _recorded_request(body: bytes) -> dict[str, Any]:
    """The request a recording answered, as far as its ``response.created`` echoes it."""
    created = _payloads(body)[0]["response"]
    return {"model": created["model"], "input": "x", "tools": created["tools"]}


# As h11's test_io.py: one table of cases drives the reader and the writer. Reading: the bytes of
# each case become judged events, which the writer turns into bytes that read back as the same
# Turn (less the rejected calls, which never reach a client; the finish corrected for the token
# limit). Writing: the events read back from what was written are written as the same bytes
# (the ids of toolwire's own message and reasoning items are fresh per response).

#: Every recording, with reasoning left out and written in each of its two forms.
ROUND_TRIPS = [
    pytest.param(f"{PROVIDER}/{recording}", reasoning, id=f"{recording}-{reasoning}")
    for recording in _recordings()
    for reasoning in (None, "summary_text", "reasoning_text")
]
_OWN_ITEM_ID = re.compile(rb"\b(?:msg|rs)_[0-9a-f]{32}\b")


class RoundTrip(NamedTuple):
    """One case, read, written, read back, written again."""

    events: list[Event]
    original: toolwire.Turn
    encoded: bytes
    again: toolwire.Turn
    rewritten: bytes
    encoder: ResponsesEventEncoder


async def _round_trip(recording: str, reasoning: ReasoningPart | None) -> RoundTrip:
    pipeline = toolwire.Pipeline(PROVIDER)
    body = load_stream(recording)
    request = _recorded_request(body)
    events = await _judged(body, request)
    # Both writings carry the same ``created_at``: taken from the clock each, they differed
    # whenever the two straddled a second (a flaky failure, likelier on a loaded machine).
    created_at = int(time.time())
    encoder = ResponsesEventEncoder(request, reasoning=reasoning, created_at=created_at)
    encoded = RESPONSES.frame(item for event in events for item in encoder.feed(event))
    read_back = await _judged(encoded, request)
    return RoundTrip(
        events,
        await pipeline.collect(body, request=request),
        encoded,
        await pipeline.collect(encoded, request=request),
        _encoded(read_back, request, reasoning, created_at),
        encoder,
    )


def _own_ids_numbered(body: bytes) -> bytes:
    """``body`` with toolwire's own item ids named by their first use."""
    names: dict[bytes, bytes] = {}
    return _OWN_ITEM_ID.sub(lambda m: names.setdefault(m.group(), b"item_%d" % len(names)), body)


@pytest.mark.parametrize(("recording", "reasoning"), ROUND_TRIPS)
async def test_reading_then_writing(
    anyio_backend: str, recording: str, reasoning: ReasoningPart | None
) -> None:
    """Bytes -> events -> bytes: what the writer wrote reads back as the Turn first read."""
    events, original, encoded, again, _, encoder = await _round_trip(recording, reasoning)
    accepted = [call for call in original.calls if call.may_run]
    assert [(c.call_id, c.name, c.arguments) for c in again.calls] == [
        (c.call_id, c.name, c.arguments) for c in accepted
    ]
    for before, after in zip(accepted, again.calls, strict=True):
        if before.outcome == "ok":
            assert after.arguments_raw == before.arguments_raw  # byte for byte
    for call in original.rejected:
        assert call.call_id.encode() not in encoded  # a rejected call never reaches a client
    assert again.text == original.text
    assert again.reasoning == (original.reasoning if reasoning else "")
    assert (again.usage, again.model, again.response_id) == (
        original.usage,
        original.model,
        original.response_id,
    )
    assert again.stop_reason == original.stop_reason
    assert again.errors == ()
    finish = next(event for event in events if isinstance(event, Finish))
    assert again.finish_raw == encoder.client_finish_reason(finish, calls_sent=bool(accepted))
    if original.cut_by == "token_limit":
        assert again.finish_raw == "max_output_tokens"
    payloads = _payloads(encoded)
    assert [p["sequence_number"] for p in payloads] == list(range(len(payloads)))
    added = [p["output_index"] for p in payloads if p["type"] == "response.output_item.added"]
    assert added == list(range(len(added)))


@pytest.mark.parametrize(("recording", "reasoning"), ROUND_TRIPS)
async def test_writing_then_reading(
    anyio_backend: str, recording: str, reasoning: ReasoningPart | None
) -> None:
    """Events -> bytes -> events: the events read back from the written bytes write them again."""
    trip = await _round_trip(recording, reasoning)
    assert _own_ids_numbered(trip.rewritten) == _own_ids_numbered(trip.encoded)


# -- the official SDK reads it -----------------------------------------------------------------

ODD_BUT_VALID = '{ "path" :"a.txt" }'


async def test_the_sdk_reads_calls_text_status_and_usage(anyio_backend: str) -> None:
    upstream = _stream(
        _message(0, "Removing both."),
        _call(1, "call_ok", ODD_BUT_VALID),
        _call(2, "call_bad", '{"path": 7}'),  # the schema wants a string: rejected
        _call(3, "call_fix", '{"path": "b.txt",}'),  # a trailing comma: repaired
    )
    request = _request()
    encoded = _encoded(await _judged(upstream, request), request)
    seen: list[httpx.Request] = []
    async with _sdk(encoded, seen) as client:
        async with client.responses.stream(
            model="gpt-test",
            input="Remove a.txt and b.txt",
            tools=[RM_TOOL],
        ) as stream:
            kinds = [event.type async for event in stream]
            final = await stream.get_final_response()
    assert seen[0].url.path == "/v1/responses"
    assert kinds[:2] == ["response.created", "response.in_progress"]
    assert kinds[-1] == "response.completed"
    assert final.id == "resp_up1"
    assert final.status == "completed"
    assert final.incomplete_details is None
    assert final.output_text == "Removing both."
    calls = [item for item in final.output if item.type == "function_call"]
    assert [(call.call_id, call.name, call.arguments) for call in calls] == [
        ("call_ok", "rm", ODD_BUT_VALID),
        ("call_fix", "rm", '{"path":"b.txt"}'),
    ]
    assert [call.id for call in calls] == [None, None]  # no item id toolwire cannot vouch for
    assert final.output[0].id.startswith("msg_")
    usage = final.usage
    assert usage is not None
    assert (usage.input_tokens, usage.output_tokens, usage.total_tokens) == (20, 12, 32)
    assert usage.output_tokens_details.reasoning_tokens == 3


async def test_the_sdk_reads_a_cut_as_incomplete(anyio_backend: str) -> None:
    recording = load_stream(
        f"{PROVIDER}/incomplete_max_output_tokens_mid_function_call.derived.sse"
    )
    encoded = _encoded(await _judged(recording))
    async with _sdk(encoded) as client:
        stream = await client.responses.create(model="gpt-test", input="x", stream=True)
        events = [event async for event in stream]
    last = events[-1]
    assert last.type == "response.incomplete"
    assert last.response.status == "incomplete"
    assert last.response.incomplete_details is not None
    assert last.response.incomplete_details.reason == "max_output_tokens"
    assert [item.type for item in last.response.output] == ["message"]  # the cut call: never
    assert last.response.usage is not None
    assert last.response.usage.total_tokens == 127


async def _read_texts(stream: Any, texts: list[str]) -> None:
    async for event in stream:
        if event.type == "response.output_text.delta":
            texts.append(event.delta)


async def test_the_sdk_raises_on_a_failed_healing(anyio_backend: str) -> None:
    encoder = ResponsesEventEncoder(_request())
    items = [
        *encoder.info(ResponseInfo(model="gpt-test", response_id="resp_1")),
        *encoder.text("Let me"),
        *encoder.error(
            encoder.heal_failed("toolwire did not pass on a call", "tool_call_rejected")
        ),
    ]
    texts: list[str] = []
    async with _sdk(RESPONSES.frame(items)) as client:
        stream = await client.responses.create(model="gpt-test", input="x", stream=True)
        with pytest.raises(openai.APIError) as raised:
            await _read_texts(stream, texts)
    assert texts == ["Let me"]
    assert raised.value.message == "toolwire did not pass on a call"
    assert raised.value.code == "tool_call_rejected"
    assert raised.value.type == "toolwire_heal_failed"


async def test_a_server_error_goes_out_as_the_server_wrote_it(anyio_backend: str) -> None:
    error = {"type": "server_error", "code": "overloaded", "message": "Try later", "param": None}
    upstream = _sse([
        {"type": "response.created", "response": _response()},
        {"type": "error", "error": error},
    ])  # fmt: skip
    encoded = _encoded(await _judged(upstream))
    assert _payloads(encoded)[-1] == {
        "type": "error", "sequence_number": 2, "code": "overloaded", "message": "Try later",
        "param": None, "error": error,
    }  # fmt: skip
    turn = await toolwire.Pipeline(PROVIDER).collect(encoded)
    assert (turn.stop_reason, turn.errors[0].message) == ("error", "Try later")
    async with _sdk(encoded) as client:
        stream = await client.responses.create(model="gpt-test", input="x", stream=True)
        with pytest.raises(openai.APIError, match="Try later"):
            await _read_texts(stream, [])


# -- through the healing session ---------------------------------------------------------------


async def _run(session: HealSession, body: bytes, request: Any) -> list[WireItem]:
    items = [item for event in await _judged(body, request) for item in session.feed(event)]
    return items


async def test_a_rejected_call_is_healed_and_the_follow_up_is_well_formed(
    anyio_backend: str,
) -> None:
    plan = RESPONSES.plan_request(json.dumps(_request(max_output_tokens=64)).encode())
    assert plan is not None
    pipeline = toolwire.Pipeline(PROVIDER)
    session = HealSession(plan.body, pipeline.next_messages, wire=RESPONSES)
    first = _stream(_message(0, "Removing it."), _call(1, "call_1", '{"path": 1}'))
    items = await _run(session, first, plan.body)
    end = session.end_attempt()
    assert end.retry is not None
    assert end.items == []
    follow_up = end.retry.body["input"]
    assert follow_up[0] == {"role": "user", "content": "Remove a.txt"}
    assert [item.get("type") for item in follow_up[1:]] == [
        "message", "function_call", "function_call_output",
    ]  # fmt: skip
    assert follow_up[2]["arguments"] == "{}"  # the bad arguments are never replayed
    assert pipeline.check_history(follow_up) == []

    second = _stream(
        _message(0, "Sorry, again:", "msg_up2"), _call(1, "call_2", '{"path": "a.txt"}')
    )
    items += await _run(session, second, end.retry.body)
    items += session.end_attempt().items
    assert session.outcome == "healed"
    encoded = RESPONSES.frame(items)
    turn = await pipeline.collect(encoded, request=plan.body)
    assert turn.text == "Removing it."  # the retry's words about the rejection are held
    assert [(c.call_id, c.arguments) for c in turn.calls] == [("call_2", {"path": "a.txt"})]
    assert turn.finish_raw == "completed"
    assert turn.usage == Usage(input_tokens=40, output_tokens=24, total_tokens=64,
                               reasoning_tokens=6)  # fmt: skip
    async with _sdk(encoded) as client:
        async with client.responses.stream(model="gpt-test", input="x") as stream:
            read = await stream.get_final_response()
    assert (read.id, read.output_text, read.status) == ("resp_up1", "Removing it.", "completed")
    assert [(item.type, getattr(item, "call_id", None)) for item in read.output] == [
        ("message", None), ("function_call", "call_2"),
    ]  # fmt: skip
    final = _payloads(encoded)[-1]["response"]
    assert (final["max_output_tokens"], final["tools"]) == (64, [RM_TOOL])  # echoed


async def test_retries_that_run_out_at_the_token_limit_end_incomplete(anyio_backend: str) -> None:
    cut = load_stream(f"{PROVIDER}/incomplete_max_output_tokens_mid_function_call.derived.sse")
    session = HealSession(_request(), toolwire.Pipeline(PROVIDER).next_messages, wire=RESPONSES,
                          max_retries=0)  # fmt: skip
    items = await _run(session, cut, None)
    items += session.end_attempt().items
    assert session.outcome == "length"
    final = _payloads(RESPONSES.frame(items))[-1]
    assert final["type"] == "response.incomplete"
    assert final["response"]["incomplete_details"] == {"reason": "max_output_tokens"}
    assert [item["type"] for item in final["response"]["output"]] == ["message"]


async def test_retries_that_run_out_end_in_an_error_event(anyio_backend: str) -> None:
    session = HealSession(_request(), toolwire.Pipeline(PROVIDER).next_messages, wire=RESPONSES,
                          max_retries=0)  # fmt: skip
    items = await _run(session, _stream(_call(0, "call_1", '{"path": 1}')), _request())
    items += session.end_attempt().items
    assert session.outcome == "failed"
    error = RESPONSES.error_body(items)
    assert error is not None
    assert error["error"]["type"] == "toolwire_heal_failed"
    assert error["error"]["code"] == "tool_call_rejected"
    assert [item["type"] for item in items if isinstance(item, dict)][-1] == "error"


# -- non-streamed bodies -----------------------------------------------------------------------


def _final_response(recording: str) -> dict[str, Any]:
    response: dict[str, Any] = _payloads(load_stream(f"{PROVIDER}/{recording}"))[-1]["response"]
    return response


@pytest.mark.parametrize("recording", _recordings())
async def test_a_whole_body_reads_as_its_stream(anyio_backend: str, recording: str) -> None:
    body = _final_response(recording)
    read = RESPONSES.read_body(json.dumps(body).encode())
    assert read == body
    pipeline = toolwire.Pipeline(PROVIDER)
    streamed = await pipeline.collect(load_stream(f"{PROVIDER}/{recording}"))
    whole = await pipeline.collect(RESPONSES.body_as_stream(body))
    assert [(c.call_id, c.arguments_raw, c.outcome) for c in whole.calls] == [
        (c.call_id, c.arguments_raw, c.outcome) for c in streamed.calls
    ]
    assert (whole.text, whole.reasoning, whole.usage, whole.stop_reason, whole.errors) == (
        streamed.text, streamed.reasoning, streamed.usage, streamed.stop_reason, (),
    )  # fmt: skip


async def test_a_healed_body_keeps_the_first_body_s_own_items(anyio_backend: str) -> None:
    first = _final_response("reasoning_text_function_call_gpt5.sse")
    reasoning, message, call = first["output"]
    first["output"][2] = {**call, "arguments": '{"country": 5}'}  # against the schema
    first.update(service_tier="flex", output_text="kept?")
    tool = {"type": "function", "name": "get_capital", "parameters": {
        "type": "object", "properties": {"country": {"type": "string"}}}}  # fmt: skip
    request = _request(stream=False, tools=[tool])
    session = HealSession(request, toolwire.Pipeline(PROVIDER).next_messages, wire=RESPONSES)
    items = await _run(session, RESPONSES.body_as_stream(first), request)
    retry = session.end_attempt().retry
    assert retry is not None
    items += await _run(session, _stream(_call(0, "call_2", '{"country":"France"}',
                                               "get_capital")), retry.body)  # fmt: skip
    items += session.end_attempt().items
    healed = RESPONSES.healed_body(first, items)
    assert healed["output"][:2] == [reasoning, message]  # id, encrypted_content, phase kept
    assert healed["output"][2] == {"type": "function_call", "status": "completed",
                                   "arguments": '{"country":"France"}', "call_id": "call_2",
                                   "name": "get_capital"}  # fmt: skip
    assert len(healed["output"]) == 3
    assert (healed["status"], healed["service_tier"], healed["id"]) == (
        "completed", "flex", first["id"],
    )  # fmt: skip
    assert healed["usage"]["input_tokens"] == 63 + 20
    assert healed["usage"]["input_tokens_details"] == first["usage"]["input_tokens_details"]
    assert healed["output_text"] == message["content"][0]["text"]
    assert RESPONSES.error_body(items) is None
    openai.types.responses.Response.model_validate(healed)


def test_a_repaired_call_keeps_its_item_id_in_the_body() -> None:
    first = _response("completed", output=[
        {"id": "fc_1", "type": "function_call", "status": "completed",
         "arguments": '{"path": "a",}', "call_id": "c1", "name": "rm"},
    ], usage=USAGE)  # fmt: skip
    encoder = ResponsesEventEncoder()
    call = ToolCallComplete(call_id="c1", name="rm", index=0, arguments_raw='{"path": "a",}')
    verdict = Verdict(outcome="repaired", arguments={"path": "a"})
    items = [*encoder.call(toolwire.events.ToolCallRepaired(call=call, verdict=verdict)),
             *encoder.finish("completed")]  # fmt: skip
    healed = RESPONSES.healed_body(first, items)
    assert healed["output"] == [{**first["output"][0], "arguments": '{"path":"a"}'}]


@pytest.mark.parametrize(
    "content",
    [
        b"not json",
        b"[]",
        json.dumps(_response("failed", error={"code": "x", "message": "y"})).encode(),
        json.dumps(_response("queued")).encode(),
        json.dumps({**_response("completed"), "output": ["text"]}).encode(),
        json.dumps({**_response("completed"), "object": "chat.completion"}).encode(),
    ],
)
def test_bodies_that_are_not_healed(content: bytes) -> None:
    assert RESPONSES.read_body(content) is None


# -- requests ----------------------------------------------------------------------------------


def test_a_request_with_function_tools_is_healed_as_is() -> None:
    content = json.dumps(_request()).encode()
    plan = RESPONSES.plan_request(content)
    assert plan is not None
    assert (plan.body, plan.content, plan.streaming, plan.client_wants_usage) == (
        _request(), None, True, True,
    )  # fmt: skip
    listed = RESPONSES.plan_request(json.dumps(_request(input=[], stream=False)).encode())
    assert listed is not None
    assert not listed.streaming


@pytest.mark.parametrize(
    "body",
    [
        {"model": "m", "input": "x"},  # no tools
        _request(tools=[]),
        _request(tools=[RM_TOOL, {"type": "web_search"}]),  # its items would not reach the client
        _request(tools=[{"type": "custom", "name": "patch"}]),
        _request(previous_response_id="resp_1"),  # the context lives on the server
        _request(conversation="conv_1"),
        _request(background=True),
        _request(input=None),
        _request(input={"role": "user"}),
        [1, 2],
    ],
)
def test_requests_that_pass_untouched(body: Any) -> None:
    assert RESPONSES.plan_request(json.dumps(body).encode()) is None


def test_a_body_that_is_not_json_passes_untouched() -> None:
    assert RESPONSES.plan_request(b"{") is None


async def test_without_store_only_reasoning_keeps_its_id(anyio_backend: str) -> None:
    """Nothing was stored: message and call ids would be looked up and refused; a reasoning
    item goes back whole (its id verifies its encrypted content), or not at all."""
    pipeline = toolwire.Pipeline(PROVIDER)
    for recording, reasoning_kept in [
        ("incomplete_max_output_tokens_mid_function_call.derived.sse", True),
        ("lmstudio_local_reasoning_text_call_no_arg_deltas.sse", False),  # no encrypted content
    ]:
        turn = await pipeline.collect(load_stream(f"{PROVIDER}/{recording}"))
        for store in (True, False):
            body = {**_request(input=[{"role": "user", "content": "hi"}]), "store": store}
            follow_up = RESPONSES.follow_up_body(body, turn, pipeline.next_messages)["input"]
            assert follow_up[0] == {"role": "user", "content": "hi"}
            assert pipeline.check_history(follow_up) == []
            with_ids = [item for item in follow_up if "id" in item]
            types = [item.get("type") for item in follow_up]
            if store:
                assert with_ids
                assert types[1] == "reasoning"
            else:
                assert [item["type"] for item in with_ids] == ["reasoning"] * reasoning_kept
                assert ("reasoning" in types) is reasoning_kept
            outputs = [item["output"] for item in follow_up
                       if item.get("type") == "function_call_output"]  # fmt: skip
            call = turn.calls[0]
            assert outputs == [ACCEPTED_NOTE if call.may_run else rejected_result(call).content]


@pytest.mark.parametrize(
    ("limit", "ceiling", "expected"),
    [(64, 1000, 128), (600, 1000, 1000), (1000, 1000, None), (None, 1000, None),
     (True, 1000, None), (0, 1000, None)],
)  # fmt: skip
def test_the_raised_limit(limit: Any, ceiling: int, expected: int | None) -> None:
    body = _request() if limit is None else _request(max_output_tokens=limit)
    raised, new = RESPONSES.raised_limit(body, ceiling)
    assert new == expected
    assert raised == (body if expected is None else {**body, "max_output_tokens": expected})


# -- the finish --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("finish", "expected"),
    [
        (Finish(reason="length", raw="completed", cut_by="token_limit"), "max_output_tokens"),
        (Finish(reason="length", raw="max_output_tokens", cut_by="token_limit"),
         "max_output_tokens"),
        (Finish(reason="tool_calls", raw="completed"), "completed"),
        (Finish(reason="content_filter", raw="content_filter"), "content_filter"),
        (Finish(reason="unknown", raw="incomplete"), "incomplete"),
        (Finish(reason="end_turn", raw=None), "completed"),
    ],
)  # fmt: skip
def test_the_client_finish(finish: Finish, expected: str) -> None:
    encoder = ResponsesEventEncoder()
    assert encoder.client_finish_reason(finish, calls_sent=True) == expected
    assert encoder.client_finish_reason(finish, calls_sent=False) == expected


@pytest.mark.parametrize(
    ("reason", "kind", "details"),
    [
        ("completed", "response.completed", None),
        ("max_output_tokens", "response.incomplete", {"reason": "max_output_tokens"}),
        ("content_filter", "response.incomplete", {"reason": "content_filter"}),
        ("incomplete", "response.incomplete", None),
    ],
)
def test_the_terminal_event(reason: str, kind: str, details: Any) -> None:
    encoder = ResponsesEventEncoder(created_at=5)
    encoder.set_usage(Usage(input_tokens=3, output_tokens=4))
    (*_, terminal) = encoder.finish(reason)
    assert isinstance(terminal, dict)
    assert terminal["type"] == kind
    response = terminal["response"]
    assert response["status"] == kind.rpartition(".")[2]
    assert response["incomplete_details"] == details
    assert response["usage"] == {"input_tokens": 3, "output_tokens": 4, "total_tokens": 7}
    assert response["created_at"] == 5
    assert encoder.end() == []  # nothing follows the terminal event


# -- the encoder's rules -----------------------------------------------------------------------


def _ready(call_id: str, arguments: str = '{"path":"a"}') -> ToolCallReady:
    call = ToolCallComplete(call_id=call_id, name="rm", index=0, arguments_raw=arguments)
    return ToolCallReady(call=call, verdict=Verdict(outcome="ok", arguments=json.loads(arguments)))


def _types(items: list[WireItem]) -> list[str]:
    return [item["type"] for item in items if isinstance(item, dict)]


def test_items_are_numbered_and_closed_in_order() -> None:
    encoder = ResponsesEventEncoder(reasoning="summary_text")
    items = [
        *encoder.reasoning("Think"),
        *encoder.text("Hi"),
        *encoder.text(" there"),
        *encoder.call(_ready("c1")),
        *encoder.text("More"),
        *encoder.finish("completed"),
    ]
    assert _types(items) == [
        "response.created", "response.in_progress",
        "response.output_item.added", "response.reasoning_summary_part.added",
        "response.reasoning_summary_text.delta", "response.reasoning_summary_text.done",
        "response.reasoning_summary_part.done", "response.output_item.done",
        "response.output_item.added", "response.content_part.added",
        "response.output_text.delta", "response.output_text.delta",
        "response.output_text.done", "response.content_part.done", "response.output_item.done",
        "response.output_item.added", "response.function_call_arguments.delta",
        "response.function_call_arguments.done", "response.output_item.done",
        "response.output_item.added", "response.content_part.added",
        "response.output_text.delta", "response.output_text.done",
        "response.content_part.done", "response.output_item.done",
        "response.completed",
    ]  # fmt: skip
    numbers = [item["sequence_number"] for item in items if isinstance(item, dict)]
    assert numbers == list(range(len(items)))
    output = items[-1]["response"]["output"]
    assert [item["type"] for item in output] == ["reasoning", "message", "function_call",
                                                 "message"]  # fmt: skip
    assert output[0]["id"].startswith("rs_")
    assert output[0]["summary"] == [{"type": "summary_text", "text": "Think"}]
    assert output[1]["content"][0]["text"] == "Hi there"
    assert output[1]["id"] != output[3]["id"]


def test_reasoning_is_left_out_unless_asked_for() -> None:
    encoder = ResponsesEventEncoder()
    assert encoder.reasoning("secret") == []
    items = [*encoder.text("Hi"), *encoder.finish("completed")]
    assert "reasoning" not in json.dumps(items)
    raw = ResponsesEventEncoder(reasoning="reasoning_text")
    streamed = raw.reasoning("Think")
    assert _types(streamed)[-2:] == ["response.content_part.added", "response.reasoning_text.delta"]


def test_an_id_sent_before_gets_a_suffix() -> None:
    encoder = ResponsesEventEncoder()
    items = [*encoder.call(_ready("c")), *encoder.call(_ready("c")), *encoder.call(_ready("c"))]
    done = [item["item"]["call_id"] for item in items
            if isinstance(item, dict) and item["type"] == "response.output_item.done"]  # fmt: skip
    assert done == ["c", "c~h2", "c~h3"]
    assert encoder.calls_sent == 3


def test_the_first_response_names_the_client_response() -> None:
    encoder = ResponsesEventEncoder(_request())
    first = encoder.info(ResponseInfo(model="gpt-5", response_id="resp_a"))
    assert encoder.info(ResponseInfo(model="other", response_id="resp_b")) == []
    assert encoder.response_id == "resp_a"
    created = first[0]
    assert isinstance(created, dict)
    assert (created["response"]["id"], created["response"]["model"]) == ("resp_a", "gpt-5")
    assert created["response"]["tools"] == [RM_TOOL]
    assert created["response"]["parallel_tool_calls"] is True
    unnamed = ResponsesEventEncoder(_request()).text("x")[0]
    assert isinstance(unnamed, dict)
    assert unnamed["response"]["id"].startswith("resp_")
    assert unnamed["response"]["model"] == "gpt-test"


def test_an_error_before_anything_is_the_only_event() -> None:
    encoder = ResponsesEventEncoder()
    error = encoder.upstream_error(
        ProviderError(message="not an event stream: <html>", kind="not_a_stream", fatal=True)
    )
    assert error == {"type": "toolwire_upstream_error", "code": "not_a_stream",
                     "message": "not an event stream: <html>", "param": None}  # fmt: skip
    items = encoder.error(error)
    assert _types(items) == ["error"]
    assert items[0]["sequence_number"] == 0
    assert encoder.end() == []
    assert encoder.feed(Finish(reason="end_turn", raw="completed")) == []


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ('{"type":"error","error":{"type":"server_error","code":null,"message":"m","param":null}}',
         {"type": "server_error", "code": None, "message": "m", "param": None}),
        ('{"type":"error","code":"c","message":"m","param":"p"}',
         {"type": None, "code": "c", "message": "m", "param": "p"}),
        ('{"type":"response.failed","response":{"error":{"code":"c","message":"m"}}}',
         {"type": None, "code": "c", "message": "m", "param": None}),
        ('{"type":"error","message":"cut sho', {"type": None, "code": "x", "message": "said",
                                                 "param": None}),
    ],
)  # fmt: skip
def test_the_upstream_error_object(raw: str, expected: dict[str, Any]) -> None:
    fatal = ProviderError(message="said", kind="error_payload", code="x", raw=raw, fatal=True)
    assert ResponsesEventEncoder().upstream_error(fatal) == expected


def test_the_wire_format_names_its_endpoint() -> None:
    assert (RESPONSES.provider, RESPONSES.path) == ("openai-responses", "/responses")
    encoder = ResponsesWireFormat(reasoning="summary_text").encoder(
        RESPONSES.plan_request(json.dumps(_request()).encode())
    )
    assert encoder.reasoning_part == "summary_text"
    assert RESPONSES.frame([{"type": "x", "a": 1}]) == b'event: x\ndata: {"type":"x","a":1}\n\n'


# -- generated turns ---------------------------------------------------------------------------

_STEP = st.one_of(
    st.tuples(st.just("text"), st.text(min_size=1, max_size=8)),
    st.tuples(st.just("reasoning"), st.text(min_size=1, max_size=8)),
    st.tuples(st.just("call"), st.dictionaries(st.text(max_size=4), st.integers(), max_size=3)),
)


async def _read_back(steps: list[tuple[str, Any]]) -> tuple[toolwire.Turn, bytes]:
    encoder = ResponsesEventEncoder(reasoning="summary_text")
    items: list[WireItem] = []
    for number, (kind, value) in enumerate(steps):
        if kind == "call":
            items += encoder.call(_ready(f"call_{number}", json.dumps(value)))
        else:
            items += encoder.text(value) if kind == "text" else encoder.reasoning(value)
    items += encoder.finish("completed")
    encoded = RESPONSES.frame(items)
    return await toolwire.Pipeline(PROVIDER).collect(encoded), encoded


@settings(max_examples=examples(60), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(steps=st.lists(_STEP, max_size=8))
def test_any_sequence_of_pieces_reads_back(steps: list[tuple[str, Any]]) -> None:
    turn, encoded = anyio.run(_read_back, steps)
    assert turn.text == "".join(value for kind, value in steps if kind == "text")
    assert turn.reasoning == "".join(value for kind, value in steps if kind == "reasoning")
    assert [call.arguments for call in turn.calls] == [v for k, v in steps if k == "call"]
    assert (turn.errors, turn.finish_raw) == ((), "completed")
    payloads = _payloads(encoded)
    assert [p["sequence_number"] for p in payloads] == list(range(len(payloads)))
    added = [p["output_index"] for p in payloads if p["type"] == "response.output_item.added"]
    assert added == list(range(len(added)))
