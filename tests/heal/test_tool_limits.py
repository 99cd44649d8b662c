"""The library shell refuses the tools it cannot bound or use, before anything is sent (issue
19, parts 3 and 5): ``HealingTransport`` answers a typed HTTP 400 and its upstream sees nothing;
an accepted list is compiled once, off the event loop, and the cache of lists stays bounded.
"""

from __future__ import annotations

from typing import Any

import httpx
import openai
import pytest
from hypothesis import given
from hypothesis import strategies as st

import toolwire
from toolwire.heal.refusal import ToolLimits, tools_refusal
from toolwire.stages.judge_cache import JudgeStageCache, tool_list_key

from .client import SDK_ON_TRIO_LEAK, USER

pytestmark = [pytest.mark.anyio, pytest.mark.filterwarnings(SDK_ON_TRIO_LEAK)]


def _tool(name: str, size: int = 0) -> dict[str, Any]:
    schema = {"type": "object", "description": "d" * size}
    return {"type": "function", "function": {"name": name, "parameters": schema}}


LIMITS = ToolLimits(max_tools=4, max_tool_schema_bytes=2048, max_tools_bytes=4096)
REFUSED = [
    pytest.param([_tool(f"t{i}") for i in range(5)], "too_many_tools", "max_tools", id="count"),
    pytest.param([_tool("big", 3000)], "tool_too_large", "max_tool_schema_bytes", id="one"),
    pytest.param(
        [_tool(f"t{i}", 1500) for i in range(3)], "tools_too_large", "max_tools_bytes", id="all"
    ),
    pytest.param(
        [_tool("broken") | {"function": {"name": "broken", "parameters": {"type": 3}}}],
        "invalid_tools",
        "'broken'",
        id="unusable",
    ),
]


class _Counting:
    """An upstream that records every request and answers a plain text turn."""

    def __init__(self) -> None:
        self.sent: list[httpx.Request] = []

    def __call__(self, request: httpx.Request) -> httpx.Response:
        self.sent.append(request)
        body = {"id": "c", "object": "chat.completion", "created": 0, "model": "m",
                "choices": [{"index": 0, "finish_reason": "stop",
                             "message": {"role": "assistant", "content": "hi"}}]}  # fmt: skip
        return httpx.Response(200, json=body)


def _client(upstream: _Counting, transport: toolwire.HealingTransport) -> openai.AsyncOpenAI:
    del upstream
    return openai.AsyncOpenAI(
        base_url="http://upstream.test/v1",
        api_key="k",
        max_retries=0,
        http_client=httpx.AsyncClient(transport=transport),
    )


@pytest.mark.parametrize(("tools", "code", "named"), REFUSED)
@pytest.mark.parametrize("stream", [True, False])
async def test_tools_over_a_limit_or_unusable_are_a_typed_400_never_sent(
    tools: list[dict[str, Any]], code: str, named: str, stream: bool
) -> None:
    upstream = _Counting()
    transport = toolwire.HealingTransport(httpx.MockTransport(upstream), tool_limits=LIMITS)
    async with _client(upstream, transport) as client:
        with pytest.raises(openai.BadRequestError) as raised:
            await client.chat.completions.create(
                model="m", messages=USER, tools=tools, stream=stream
            )
    assert raised.value.status_code == 400
    assert raised.value.code == code
    assert isinstance(raised.value.body, dict)
    assert raised.value.body["type"] == f"toolwire_{code}"
    assert named in raised.value.message
    assert upstream.sent == []


async def test_a_list_is_compiled_once_for_the_check_and_the_judge(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    built: list[object] = []
    build = JudgeStageCache._build

    def counted(self: JudgeStageCache, tools: Any) -> Any:
        built.append(tools)
        return build(self, tools)

    monkeypatch.setattr(JudgeStageCache, "_build", counted)
    upstream = _Counting()
    transport = toolwire.HealingTransport(httpx.MockTransport(upstream))
    async with _client(upstream, transport) as client:
        for _ in range(3):
            await client.chat.completions.create(
                model="m", messages=USER, tools=[_tool("a"), _tool("b")]
            )
    assert len(upstream.sent) == 3
    assert len(built) == 1


def test_the_limits_name_the_tool_and_pass_what_is_under_them() -> None:
    assert tools_refusal([_tool(f"t{i}") for i in range(4)], LIMITS) is None
    assert tools_refusal(None, LIMITS) is None
    refusal = tools_refusal([_tool("ok"), _tool("huge", 3000)], LIMITS)
    assert refusal is not None
    assert "'huge'" in refusal.message


_JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=40),
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4)
    ),
    max_leaves=12,
)


@given(
    tools=st.lists(st.dictionaries(st.text(max_size=8), _JSON, max_size=5), max_size=6),
    limits=st.builds(
        ToolLimits,
        max_tools=st.integers(0, 8),
        max_tool_schema_bytes=st.integers(0, 400),
        max_tools_bytes=st.integers(0, 900),
    ),
)
def test_the_list_size_from_the_cache_key_refuses_exactly_what_encoding_each_tool_does(
    tools: list[dict[str, Any]], limits: ToolLimits
) -> None:
    """The shortcut (no tool encoded again when the whole list is within the limits) never
    passes a list that the per-tool check refuses, and refuses with the same message."""
    key = tool_list_key(tools)
    assert key is not None
    assert tools_refusal(tools, limits, list_bytes=key.size) == tools_refusal(tools, limits)


def test_the_cache_of_lists_is_bounded_by_their_size_too() -> None:
    cache = JudgeStageCache(None, "reject", size=64, max_bytes=10_000)
    for salt in range(20):  # lists that differ by one character, as a hostile client sends
        cache.stage_for([_tool(f"t{salt}", 3000)])
        assert cache.kept_bytes <= 10_000
    assert len(cache) == 3
    cache.stage_for([_tool("alone", 20_000)])  # over the budget alone: compiled, not kept
    assert len(cache) == 3
    assert cache.cached([_tool("t19", 3000)]) is not None
