"""Anthropic healing with extended and interleaved thinking: signed blocks, in place, replayed.

The mapper reports each signed ``thinking`` block and each ``redacted_thinking`` block whole as it
ends (``ProviderContent`` with ``scope="block"``), before what follows it; the encoder sends its
signature there, before the calls it precedes. The healing session sends signed reasoning only
where its context is the client's: the first response's, up to its first rejected call. What
preceded only a rejected call already went out, and stays (it is valid: nothing before it
changed); a retry's thinking, and what followed a rejected call, never go out (their context
holds a rejection the client never sees: the API would refuse them, or with preserved thinking
drop them, when the client sends the turn back). Histories are checked by the scripted Messages
server's independent rules (``tests/e2e/anthropic_server.py``), prefix checks on.
"""

from __future__ import annotations

import json
from typing import Any

import anthropic
import httpx2
import msgspec
import pytest
from _toolwire_testdata import data_payloads, every_recording, load_stream
from e2e.anthropic_server import (
    MAKE_FILE,
    ScriptedMessagesServer,
    bind_prefixes,
    history_errors,
    messages_reply,
)

import toolwire
from toolwire.adapters.anthropic import ANTHROPIC, AnthropicEventEncoder
from toolwire.core.events import Event, ProviderContent, decode_event, encode_event
from toolwire.core.wire import WireItem
from toolwire.heal import HealSession

pytestmark = pytest.mark.anyio

THINKING_RECORDINGS = [
    path for path, provider in every_recording() if provider == "anthropic" and "thinking" in path
]
GOOD = {"filename": "taxes.txt", "lines_of_text": ["# TAX GUIDE"]}
OTHER = {"filename": "notes.txt", "lines_of_text": ["notes"]}
BAD = '{"filename": "b.txt"}'  # misses lines_of_text
CUT = '{"filename": "taxes.txt", "lines_of_te'
USER = [{"role": "user", "content": "Write a tax guide to taxes.txt"}]
REQUEST: dict[str, Any] = {
    "model": "claude-scripted",
    "max_tokens": 2048,
    "thinking": {"type": "enabled", "budget_tokens": 1024},
    "messages": USER,
    "tools": [MAKE_FILE],
    "stream": True,
}


def _use(call_id: str, value: dict[str, Any] | str) -> tuple[str, ...]:
    raw = value if isinstance(value, str) else json.dumps(value)
    return ("tool_use", call_id, "make_file", raw)


class Exchange:
    """A healing session over scripted Messages responses, and what the client received."""

    def __init__(self, body: dict[str, Any] = REQUEST) -> None:
        self.server = ScriptedMessagesServer(prefix_checks=True)
        self.pipeline = toolwire.Pipeline("anthropic", tools=[MAKE_FILE])
        self.session = HealSession(dict(body), self.pipeline.next_messages, wire=ANTHROPIC)
        self.sent: list[WireItem] = []
        self.asked: list[dict[str, Any]] = [dict(body)]

    def reply(self, *blocks: tuple[str, ...], stop_reason: str = "tool_use") -> bytes:
        return messages_reply(
            self.server, *blocks, stop_reason=stop_reason, msg_id=f"m{len(self.asked)}"
        )

    async def respond(self, *blocks: tuple[str, ...], stop_reason: str = "tool_use") -> None:
        request = self.asked[-1]
        # What the server refuses of the request, then the prefix its thinking is bound to.
        assert self.refused(request) == []
        body = self.reply(*blocks, stop_reason=stop_reason)
        bind_prefixes(self.server, request, body)
        async for event in self.pipeline.stream(body, request=self.session.body):
            self.sent += self.session.feed(event)
        end = self.session.end_attempt()
        self.sent += end.items
        if end.retry is not None:
            self.asked.append(end.retry.body)

    def refused(self, request: dict[str, Any]) -> list[str]:
        return history_errors(
            request["messages"],
            self.server.signatures,
            thinking=True,
            server=self.server,
            request=request,
        )

    async def message(self) -> Any:
        return await sdk_message(ANTHROPIC.frame(self.sent))

    async def next_request_refused(self) -> list[str]:
        """The client sends the turn back with a result per call: what the server refuses."""
        message = await self.message()
        results = [
            {"type": "tool_result", "tool_use_id": block.id, "content": "done"}
            for block in message.content
            if block.type == "tool_use"
        ]
        content = [block.model_dump(exclude_none=True) for block in message.content]
        history = [*USER, {"role": "assistant", "content": content}]
        return self.refused(
            {**REQUEST, "messages": [*history, {"role": "user", "content": results}]}
        )


