"""Gemini and Vertex as healing wire formats: the encoder, the requests, the whole bodies.

The round trip is the contract: a judged stream re-encoded and read back by toolwire's own
Gemini adapter gives the same accepted calls, text, reasoning, finish, usage and signatures,
and never a rejected call. Healed exchanges run through the real
:class:`~toolwire.heal.HealSession`; retry histories are checked by the independent check of
the scripted Gemini server (``tests/e2e/gemini_server.py``).
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any

import pytest
from _toolwire_testdata import data_payloads, every_recording, load_stream
from e2e.gemini_server import (
    chunk,
    contents_errors,
    cut_streamed_call_reply,
    signature,
    sse,
    whole_call_reply,
)

import toolwire
from toolwire.adapters.encoding import ACCEPTED_NOTE
from toolwire.adapters.gemini import (
    GEMINI_ARRAY,
    GEMINI_STREAM,
    GEMINI_WHOLE,
    GeminiChunkEncoder,
)
from toolwire.adapters.gemini.replay import recall
from toolwire.core.events import Event, Finish, ProviderError
from toolwire.core.turn import Turn
from toolwire.core.wire import WireItem
from toolwire.heal import HealSession
from toolwire.heal.session import AttemptEnd

pytestmark = pytest.mark.anyio

RECORDINGS = [path for path, provider in every_recording() if provider == "gemini"]
WEATHER = {
    "name": "getWeather",
    "parameters": {
        "type": "OBJECT",
        "properties": {"location": {"type": "STRING"}},
        "required": ["location"],
    },
}
USER = [{"role": "user", "parts": [{"text": "Weather in Boston?"}]}]


def _request(**extra: Any) -> dict[str, Any]:
    return {
        "contents": list(USER),
        "tools": [{"functionDeclarations": [WEATHER]}],
        "generationConfig": {"maxOutputTokens": 64},
        **extra,
    }


def _call(name: str, args: dict[str, Any], *, sign: int | None = None) -> dict[str, Any]:
    part: dict[str, Any] = {"functionCall": {"name": name, "args": args}}
    if sign is not None:
        part["thoughtSignature"] = signature(sign)
    return part


USAGE = {"promptTokenCount": 40, "candidatesTokenCount": 12, "totalTokenCount": 80,
         "thoughtsTokenCount": 28}  # fmt: skip

#: Hand-built streams beside the recordings: what the recordings do not show.
BUILT: dict[str, bytes] = {
    "thought_text_signed_call": sse(
        chunk({"text": "Let me think", "thought": True}),
        chunk({"text": " it over.", "thought": True, "thoughtSignature": signature(1)}),
        chunk({"text": "Checking."}),
        chunk(_call("getWeather", {"location": "Boston"}, sign=2)),
        chunk({"text": ""}, finish="STOP", usage=USAGE),
    ),
    "two_whole_calls_then_text": sse(
        chunk(_call("getWeather", {"location": "Boston"}, sign=3)),
        chunk(_call("getWeather", {"location": "Paris"})),
        chunk({"text": "Both asked."}, finish="STOP", usage=USAGE),
    ),
    "one_good_one_schema_invalid": sse(
        chunk(_call("getWeather", {"location": "Boston"}), _call("getWeather", {"city": 3})),
        chunk({"text": ""}, finish="STOP", usage=USAGE),
    ),
    "signature_on_an_empty_last_part": sse(
        chunk({"text": "The answer"}),
        chunk({"text": "", "thoughtSignature": signature(4)}, finish="STOP", usage=USAGE),
    ),
    "whole_call_cut_by_max_tokens": sse(
        chunk(_call("getWeather", {"location": "Bos"}, sign=5)),
        chunk({"text": ""}, finish="MAX_TOKENS", usage=USAGE),
    ),
}
CASES = [*RECORDINGS, *BUILT]


def _body(case: str) -> bytes:
    return BUILT[case] if case in BUILT else load_stream(case)


def _encoded(events: Iterable[Event], *, array: bool = False) -> bytes:
    encoder = GeminiChunkEncoder(array=array)
    wire = GEMINI_ARRAY if array else GEMINI_STREAM
    return wire.frame(item for event in events for item in encoder.feed(event))


def _signed(turn: Turn) -> list[tuple[str, str | None, str | None]]:
    """The turn's parts as the history replays them: kind, text (or call name), signature."""
    names = {call.call_id: call.name for call in turn.calls}
    parts = recall(turn) or ()
    return [
        (part.kind, names.get(part.call_id or "") if part.kind == "call" else None, part.signature)
        for part in parts
        if part.kind == "call" or part.signature is not None
    ]


