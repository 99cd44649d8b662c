"""toolwire's LiteLLM guardrail end to end: a real LiteLLM proxy process, the real openai SDK.

LiteLLM (its own virtualenv, ``litellm_proxy.py``) runs on loopback with ``config.yaml`` naming
``toolwire.gateway.litellm.ToolwireGuardrail``, in front of the healing tests' scripted upstream
(``tests/heal/upstream.py``), whose first answer is a cut call. The client is an unchanged agent
pointed at LiteLLM: it accumulates calls by index and runs each once, failing on a call that
does not parse or match its schema. A second LiteLLM without the guardrail shows what the same
cut call does without it. LiteLLM takes seconds to start: the ``slow`` tier.
"""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import openai
import pytest
from _toolwire_testdata import load_stream
from e2e.loopback import sse_events
from e2e.server import chat_chunk, sse, text_reply, tool_calls_reply
from heal.client import GOOD_WRITE, SDK_ON_TRIO_LEAK, Tools, read_stream, request
from heal.upstream import Hangup, HealUpstream, Reply, completion, running_upstream

from .litellm_proxy import (
    MASTER_KEY,
    MODEL,
    OFFLINE_ENV,
    LiteLLM,
    config_yaml,
    litellm_or_skip,
    running_litellm,
)
from .test_guardrail_faults import LITELLM_FAILURES

pytestmark = [pytest.mark.anyio, pytest.mark.slow, pytest.mark.filterwarnings(SDK_ON_TRIO_LEAK)]

#: The real llama-cpp-python recording of a ``write`` call cut mid-string at ``max_tokens=24``.
CUT = "llama-cpp-python/write_max_tokens_24_cut_mid_string.real.sse"
CUT_ARGUMENTS = '{"path": "notes.txt", "content": "hel'


@pytest.fixture(scope="module")
def upstream() -> Iterator[HealUpstream]:
    litellm_or_skip()
    with running_upstream() as scripted:
        yield scripted


@pytest.fixture(scope="module")
def guarded(upstream: HealUpstream, tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiteLLM]:
    directory = tmp_path_factory.mktemp("litellm-guarded")
    with running_litellm(config_yaml(upstream.base_url, guardrail=True), directory) as proxy:
        yield proxy


@pytest.fixture(scope="module")
def bare(upstream: HealUpstream, tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiteLLM]:
    directory = tmp_path_factory.mktemp("litellm-bare")
    with running_litellm(config_yaml(upstream.base_url, guardrail=False), directory) as proxy:
        yield proxy


@pytest.fixture(autouse=True)
def _fresh_script(upstream: HealUpstream) -> None:
    upstream.replies.clear()
    upstream.requests.clear()
    upstream.raw_bodies.clear()
    upstream.headers.clear()
    upstream.paths.clear()
    upstream.refused.clear()


def _client(base_url: str) -> openai.AsyncOpenAI:
    return openai.AsyncOpenAI(base_url=base_url, api_key=MASTER_KEY, max_retries=0, timeout=30)


def _cut_then_good() -> tuple[Reply, Reply]:
    return Reply(load_stream(CUT)), Reply(tool_calls_reply(("call_ok", "write", GOOD_WRITE)))


# -- a cut call is healed ----------------------------------------------------------------------


async def test_a_streamed_cut_call_is_healed_and_the_agent_runs_one_good_call(
    anyio_backend: str, upstream: HealUpstream, guarded: LiteLLM
) -> None:
    upstream.script(*_cut_then_good())
    tools = Tools()
    async with _client(guarded.base_url) as client:
        stream = await client.chat.completions.create(**request(model=MODEL))
        received = await read_stream(stream)
    tools.run(received.calls)
    assert tools.ran == [("write", "call_ok", json.loads(GOOD_WRITE))]
    assert received.calls[0]["arguments"] == GOOD_WRITE  # byte for byte
    assert received.finish_reason == "tool_calls"
    assert received.usage is None  # the client did not ask for it
    assert len(upstream.requests) == 2  # the cut call was asked for again, through the router
    assert upstream.requests[0]["stream_options"] == {"include_usage": True}
    retry = upstream.requests[1]["messages"]
    assert retry[-2]["tool_calls"][0]["function"]["arguments"] == "{}"  # replayed safely
    assert "before the call was complete" in retry[-1]["content"]  # toolwire's true message
    assert upstream.refused == []