async def sdk_message(body: bytes) -> Any:
    """The ``anthropic`` SDK's accumulated ``Message`` for a streamed ``body``."""

    def respond(_: httpx2.Request) -> httpx2.Response:
        return httpx2.Response(200, headers={"content-type": "text/event-stream"}, content=body)

    async with (
        httpx2.AsyncClient(transport=httpx2.MockTransport(respond)) as http,
        anthropic.AsyncAnthropic(
            api_key="test", base_url="http://anthropic.test", http_client=http, max_retries=0
        ) as client,
        client.messages.stream(**{k: v for k, v in REQUEST.items() if k != "stream"}) as stream,
    ):
        return await stream.get_final_message()


def _shape(message: Any) -> list[tuple[str, str]]:
    """Each block of a message as (type, its text / id / data)."""
    out = []
    for block in message.content:
        if block.type == "thinking":
            assert block.signature, "every thinking block a client gets is signed"
            out.append(("thinking", block.thinking))
        elif block.type == "redacted_thinking":
            out.append(("redacted_thinking", block.data))
        elif block.type == "tool_use":
            out.append(("tool_use", block.id))
        else:
            out.append((block.type, block.text))
    return out


# -- the mapper reports each block as it ends ---------------------------------------------------


async def test_each_signed_block_is_reported_as_it_ends(anyio_backend: str) -> None:
    server = ScriptedMessagesServer()
    body = messages_reply(
        server,
        ("thinking", "First, plan."),
        ("redacted_thinking", "opaque-1"),
        _use("toolu_a", GOOD),
        ("thinking", "Then the second."),
        _use("toolu_b", OTHER),
    )
    events = [event async for event in toolwire.Pipeline("anthropic").stream(body)]
    kinds = [
        (type(event).__name__, event.scope if isinstance(event, ProviderContent) else "")
        for event in events
    ]
    blocks = [e for e in events if isinstance(e, ProviderContent) and e.scope == "block"]
    assert [b.items[0]["type"] for b in blocks] == ["thinking", "redacted_thinking", "thinking"]
    assert blocks[0].items == (
        {"type": "thinking", "thinking": "First, plan.", "signature": "sig-msg_scripted-0"},
    )
    assert blocks[1].items == ({"type": "redacted_thinking", "data": "opaque-1"},)
    # Each report comes before the call that follows its block, and the turn's record last.
    first_call = kinds.index(("ToolCallStarted", ""))
    assert kinds.index(("ProviderContent", "block")) < first_call
    assert kinds[-3:] == [("ProviderContent", "turn"), ("Finish", ""), ("StreamEnd", "")]
    turn = await toolwire.Pipeline("anthropic").collect(body)
    assert [item["type"] for item in turn.provider_content] == [
        "thinking",
        "redacted_thinking",
        "tool_use",
        "thinking",
        "tool_use",
    ]


async def test_a_thinking_block_cut_before_its_signature_is_not_reported(
    anyio_backend: str,
) -> None:
    body = messages_reply(ScriptedMessagesServer(), ("thinking", "Half a thought"))
    cut = body[: body.index(b"signature_delta")]
    cut = cut[: cut.rindex(b"event: ")]
    events = [event async for event in toolwire.Pipeline("anthropic").stream(cut)]
    assert not [e for e in events if isinstance(e, ProviderContent) and e.scope == "block"]


def test_an_event_recorded_before_the_scope_field_still_decodes() -> None:
    old = b'{"type":"provider.content","items":[{"type":"thinking"}]}'
    assert decode_event(old) == ProviderContent(items=({"type": "thinking"},))
    event = ProviderContent(items=({"type": "redacted_thinking", "data": "x"},), scope="block")
    assert decode_event(encode_event(event)) == event


# -- the round trip: every recording with thinking ----------------------------------------------


@pytest.mark.parametrize("recording", THINKING_RECORDINGS)
async def test_a_thinking_recording_round_trips_signed(anyio_backend: str, recording: str) -> None:
    body = load_stream(recording)
    pipeline = toolwire.Pipeline("anthropic")
    events: list[Event] = [event async for event in pipeline.stream(body)]
    encoder = AnthropicEventEncoder()
    encoded = ANTHROPIC.frame(item for event in events for item in encoder.feed(event))
    original, again = await pipeline.collect(body), await pipeline.collect(encoded)

    def signed(turn: Any) -> list[dict[str, Any]]:
        # A tool_use block by id and name: the encoder does not write ``caller`` (as before).
        kinds = ("thinking", "redacted_thinking", "tool_use")
        return [
            {k: v for k, v in item.items() if k != "caller"}
            for item in turn.provider_content
            if item["type"] in kinds
        ]

    # The thinking blocks come back byte for byte, signed, before the calls they preceded.
    assert signed(again) == signed(original)
    assert any(item["type"] == "thinking" and item["signature"] for item in signed(again))
    assert (again.reasoning, again.text) == (original.reasoning, original.text)
    signature_deltas = [
        payload
        for payload in map(json.loads, data_payloads(encoded))
        if payload.get("delta", {}).get("type") == "signature_delta"
    ]
    assert len(signature_deltas) == sum(1 for i in signed(original) if i["type"] == "thinking")


