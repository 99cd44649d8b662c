"""One client's costly tool schema never starves the others (issue 29, H2), through the real
``toolwire serve``.

Judging a call cost its argument's size times its schema's, with no bound, and the validator
holds the GIL: ``pattern: "a\\w{1000}c"`` against 30 KB put other clients' ``/healthz`` at a p50
of 6.4 s; a 200 KB argument judged in a worker thread still stalled the loop 35 s; ``items.anyOf``
of 500 ``const`` against 4 KB, 8.2 s. Now such a schema is a 400, and what is still accepted but
costly is checked in a worker process within a time budget.

The attack here is what the bounds still accept, at its worst: the largest repetition allowed
(``a\\w{256}c``) against 800 KB of text that defeats the regex engine's DFA (about 1.5 s per
check on an idle core), and ``anyOf`` of 500 branches over a 4 KB array of items that match none.
Meanwhile other clients poll ``/healthz`` and send ordinary requests; each answer must come
within five times the slowest of the same answers taken calmly just before (their p99), or 1 s,
whichever is larger: the machine may be loaded (2 cores, other work), the loop must not be held.
``test_..._at_four_times_the_load`` runs four attackers of each kind.
"""

from __future__ import annotations

import json
import random
import socket
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import httpx
import pytest
from e2e.server import text_reply, tool_calls_reply
from heal.client import request
from heal.upstream import HealUpstream, Reply, running_upstream

from .proxy import Proxy, running_proxy

#: However loaded the machine, no answer may take longer than this and five times its calm p99.
FLOOR = 1.0
#: How long an attack request may take in all: three judgements (a first answer, two retries),
#: each at most the 2 s budget of the process plus its wait for a free worker.
ATTACK_WITHIN = 60.0

PATTERN = "a\\w{256}c"
COSTLY_PATTERN = {"type": "object", "properties": {"s": {"type": "string", "pattern": PATTERN}},
                  "required": ["s"]}  # fmt: skip
WIDE_ITEMS = {"type": "object", "properties": {"xs": {"type": "array", "items": {
    "anyOf": [{"const": f"v{i}"} for i in range(500)]}}}, "required": ["xs"]}  # fmt: skip


def _tool(name: str, parameters: dict[str, Any]) -> dict[str, Any]:
    return {"type": "function", "function": {"name": name, "parameters": parameters}}


def _hostile_text(size: int) -> str:
    rng = random.Random(29)
    return "".join(rng.choice("ab") for _ in range(size))


#: What the upstream answers for each tool, whoever asks: the attacks' calls, or text.
ARGUMENTS = {
    "grep": json.dumps({"s": _hostile_text(800_000)}),
    "pick": json.dumps({"xs": ["none"] * 600}),
}


@dataclass
class _ByTool(HealUpstream):
    """The upstream answers by the tool a request offers, so concurrent clients' requests
    cannot take each other's scripted replies: a call to the attack's tool, else text."""

    answered: dict[str, int] = field(default_factory=dict)

    def take(self, request: Any) -> Reply | None:
        tools = request.get("tools") or [{}]
        name = tools[0].get("function", {}).get("name", "")
        with self._lock:
            self.answered[name] = self.answered.get(name, 0) + 1
        if name in ARGUMENTS:
            return Reply(tool_calls_reply(("call_1", name, ARGUMENTS[name]), piece=16_384))
        return Reply(text_reply("All done."))


@pytest.fixture(scope="module")
def judging_upstream() -> Iterator[_ByTool]:
    loopback = running_upstream()
    loopback.script = _ByTool()
    with loopback as scripted:
        yield scripted  # type: ignore[misc]


@pytest.fixture(scope="module")
def judging_proxy(judging_upstream: _ByTool) -> Iterator[Proxy]:
    with running_proxy("--upstream", judging_upstream.base_url, "--provider", "llama-cpp") as proxy:
        yield proxy


def _healthz(proxy: Proxy) -> float:
    """One ``/healthz`` on a new connection, written by hand (see test_adversarial.py's
    ``_HealthWatch`` for why not httpx): its seconds."""
    port = int(proxy.root.rsplit(":", 1)[1])
    start = time.perf_counter()
    with socket.create_connection(("127.0.0.1", port), timeout=60) as raw:
        raw.sendall(b"GET /healthz HTTP/1.1\r\nhost: x\r\nconnection: close\r\n\r\n")
        answer = b""
        while chunk := raw.recv(4096):
            answer += chunk
    assert answer.startswith(b"HTTP/1.1 200 "), answer[:40]
    return time.perf_counter() - start


def _ordinary(http: httpx.Client, proxy: Proxy) -> float:
    """One ordinary streamed request (a tool with a plain schema, answered in text)."""
    body = request(
        tools=[_tool("note", {"type": "object", "properties": {"t": {"type": "string"}}})]
    )
    start = time.perf_counter()
    response = http.post(f"{proxy.base_url}/chat/completions", json=body)
    took = time.perf_counter() - start
    assert response.status_code == 200
    text = "".join(
        choice["delta"].get("content") or ""
        for line in response.text.splitlines()
        if line.startswith("data: {")
        for choice in json.loads(line[6:]).get("choices") or ()
    )
    assert text == "All done.", response.text[-300:]
    return took