def _sendable(turn: Turn) -> list[tuple[str, str | None, str | None]]:
    """:func:`_signed` less the calls that may not run (they never reach a client)."""
    ran = {call.name for call in turn.calls if call.may_run}
    return [p for p in _signed(turn) if p[0] != "call" or p[1] in ran]


@pytest.mark.parametrize("case", CASES)
async def test_every_case_round_trips(anyio_backend: str, case: str) -> None:
    pipeline = toolwire.Pipeline("gemini")
    body = _body(case)
    # The built streams are judged against the request's tools (the recordings offer none).
    request = _request() if case in BUILT else None
    events = [event async for event in pipeline.stream(body, request=request)]
    original = await pipeline.collect(body, request=request)
    encoded = _encoded(events)
    again = await pipeline.collect(encoded, request=request)

    accepted = [call for call in original.calls if call.may_run]
    assert [(c.name, c.arguments, c.outcome) for c in again.calls if c.may_run] == [
        (c.name, c.arguments, c.outcome) for c in accepted
    ]
    for rejected in original.calls:
        if not rejected.may_run and rejected.name:
            assert json.dumps(rejected.arguments_raw).encode() not in encoded
    assert (again.text, again.reasoning) == (original.text, original.reasoning)
    assert (again.model, again.response_id) == (original.model, original.response_id)
    assert again.usage == original.usage
    assert _sendable(again) == _sendable(original)  # every signature, on its part, in order
    finish = next(event for event in events if isinstance(event, Finish))
    assert again.finish_raw == GeminiChunkEncoder().client_finish_reason(
        finish, calls_sent=bool(accepted)
    )
    if original.cut_by == "token_limit":
        assert again.finish_raw == "MAX_TOKENS"
    else:
        assert again.stop_reason == original.stop_reason

    # The same stream as a JSON array: one valid array of the same chunks.
    array = _encoded(events, array=True)
    assert json.loads(array) == [json.loads(p) for p in data_payloads(encoded)]


async def test_a_signed_call_is_held_until_its_signature_is_known(anyio_backend: str) -> None:
    events = [
        e async for e in toolwire.Pipeline("gemini").stream(BUILT["thought_text_signed_call"])
    ]
    encoder = GeminiChunkEncoder()
    sent = [(type(event).__name__, encoder.feed(event)) for event in events]
    # Text and reasoning went out at once, each with its own event.
    assert all(items for name, items in sent if name in ("TextDelta", "ReasoningDelta"))
    # The call went out once the ProviderContent brought its signature, not before.
    content_at = next(i for i, (name, _) in enumerate(sent) if name == "ProviderContent")
    calls = [
        (at, item)
        for at, (_, items) in enumerate(sent)
        for item in items
        if isinstance(item, dict) and "functionCall" in json.dumps(item)
    ]
    ((at, call_chunk),) = calls
    assert at >= content_at
    part = call_chunk["candidates"][0]["content"]["parts"][0]
    assert part["thoughtSignature"] == signature(2)


# -- healed exchanges --------------------------------------------------------------------------


class Exchange:
    """A healing session over Gemini responses, and what the client received."""

    def __init__(self, body: dict[str, Any] | None = None, **options: Any) -> None:
        self.pipeline = toolwire.Pipeline("gemini")
        self.session = HealSession(
            body or _request(), self.pipeline.next_messages, wire=GEMINI_STREAM, **options
        )
        self.sent: list[WireItem] = []

    async def respond(self, response: bytes) -> AttemptEnd:
        async for event in self.pipeline.stream(response, request=self.session.body):
            self.sent += self.session.feed(event)
        end = self.session.end_attempt()
        self.sent += end.items
        return end

    @property
    def body(self) -> bytes:
        return GEMINI_STREAM.frame(self.sent)


