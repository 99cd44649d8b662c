"""``HealingTransport(judge_budget=...)`` reaches the judge of every healed format (issue 29, H2).

A call too costly to check on the event loop is checked in a worker process within the budget;
past it the call is rejected as ``unchecked`` and healed like any rejected call. The worker is
a stand-in that says the check ran past its budget (``tests/stages/costly_calls.py``): these
tests check where the budget goes, not how long anything takes.
"""

from __future__ import annotations

from typing import Any

import httpx
import pytest
from stages.costly_calls import TOOLS, StandInWorker, completion, costly_arguments

import toolwire
from toolwire import ConfigurationError
from toolwire.stages import judge as judge_stage

pytestmark = pytest.mark.anyio


@pytest.fixture
def worker(monkeypatch: pytest.MonkeyPatch) -> StandInWorker:
    stand_in = StandInWorker()
    monkeypatch.setattr(judge_stage, "ask_worker", stand_in)
    return stand_in


def test_every_formats_pipeline_has_the_budget() -> None:
    transport = toolwire.HealingTransport(provider="llama-server", judge_budget=0.5)
    for wire in transport._formats:
        assert transport.pipeline_for(wire).options["judge_budget"] == 0.5
    default = toolwire.HealingTransport()
    assert default.pipeline.options["judge_budget"] == 2.0
    assert toolwire.HealingTransport(judge_budget=None).pipeline.options["judge_budget"] is None


@pytest.mark.parametrize("budget", [0, -2.5, float("inf"), "1"])
def test_a_bad_budget_is_refused_when_the_transport_is_built(budget: Any) -> None:
    with pytest.raises(ConfigurationError, match="judge_budget"):
        toolwire.HealingTransport(judge_budget=budget)


async def test_a_call_past_the_budget_is_healed_as_unchecked(worker: StandInWorker) -> None:
    sent: list[bytes] = []

    def upstream(request: httpx.Request) -> httpx.Response:
        sent.append(request.content)
        return httpx.Response(200, json=completion(costly_arguments(seed=len(sent))))

    transport = toolwire.HealingTransport(
        httpx.MockTransport(upstream), max_retries=1, judge_budget=0.25
    )
    async with httpx.AsyncClient(transport=transport, base_url="http://upstream.test") as http:
        response = await http.post(
            "/v1/chat/completions",
            json={"model": "m", "messages": [{"role": "user", "content": "grep"}], "tools": TOOLS},
        )
    # Asked once more with the true message; both answers past the budget: a typed 502.
    assert worker.budgets == [0.25, 0.25]
    assert len(sent) == 2
    assert "within toolwire's 0.25 s budget" in sent[1].decode()
    assert "Nothing was found wrong with them." in sent[1].decode()
    assert response.status_code == 502
    assert response.headers["x-should-retry"] == "false"
    assert response.json()["error"]["type"] == "toolwire_heal_failed"