async def test_without_the_guardrail_the_same_cut_call_reaches_the_agent_broken(
    anyio_backend: str, upstream: HealUpstream, bare: LiteLLM
) -> None:
    upstream.script(Reply(load_stream(CUT)))
    async with _client(bare.base_url) as client:
        received = await read_stream(await client.chat.completions.create(**request(model=MODEL)))
    with pytest.raises(json.JSONDecodeError):
        Tools().run(received.calls)
    assert len(upstream.requests) == 1


async def test_a_non_streamed_cut_call_is_healed_with_usage_summed(
    anyio_backend: str, upstream: HealUpstream, guarded: LiteLLM
) -> None:
    upstream.script(
        Reply(
            completion(
                ("call_cut", "write", CUT_ARGUMENTS),
                finish_reason="length",
                usage={"prompt_tokens": 30, "completion_tokens": 24, "total_tokens": 54},
            )
        ),
        Reply(
            completion(
                ("call_ok", "write", GOOD_WRITE),
                usage={"prompt_tokens": 60, "completion_tokens": 20, "total_tokens": 80},
            )
        ),
    )
    async with _client(guarded.base_url) as client:
        reply = await client.chat.completions.create(**request(model=MODEL, stream=False))
    (call,) = reply.choices[0].message.tool_calls or []
    assert (call.id, call.function.arguments) == ("call_ok", GOOD_WRITE)
    assert reply.choices[0].finish_reason == "tool_calls"
    assert reply.usage is not None
    assert (reply.usage.prompt_tokens, reply.usage.completion_tokens) == (90, 44)
    assert len(upstream.requests) == 2


async def test_a_stream_that_drops_after_a_whole_looking_call_is_healed_too(
    anyio_backend: str, upstream: HealUpstream, guarded: LiteLLM
) -> None:
    # The connection breaks before the finish: LiteLLM raises inside its stream, which toolwire
    # reads as a drop (the call being written was cut, whatever its text looks like). The break
    # comes a moment after the call's last piece: when both arrive in one read, LiteLLM may
    # raise before it hands the pieces on, and toolwire then sees no call at all (measured: 3
    # runs in 16), a drop of text only, which passes to the client as a drop.
    body = tool_calls_reply(("call_cut", "write", GOOD_WRITE))
    before_finish = len(sse_events(body)) - 2
    upstream.script(
        Reply(body, cut="drop", events=before_finish, linger=0.2),
        Reply(tool_calls_reply(("call_ok", "write", GOOD_WRITE))),
    )
    async with _client(guarded.base_url) as client:
        received = await read_stream(await client.chat.completions.create(**request(model=MODEL)))
    assert [call["id"] for call in received.calls] == ["call_ok"]
    assert len(upstream.requests) == 2


async def test_streamed_usage_asked_for_is_the_sum_over_the_retries(
    anyio_backend: str, upstream: HealUpstream, guarded: LiteLLM
) -> None:
    upstream.script(*_cut_then_good())
    async with _client(guarded.base_url) as client:
        stream = await client.chat.completions.create(
            **request(model=MODEL, stream_options={"include_usage": True})
        )
        received = await read_stream(stream)
    assert [call["arguments"] for call in received.calls] == [GOOD_WRITE]
    assert received.usage is not None
    assert received.usage.completion_tokens > 0


# -- what passes unchanged -----------------------------------------------------------------------


@pytest.mark.parametrize("stream", [True, False])
async def test_a_valid_call_passes_with_its_arguments_unchanged(
    anyio_backend: str, upstream: HealUpstream, guarded: LiteLLM, stream: bool
) -> None:
    # Key order and spacing a re-serialization would change: the arguments go out as sent.
    raw = '{"content":  "hello",\n "path": "notes.txt"}'
    reply = (
        Reply(tool_calls_reply(("call_ok", "write", raw)))
        if stream
        else Reply(completion(("call_ok", "write", raw)))
    )
    upstream.script(reply)
    async with _client(guarded.base_url) as client:
        if stream:
            received = await read_stream(
                await client.chat.completions.create(**request(model=MODEL))
            )
            calls = [(call["id"], call["arguments"]) for call in received.calls]
            finish = received.finish_reason
        else:
            whole = await client.chat.completions.create(**request(model=MODEL, stream=False))
            calls = [
                (call.id, call.function.arguments)
                for call in whole.choices[0].message.tool_calls or []
            ]
            finish = whole.choices[0].finish_reason
    assert calls == [("call_ok", raw)]
    assert finish == "tool_calls"
    assert len(upstream.requests) == 1


