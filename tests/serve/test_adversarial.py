"""``toolwire serve`` against a hostile client and a misbehaving upstream (issue 19): the real
command on uvicorn, a loopback upstream that records what it received.

Each case asserts the status (or the in-band error), that nothing went upstream when nothing
should have, and, for the attacks that used to freeze the event loop (a catastrophic pattern,
big tool lists, large bodies), that ``/healthz`` answers other clients meanwhile as fast as it
did just before the attack: within 100 ms on a quiet machine, and within five times its calm
answer (at most 1 s) on a loaded one, where a scheduler alone can delay one answer past 100 ms.
The freezes this guards against lasted 1.4 s to minutes.
"""

from __future__ import annotations

import json
import socket
import threading
import time
from collections.abc import Iterator
from typing import Any

import httpx
import openai
import pytest
from e2e.server import text_reply, tool_calls_reply
from heal.client import request
from heal.upstream import HealUpstream, Reply, Stall, chat_chunk, sse

from .proxy import Proxy, running_proxy

HEALTHY_WITHIN = 0.1
#: However loaded the machine, an answer this late means the proxy's loop was held.
FROZEN_AFTER = 1.0
EVIL = "^(a+)+$"
#: About 100 s of backtracking per validation with Python's ``re``.
HOSTILE = "a" * 29 + "!"


# The upstream and the proxy in front of it (tests/serve/conftest.py) are shared with the other
# proxy tests; each test starts from an empty script.
pytestmark = pytest.mark.usefixtures("upstream")


def _raw(proxy: Proxy, head: bytes, body: bytes = b"") -> tuple[int, bytes]:
    """Send one request byte for byte (httpx would normalize the path); status and body."""
    port = int(proxy.root.rsplit(":", 1)[1])
    with socket.create_connection(("127.0.0.1", port), timeout=10) as raw:
        raw.sendall(head + b"\r\nhost: x\r\nconnection: close\r\n")
        raw.sendall(b"content-length: %d\r\n\r\n%s" % (len(body), body))
        received = b""
        while chunk := raw.recv(65536):
            received += chunk
    status = int(received.split(b" ", 2)[1])
    return status, received.partition(b"\r\n\r\n")[2]


def _error_code(body: bytes) -> str:
    code: str = json.loads(body)["error"]["code"]
    return code


def _text_of(chunk: Any) -> str:
    return "".join(choice.delta.content or "" for choice in chunk.choices)


def _tool(name: str, parameters: dict[str, Any]) -> dict[str, Any]:
    return {"type": "function", "function": {"name": name, "parameters": parameters}}


