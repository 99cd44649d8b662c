"""Ollama's ``/api/chat`` as a healing wire format: the encoder, the requests, the whole bodies.

The round trip is the contract: a judged stream re-encoded and read back by toolwire's own
Ollama adapter gives the same accepted calls, text, thinking, finish and usage, and never a
rejected call. Healed exchanges run through the real :class:`~toolwire.heal.HealSession`; retry
histories are checked by the independent check of the scripted Ollama server
(``tests/e2e/ollama_server.py``).
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any

import pytest
from _toolwire_testdata import every_recording, load_stream
from e2e.ollama_server import chat_line, done_line, ndjson, ollama_call, request_errors

import toolwire
from toolwire.adapters.encoding import ACCEPTED_NOTE
from toolwire.adapters.ollama import OLLAMA, OllamaLineEncoder
from toolwire.core.events import Event, Finish, ProviderError
from toolwire.core.wire import WireItem
from toolwire.heal import HealSession
from toolwire.heal.session import AttemptEnd

pytestmark = pytest.mark.anyio

RECORDINGS = [path for path, provider in every_recording() if provider == "ollama"]
WRITE = {
    "type": "function",
    "function": {
        "name": "write",
        "parameters": {
            "type": "object",
            "properties": {"path": {"type": "string"}, "content": {"type": "string"}},
            "required": ["path", "content"],
        },
    },
}
USER = [{"role": "user", "content": "Write hello to notes.txt"}]
GOOD = {"path": "notes.txt", "content": "hello"}


def _request(**extra: Any) -> dict[str, Any]:
    return {"model": "qwen3:8b", "messages": list(USER), "tools": [WRITE],
            "options": {"num_predict": 64}, **extra}  # fmt: skip


BUILT: dict[str, bytes] = {
    "thinking_text_call": ndjson(
        chat_line(thinking="Plan it."),
        chat_line(content="Writing."),
        chat_line(calls=[ollama_call("write", GOOD, 0, "call_1")]),
        done_line("stop"),
    ),
    "good_and_schema_invalid": ndjson(
        chat_line(calls=[ollama_call("write", GOOD, 0, "call_1")]),
        chat_line(calls=[ollama_call("write", {"path": 3}, 1, "call_2")]),
        done_line("stop"),
    ),
    "no_ids_two_calls": ndjson(
        chat_line(calls=[{"function": {"name": "write", "arguments": GOOD}}]),
        chat_line(calls=[{"function": {"name": "write", "arguments": {**GOOD, "path": "b"}}}]),
        done_line("stop"),
    ),
    "text_cut_at_length": ndjson(chat_line(content="A long"), done_line("length")),
}
CASES = [*RECORDINGS, *BUILT]


def _body(case: str) -> bytes:
    return BUILT[case] if case in BUILT else load_stream(case)


def _encoded(events: Iterable[Event]) -> bytes:
    encoder = OllamaLineEncoder()
    return OLLAMA.frame(item for event in events for item in encoder.feed(event))


@pytest.mark.parametrize("case", CASES)
async def test_every_case_round_trips(anyio_backend: str, case: str) -> None:
    pipeline = toolwire.Pipeline("ollama")
    body = _body(case)
    request = _request() if case in BUILT else None
    events = [event async for event in pipeline.stream(body, request=request)]
    original = await pipeline.collect(body, request=request)
    encoded = _encoded(events)
    again = await pipeline.collect(encoded, request=request)

    accepted = [(c.name, c.arguments, c.outcome) for c in original.calls if c.may_run]
    read = [(c.name, c.arguments, c.outcome) for c in again.calls]
    if again.cut_by == "token_limit" and accepted:
        # Ollama's calls have no end of their own: with `length`, a reader (toolwire's) cuts
        # the call written last, as it cut the original's. The others are the same.
        assert read[:-1] == accepted[:-1]
        assert not again.calls[-1].may_run
    else:
        assert read == accepted
    for rejected in original.calls:
        if not rejected.may_run and rejected.provider_id is None and not rejected.id_synthesized:
            assert rejected.call_id.encode() not in encoded
    assert (again.text, again.reasoning, again.model) == (
        original.text,
        original.reasoning,
        original.model,
    )
    assert again.usage == original.usage
    finish = next(event for event in events if isinstance(event, Finish))
    assert again.finish_raw == (
        OllamaLineEncoder().client_finish_reason(finish, calls_sent=bool(accepted)) or None
    )
    assert again.stop_reason == original.stop_reason
    for line in encoded.splitlines():  # what Ollama writes: every field a ChatResponse has
        decoded = json.loads(line)
        assert {"model", "created_at", "message", "done"} <= set(decoded)


# -- healed exchanges --------------------------------------------------------------------------


class Exchange:
    """A healing session over Ollama responses, and what the client received."""

    def __init__(self, body: dict[str, Any] | None = None, **options: Any) -> None:
        self.pipeline = toolwire.Pipeline("ollama")
        self.session = HealSession(
            body or _request(), self.pipeline.next_messages, wire=OLLAMA, **options
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
        return OLLAMA.frame(self.sent)


async def test_a_schema_invalid_call_is_asked_again_in_a_history_ollama_accepts(
    anyio_backend: str,
) -> None:
    exchange = Exchange()
    first = await exchange.respond(BUILT["good_and_schema_invalid"])
    assert first.retry is not None
    assert first.retry.cause == "schema"
    body = first.retry.body
    assert request_errors(body) == []
    assistant, good, bad = body["messages"][-3:]
    assert [c["function"]["arguments"] for c in assistant["tool_calls"]] == [GOOD, {}]
    assert (good["role"], good["tool_name"], good["content"]) == ("tool", "write", ACCEPTED_NOTE)
    assert "path" in bad["content"]

    await exchange.respond(
        ndjson(
            chat_line(content="Fixed it."),  # held: the client never saw the rejection
            chat_line(calls=[ollama_call("write", GOOD, 0, "call_1")]),  # sent already
            chat_line(calls=[ollama_call("write", {**GOOD, "path": "b.txt"}, 1, "call_3")]),
            done_line("stop", eval_count=30),
        )
    )
    assert exchange.session.outcome == "healed"
    turn = await toolwire.Pipeline("ollama").collect(exchange.body)
    assert [(c.call_id, c.arguments) for c in turn.calls] == [
        ("call_1", GOOD),
        ("call_3", {**GOOD, "path": "b.txt"}),
    ]
    assert [c["function"]["index"] for line in map(json.loads, exchange.body.splitlines())
            for c in line["message"].get("tool_calls", [])] == [0, 1]  # fmt: skip
    assert turn.text == ""
    assert (turn.finish_raw, turn.usage and turn.usage.output_tokens) == ("stop", 50)


async def test_a_call_cut_at_num_predict_raises_the_limit(anyio_backend: str) -> None:
    exchange = Exchange(max_tokens_ceiling=100)
    first = await exchange.respond(load_stream(RECORDINGS[-1]))
    assert first.retry is not None
    assert first.retry.body["options"] == {"num_predict": 100}
    assert request_errors(first.retry.body) == []


@pytest.mark.parametrize("max_retries", [0, 1])
async def test_past_the_retries(anyio_backend: str, max_retries: int) -> None:
    bad = ndjson(chat_line(calls=[ollama_call("write", {"path": 3}, 0, "c")]), done_line("stop"))
    exchange = Exchange(max_retries=max_retries)
    for _ in range(max_retries + 1):
        await exchange.respond(bad)
    assert exchange.session.outcome == "failed"
    (line,) = [json.loads(line) for line in exchange.body.splitlines()]
    assert line["type"] == "toolwire_heal_failed"
    assert line["code"] == "tool_call_rejected"
    assert "write" in line["error"]


def test_the_upstream_error_line() -> None:
    encoder = OllamaLineEncoder()
    whole = ProviderError(message="boom", raw='{"error":"boom"}', fatal=True)
    assert encoder.upstream_error(whole) == {"error": "boom"}
    page = ProviderError(message="not a stream", kind="not_a_stream", fatal=True)
    assert encoder.upstream_error(page) == {"error": "not a stream"}


# -- requests ----------------------------------------------------------------------------------


def test_which_requests_are_healed() -> None:
    plan = OLLAMA.plan_request(json.dumps(_request()).encode())
    assert plan is not None
    assert (plan.streaming, plan.media_type) == (True, "application/x-ndjson")
    whole = OLLAMA.plan_request(json.dumps(_request(stream=False)).encode())
    assert whole is not None
    assert not whole.streaming


@pytest.mark.parametrize(
    "body",
    [
        {k: v for k, v in _request().items() if k != "tools"},
        _request(tools=[]),
        _request(messages="hi"),
        [1],
    ],
)
def test_requests_that_pass_untouched(body: Any) -> None:
    assert OLLAMA.plan_request(json.dumps(body).encode()) is None


def test_raised_limit() -> None:
    assert OLLAMA.raised_limit(_request(), 100)[0]["options"] == {"num_predict": 100}
    assert OLLAMA.raised_limit(_request(options={"num_predict": -1}), 100)[1] is None
    assert OLLAMA.raised_limit({"model": "m"}, 100) == ({"model": "m"}, None)


# -- whole bodies ------------------------------------------------------------------------------


def _whole(*calls: dict[str, Any], content: str = "") -> bytes:
    last = done_line("stop", calls=list(calls) or None)
    last["message"]["content"] = content
    return json.dumps(last).encode()


async def _heal_whole(*bodies: bytes) -> tuple[HealSession, list[WireItem], dict[str, Any]]:
    pipeline = toolwire.Pipeline("ollama")
    session = HealSession(_request(stream=False), pipeline.next_messages, wire=OLLAMA)
    items: list[WireItem] = []
    first = OLLAMA.read_body(bodies[0])
    assert first is not None
    for content in bodies:
        read = OLLAMA.read_body(content)
        assert read is not None
        async for event in pipeline.stream(OLLAMA.body_as_stream(read), request=session.body):
            items += session.feed(event)
        end = session.end_attempt()
        items += end.items
        if end.retry is None:
            break
    return session, items, first


async def test_a_healed_whole_body_keeps_the_first_body_s_fields(anyio_backend: str) -> None:
    first = _whole(ollama_call("write", {"path": 3}, 0, "c1"), content="Writing.")
    retry = _whole(ollama_call("write", GOOD, 0, "c2"))
    session, items, first_body = await _heal_whole(first, retry)
    assert session.outcome == "healed"
    healed = OLLAMA.healed_body(first_body, items)
    assert healed["message"] == {
        "role": "assistant",
        "content": "Writing.",
        "tool_calls": [{"id": "c2", "function": {"index": 0, "name": "write", "arguments": GOOD}}],
    }
    assert (healed["total_duration"], healed["done_reason"], healed["prompt_eval_count"]) == (
        912345678,
        "stop",
        422,  # the sum over the exchange
    )


async def test_a_failed_whole_body_is_an_error_body(anyio_backend: str) -> None:
    content = _whole(ollama_call("write", {"path": 3}, 0, "c1"))
    session, items, _ = await _heal_whole(content, content, content)
    assert session.outcome == "failed"
    error = OLLAMA.error_body(items)
    assert error is not None
    assert error["type"] == "toolwire_heal_failed"


@pytest.mark.parametrize(
    "content",
    [b"{not json", b"[]", b'{"error": "model not found"}', json.dumps(chat_line()).encode()],
)
def test_bodies_that_are_not_read(content: bytes) -> None:
    assert OLLAMA.read_body(content) is None