async def test_text_passes_as_it_comes(
    anyio_backend: str, upstream: HealUpstream, guarded: LiteLLM
) -> None:
    upstream.script(Reply(text_reply("Nothing to write.")))
    async with _client(guarded.base_url) as client:
        received = await read_stream(await client.chat.completions.create(**request(model=MODEL)))
    assert (received.text, received.calls, received.finish_reason) == (
        "Nothing to write.",
        [],
        "stop",
    )


@pytest.mark.parametrize("stream", [True, False])
async def test_an_upstream_error_passes(
    anyio_backend: str, upstream: HealUpstream, guarded: LiteLLM, stream: bool
) -> None:
    upstream.script(
        Reply(b'{"error": {"message": "the model is overloaded", "type": "server"}}', status=503)
    )
    async with _client(guarded.base_url) as client:
        # LiteLLM sends its request before it answers: the status is the answer, stream or not.
        with pytest.raises(openai.APIStatusError) as raised:
            await client.chat.completions.create(**request(model=MODEL, stream=stream))
    assert raised.value.status_code == 503
    assert "overloaded" in str(raised.value)
    assert len(upstream.requests) == 1  # an error the model did not cause is not asked again


async def test_an_in_band_error_of_the_server_reaches_the_client_in_its_words(
    anyio_backend: str, upstream: HealUpstream, guarded: LiteLLM
) -> None:
    opened = chat_chunk({"role": "assistant", "content": ""})
    crashed = {"error": {"message": "the model crashed", "type": "server_error"}}
    upstream.script(Reply(sse([opened, chat_chunk({"content": "Hello"}), crashed], done=False)))
    async with _client(guarded.base_url) as client:
        stream = await client.chat.completions.create(**request(model=MODEL))
        with pytest.raises(openai.APIError, match="the model crashed"):
            await read_stream(stream)
    assert len(upstream.requests) == 1  # no call was cut: nothing to ask again


async def test_a_history_with_a_broken_earlier_call_is_repaired_before_it_goes_up(
    anyio_backend: str, upstream: HealUpstream, guarded: LiteLLM
) -> None:
    upstream.script(Reply(text_reply("Done.")))
    messages = [
        {"role": "user", "content": "Write hello to notes.txt"},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {
                    "id": "call_broken",
                    "type": "function",
                    "function": {"name": "write", "arguments": CUT_ARGUMENTS},
                }
            ],
        },
        {"role": "tool", "tool_call_id": "call_broken", "content": "error: not JSON"},
    ]
    async with _client(guarded.base_url) as client:
        received = await read_stream(
            await client.chat.completions.create(**request(model=MODEL, messages=messages))
        )
    assert received.text == "Done."
    assert upstream.refused == []  # the strict upstream would refuse the broken arguments
    sent = upstream.requests[0]["messages"][1]["tool_calls"][0]["function"]["arguments"]
    assert json.loads(sent) == {}


def test_the_config_names_the_guardrail_by_module_path(tmp_path: Path) -> None:
    text = config_yaml("http://127.0.0.1:1/v1", guardrail=True)
    assert "guardrail: toolwire.gateway.litellm.ToolwireGuardrail" in text


# -- when the retries are spent ----------------------------------------------------------------


async def test_a_streamed_healing_that_fails_is_the_typed_in_band_error(
    anyio_backend: str, upstream: HealUpstream, guarded: LiteLLM
) -> None:
    upstream.script(*(Reply(load_stream(CUT)) for _ in range(3)))
    async with _client(guarded.base_url) as client:
        stream = await client.chat.completions.create(**request(model=MODEL))
        with pytest.raises(openai.APIError) as raised:
            await read_stream(stream)
    assert "toolwire did not pass on a tool call" in str(raised.value)
    assert len(upstream.requests) == 3  # the first answer and two retries, no more