def test_there_are_thinking_recordings() -> None:
    assert len(THINKING_RECORDINGS) >= 2


# -- the encoder ---------------------------------------------------------------------------------


def test_the_open_thinking_block_is_signed_and_closed_before_the_call() -> None:
    encoder = AnthropicEventEncoder()
    items = [*encoder.reasoning("Plan"), *encoder.reasoning(" it.")]
    signed = {"type": "thinking", "thinking": "Plan it.", "signature": "sig-1"}
    assert encoder.provider_block(signed) == [
        {
            "type": "content_block_delta",
            "index": 0,
            "delta": {"type": "signature_delta", "signature": "sig-1"},
        },
        {"type": "content_block_stop", "index": 0},
    ]
    assert encoder.provider_block({"type": "thinking", "thinking": "", "signature": ""}) == []
    assert encoder.provider_block({"type": "server_tool_use"}) == []
    assert items[1]["content_block"] == {"type": "thinking", "thinking": "", "signature": ""}  # type: ignore[index]


async def test_an_empty_or_redacted_block_goes_out_whole(anyio_backend: str) -> None:
    encoder = AnthropicEventEncoder()
    omitted = {"type": "thinking", "thinking": "", "signature": "sig-omitted"}  # display: omitted
    redacted = {"type": "redacted_thinking", "data": "opaque"}
    items = [*encoder.provider_block(omitted), *encoder.provider_block(redacted)]
    items += encoder.text("Done.") + encoder.finish("end_turn") + encoder.end()
    message = await sdk_message(ANTHROPIC.frame(items))
    assert [block.model_dump(exclude_none=True) for block in message.content] == [
        omitted,
        redacted,
        {"type": "text", "text": "Done."},
    ]


# -- requests ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "thinking",
    [
        {"type": "enabled", "budget_tokens": 1024},
        {"type": "adaptive"},
        {"type": "enabled", "budget_tokens": 1024, "display": "omitted"},
        {"type": "between_tools"},
    ],
)
def test_a_request_with_thinking_on_is_healed(thinking: dict[str, Any]) -> None:
    plan = ANTHROPIC.plan_request(json.dumps({**REQUEST, "thinking": thinking}).encode())
    assert plan is not None
    assert plan.content is None  # it goes upstream byte for byte


# -- healed exchanges ----------------------------------------------------------------------------


async def test_a_cut_call_after_thinking_is_healed_and_the_thinking_replayed(
    anyio_backend: str,
) -> None:
    exchange = Exchange()
    await exchange.respond(("thinking", "I will write the guide."), _use("toolu_cut", CUT))
    (retry,) = exchange.asked[1:]
    assistant, results = retry["messages"][-2:]
    # The previous assistant turn's thinking, exactly as received, first, before its tool_use.
    assert assistant["content"] == [
        {"type": "thinking", "thinking": "I will write the guide.", "signature": "sig-m1-0"},
        {"type": "tool_use", "id": "toolu_cut", "name": "make_file", "input": {}},
    ]
    assert results["content"][0]["is_error"] is True
    # Non-interleaved: the retry's response has no thinking (the API thinks once per turn).
    await exchange.respond(_use("toolu_fixed", GOOD))
    assert exchange.session.outcome == "healed"
    assert _shape(await exchange.message()) == [
        ("thinking", "I will write the guide."),
        ("tool_use", "toolu_fixed"),
    ]
    assert await exchange.next_request_refused() == []


async def test_interleaved_a_retry_s_thinking_is_not_sent(anyio_backend: str) -> None:
    """First response: thinking, a good call, thinking, a bad call. The thinking that preceded
    only the bad call went out at once and stays; the retry's thinking does not go out."""
    exchange = Exchange()
    await exchange.respond(
        ("thinking", "Two files."),
        _use("toolu_a", GOOD),
        ("thinking", "Now the second."),
        _use("toolu_b", BAD),
    )
    await exchange.respond(("thinking", "It lacked lines_of_text."), _use("toolu_b2", OTHER))
    assert exchange.session.outcome == "healed"
    message = await exchange.message()
    assert _shape(message) == [
        ("thinking", "Two files."),
        ("tool_use", "toolu_a"),
        ("thinking", "Now the second."),
        ("tool_use", "toolu_b2"),
    ]
    assert b"lacked" not in ANTHROPIC.frame(exchange.sent)
    assert await exchange.next_request_refused() == []

    # Why: the retry's thinking followed a history the client never has. Sent, it would be
    # refused when the client sends the turn back (here by the prefix check).
    retry_thinking = {"type": "thinking", "thinking": "It lacked lines_of_text."}
    retry_thinking["signature"] = "sig-m2-0"
    content = [block.model_dump(exclude_none=True) for block in message.content]
    forged = [*content[:3], retry_thinking, content[3]]
    history = [
        *USER,
        {"role": "assistant", "content": forged},
        {
            "role": "user",
            "content": [
                {"type": "tool_result", "tool_use_id": i, "content": "done"}
                for i in ("toolu_a", "toolu_b2")
            ],
        },
    ]
    assert any("prefix" in e for e in exchange.refused({**REQUEST, "messages": history}))