async def test_a_cut_streamed_call_is_asked_again_in_a_history_the_api_accepts(
    anyio_backend: str,
) -> None:
    exchange = Exchange(max_tokens_ceiling=1000)
    first = await exchange.respond(
        cut_streamed_call_reply(1, "getWeather", [("$.location", "Bos")])
    )
    assert first.retry is not None
    body = first.retry.body
    assert (first.retry.cause, body["generationConfig"]) == (
        "token_limit",
        {"maxOutputTokens": 128},
    )
    model, results = body["contents"][-2:]
    (replayed,) = model["parts"]
    assert replayed["functionCall"] == {"name": "getWeather", "args": {}}
    assert replayed["thoughtSignature"] == signature(1)  # the API checks it
    (response,) = results["parts"]
    assert "output-token limit" in response["functionResponse"]["response"]["error"]
    assert contents_errors(body["contents"], {_bytes(signature(1))}) == []

    end = await exchange.respond(whole_call_reply(2, "getWeather", {"location": "Boston"}))
    assert end.retry is None
    assert exchange.session.outcome == "healed"
    turn = await toolwire.Pipeline("gemini").collect(exchange.body)
    (call,) = turn.calls
    assert (call.name, call.arguments, call.outcome) == ("getWeather", {"location": "Boston"}, "ok")
    assert _signed(turn) == [("call", "getWeather", signature(2))]
    assert turn.finish_raw == "STOP"
    assert turn.usage is not None
    assert turn.usage.input_tokens == 40 + 60  # the sum over the exchange
    # The client sends the turn back: the API's own rules accept it.
    history = [*USER, *toolwire.Pipeline("gemini").next_messages(turn, [_ok(call.call_id)])]
    assert contents_errors(history, {_bytes(signature(2))}) == []


async def test_an_accepted_call_is_answered_and_not_sent_again(anyio_backend: str) -> None:
    exchange = Exchange()
    first = await exchange.respond(BUILT["one_good_one_schema_invalid"])
    assert first.retry is not None
    assert first.retry.cause == "schema"
    model, results = first.retry.body["contents"][-2:]
    assert [p["functionCall"]["args"] for p in model["parts"]] == [{"location": "Boston"}, {}]
    good, bad = (p["functionResponse"]["response"] for p in results["parts"])
    assert good == {"output": ACCEPTED_NOTE}
    assert "location" in bad["error"]
    assert contents_errors(first.retry.body["contents"], set()) == []
    await exchange.respond(
        sse(
            chunk(
                _call("getWeather", {"location": "Boston"}),
                _call("getWeather", {"location": "Paris"}),
            ),
            chunk({"text": ""}, finish="STOP", usage=USAGE),
        )
    )
    turn = await toolwire.Pipeline("gemini").collect(exchange.body)
    assert [c.arguments for c in turn.calls] == [{"location": "Boston"}, {"location": "Paris"}]


@pytest.mark.parametrize("max_retries", [0, 1])
async def test_past_the_retries(anyio_backend: str, max_retries: int) -> None:
    cut = Exchange(max_retries=0)
    await cut.respond(BUILT["whole_call_cut_by_max_tokens"])
    assert cut.session.outcome == "length"
    turn = await toolwire.Pipeline("gemini").collect(cut.body)
    assert (turn.calls, turn.finish_raw) == ((), "MAX_TOKENS")

    bad = Exchange(max_retries=max_retries)
    for _ in range(max_retries + 1):
        await bad.respond(sse(chunk(_call("getWeather", {"city": 1}), finish="STOP")))
    assert bad.session.outcome == "failed"
    (error,) = [json.loads(p) for p in data_payloads(bad.body)]
    assert error["error"]["code"] == 502
    assert error["error"]["status"] == "TOOLWIRE_HEAL_FAILED"
    assert error["error"]["details"][0]["reason"] == "tool_call_rejected"
    assert "getWeather" in error["error"]["message"]


