"""The LiteLLM guardrail's ``judge_budget`` reaches its judge, as the transport's does (issue 29).

Without a LiteLLM process (``test_guardrail_faults.py``'s stubbed import) and without timing
anything: the worker process is :class:`~stages.costly_calls.StandInWorker`, which records the
budget it was given and says the check ran past it (``tests/stages/costly_calls.py``).
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from types import ModuleType
from typing import Any

import pytest
from _toolwire_testdata import chat_chunk, sse_body
from stages.costly_calls import TOOLS, StandInWorker, costly_arguments

from toolwire import ConfigurationError
from toolwire.core.wire import WireItem
from toolwire.stages import judge as judge_stage

from .test_guardrail_faults import gateway as gateway  # the stubbed import, as a fixture

pytestmark = pytest.mark.anyio


@pytest.fixture
def worker(monkeypatch: pytest.MonkeyPatch) -> StandInWorker:
    stand_in = StandInWorker()
    monkeypatch.setattr(judge_stage, "ask_worker", stand_in)
    return stand_in


async def _streamed(call_id: str, arguments: str) -> AsyncIterator[bytes]:
    call = {"index": 0, "id": call_id, "type": "function"}
    yield sse_body(
        [
            chat_chunk({"role": "assistant", "content": None}),
            chat_chunk(
                {"tool_calls": [{**call, "function": {"name": "grep", "arguments": arguments}}]}
            ),
            chat_chunk(finish_reason="tool_calls"),
        ]
    )


class Router:
    """Every retry answered with another call too costly to check inline."""

    def __init__(self) -> None:
        self.bodies: list[dict[str, Any]] = []

    async def __call__(
        self, body: dict[str, Any], data: Any, *, streaming: bool
    ) -> AsyncIterator[bytes]:
        self.bodies.append(body)
        return _streamed(f"call_{len(self.bodies)}", costly_arguments(seed=len(self.bodies) + 1))


async def _healed(gateway: ModuleType, router: Router, **options: Any) -> list[WireItem]:
    guardrail = gateway.ToolwireGuardrail(max_retries=1, **options)
    guardrail._ask_again = router
    data: dict[str, Any] = {
        "model": "fake",
        "messages": [{"role": "user", "content": "grep"}],
        "tools": TOOLS,
        "stream": True,
    }
    plan = guardrail._response_plan(None, data, streaming=True)
    session = guardrail._session(plan, data)
    sent: list[WireItem] = []
    try:
        async for items in guardrail._healed(
            session, _streamed("call_0", costly_arguments(seed=1)), data, streaming=True
        ):
            sent += items
    finally:
        session.close()
    return sent


@pytest.mark.parametrize(("options", "budget"), [({"judge_budget": 0.25}, 0.25), ({}, 2.0)])
async def test_the_budget_reaches_the_judge_of_every_answer(
    anyio_backend: str,
    gateway: ModuleType,
    worker: StandInWorker,
    options: dict[str, Any],
    budget: float,
) -> None:
    """The first answer and the retry's are checked within the guardrail's budget (the
    default when it sets none); both past it: rejected as unchecked, the retry told so."""
    router = Router()
    sent = await _healed(gateway, router, **options)
    assert worker.budgets == [budget, budget]
    (retry,) = router.bodies
    (told,) = [m["content"] for m in retry["messages"] if m["role"] == "tool"]
    assert f"within toolwire's {budget:g} s budget" in told
    (error,) = [item["error"] for item in sent if isinstance(item, dict) and "error" in item]
    assert error["type"] == "toolwire_heal_failed"


@pytest.mark.parametrize("budget", [0, -2.5, float("inf"), "1", True, None])
def test_a_bad_budget_is_refused_when_the_guardrail_is_built(
    gateway: ModuleType, budget: Any
) -> None:
    """Refused where it is set (LiteLLM builds the guardrail when it loads its config), and
    ``None`` too: on a shared proxy a check with no budget would hold every client's loop."""
    with pytest.raises(ConfigurationError, match="judge_budget"):
        gateway.ToolwireGuardrail(judge_budget=budget)