async def test_a_non_streamed_healing_that_fails_is_a_502_the_sdk_does_not_resend(
    anyio_backend: str, upstream: HealUpstream, guarded: LiteLLM
) -> None:
    cut = completion(("call_cut", "write", CUT_ARGUMENTS), finish_reason="tool_calls")
    upstream.script(*(Reply(cut) for _ in range(3)))
    async with _client(guarded.base_url) as client:
        with pytest.raises(openai.InternalServerError) as raised:
            await client.chat.completions.create(**request(model=MODEL, stream=False))
    assert raised.value.status_code == 502
    assert raised.value.response.headers.get("x-should-retry") == "false"
    assert "toolwire did not pass on a tool call" in str(raised.value)
    told = raised.value.response.json()["error"]["provider_specific_fields"]
    assert (told["type"], told["code"]) == ("toolwire_heal_failed", "tool_call_rejected")
    assert len(upstream.requests) == 3


async def test_a_non_streamed_call_cut_at_the_limit_every_time_ends_in_a_length_finish(
    anyio_backend: str, upstream: HealUpstream, guarded: LiteLLM
) -> None:
    cut = completion(("call_cut", "write", CUT_ARGUMENTS), finish_reason="length")
    upstream.script(*(Reply(cut) for _ in range(3)))
    async with _client(guarded.base_url) as client:
        reply = await client.chat.completions.create(**request(model=MODEL, stream=False))
    assert reply.choices[0].finish_reason == "length"
    assert not reply.choices[0].message.tool_calls  # the cut call never reaches the agent
    assert len(upstream.requests) == 3


# -- a retry the network failed ----------------------------------------------------------------


async def test_a_streamed_retry_the_upstream_never_answered_is_sent_again_and_healed(
    anyio_backend: str, upstream: HealUpstream, guarded: LiteLLM
) -> None:
    # The router raises InternalServerError (500) for the retry, raised from httpx's ReadError:
    # a drop, not an HTTP status. The same request goes once more (nothing said to the model),
    # and its answer heals the call.
    good = Reply(tool_calls_reply(("call_ok", "write", GOOD_WRITE)))
    upstream.script(Reply(load_stream(CUT)), Hangup(), good)
    async with _client(guarded.base_url) as client:
        received = await read_stream(await client.chat.completions.create(**request(model=MODEL)))
    assert [(call["id"], call["arguments"]) for call in received.calls] == [("call_ok", GOOD_WRITE)]
    assert len(upstream.requests) == 3
    assert upstream.requests[2] == upstream.requests[1]  # resent as it was


async def test_a_non_streamed_retry_the_upstream_never_answers_is_a_typed_502_not_a_500(
    anyio_backend: str, upstream: HealUpstream, guarded: LiteLLM
) -> None:
    cut = completion(("call_cut", "write", CUT_ARGUMENTS), finish_reason="length")
    upstream.script(Reply(cut), Hangup(), Hangup())
    async with _client(guarded.base_url) as client:
        with pytest.raises(openai.InternalServerError) as raised:
            await client.chat.completions.create(**request(model=MODEL, stream=False))
    assert raised.value.status_code == 502
    assert raised.value.response.headers.get("x-should-retry") == "false"
    # LiteLLM writes the HTTPException's detail (toolwire's error) in its own error shape.
    error = raised.value.response.json()["error"]
    assert error["code"] == "502"
    told = error["provider_specific_fields"]
    assert (told["type"], told["code"]) == ("toolwire_upstream_error", "upstream_dropped")
    assert "(ReadError: Server disconnected)" in told["message"]
    assert "HTTP 500" not in told["message"]  # LiteLLM's InternalServerError: no answer came
    assert len(upstream.requests) == 3  # the first answer, the retry, its one resend


