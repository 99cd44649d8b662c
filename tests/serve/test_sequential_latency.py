"""A client sending one request at a time waits no longer through ``toolwire serve`` (issue 20).

An agent's turns are one request at a time on one kept-alive connection. ``toolwire serve``
added ~44 ms to every such request: its accepted sockets had no ``TCP_NODELAY`` (asyncio sets
it only on sockets whose ``proto`` is TCP, and the pre-bound listener's was 0), so Nagle's
algorithm held the response body until the client acknowledged the head, and the client
delays that acknowledgement by ~40 ms. A heal (one retry) paid it twice.

Each test times the same requests direct to the upstream and through the real command
(uvicorn, healing on), interleaved on two kept-alive connections, and compares the fastest of
each (min of N). A Nagle stall delays every response, so the fastest carries it too; a noisy
neighbour only ever adds time, so the fastest of 30 is what it moves least (the medians moved
by up to 17 ms at a load average of 8-10, stall or not, and failed this test). Idle, the added
p50 is under 2 ms and one heal costs under 5 ms beyond its retry's own upstream time
(``bench/bench_serve_sequential.py``, ``docs/serve.md``); the asserts (10 and 15 ms) still fail
on a 40 ms stall. The upstream sets ``TCP_NODELAY`` as real servers do: the stdlib server of
the other tests writes head and body in two sends and stalls by itself, direct.
"""

from __future__ import annotations

import http.client
import socket
import time
from collections.abc import Callable, Iterator

import httpx
import pytest
from _toolwire_testdata import load_stream
from e2e.loopback import Loopback
from e2e.server import tool_calls_reply
from heal.client import GOOD_WRITE, request
from heal.upstream import HealUpstream, Reply, completion
from heal.upstream import _Handler as _UpstreamHandler

from .proxy import Proxy, answer, one_connection_per_worker, post_chat, running_proxy

pytestmark = pytest.mark.slow

#: Timed pairs per test (after warming both connections up).
ROUNDS = 30
#: Milliseconds a request may add over direct (fastest of each): a Nagle stall adds ~40.
ADDED_LIMIT_MS = 10.0
#: Milliseconds one heal may cost beyond its retry's own upstream time: under 5 idle.
HEAL_LIMIT_MS = 15.0
CUT = "llama-cpp-python/write_max_tokens_24_cut_mid_string.real.sse"


class _NoDelayHandler(_UpstreamHandler):
    def setup(self) -> None:
        super().setup()
        self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)


@pytest.fixture(scope="module")
def upstream() -> Iterator[HealUpstream]:
    with Loopback(HealUpstream(), _NoDelayHandler, base_path="/v1") as scripted:
        yield scripted


@pytest.fixture(scope="module")
def proxy(upstream: HealUpstream) -> Iterator[Proxy]:
    with running_proxy("--upstream", upstream.base_url, "--provider", "llama-cpp") as running:
        yield running


def _good(stream: bool) -> Reply:
    if stream:
        return Reply(tool_calls_reply(("call_ok", "write", GOOD_WRITE)))
    return Reply(completion(("call_ok", "write", GOOD_WRITE)))


def _cut(stream: bool) -> Reply:
    if stream:
        return Reply(load_stream(CUT))
    cut = ("call_cut", "write", '{"path": "notes.txt", "content": "hel')
    return Reply(completion(cut, finish_reason="length"))


def _timed(client: httpx.Client, url: str, stream: bool) -> tuple[float, bytes]:
    """Milliseconds from sending one request to its last byte, and its body."""
    start = time.perf_counter()
    with client.stream("POST", url, json=request(stream=stream)) as response:
        body = response.read()
        assert response.status_code == 200, body
    return (time.perf_counter() - start) * 1000, body