@dataclass
class _Sample:
    healthz: list[float] = field(default_factory=list)
    ordinary: list[float] = field(default_factory=list)

    def take(
        self, proxy: Proxy, http: httpx.Client, rounds: int, until: threading.Event | None = None
    ) -> None:
        """At least ``rounds`` rounds, and on until ``until`` is set."""
        number = 0
        while number < rounds or (until is not None and not until.is_set()):
            self.healthz.append(_healthz(proxy))
            if number % 2 == 0:
                self.ordinary.append(_ordinary(http, proxy))
            time.sleep(0.01)
            number += 1


def _p99(values: list[float]) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, len(ordered) * 99 // 100)]


class _Attackers:
    """Clients that send the attack's requests back to back until told to stop."""

    def __init__(self, proxy: Proxy, tools: list[str], each: int) -> None:
        self.proxy = proxy
        self.stop = threading.Event()
        self.outcomes: list[tuple[str, float, int, str]] = []
        self.started = threading.Event()
        #: Set once every attacker has had an answer: the window covers whole attacks.
        self.each_answered = threading.Event()
        self._answered: set[int] = set()
        self.threads = [
            threading.Thread(target=self._attack, args=(tool,), daemon=True)
            for tool in tools
            for _ in range(each)
        ]

    def _attack(self, tool: str) -> None:
        parameters = COSTLY_PATTERN if tool == "grep" else WIDE_ITEMS
        body = request(tools=[_tool(tool, parameters)])
        with httpx.Client(timeout=ATTACK_WITHIN * 2) as http:
            while not self.stop.is_set():
                self.started.set()
                start = time.perf_counter()
                response = http.post(f"{self.proxy.base_url}/chat/completions", json=body)
                took = time.perf_counter() - start
                self.outcomes.append((tool, took, response.status_code, response.text))
                self._answered.add(threading.get_ident())
                if len(self._answered) == len(self.threads):
                    self.each_answered.set()

    def __enter__(self) -> _Attackers:
        for thread in self.threads:
            thread.start()
        assert self.started.wait(10)
        time.sleep(1.0)  # let the first attack requests reach the judge
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop.set()
        for thread in self.threads:
            thread.join(ATTACK_WITHIN * 2)


def _attack_and_measure(proxy: Proxy, upstream: _ByTool, each: int) -> None:
    with httpx.Client(timeout=60) as http:
        _ordinary(http, proxy)  # warm: connections, the first compile
        calm = _Sample()
        calm.take(proxy, http, 40)
        answered_before = dict(upstream.answered)
        with _Attackers(proxy, ["grep", "pick"], each) as attackers:
            during = _Sample()
            during.take(proxy, http, 40, until=attackers.each_answered)
            judged_meanwhile = {
                tool: upstream.answered.get(tool, 0) - answered_before.get(tool, 0)
                for tool in ("grep", "pick")
            }
    for kind in ("healthz", "ordinary"):
        before, attacked = getattr(calm, kind), getattr(during, kind)
        limit = max(FLOOR, 5 * _p99(before))
        assert max(attacked) < limit, (
            f"{kind}: {max(attacked) * 1000:.0f} ms during the attack (limit {limit * 1000:.0f} "
            f"ms); calm p99 {_p99(before) * 1000:.0f} ms over {len(before)} answers"
        )
    # The attack really ran while the others were measured, and every attack was answered, in
    # time, with the typed in-band rejection: the costly calls never reached the client.
    assert min(judged_meanwhile.values()) >= 1, judged_meanwhile
    assert attackers.outcomes
    for tool, took, status, text in attackers.outcomes:
        assert status == 200, (tool, status, text[:300])
        assert took < ATTACK_WITHIN, (tool, took)
        assert '"tool_calls"' not in text, tool
        assert '"code":"tool_call_rejected"' in text, (tool, text[-600:])


@pytest.mark.slow
def test_costly_schemas_leave_other_clients_answered_as_when_calm(
    judging_proxy: Proxy, judging_upstream: _ByTool
) -> None:
    _attack_and_measure(judging_proxy, judging_upstream, each=1)


@pytest.mark.slow
def test_costly_schemas_leave_other_clients_answered_at_four_times_the_load(
    judging_proxy: Proxy, judging_upstream: _ByTool
) -> None:
    _attack_and_measure(judging_proxy, judging_upstream, each=4)


@pytest.mark.parametrize(
    ("parameters", "place"),
    [
        (
            {"type": "object", "properties": {"s": {"type": "string", "pattern": "a\\w{1000}c"}}},
            "$.properties.s.pattern",
        ),
        (
            {"type": "object", "properties": {"s": {"type": "string", "pattern": "a\\p{L}{30}c"}}},
            "$.properties.s.pattern",
        ),
    ],
)
def test_a_schema_too_costly_to_run_is_a_400_naming_why_before_the_upstream_is_paid(
    judging_proxy: Proxy, judging_upstream: _ByTool, parameters: dict[str, Any], place: str
) -> None:
    before = judging_upstream.answered.get("costly", 0)
    with httpx.Client(timeout=30) as http:
        response = http.post(
            f"{judging_proxy.base_url}/chat/completions",
            json=request(tools=[_tool("costly", parameters)]),
        )
    assert response.status_code == 400
    error = response.json()["error"]
    assert error["code"] == "invalid_tools"
    assert "'costly' is too costly to check" in error["message"]
    assert f": {place}: " in error["message"]
    assert judging_upstream.answered.get("costly", 0) == before