async def test_a_non_streamed_retry_answered_504_is_a_504_as_through_the_transport(
    anyio_backend: str, upstream: HealUpstream, guarded: LiteLLM
) -> None:
    # LiteLLM raises its Timeout for the upstream's 504 (as for a stall); httpx's answer says
    # it was one. The client gets the status the transport would pass on, never a 502.
    cut = completion(("call_cut", "write", CUT_ARGUMENTS), finish_reason="length")
    gateway_timeout = b'{"error": {"message": "scripted gateway timeout", "type": "server"}}'
    upstream.script(Reply(cut), Reply(gateway_timeout, status=504))
    async with _client(guarded.base_url) as client:
        with pytest.raises(openai.APIStatusError) as raised:
            await client.chat.completions.create(**request(model=MODEL, stream=False))
    assert raised.value.status_code == 504
    assert raised.value.response.headers.get("x-should-retry") == "false"
    told = raised.value.response.json()["error"]["provider_specific_fields"]
    assert told["code"] == "retry_http_status"
    assert "the server answered HTTP 504" in told["message"]
    assert len(upstream.requests) == 2


async def test_a_streamed_retry_answered_with_the_servers_in_band_error_is_no_http_500(
    anyio_backend: str, upstream: HealUpstream, guarded: LiteLLM
) -> None:
    # The router reads the retry's first event before it returns, and raises LiteLLM's
    # APIConnectionError (status 500) over a MidStreamFallbackError: the server answered 200
    # and said its error in band. The same drop it is in a first response: sent again once,
    # then the typed drop, in the server's words; never "the server answered HTTP 500".
    words = "Failed to parse tool call arguments as JSON: [json.exception.parse_error.101]"
    in_band = sse([{"error": {"code": 500, "message": words, "type": "server_error"}}], done=False)
    upstream.script(Reply(load_stream(CUT)), Reply(in_band), Reply(in_band))
    async with _client(guarded.base_url) as client:
        stream = await client.chat.completions.create(**request(model=MODEL))
        with pytest.raises(openai.APIError) as raised:
            await read_stream(stream)
    told: Any = raised.value.body
    assert (told["type"], told["code"]) == ("toolwire_upstream_error", "upstream_dropped")
    assert words in told["message"]
    assert "HTTP 500" not in told["message"]
    assert len(upstream.requests) == 3  # the first answer, the retry, its one resend


def test_litellms_real_failures_are_told_apart_as_the_unit_tests_assume() -> None:
    """LiteLLM's router, in its own virtualenv, failing a request each way a retry can fail
    (``litellm_errors.py``): toolwire tells a request that got no answer (a drop, a stall) from
    one the upstream answered with a status, and the stand-ins of ``test_guardrail_faults.py``
    are chained as LiteLLM's real exceptions are."""
    python = litellm_or_skip().parent / "python"
    result = subprocess.run(
        [str(python), str(Path(__file__).with_name("litellm_errors.py"))],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, **OFFLINE_ENV},
        check=True,
    )
    seen = json.loads(result.stdout.splitlines()[-1])
    told = {case: (row["status"], row["fault"]) for case, row in seen.items()}
    for streamed in ("", " streamed"):
        assert told[f"refused{streamed}"] == (500, "dropped")
        assert told[f"hangup{streamed}"] == (500, "dropped")
        assert told[f"broken{streamed}"] == (500, "dropped")
        assert told[f"stall{streamed}"] == (408, "timeout")
        assert told[f"500{streamed}"] == (500, None)
        assert told[f"504{streamed}"] == (504, None)
        assert seen[f"500{streamed}"]["answered"] == 500
        assert seen[f"504{streamed}"]["answered"] == 504
        assert seen[f"stall{streamed}"]["answered"] is None
    # LiteLLM's classes carry 500 where the upstream answered 200: neither is an HTTP status.
    assert told["inband streamed"] == (500, "dropped")  # the drop it is in the first response
    assert told["garbage"] == (500, None)
    assert told["empty"] == (500, None)
    for case in ("inband streamed", "garbage", "empty"):
        assert seen[case]["answered"] is None, case
    for case, stand_in in LITELLM_FAILURES.items():
        if case in seen:
            chain = [type(link).__name__ for link in _chain(stand_in())]
            assert seen[case]["chain"][: len(chain)] == chain, case


def _chain(error: BaseException | None) -> Iterator[BaseException]:
    while error is not None:
        yield error
        error = error.__context__
