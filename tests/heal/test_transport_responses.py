"""Healing the OpenAI Responses API in process: the real ``openai`` SDK over ``HealingTransport``,
real loopback HTTP, the scripted Responses server (``tests/e2e/openai_responses_server.py``),
which refuses an ``input`` the real API would refuse.

No real recording of a Responses function call cut at ``max_output_tokens`` exists (see
``tests/data/fixtures/streams/README.md``), so the cut turn is built with the server's own
helpers, in the shape of the recordings (a reasoning item, then the call, ``status:
incomplete``, then ``response.incomplete``); the derived recording built from a real gpt-5
stream runs through the same test. The client is an agent that runs each ``function_call`` it
receives once, after checking what a tool would check: the arguments parse and match the
tool's schema.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any

import httpx
import jsonschema
import openai
import pytest
from _toolwire_testdata import json_chunks, load_stream
from e2e.loopback import Loopback, LoopbackHandler
from e2e.openai_responses_server import (
    MODEL,
    Reply,
    ReplyBuilder,
    ScriptedResponsesServer,
    running_server,
)

import toolwire

from .client import SDK_ON_TRIO_LEAK

pytestmark = [pytest.mark.anyio, pytest.mark.filterwarnings(SDK_ON_TRIO_LEAK)]

PROVIDER = "openai-responses"
LIMIT = 64


def _function(name: str, properties: dict[str, Any]) -> dict[str, Any]:
    return {
        "type": "function",
        "name": name,
        "parameters": {
            "type": "object",
            "properties": properties,
            "required": sorted(properties),
            "additionalProperties": False,
        },
        "strict": True,
    }


WRITE_TOOL = _function("write", {"path": {"type": "string"}, "content": {"type": "string"}})
CAPITAL_TOOL = _function("get_capital", {"country": {"type": "string"}})
GOOD_WRITE = '{"path":"notes.txt","content":"hello"}'
CUT_WRITE = '{"path":"notes.txt","content":"hel'
USER: dict[str, Any] = {"role": "user", "content": "Write hello to notes.txt"}
DERIVED_CUT = f"{PROVIDER}/incomplete_max_output_tokens_mid_function_call.derived.sse"


def _cut_write(n: int = 1) -> Reply:
    """A ``write`` call cut at ``max_output_tokens`` after its reasoning item."""
    return (
        ReplyBuilder(f"resp_{n}")
        .reasoning(f"rs_{n}", f"gAAAA-secret-{n}")
        .call(f"fc_{n}", f"call_cut_{n}", "write", CUT_WRITE, status="incomplete")
        .cut_at_max_output_tokens(LIMIT)
    )


def _fixed(name: str, arguments: str) -> Reply:
    return (
        ReplyBuilder("resp_fixed")
        .reasoning("rs_fixed", "gAAAA-secret-fixed")
        .message("msg_fixed", "Sending smaller arguments.")
        .call("fc_fixed", "call_fixed", name, arguments)
        .completed()
    )


def _derived_cut() -> Reply:
    """The derived gpt-5 recording (reasoning, a commentary message, ``get_capital`` cut)."""
    return Reply(json_chunks(load_stream(DERIVED_CUT)))


@dataclass(frozen=True)
class CutTurn:
    """A first response that ends in a call cut at the limit, and the request it answers."""

    reply: Callable[[], Reply]
    tool: dict[str, Any]
    user: str
    cut_call_id: str
    good: str
    #: The visible text the first response streamed before its call (it reaches the client).
    text: str = ""


CUT_TURNS = [
    pytest.param(
        CutTurn(_cut_write, WRITE_TOOL, USER["content"], "call_cut_1", GOOD_WRITE),
        id="built",
    ),
    pytest.param(
        CutTurn(
            _derived_cut,
            CAPITAL_TOOL,
            "What is the capital of PotatoLand?",
            "call_LabG58Uhrq9kZvR52BYKjToD",
            '{"country":"PotatoLand"}',
            text="I\u2019ll check the capital lookup tool for \u201cPotatoLand.\u201d",
        ),
        id="derived-gpt5",
    ),
]


def _request(tool: dict[str, Any] = WRITE_TOOL, **extra: Any) -> dict[str, Any]:
    return {
        "model": MODEL,
        "input": [USER],
        "tools": [tool],
        "max_output_tokens": LIMIT,
        **extra,
    }


@pytest.fixture
def server() -> Iterator[ScriptedResponsesServer]:
    with running_server() as scripted:
        yield scripted


@asynccontextmanager
async def healed(base_url: str, **options: Any) -> AsyncIterator[openai.AsyncOpenAI]:
    """``openai.AsyncOpenAI`` over an ``httpx.AsyncClient`` whose transport heals."""
    transport = toolwire.HealingTransport(wrapped=httpx.AsyncHTTPTransport(), **options)
    async with httpx.AsyncClient(transport=transport, timeout=10) as http:
        async with openai.AsyncOpenAI(
            base_url=base_url, api_key="sk-test", max_retries=0, http_client=http
        ) as client:
            yield client


@dataclass
class Agent:
    """Runs each function call it received once, after the checks a tool makes."""

    tools: list[dict[str, Any]]
    ran: list[tuple[str, str, Any]] = field(default_factory=list)

    def run(self, output: list[Any]) -> None:
        schemas = {tool["name"]: tool["parameters"] for tool in self.tools}
        for item in output:
            if item.type == "function_call":
                arguments = json.loads(item.arguments)  # a broken call fails the test here
                jsonschema.validate(arguments, schemas[item.name])
                self.ran.append((item.name, item.call_id, arguments))


async def _events(client: openai.AsyncOpenAI, body: dict[str, Any]) -> list[Any]:
    stream = await client.responses.create(**body, stream=True)
    return [event async for event in stream]


async def _final(client: openai.AsyncOpenAI, via: str, body: dict[str, Any]) -> Any:
    """The client's final response, read with ``create(stream=True)`` or the stream helper."""
    if via == "stream-helper":
        async with client.responses.stream(**body) as stream:
            return await stream.get_final_response()
    events = await _events(client, body)
    assert events[-1].type == "response.completed"
    return events[-1].response


