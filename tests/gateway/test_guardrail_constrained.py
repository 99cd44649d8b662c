"""The LiteLLM guardrail asks a constrained re-ask as the transport does (issue 31).

The guardrail's session and the retry it hands LiteLLM's router, without a LiteLLM process
(``test_guardrail_faults.py``'s stubbed import): the retry of a rejected call carries the Chat
profile's forcing (llama-server: the call as a JSON object in its ``json_schema`` field),
unless the guardrail, the tool or the request (``x-toolwire-constrain: off``, read from
LiteLLM's ``proxy_server_request.headers``) turned it off; and what the retry brings is
judged.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from types import ModuleType
from typing import Any

import pytest
from _toolwire_testdata import chat_chunk, sse_body
from heal.client import TOOLS

from toolwire.core.wire import WireItem

from .test_guardrail_faults import gateway as gateway  # the stubbed import, as a fixture

pytestmark = pytest.mark.anyio

BROKEN = '{"path": 3}'
GOOD = '{"path": "notes.txt", "content": "hello"}'


def _streamed(call_id: str, arguments: str) -> bytes:
    call = {"index": 0, "id": call_id, "type": "function"}
    return sse_body(
        [
            chat_chunk({"role": "assistant", "content": None}),
            chat_chunk(
                {"tool_calls": [{**call, "function": {"name": "write", "arguments": arguments}}]}
            ),
            chat_chunk(finish_reason="tool_calls"),
        ]
    )


async def _chunks(body: bytes) -> AsyncIterator[bytes]:
    yield body


class Router:
    """The router's answers to each retry, and the bodies it was given."""

    def __init__(self, *answers: str) -> None:
        self.answers = list(answers)
        self.bodies: list[dict[str, Any]] = []

    async def __call__(
        self, body: dict[str, Any], data: Any, *, streaming: bool
    ) -> AsyncIterator[bytes]:
        self.bodies.append(body)
        return _chunks(_streamed(f"call_{len(self.bodies)}", self.answers.pop(0)))


async def _healed(
    gateway: ModuleType, router: Router, headers: dict[str, str] | None = None, **options: Any
) -> list[WireItem]:
    guardrail = gateway.ToolwireGuardrail(provider="llama-server", **options)
    guardrail._ask_again = router
    data: dict[str, Any] = {
        "model": "fake",
        "messages": [{"role": "user", "content": "Write hello to notes.txt"}],
        "tools": TOOLS,
        "stream": True,
    }
    if headers is not None:
        data["proxy_server_request"] = {"headers": headers}
    plan = guardrail._response_plan(None, data, streaming=True)
    session = guardrail._session(plan, data)
    sent: list[WireItem] = []
    try:
        async for items in guardrail._healed(
            session, _chunks(_streamed("call_0", BROKEN)), data, streaming=True
        ):
            sent += items
    finally:
        session.close()
    return sent


async def test_the_retry_asks_llama_server_for_the_chosen_tool(
    anyio_backend: str, gateway: ModuleType
) -> None:
    router = Router(GOOD)
    await _healed(gateway, router)
    (retry,) = router.bodies
    assert retry["json_schema"]["properties"]["name"] == {"const": "write"}
    assert retry["tools"] == TOOLS


async def test_a_retry_that_breaks_the_call_again_is_still_judged(
    anyio_backend: str, gateway: ModuleType
) -> None:
    router = Router(BROKEN)
    sent = await _healed(gateway, router, max_retries=1)
    (error,) = [item["error"] for item in sent if isinstance(item, dict) and "error" in item]
    assert error["type"] == "toolwire_heal_failed"
    assert "json_schema" in router.bodies[0]


@pytest.mark.parametrize(
    ("headers", "options"),
    [
        pytest.param({"X-Toolwire-Constrain": "off"}, {}, id="request"),
        pytest.param(None, {"constrain": False}, id="guardrail"),
        pytest.param(None, {"unconstrained_tools": ["write"]}, id="tool"),
    ],
)
async def test_the_constraint_can_be_turned_off(
    anyio_backend: str,
    gateway: ModuleType,
    headers: dict[str, str] | None,
    options: dict[str, Any],
) -> None:
    router = Router(GOOD)
    await _healed(gateway, router, headers, **options)
    (retry,) = router.bodies
    assert "json_schema" not in retry