class _HealthWatch:
    """Polls ``/healthz`` in a thread while an attack runs; the slowest answer it saw.

    Each poll is a new connection, as a new client, written by hand: on a kept-alive
    connection the answer's two writes (head, then body) meet the client's delayed ACK and
    every answer takes ~40 ms, attack or not (Nagle's algorithm), and a new ``httpx`` client
    spends tens of milliseconds building its TLS context: neither is the proxy's loop.
    """

    def __init__(self, proxy: Proxy) -> None:
        self._port = int(proxy.root.rsplit(":", 1)[1])
        self._stop = threading.Event()
        self.worst = 0.0
        self.answers = 0
        self.calm: list[float] = []
        self._thread = threading.Thread(target=self._poll, daemon=True)

    def _one(self) -> float:
        start = time.perf_counter()
        with socket.create_connection(("127.0.0.1", self._port), timeout=30) as raw:
            raw.sendall(b"GET /healthz HTTP/1.1\r\nhost: x\r\nconnection: close\r\n\r\n")
            answer = b""
            while chunk := raw.recv(4096):
                answer += chunk
        assert answer.startswith(b"HTTP/1.1 200 "), answer[:40]
        return time.perf_counter() - start

    def _poll(self) -> None:
        while not self._stop.is_set():
            self.worst = max(self.worst, self._one())
            self.answers += 1
            time.sleep(0.01)

    @property
    def limit(self) -> float:
        """100 ms, or five times the calm answers' 90th percentile on a loaded machine (≤ 1 s)."""
        calm = sorted(self.calm)
        return min(FROZEN_AFTER, max(HEALTHY_WITHIN, 5 * calm[len(calm) * 9 // 10]))

    def check(self) -> None:
        assert self.answers > 0
        assert self.worst < self.limit, (
            f"/healthz took {self.worst * 1000:.0f} ms during the attack; before it, at most "
            f"{max(self.calm) * 1000:.0f} ms in {len(self.calm)} answers"
        )

    def __enter__(self) -> _HealthWatch:
        for _ in range(20):  # the machine's own delay, before the attack
            self.calm.append(self._one())
            time.sleep(0.005)
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(40)


# -- part 1: a catastrophic pattern ---------------------------------------------------------


def test_a_catastrophic_pattern_neither_freezes_the_proxy_nor_reaches_the_agent(
    upstream: HealUpstream, proxy: Proxy
) -> None:
    schema = {"type": "object", "properties": {"s": {"type": "string", "pattern": EVIL}},
              "required": ["s"]}  # fmt: skip
    hostile = json.dumps({"s": HOSTILE})
    upstream.script(*(Reply(tool_calls_reply(("call_x", "lookup", hostile))) for _ in range(3)))
    body = request(tools=[_tool("lookup", schema)])
    with _HealthWatch(proxy) as watch, httpx.Client(timeout=60) as http:
        start = time.perf_counter()
        response = http.post(f"{proxy.base_url}/chat/completions", json=body)
        took = time.perf_counter() - start
    assert response.status_code == 200
    # The call never reached the agent: the stream ends with the in-band rejection.
    assert '"tool_calls"' not in response.text
    assert '"code":"tool_call_rejected"' in response.text
    assert took < 5, f"the attack took {took:.1f} s"
    watch.check()


def test_a_pattern_that_needs_backtracking_is_a_400_and_never_goes_upstream(
    upstream: HealUpstream, proxy: Proxy
) -> None:
    schema = {"type": "object", "properties": {"s": {"type": "string", "pattern": "(?=a)(a+)+$"}}}
    with httpx.Client(timeout=10) as http:
        response = http.post(
            f"{proxy.base_url}/chat/completions", json=request(tools=[_tool("lookup", schema)])
        )
    assert response.status_code == 400
    error = response.json()["error"]
    assert error["code"] == "invalid_tools"
    assert "'lookup'" in error["message"]
    assert "$.properties.s.pattern" in error["message"]
    assert upstream.paths == []


# -- part 2: paths that would leave /v1 -----------------------------------------------------

ESCAPES = [
    b"/v1/../X",
    b"/v1/%2e%2e/X",
    b"/v1/%2E%2E/X",
    b"/v1/..%2fX",
    b"/v1/..%2FX",
    b"/v1/models/../../X",
    b"/v1/./models",
    b"/v1/%252e%252e/X",
    b"/v1/models%2f..%2f..%2fX",
    b"/v1/..%5cX",
    b"/v1/models\\..\\X",
    b"/v1/models%3fx=1",
    b"/v1/models%23x",
    b"/v1/models%00",
    # A ';' path parameter: Java gateways read "..;" as ".." (issue 29, L4).
    b"/v1/..;/admin",
    b"/v1/models;jsessionid=x",
    b"/v1/..%3b/admin",
]


@pytest.mark.parametrize("path", ESCAPES, ids=[p.decode() for p in ESCAPES])
@pytest.mark.parametrize("method", [b"GET", b"POST"])
def test_a_path_that_could_leave_v1_is_a_400_before_anything_is_sent(
    upstream: HealUpstream, proxy: Proxy, path: bytes, method: bytes
) -> None:
    status, body = _raw(proxy, method + b" " + path + b" HTTP/1.1", b"{}")
    assert status == 400
    assert _error_code(body) == "invalid_path"
    assert upstream.paths == []


def test_an_ordinary_path_keeps_the_upstreams_base_path(
    upstream: HealUpstream, proxy: Proxy
) -> None:
    status, _ = _raw(proxy, b"GET /v1/models HTTP/1.1")
    assert status == 200
    assert upstream.paths == ["/v1/models"]


# -- part 3: big tool lists -------------------------------------------------------------------


def _padded_tool(name: str, size: int) -> dict[str, Any]:
    return _tool(name, {"type": "object", "description": "d" * size})


@pytest.mark.parametrize(
    ("tools", "code"),
    [
        # 1 MB of tools: it froze every client for 12.8 s.
        ([_padded_tool(f"t{i}", 20) for i in range(10_000)], "too_many_tools"),
        ([_padded_tool("huge", 1024 * 1024)], "tool_too_large"),
        ([_padded_tool(f"t{i}", 60_000) for i in range(20)], "tools_too_large"),
    ],
    ids=["10,000 tools", "one tool of 1 MiB", "20 tools of 60 KB"],
)
def test_tools_over_a_limit_are_a_400_naming_it_before_anything_is_sent(
    upstream: HealUpstream, proxy: Proxy, tools: list[dict[str, Any]], code: str
) -> None:
    # Encoded before the watch starts: json.dumps holds this process's GIL, not the proxy's.
    body = json.dumps(request(tools=tools)).encode()
    with _HealthWatch(proxy) as watch, httpx.Client(timeout=30) as http:
        response = http.post(f"{proxy.base_url}/chat/completions", content=body)
    assert response.status_code == 400
    error = response.json()["error"]
    assert (error["code"], error["type"]) == (code, f"toolwire_{code}")
    assert "(max_tool" in error["message"]
    assert upstream.paths == []
    watch.check()


def test_new_lists_at_the_limits_every_request_never_stall_other_clients(
    upstream: HealUpstream, proxy: Proxy
) -> None:
    # Lists just under the limits (16 tools of 60 KB), one character different each time: each
    # is compiled from scratch, in a worker thread, one schema at a time.
    rounds = 6
    upstream.script(*(Reply(text_reply("ok")) for _ in range(rounds)))
    bodies = [
        json.dumps(request(tools=[_padded_tool(f"t{i}_{salt}", 60_000) for i in range(16)]))
        for salt in range(rounds)
    ]
    with _HealthWatch(proxy) as watch, httpx.Client(timeout=60) as http:
        for body in bodies:
            response = http.post(f"{proxy.base_url}/chat/completions", content=body)
            assert response.status_code == 200
    assert len(upstream.paths) == rounds
    watch.check()


# -- part 5: a tool schema the judge cannot use ---------------------------------------------


@pytest.mark.parametrize("stream", [True, False])
def test_an_invalid_tool_schema_is_a_400_naming_the_tool_before_the_upstream_is_paid(
    upstream: HealUpstream, proxy: Proxy, stream: bool
) -> None:
    tools = [_tool("fine", {"type": "object"}), _tool("broken", {"type": "nonsense"})]
    with httpx.Client(timeout=10) as http:
        response = http.post(
            f"{proxy.base_url}/chat/completions", json=request(tools=tools, stream=stream)
        )
    assert response.status_code == 400
    error = response.json()["error"]
    assert (error["code"], error["type"]) == ("invalid_tools", "toolwire_invalid_tools")
    assert "'broken'" in error["message"]
    assert "$.type" in error["message"]
    assert upstream.paths == []


def test_an_anthropic_tool_schema_is_checked_too(upstream: HealUpstream, proxy: Proxy) -> None:
    body = {
        "model": "m",
        "max_tokens": 10,
        "messages": [{"role": "user", "content": "hi"}],
        "tools": [{"name": "broken", "input_schema": {"type": 3}}],
    }
    with httpx.Client(timeout=10) as http:
        response = http.post(f"{proxy.base_url}/messages", json=body)
    assert response.status_code == 400
    assert "'broken'" in response.json()["error"]["message"]
    assert upstream.paths == []


# -- part 7: the small ones -----------------------------------------------------------------


@pytest.mark.parametrize(
    "body",
    [
        b'{"model": "m", "messages": [], "tools": [], "stream": true, "stream": false}',
        b'{"model": "m", "messages": [], "stream": "true", "tools": []}',
        b'{"model": "m", "messages": [], "tools": {"type": "function"}}',
        # Python's reader raised RecursionError: a plain-text 500 and a traceback.
        b'{"model": "m", "messages": [], "tools": [' + b"[" * 100_000 + b"]" * 100_000 + b"]}",
        # Read in a worker thread: half a second of parsing must not stall other clients.
        b'{"model": "m", "messages": [' + b'{"a": 1},' * 200_000 + b'{"b": 1, "b": 2}]}',
    ],
    ids=[
        "duplicate keys",
        "stream as a string",
        "tools as an object",
        "nested 100k levels",
        "duplicate keys after 200,000 objects",
    ],
)
def test_a_body_a_lax_upstream_would_read_differently_is_a_400(
    upstream: HealUpstream, proxy: Proxy, body: bytes
) -> None:
    with _HealthWatch(proxy) as watch, httpx.Client(timeout=30) as http:
        response = http.post(
            f"{proxy.base_url}/chat/completions",
            content=body,
            headers={"content-type": "application/json"},
        )
    assert response.status_code == 400
    assert response.json()["error"]["code"] == "invalid_request"
    assert "Traceback" not in proxy.log
    assert upstream.paths == []
    watch.check()


def test_connection_named_forwarded_and_expect_headers_stay_here(
    upstream: HealUpstream, proxy: Proxy
) -> None:
    with httpx.Client(timeout=10) as http:
        response = http.get(
            f"{proxy.base_url}/models",
            headers={
                "connection": "keep-alive, x-internal-secret",
                "x-internal-secret": "hop",
                "forwarded": "for=10.0.0.1;by=admin",
                "x-forwarded-for": "10.0.0.1",
                "x-forwarded-host": "admin.internal",
                "x-real-ip": "10.0.0.1",
                "x-kept": "yes",
            },
        )
    assert response.status_code == 200
    (received,) = upstream.headers
    for dropped in ("x-internal-secret", "forwarded", "x-forwarded-for", "x-forwarded-host",
                    "x-real-ip", "expect"):  # fmt: skip
        assert dropped not in received
    assert received["x-kept"] == "yes"


def test_trace_is_refused(upstream: HealUpstream, proxy: Proxy) -> None:
    status, body = _raw(proxy, b"TRACE /v1/models HTTP/1.1")
    assert status == 405
    assert _error_code(body) == "method_not_allowed"
    assert upstream.paths == []


def test_the_start_up_line_never_shows_the_upstreams_password(upstream: HealUpstream) -> None:
    port = upstream.base_url.split(":")[2].split("/")[0]
    with running_proxy("--upstream", f"http://user:hunter2@127.0.0.1:{port}/v1") as running:
        assert "hunter2" not in running.log
        assert "user:***@" in running.log


# -- a raw upstream: redirects and broken framing ---------------------------------------------


class _RawUpstream:
    """Answers the requests of each connection with ``responses`` in turn, byte for byte."""

    def __init__(self, *responses: bytes) -> None:
        self.responses = responses
        self.received: list[bytes] = []
        self._server = socket.create_server(("127.0.0.1", 0))
        self.base_url = f"http://127.0.0.1:{self._server.getsockname()[1]}/v1"
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self) -> None:
        while True:
            try:
                connection, _ = self._server.accept()
            except OSError:
                return
            with connection:
                connection.settimeout(5)
                try:
                    for response in self.responses:
                        self.received.append(connection.recv(65536))
                        connection.sendall(response)
                except OSError:
                    pass

    def close(self) -> None:
        self._server.close()


@pytest.fixture
def raw_upstream(request: pytest.FixtureRequest) -> Iterator[_RawUpstream]:
    responses = request.param if isinstance(request.param, tuple) else (request.param,)
    server = _RawUpstream(*responses)
    yield server
    server.close()


REDIRECT = (
    b"HTTP/1.1 302 Found\r\nlocation: http://attacker.test/steal\r\ncontent-length: 0\r\n\r\n"
)


@pytest.mark.parametrize("raw_upstream", [REDIRECT], indirect=True)
@pytest.mark.parametrize("heal", [True, False], ids=["healing", "bare"])
def test_an_upstream_redirect_is_a_typed_502_never_handed_on(
    raw_upstream: _RawUpstream, heal: bool
) -> None:
    flags = () if heal else ("--no-heal",)
    with running_proxy("--upstream", raw_upstream.base_url, *flags) as running:
        with httpx.Client(timeout=10) as http:
            response = http.get(f"{running.base_url}/models")
    assert response.status_code == 502
    assert response.json()["error"]["code"] == "upstream_redirect"
    assert "location" not in response.headers


BOTH_LENGTHS = (
    b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: 5\r\n"
    b'transfer-encoding: chunked\r\n\r\n12\r\n{"object": "list"}\r\n0\r\n\r\n'
)


@pytest.mark.parametrize("raw_upstream", [BOTH_LENGTHS], indirect=True)
def test_content_length_beside_transfer_encoding_is_not_passed_on(
    raw_upstream: _RawUpstream,
) -> None:
    with running_proxy("--upstream", raw_upstream.base_url, "--no-heal") as running:
        with httpx.Client(timeout=10) as http:
            response = http.get(f"{running.base_url}/models")
    assert response.status_code == 200
    assert response.json() == {"object": "list"}


RESET_AFTER_HEADERS = (
    b'HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: 500\r\n\r\n{"id": '
)


@pytest.mark.parametrize("raw_upstream", [RESET_AFTER_HEADERS], indirect=True)
def test_a_non_streamed_reset_after_the_headers_does_not_say_unreachable(
    raw_upstream: _RawUpstream,
) -> None:
    with running_proxy("--upstream", raw_upstream.base_url) as running:
        with httpx.Client(timeout=10) as http:
            response = http.post(f"{running.base_url}/chat/completions", json=request(stream=False))
    assert response.status_code == 502
    # The healing answers a whole body that broke off itself (issue 18): a drop, sent again
    # once, then typed, and not to be sent again by the SDK (docs/healing.md).
    assert response.json()["error"]["code"] == "upstream_dropped"
    assert response.headers["x-should-retry"] == "false"


SMUGGLED = (
    b"HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\n{}"
    b'HTTP/1.1 200 OK\r\ncontent-length: 8\r\n\r\n"forged"',
    b'HTTP/1.1 200 OK\r\ncontent-length: 6\r\n\r\n"real"',
)


@pytest.mark.parametrize("raw_upstream", [SMUGGLED], indirect=True)
def test_a_body_longer_than_its_content_length_never_answers_the_next_client(
    raw_upstream: _RawUpstream,
) -> None:
    with running_proxy("--upstream", raw_upstream.base_url, "--no-heal") as running:
        with httpx.Client(timeout=10) as first, httpx.Client(timeout=10) as second:
            assert first.get(f"{running.base_url}/models").content == b"{}"
            answer = second.get(f"{running.base_url}/models")
    assert answer.content != b'"forged"'
    # The connection is closed, the request not sent again (it reached the upstream).
    assert answer.status_code == 502
    assert answer.json()["error"]["code"] == "upstream_broken"


UNREADABLE = (
    b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: 9\r\n\r\nnot json!"
)


@pytest.mark.parametrize("raw_upstream", [UNREADABLE], indirect=True)
def test_an_unreadable_non_streamed_body_is_not_a_200(raw_upstream: _RawUpstream) -> None:
    with running_proxy("--upstream", raw_upstream.base_url) as running:
        with httpx.Client(timeout=10) as http:
            response = http.post(f"{running.base_url}/chat/completions", json=request(stream=False))
    assert response.status_code == 502


# -- part 4: text the healing cannot read -----------------------------------------------------


def test_an_event_over_the_framing_cap_is_an_in_band_error_through_the_proxy(
    upstream: HealUpstream, proxy: Proxy
) -> None:
    # It used to be dropped while the SDK got a normal finish and 0 characters of it.
    oversized = chat_chunk({"content": "x" * (16 * 1024 * 1024 + 1)})
    body = sse([chat_chunk({"role": "assistant", "content": "Hello. "}), oversized,
                chat_chunk({}, finish_reason="stop")])  # fmt: skip
    upstream.script(Reply(body))
    with openai.OpenAI(base_url=proxy.base_url, api_key="k", max_retries=0) as client:
        stream = client.chat.completions.create(**request())
        received: list[str] = []
        with pytest.raises(openai.APIError) as raised:
            received.extend(_text_of(chunk) for chunk in stream)
    assert "".join(received) == "Hello. "
    assert raised.value.code == "too_long"
    assert len(upstream.paths) == 1


# -- part 6: memory per request ---------------------------------------------------------------


def test_bodies_in_flight_past_their_budget_are_a_503_never_sent(
    upstream: HealUpstream, tmp_path: Any
) -> None:
    config = tmp_path / "serve.toml"
    config.write_text("max_request_bytes = 4096\nmax_request_bytes_in_flight = 6000\n")
    upstream.script(Stall(text_reply("held"), events=1))
    with running_proxy("--upstream", upstream.base_url, "--config", str(config)) as running:
        with httpx.Client(timeout=10) as http:
            padded = request(messages=[{"role": "user", "content": "x" * 3000}])
            with http.stream("POST", f"{running.base_url}/chat/completions", json=padded) as held:
                assert held.status_code == 200  # its 3.1 KB body is in flight until it ends
                busy = http.post(f"{running.base_url}/chat/completions", json=padded)
                small = http.get(f"{running.base_url}/models")
    assert busy.status_code == 503
    assert busy.json()["error"]["code"] == "server_busy"
    assert "max_request_bytes_in_flight" in busy.json()["error"]["message"]
    assert small.status_code == 200  # a body-less request is never refused
    assert len(upstream.paths) == 2  # the held stream and the GET: never the refused body