def _call_items(request: dict[str, Any]) -> dict[str, str]:
    return {
        i["call_id"]: i["arguments"] for i in request["input"] if i.get("type") == "function_call"
    }


def _outputs(request: dict[str, Any]) -> dict[str, str]:
    return {
        i["call_id"]: i["output"]
        for i in request["input"]
        if i.get("type") == "function_call_output"
    }


async def _verdict_message(reply: Reply, sent: dict[str, Any]) -> str:
    """What toolwire tells the model about the one call of ``reply``."""
    turn = await toolwire.Pipeline(PROVIDER).collect(b"".join(reply.body()), request=sent)
    (call,) = turn.calls
    assert call.verdict is not None
    assert call.verdict.message
    return call.verdict.message


# -- a cut call is asked again; only the corrected call reaches the client ---------------------


@pytest.mark.parametrize("via", ["create", "stream-helper"])
@pytest.mark.parametrize("cut", CUT_TURNS)
async def test_a_cut_call_is_asked_again_and_only_the_corrected_call_arrives(
    anyio_backend: str, server: ScriptedResponsesServer, via: str, cut: CutTurn
) -> None:
    server.script(cut.reply(), _fixed(cut.tool["name"], cut.good))
    agent = Agent([cut.tool])
    sent = _request(cut.tool, input=[{"role": "user", "content": cut.user}])
    async with healed(server.base_url) as client:
        final = await _final(client, via, sent)
    agent.run(final.output)
    assert agent.ran == [(cut.tool["name"], "call_fixed", json.loads(cut.good))]
    (call,) = [item for item in final.output if item.type == "function_call"]
    assert call.arguments == cut.good  # byte for byte
    assert final.status == "completed"
    # The first response's text went out as it came; the retry's words about the cut did not.
    assert final.output_text == cut.text

    assert server.refused == []  # the retry's input is one the API accepts
    first, retry = server.requests
    assert {k: v for k, v in retry.items() if k != "input"} == {
        k: v for k, v in first.items() if k != "input"
    }
    assert retry["input"][: len(first["input"])] == first["input"]
    replayed = retry["input"][len(first["input"]) :]
    # The assistant turn as the server sent it (reasoning whole, with its encrypted content),
    # the cut call replayed as {}, and toolwire's message as its output.
    reasoning = next(item for item in replayed if item["type"] == "reasoning")
    assert reasoning["encrypted_content"] == server.reasoning_sent[reasoning["id"]]
    assert _call_items(retry) == {cut.cut_call_id: "{}"}
    assert _outputs(retry) == {cut.cut_call_id: await _verdict_message(cut.reply(), first)}
    assert "output-token limit" in _outputs(retry)[cut.cut_call_id]
    assert toolwire.Pipeline(PROVIDER).check_history(retry["input"]) == []


