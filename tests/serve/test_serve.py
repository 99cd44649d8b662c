"""``toolwire serve`` end to end: the real command and uvicorn between the real openai SDK and a
loopback upstream that sends real broken calls (``tests/data`` recordings).

The client is an unchanged agent pointed at the proxy's base URL: it accumulates calls by index
and runs each once, failing on a call that does not parse or match its schema.
"""

from __future__ import annotations

import json
import signal
import socket
import time
from collections.abc import Iterator
from pathlib import Path

import anyio
import httpx
import openai
import pytest
from _toolwire_testdata import load_stream
from e2e.server import chat_chunk, sse, text_reply, tool_calls_reply
from heal.client import GOOD_WRITE, SDK_ON_TRIO_LEAK, Tools, read_stream, request
from heal.upstream import (
    HealUpstream,
    Reply,
    Stall,
    completion,
    upstream_went_away,
)

from .proxy import Proxy, running_proxy

pytestmark = [
    pytest.mark.anyio,
    pytest.mark.filterwarnings(SDK_ON_TRIO_LEAK),
    pytest.mark.usefixtures("upstream"),
]

SECRET = "sk-test-secret-never-logged"
CUT = "llama-cpp-python/write_max_tokens_24_cut_mid_string.real.sse"


# The upstream and the proxies in front of it (tests/serve/conftest.py) are shared with the other
# proxy tests; each test starts from an empty script.


@pytest.fixture
def bare(bare_chat_proxy: Proxy) -> Proxy:
    return bare_chat_proxy