def test_the_upstream_error_object() -> None:
    encoder = GeminiChunkEncoder()
    raw = '{"error": {"code": 429, "message": "Quota", "status": "RESOURCE_EXHAUSTED"}}'
    whole = ProviderError(message="Quota", code="429", raw=raw, fatal=True)
    assert encoder.upstream_error(whole) == json.loads(raw)["error"]
    page = ProviderError(message="not a stream", kind="not_a_stream", fatal=True)
    assert encoder.upstream_error(page) == {
        "code": 500,
        "message": "not a stream",
        "status": "INTERNAL",
    }


# -- requests ----------------------------------------------------------------------------------


def test_which_requests_are_healed() -> None:
    plan = GEMINI_STREAM.plan_request(json.dumps(_request()).encode())
    assert plan is not None
    assert (plan.streaming, plan.content, plan.query_params) == (True, None, ())
    array = GEMINI_ARRAY.plan_request(json.dumps(_request()).encode())
    assert array is not None
    assert (array.streaming, array.query_params) == (True, (("alt", "sse"),))
    assert array.media_type.startswith("application/json")
    whole = GEMINI_WHOLE.plan_request(json.dumps(_request()).encode())
    assert whole is not None
    assert not whole.streaming


@pytest.mark.parametrize(
    "body",
    [
        {k: v for k, v in _request().items() if k != "tools"},
        _request(tools=[]),
        _request(tools=[{"googleSearch": {}}]),
        _request(tools=[{"functionDeclarations": [WEATHER]}, {"codeExecution": {}}]),
        _request(tools=[{"functionDeclarations": []}]),
        _request(generationConfig={"candidateCount": 2}),
        _request(generationConfig={"responseModalities": ["TEXT", "IMAGE"]}),
        _request(contents="hi"),
        [1, 2],
    ],
)
def test_requests_that_pass_untouched(body: Any) -> None:
    assert GEMINI_STREAM.plan_request(json.dumps(body).encode()) is None


@pytest.mark.parametrize(
    ("path", "expected"),
    [
        ("/v1beta/models/gemini-2.5-flash:streamGenerateContent?alt=sse", GEMINI_STREAM),
        ("/v1beta/models/gemini-2.5-flash:streamGenerateContent?key=k&alt=sse", GEMINI_STREAM),
        ("/v1beta/models/gemini-2.5-flash:streamGenerateContent", GEMINI_ARRAY),
        ("/v1beta/models/gemini-2.5-flash:streamGenerateContent?key=k", GEMINI_ARRAY),
        ("/v1beta/models/gemini-2.5-flash:generateContent", GEMINI_WHOLE),
        (
            "/v1/projects/p/locations/us-central1/publishers/google/models/gemini-3:"
            "streamGenerateContent?alt=sse",
            GEMINI_STREAM,
        ),
        ("/v1/projects/p/locations/l/publishers/google/models/m:generateContent", GEMINI_WHOLE),
        ("/v1beta/models/gemini-2.5-flash:countTokens", None),
        ("/v1beta/models/gemini-2.5-flash:streamGenerateContent?alt=ssex", GEMINI_ARRAY),
    ],
)
def test_the_transport_routes_each_endpoint(path: str, expected: Any) -> None:
    import httpx

    transport = toolwire.HealingTransport()
    request = httpx.Request("POST", f"http://gemini.test{path}")
    assert transport.format_for(request) is expected


def test_raised_limit() -> None:
    assert GEMINI_STREAM.raised_limit(_request(), 100)[0]["generationConfig"] == {
        "maxOutputTokens": 100
    }
    assert GEMINI_STREAM.raised_limit(_request(), 1000)[1] == 128
    snake = {"generation_config": {"max_output_tokens": 10}}
    assert GEMINI_STREAM.raised_limit(snake, 1000) == (
        {"generation_config": {"max_output_tokens": 20}},
        20,
    )
    assert GEMINI_STREAM.raised_limit({"contents": []}, 1000) == ({"contents": []}, None)
    assert GEMINI_STREAM.raised_limit(_request(generationConfig={}), 1000)[1] is None