async def test_the_cut_call_never_appears_in_the_client_s_events(
    anyio_backend: str, server: ScriptedResponsesServer
) -> None:
    server.script(_cut_write(), _fixed("write", GOOD_WRITE))
    async with healed(server.base_url) as client:
        events = await _events(client, _request())
    assert "call_cut_1" not in json.dumps([event.model_dump() for event in events])
    deltas = [e.delta for e in events if e.type == "response.function_call_arguments.delta"]
    assert deltas == [GOOD_WRITE]  # the accepted call, whole, in one delta
    assert [e.sequence_number for e in events] == list(range(len(events)))
    usage = events[-1].response.usage
    assert usage is not None
    assert usage.output_tokens == LIMIT + 40  # what the exchange spent: both responses


async def test_the_agent_s_next_turn_built_from_what_it_received_is_accepted(
    anyio_backend: str, server: ScriptedResponsesServer
) -> None:
    """Two turns of an unchanged agent loop: it replays ``output`` and its function output."""
    server.script(
        _cut_write(),
        _fixed("write", GOOD_WRITE),
        ReplyBuilder("resp_done").message("msg_done", "Wrote notes.txt.").completed(),
    )
    agent = Agent([WRITE_TOOL])
    items: list[dict[str, Any]] = [USER]
    async with healed(server.base_url) as client:
        final = await _final(client, "create", _request(input=items))
        agent.run(final.output)
        items += [item.model_dump(exclude_none=True) for item in final.output]
        items += [
            {"type": "function_call_output", "call_id": call_id, "output": "written"}
            for _, call_id, _ in agent.ran
        ]
        done = await _final(client, "create", _request(input=items))
    assert done.output_text == "Wrote notes.txt."
    assert agent.ran == [("write", "call_fixed", json.loads(GOOD_WRITE))]
    assert server.refused == []
    assert len(server.requests) == 3
    assert _call_items(server.requests[2]) == {"call_fixed": GOOD_WRITE}


async def test_with_store_false_the_retry_replays_the_reasoning_item_whole(
    anyio_backend: str, server: ScriptedResponsesServer
) -> None:
    server.script(_cut_write(), _fixed("write", GOOD_WRITE))
    sent = _request(store=False, include=["reasoning.encrypted_content"])
    async with healed(server.base_url) as client:
        final = await _final(client, "create", sent)
    assert [item.call_id for item in final.output if item.type == "function_call"] == ["call_fixed"]
    assert server.refused == []


# -- past the retries --------------------------------------------------------------------------


async def test_past_the_retries_a_limit_cut_is_incomplete_with_no_function_call(
    anyio_backend: str, server: ScriptedResponsesServer
) -> None:
    server.script(_cut_write(1), _cut_write(2), _cut_write(3))
    async with healed(server.base_url, max_retries=2) as client:
        events = await _events(client, _request())
    terminal = events[-1]
    assert terminal.type == "response.incomplete"
    assert terminal.response.status == "incomplete"
    assert terminal.response.incomplete_details is not None
    assert terminal.response.incomplete_details.reason == "max_output_tokens"
    assert [item for item in terminal.response.output if item.type == "function_call"] == []
    assert not [event for event in events if "function_call" in event.type]
    assert len(server.requests) == 3  # the request and max_retries=2 retries
    assert server.refused == []


async def test_past_the_retries_the_sdk_s_stream_helper_sees_no_completed_response(
    anyio_backend: str, server: ScriptedResponsesServer
) -> None:
    """The SDK's own handling of an incomplete response fires, as it would on the API's."""
    server.script(_cut_write())
    async with healed(server.base_url, max_retries=0) as client:
        with pytest.raises(RuntimeError, match=r"`response\.completed`"):
            await _final(client, "stream-helper", _request())
    assert len(server.requests) == 1


