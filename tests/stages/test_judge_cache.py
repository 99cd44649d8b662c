"""The judge stages of request tools are compiled once per distinct tool list, and bounded."""

from __future__ import annotations

import pytest

import toolwire
from toolwire.core.errors import ConfigurationError
from toolwire.stages.judge_cache import JudgeStageCache

WRITE = {
    "type": "function",
    "function": {
        "name": "write",
        "parameters": {
            "type": "object",
            "required": ["path"],
            "properties": {"path": {"type": "string"}},
        },
    },
}


def _tool(name: str) -> dict[str, object]:
    return {**WRITE, "function": {**WRITE["function"], "name": name}}  # type: ignore[dict-item]


def test_the_same_tools_in_any_key_order_share_one_stage() -> None:
    cache = JudgeStageCache(None, "reject")
    first = cache.stage_for([WRITE])
    reordered = {"function": dict(reversed(list(WRITE["function"].items()))), "type": "function"}
    assert cache.stage_for([reordered]) is first
    assert cache.stage_for([_tool("other")]) is not first
    assert len(cache) == 2


def test_the_least_recently_used_list_goes_first() -> None:
    cache = JudgeStageCache(None, "reject", size=2)
    a = cache.stage_for([_tool("a")])
    cache.stage_for([_tool("b")])
    assert cache.stage_for([_tool("a")]) is a  # a is now the most recent
    cache.stage_for([_tool("c")])  # b goes
    assert len(cache) == 2
    assert cache.stage_for([_tool("a")]) is a


def test_a_bad_schema_raises_every_time_and_is_never_kept() -> None:
    cache = JudgeStageCache(None, "reject")
    bad = [{"type": "function", "function": {"name": "w", "parameters": {"type": 12}}}]
    for _ in range(2):
        with pytest.raises(ConfigurationError):
            cache.stage_for(bad)
    assert len(cache) == 0


def test_the_cached_stage_keeps_the_pipelines_policy() -> None:
    cache = JudgeStageCache(toolwire.STRICT_POLICY, "allow")
    stage = cache.stage_for([WRITE])
    assert stage.policy is toolwire.STRICT_POLICY
    assert stage.truncated_calls == "allow"


@pytest.mark.anyio
async def test_request_tools_still_judge_each_request(anyio_backend: str) -> None:
    pipeline = toolwire.Pipeline("openai-chat")
    body = (
        b'data: {"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"c","type":'
        b'"function","function":{"name":"write","arguments":"{\\"path\\": 1}"}}]},'
        b'"finish_reason":"tool_calls"}]}\n\ndata: [DONE]\n\n'
    )
    strict = {"messages": [], "tools": [WRITE]}
    loose = {"messages": [], "tools": [{**WRITE, "function": {"name": "write"}}]}
    for _ in range(2):  # the second time from the cache
        rejected = await pipeline.collect(body, request=strict)
        assert rejected.calls[0].verdict is not None
        assert rejected.calls[0].verdict.outcome == "rejected"
        accepted = await pipeline.collect(body, request=loose)
        assert accepted.calls[0].may_run