# -- whole bodies ------------------------------------------------------------------------------


def _whole(*parts: dict[str, Any], finish: str = "STOP") -> bytes:
    return json.dumps(
        {
            "candidates": [
                {
                    "content": {"role": "model", "parts": list(parts)},
                    "finishReason": finish,
                    "index": 0,
                    "safetyRatings": [],
                }
            ],
            "usageMetadata": {**USAGE, "promptTokensDetails": [{"modality": "TEXT"}]},
            "modelVersion": "gemini-3-pro-preview",
            "responseId": "whole-1",
        }
    ).encode()


async def _heal_whole(*bodies: bytes) -> tuple[HealSession, list[WireItem], dict[str, Any]]:
    """The transport's non-streamed loop, without HTTP: the session over each whole body."""
    pipeline = toolwire.Pipeline("gemini")
    session = HealSession(_request(), pipeline.next_messages, wire=GEMINI_WHOLE)
    items: list[WireItem] = []
    first = GEMINI_WHOLE.read_body(bodies[0])
    assert first is not None
    for content in bodies:
        read = GEMINI_WHOLE.read_body(content)
        assert read is not None
        stream = GEMINI_WHOLE.body_as_stream(read)
        async for event in pipeline.stream(stream, request=session.body):
            items += session.feed(event)
        end = session.end_attempt()
        items += end.items
        if end.retry is None:
            break
    return session, items, first


async def test_a_passing_whole_body_folds_back_to_itself(anyio_backend: str) -> None:
    content = _whole(
        {"text": "Plan.", "thought": True, "thoughtSignature": signature(1)},
        {"text": "Asking."},
        _call("getWeather", {"location": "Boston"}, sign=2),
    )
    session, items, first = await _heal_whole(content)
    assert session.outcome == "passed"
    assert GEMINI_WHOLE.error_body(items) is None
    assert GEMINI_WHOLE.healed_body(first, items) == json.loads(content)


async def test_a_healed_whole_body_keeps_the_first_body_s_fields(anyio_backend: str) -> None:
    first = _whole({"text": "Asking."}, _call("getWeather", {"city": 1}, sign=1))
    retry = _whole(_call("getWeather", {"location": "Boston"}, sign=2))
    session, items, first_body = await _heal_whole(first, retry)
    assert session.outcome == "healed"
    healed = GEMINI_WHOLE.healed_body(first_body, items)
    (candidate,) = healed["candidates"]
    assert candidate["content"]["parts"] == [
        {"text": "Asking."},
        _call("getWeather", {"location": "Boston"}, sign=2),
    ]
    assert (candidate["safetyRatings"], candidate["finishReason"]) == ([], "STOP")
    assert healed["usageMetadata"]["promptTokenCount"] == 80  # the sum over the exchange
    assert healed["usageMetadata"]["promptTokensDetails"] == [{"modality": "TEXT"}]


async def test_a_failed_whole_body_is_an_error_body(anyio_backend: str) -> None:
    content = _whole(_call("getWeather", {"city": 1}))
    session, items, _ = await _heal_whole(content, content, content)
    assert session.outcome == "failed"
    error = GEMINI_WHOLE.error_body(items)
    assert error is not None
    assert error["error"]["status"] == "TOOLWIRE_HEAL_FAILED"


@pytest.mark.parametrize(
    "content",
    [
        b"{not json",
        b"[]",
        json.dumps({"error": {"code": 400, "message": "x"}}).encode(),
        json.dumps({"candidates": [{"content": {"parts": [{"inlineData": {}}]}}]}).encode(),
        json.dumps({"candidates": [{"content": {"parts": [{"executableCode": {}}]}}]}).encode(),
    ],
)
def test_bodies_that_are_not_read(content: bytes) -> None:
    assert GEMINI_WHOLE.read_body(content) is None


def _ok(call_id: str) -> Any:
    return toolwire.ToolResult(call_id=call_id, name="getWeather", content="sunny", status="ok")


def _bytes(value: str) -> bytes:
    import base64

    return base64.b64decode(value)