@pytest.fixture(scope="module")
def unreachable() -> Iterator[Proxy]:
    """A proxy whose upstream's port was free a moment ago: nothing listens there."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    with running_proxy("--upstream", f"http://127.0.0.1:{port}/v1") as running:
        yield running


def _client(base_url: str) -> openai.AsyncOpenAI:
    return openai.AsyncOpenAI(base_url=base_url, api_key=SECRET, max_retries=0, timeout=20)


# -- healing through the proxy ---------------------------------------------------------------


async def test_a_cut_call_is_healed_and_the_agent_runs_one_good_call(
    anyio_backend: str, upstream: HealUpstream, proxy: Proxy
) -> None:
    upstream.script(
        Reply(load_stream(CUT)), Reply(tool_calls_reply(("call_ok", "write", GOOD_WRITE)))
    )
    tools = Tools()
    async with _client(proxy.base_url) as client:
        received = await read_stream(await client.chat.completions.create(**request()))
    tools.run(received.calls)
    assert tools.ran == [("write", "call_ok", json.loads(GOOD_WRITE))]
    assert received.calls[0]["arguments"] == GOOD_WRITE  # byte for byte
    assert received.finish_reason == "tool_calls"
    assert len(upstream.requests) == 2  # the cut call was asked for again
    assert upstream.refused == []


async def test_without_healing_the_same_cut_call_reaches_the_agent_broken(
    anyio_backend: str, upstream: HealUpstream, bare: Proxy
) -> None:
    body = load_stream(CUT)
    upstream.script(Reply(body))
    async with _client(bare.base_url) as client:
        received = await read_stream(await client.chat.completions.create(**request()))
    with pytest.raises(json.JSONDecodeError):
        Tools().run(received.calls)
    assert len(upstream.requests) == 1


async def test_a_non_streamed_cut_call_is_healed_too(
    anyio_backend: str, upstream: HealUpstream, proxy: Proxy
) -> None:
    upstream.script(
        Reply(
            completion(
                ("call_cut", "write", '{"path": "notes.txt", "content": "hel'),
                finish_reason="length",
            )
        ),
        Reply(completion(("call_ok", "write", GOOD_WRITE))),
    )
    async with _client(proxy.base_url) as client:
        reply = await client.chat.completions.create(**request(stream=False))
    (call,) = reply.choices[0].message.tool_calls or []
    assert (call.id, call.function.arguments) == ("call_ok", GOOD_WRITE)


async def test_authorization_goes_upstream_and_never_into_the_log(
    anyio_backend: str, upstream: HealUpstream, proxy: Proxy
) -> None:
    upstream.script(
        Reply(load_stream(CUT)), Reply(tool_calls_reply(("call_ok", "write", GOOD_WRITE)))
    )
    async with _client(proxy.base_url) as client:
        await read_stream(await client.chat.completions.create(**request()))
    assert [headers["authorization"] for headers in upstream.headers] == [f"Bearer {SECRET}"] * 2
    assert SECRET not in proxy.log


# -- what passes through ---------------------------------------------------------------------


async def test_models_pass_through_and_health_answers_without_the_upstream(
    anyio_backend: str, upstream: HealUpstream, proxy: Proxy
) -> None:
    async with _client(proxy.base_url) as client:
        models = await client.models.list()
    assert [model.id for model in models.data] == ["scripted-model"]
    assert upstream.paths == ["/v1/models"]
    async with httpx.AsyncClient() as http:
        health = await http.get(f"{proxy.root}/healthz")
        outside = await http.post(f"{proxy.root}/chat/completions", json={})
    assert health.json() == {"status": "ok", "healing": True}
    assert len(upstream.paths) == 1  # health never asks the upstream
    assert outside.status_code == 404
    assert outside.json()["error"]["code"] == "not_found"


async def test_a_request_without_tools_goes_up_and_back_byte_for_byte(
    anyio_backend: str, upstream: HealUpstream, proxy: Proxy
) -> None:
    body = text_reply("plain answer")
    upstream.script(Reply(body))
    sent = json.dumps(
        {"model": "m", "messages": [{"role": "user", "content": "hi"}], "stream": True}
    ).encode()
    async with httpx.AsyncClient() as http:
        response = await http.post(
            f"{proxy.base_url}/chat/completions",
            content=sent,
            headers={"content-type": "application/json"},
        )
    assert upstream.raw_bodies == [sent]
    assert response.content == body


async def test_an_upstream_error_status_reaches_the_client_unchanged(
    anyio_backend: str, upstream: HealUpstream, proxy: Proxy
) -> None:
    error = b'{"error": {"message": "model not loaded", "type": "server_error"}}'
    upstream.script(Reply(error, status=503))
    async with httpx.AsyncClient() as http:
        response = await http.post(f"{proxy.base_url}/chat/completions", json=request())
    assert response.status_code == 503
    assert response.content == error


async def test_a_body_over_the_limit_is_413_and_never_sent_upstream(
    anyio_backend: str, upstream: HealUpstream, proxy: Proxy
) -> None:
    async with httpx.AsyncClient() as http:
        response = await http.post(
            f"{proxy.base_url}/chat/completions", content=b"x" * (33 * 1024 * 1024)
        )
    assert response.status_code == 413
    assert response.json()["error"]["code"] == "request_too_large"
    assert upstream.paths == []


async def test_an_unreachable_upstream_is_a_typed_502(
    anyio_backend: str, unreachable: Proxy
) -> None:
    async with _client(unreachable.base_url) as client:
        with pytest.raises(openai.APIStatusError) as raised:
            await client.chat.completions.create(**request())
    assert raised.value.status_code == 502
    assert raised.value.body["code"] == "upstream_unreachable"  # type: ignore[index]


# -- the connection: disconnects, back-pressure, shutdown ------------------------------------


async def test_a_client_that_disconnects_cancels_the_upstream_at_once(
    anyio_backend: str, upstream: HealUpstream, proxy: Proxy
) -> None:
    # The upstream sends its role chunk, then stays silent (comments only): only a proxy that
    # watches the client, not its next write, notices that the client left.
    upstream.script(Stall(text_reply("partial answer"), events=1, limit=20))
    async with httpx.AsyncClient(timeout=10) as http:
        async with http.stream(
            "POST", f"{proxy.base_url}/chat/completions", json=request()
        ) as response:
            assert response.status_code == 200
            await response.aiter_raw().__anext__()
    assert await upstream_went_away(upstream)


# Waits by design (a client that reads nothing for seconds): the slow tier.
@pytest.mark.slow
def test_a_slow_client_slows_the_upstream_and_memory_stays_bounded(
    upstream: HealUpstream, bare: Proxy, proxy: Proxy
) -> None:
    """A client that reads nothing: the upstream can write only what the buffers hold."""
    import psutil

    piece = sse([chat_chunk({"content": "x" * 1000})], done=False)
    body = sse([chat_chunk({"role": "assistant", "content": ""})], done=False) + piece * 40_000
    for running in (bare, proxy):
        upstream.script(Stall(body, events=10**9, limit=30))
        upstream.gone.clear()
        before = psutil.Process(running.process.pid).memory_info().rss
        with socket.create_connection(("127.0.0.1", int(running.root.rsplit(":", 1)[1]))) as raw:
            sent = json.dumps(request()).encode()
            raw.sendall(
                b"POST /v1/chat/completions HTTP/1.1\r\nhost: x\r\ncontent-type: "
                b"application/json\r\ncontent-length: %d\r\n\r\n%s" % (len(sent), sent)
            )
            raw.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
            time.sleep(3)  # the client reads nothing
            grown = psutil.Process(running.process.pid).memory_info().rss - before
            written = upstream.stall_written
        # Of 40 MB the upstream could send, it wrote what the socket buffers hold (a few MB on
        # loopback): the proxy stopped reading it when its client stopped reading.
        assert written < 16 * 1024 * 1024, f"{running.base_url}: upstream wrote {written}"
        assert grown < 32 * 1024 * 1024, f"{running.base_url}: grew {grown} bytes"
        assert upstream.gone.wait(5)


# Waits by design (a stream in flight across a SIGTERM): the slow tier.
@pytest.mark.slow
async def test_sigterm_lets_an_in_flight_stream_finish_then_exits_by_the_signal(
    anyio_backend: str, upstream: HealUpstream
) -> None:
    slow = Reply(tool_calls_reply(("call_ok", "write", GOOD_WRITE)), pause=0.15)
    upstream.script(slow)
    with running_proxy("--upstream", upstream.base_url) as proxy:
        async with _client(proxy.base_url) as client:
            stream = await client.chat.completions.create(**request())
            proxy.process.send_signal(signal.SIGTERM)
            received = await read_stream(stream)
        # uvicorn re-raises the signal once in-flight responses are done: the process ends
        # by SIGTERM, as a shell or a supervisor expects.
        assert await anyio.to_thread.run_sync(proxy.process.wait, 15) == -signal.SIGTERM
    Tools().run(received.calls)
    assert received.finish_reason == "tool_calls"


# -- settings --------------------------------------------------------------------------------


def test_a_config_file_sets_what_the_flags_do_not(tmp_path: Path, upstream: HealUpstream) -> None:
    config = tmp_path / "serve.toml"
    config.write_text(f'upstream = "{upstream.base_url}"\nheal = false\nmax_retries = 1\n')
    with running_proxy("--config", str(config)) as running:
        health = httpx.get(f"{running.root}/healthz").json()
    assert health == {"status": "ok", "healing": False}


@pytest.mark.parametrize(
    ("arguments", "named"),
    [
        (["--upstream", "ftp://x"], "upstream"),
        (["--upstream", "http://x/v1", "--max-retries", "-1"], "max_retries"),
        (["--upstream", "http://x/v1", "--provider", "nope"], "provider"),
        ([], "upstream"),
        (["--upstream", "http://x/v1", "--workers", "0"], "--workers"),
        (["--upstream", "http://x/v1", "--workers", "-1"], "--workers"),
        (["--upstream", "http://x/v1", "--workers", "abc"], "--workers"),
        (["--upstream", "http://x/v1", "--workers", "1.5"], "--workers"),
    ],
)
def test_a_bad_setting_is_exit_2_naming_it(arguments: list[str], named: str) -> None:
    import subprocess
    import sys

    done = subprocess.run(
        [sys.executable, "-m", "toolwire.cli", "serve", *arguments],
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert done.returncode == 2
    assert named in done.stderr
    assert done.stderr.count("\n") == 1