def _fastest(upstream: HealUpstream, timings: dict[str, Callable[[], float]]) -> dict[str, float]:
    """The fastest of each timing, taken in turn ``ROUNDS`` times after two warm-up rounds."""
    samples: dict[str, list[float]] = {name: [] for name in timings}
    for round_ in range(ROUNDS + 2):
        for name, timing in timings.items():
            elapsed = timing()
            if round_ >= 2:
                samples[name].append(elapsed)
    assert upstream.refused == []
    return {name: min(values) for name, values in samples.items()}


@pytest.mark.parametrize("stream", [False, True], ids=["whole", "streamed"])
def test_a_sequential_client_waits_no_longer_through_the_healing_proxy(
    upstream: HealUpstream, proxy: Proxy, stream: bool
) -> None:
    with httpx.Client(timeout=20) as direct, httpx.Client(timeout=20) as through:

        def timing(client: httpx.Client, base: str) -> Callable[[], float]:
            def one() -> float:
                upstream.script(_good(stream))
                elapsed, body = _timed(client, f"{base}/chat/completions", stream)
                assert b"call_ok" in body
                return elapsed

            return one

        fastest = _fastest(
            upstream,
            {"direct": timing(direct, upstream.base_url), "proxy": timing(through, proxy.base_url)},
        )
    added = fastest["proxy"] - fastest["direct"]
    assert added <= ADDED_LIMIT_MS, fastest


@pytest.mark.parametrize("stream", [False, True], ids=["whole", "streamed"])
def test_one_heal_costs_little_beyond_its_retrys_own_upstream_time(
    upstream: HealUpstream, proxy: Proxy, stream: bool
) -> None:
    url = f"{proxy.base_url}/chat/completions"
    with httpx.Client(timeout=20) as direct, httpx.Client(timeout=20) as through:

        def upstream_alone() -> float:
            upstream.script(_good(stream))
            return _timed(direct, f"{upstream.base_url}/chat/completions", stream)[0]

        def passed() -> float:
            upstream.script(_good(stream))
            return _timed(through, url, stream)[0]

        def healed() -> float:
            upstream.script(_cut(stream), _good(stream))
            elapsed, body = _timed(through, url, stream)
            assert b"call_ok" in body
            assert b"call_cut" not in body
            return elapsed

        fastest = _fastest(upstream, {"direct": upstream_alone, "passed": passed, "healed": healed})
    # A healed request is a passed one plus the retry: its own upstream time, and the heal.
    heal = fastest["healed"] - fastest["passed"] - fastest["direct"]
    assert heal <= HEAL_LIMIT_MS, fastest
    # And all it adds to the two upstream answers it waited for (a stall here adds ~40 ms).
    assert fastest["healed"] - 2 * fastest["direct"] <= ADDED_LIMIT_MS + HEAL_LIMIT_MS, fastest


def test_every_worker_answers_a_sequential_client_without_the_stall(
    upstream: HealUpstream,
) -> None:
    # TCP_NODELAY is set on the socket each worker listens on: every worker, not one, must
    # answer without the stall (a whole JSON body: head and body in two sends).
    arguments = ("--upstream", upstream.base_url, "--provider", "llama-cpp", "--workers", "2")
    with (
        running_proxy(*arguments) as proxy,
        one_connection_per_worker(proxy) as connections,
        httpx.Client(timeout=20) as direct,
    ):

        def direct_one() -> float:
            upstream.script(_good(False))
            return _timed(direct, f"{upstream.base_url}/chat/completions", False)[0]

        def through(connection: http.client.HTTPConnection) -> Callable[[], float]:
            def one() -> float:
                upstream.script(_good(False))
                start = time.perf_counter()
                post_chat(connection, stream=False)
                assert b"call_ok" in answer(connection)
                return (time.perf_counter() - start) * 1000

            return one

        timings = {f"worker {pid}": through(c) for pid, c in connections.items()}
        fastest = _fastest(upstream, {"direct": direct_one, **timings})
    for name in timings:
        assert fastest[name] - fastest["direct"] <= ADDED_LIMIT_MS, fastest