# -- non-streamed -----------------------------------------------------------------------------


class _StreamsAndBodies(LoopbackHandler[ScriptedResponsesServer]):
    """The scripted server, also answering a non-streamed request, with the final response.

    The same script and the same ``input`` check as the streaming server; a non-streamed
    request gets the object its stream's terminal event carries, as the API answers it.
    """

    def do_POST(self) -> None:
        request = self.read_json()
        reply = self.script.next_reply(request)
        items = request.get("input")
        problems = self.script.input_errors(items) if isinstance(items, list) else []
        if problems or reply is None:
            problems = problems or ["no scripted reply left"]
            self.script.refuse(problems)
            error = {"message": "; ".join(problems), "type": "invalid_request_error"}
            self.send_json(400, {"error": error})
        elif request.get("stream"):
            self.send_stream(reply.body(), "text/event-stream")
        else:
            self.send_json(200, reply.events[-1]["response"])


@pytest.fixture
def bodies() -> Iterator[ScriptedResponsesServer]:
    with Loopback(ScriptedResponsesServer(), _StreamsAndBodies, base_path="/v1") as scripted:
        yield scripted


async def test_a_non_streamed_cut_call_is_healed_on_the_whole_response(
    anyio_backend: str, bodies: ScriptedResponsesServer
) -> None:
    bodies.script(_cut_write(), _fixed("write", GOOD_WRITE))
    agent = Agent([WRITE_TOOL])
    async with healed(bodies.base_url) as client:
        response = await client.responses.create(**_request())
    agent.run(response.output)
    assert agent.ran == [("write", "call_fixed", json.loads(GOOD_WRITE))]
    assert (response.id, response.status) == ("resp_1", "completed")  # the first body's id
    assert "call_cut_1" not in response.model_dump_json()
    assert bodies.refused == []
    first, retry = bodies.requests
    assert "stream" not in first
    assert "stream" not in retry
    assert _call_items(retry) == {"call_cut_1": "{}"}


async def test_a_non_streamed_limit_cut_past_the_retries_is_incomplete(
    anyio_backend: str, bodies: ScriptedResponsesServer
) -> None:
    bodies.script(_cut_write(1), _cut_write(2))
    async with healed(bodies.base_url, max_retries=1) as client:
        response = await client.responses.create(**_request())
    assert response.status == "incomplete"
    assert response.incomplete_details is not None
    assert response.incomplete_details.reason == "max_output_tokens"
    assert [item for item in response.output if item.type == "function_call"] == []
    assert len(bodies.requests) == 2


# -- what passes untouched ---------------------------------------------------------------------


@pytest.mark.parametrize(
    "server_state",
    [{"previous_response_id": "resp_0"}, {"conversation": "conv_0"}],
    ids=["previous_response_id", "conversation"],
)
async def test_a_request_whose_state_lives_on_the_server_passes_untouched(
    anyio_backend: str, server: ScriptedResponsesServer, server_state: dict[str, Any]
) -> None:
    """Healing would leave the rejected call in the server's stored context: not healed."""
    reply = _cut_write()
    server.script(reply)
    sent = {**_request(), **server_state, "stream": True}
    transport = toolwire.HealingTransport(wrapped=httpx.AsyncHTTPTransport())
    async with httpx.AsyncClient(transport=transport, base_url=server.base_url) as http:
        response = await http.post("/responses", json=sent)
    assert response.content == b"".join(reply.body())  # the cut call, byte for byte
    assert server.requests == [sent]  # one request, as the client wrote it

    server.script(_cut_write())
    async with healed(server.base_url) as client:
        events = await _events(client, {k: v for k, v in sent.items() if k != "stream"})
    assert events[-1].type == "response.incomplete"
    (call,) = [item for item in events[-1].response.output if item.type == "function_call"]
    assert (call.call_id, call.arguments) == ("call_cut_1", CUT_WRITE)
    assert len(server.requests) == 2  # the SDK's request went up once, never asked again