async def test_thinking_after_a_rejected_call_is_not_sent(anyio_backend: str) -> None:
    exchange = Exchange()
    await exchange.respond(
        ("thinking", "Two files."),
        _use("toolu_b", BAD),
        ("thinking", "About the bad one."),
        _use("toolu_c", OTHER),
    )
    # The retry replays the bad call as the API sent it, not ``{}``: the thinking after it was
    # produced after it (the server's prefix check refuses the retry otherwise).
    assistant = exchange.asked[1]["messages"][-2]
    assert [b.get("input") for b in assistant["content"] if b["type"] == "tool_use"] == [
        json.loads(BAD),
        OTHER,
    ]
    await exchange.respond(_use("toolu_b2", GOOD))
    assert _shape(await exchange.message()) == [
        ("thinking", "Two files."),
        ("tool_use", "toolu_c"),
        ("tool_use", "toolu_b2"),
    ]
    assert await exchange.next_request_refused() == []


async def test_a_retry_that_answers_in_words_sends_its_text_not_its_thinking(
    anyio_backend: str,
) -> None:
    exchange = Exchange()
    await exchange.respond(("thinking", "Write it."), _use("toolu_b", BAD))
    await exchange.respond(
        ("thinking", "I cannot."), ("text", "I need the lines first."), stop_reason="end_turn"
    )
    assert exchange.session.outcome == "healed"
    message = await exchange.message()
    assert _shape(message) == [("thinking", "Write it."), ("text", "I need the lines first.")]
    assert message.stop_reason == "end_turn"


async def test_a_redacted_block_goes_out_in_place_and_is_replayed(anyio_backend: str) -> None:
    exchange = Exchange()
    await exchange.respond(
        ("redacted_thinking", "opaque-r"), ("thinking", "Plan."), _use("toolu_cut", CUT)
    )
    assistant = exchange.asked[1]["messages"][-2]
    assert [b["type"] for b in assistant["content"]] == [
        "redacted_thinking",
        "thinking",
        "tool_use",
    ]
    await exchange.respond(_use("toolu_fixed", GOOD))
    assert _shape(await exchange.message()) == [
        ("redacted_thinking", "opaque-r"),
        ("thinking", "Plan."),
        ("tool_use", "toolu_fixed"),
    ]
    assert await exchange.next_request_refused() == []


async def test_a_whole_body_keeps_its_signed_thinking_before_the_call(anyio_backend: str) -> None:
    pipeline = toolwire.Pipeline("anthropic", tools=[MAKE_FILE])
    request = {**REQUEST, "stream": False}
    session = HealSession(request, pipeline.next_messages, wire=ANTHROPIC)
    thinking = {"type": "thinking", "thinking": "Plan.", "signature": "sig-w"}
    redacted = {"type": "redacted_thinking", "data": "opaque-w"}
    bad = {"type": "tool_use", "id": "toolu_bad", "name": "make_file", "input": {"filename": "b"}}
    good = {"type": "tool_use", "id": "toolu_good", "name": "make_file", "input": GOOD}

    def body(*content: dict[str, Any]) -> dict[str, Any]:
        usage = {"input_tokens": 10, "output_tokens": 5}
        return {"id": "msg_w", "type": "message", "role": "assistant", "model": "m",
                "content": list(content), "stop_reason": "tool_use", "usage": usage}  # fmt: skip

    first = body(thinking, redacted, bad)
    items: list[WireItem] = []
    for whole in (first, body({**thinking, "signature": "sig-w2"}, good)):
        stream = ANTHROPIC.body_as_stream(msgspec.json.decode(msgspec.json.encode(whole)))
        async for event in pipeline.stream(stream, request=session.body):
            items += session.feed(event)
        items += session.end_attempt().items
    assert session.outcome == "healed"
    healed = ANTHROPIC.healed_body(first, items)
    assert healed["content"] == [thinking, redacted, good]
