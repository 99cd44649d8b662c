"""The text-call stage in a Pipeline: the option, the per-profile defaults, the events, on
asyncio and trio."""

from __future__ import annotations

import json
from typing import Any

import pytest

import toolwire
from toolwire.core.errors import ConfigurationError
from toolwire.core.events import TextCallMarkup, ToolCallReady, ToolCallStarted

pytestmark = pytest.mark.anyio

TOOLS = [
    {
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
]
TEXT = 'On it.\n<tool_call>\n{"name": "write", "arguments": {"path": "a.txt"}}\n</tool_call>'


def _sse(text: str, finish: str = "stop", size: int = 4) -> bytes:
    chunks = [text[i : i + size] for i in range(0, len(text), size)]
    lines = [
        json.dumps({"choices": [{"index": 0, "delta": {"content": piece}}]}) for piece in chunks
    ]
    lines.append(json.dumps({"choices": [{"index": 0, "delta": {}, "finish_reason": finish}]}))
    return "".join(f"data: {line}\n\n" for line in [*lines, "[DONE]"]).encode()


@pytest.mark.parametrize(
    ("provider", "reads"),
    [
        ("llama-cpp", True),
        ("llama-server", True),
        ("vllm", True),
        ("lmstudio", True),
        ("ollama-openai", True),
        ("openai", False),
        ("openrouter", False),
        ("mistral", False),
    ],
)
async def test_auto_follows_the_server_profile(provider: str, reads: bool) -> None:
    turn = await toolwire.collect(_sse(TEXT), provider, tools=TOOLS)
    assert bool(turn.calls) is reads
    if reads:
        (call,) = turn.calls
        assert (call.name, call.arguments, call.origin, call.text_family) == (
            "write",
            {"path": "a.txt"},
            "text",
            "hermes",
        )
        assert turn.text == "On it.\n"
        assert turn.raw_text == TEXT
        assert turn.stop_reason == "tool_calls"
    else:
        assert turn.text == TEXT


async def test_the_native_ollama_provider_reads_text_calls() -> None:
    lines = [
        {"model": "m", "message": {"role": "assistant", "content": TEXT}, "done": False},
        {
            "model": "m",
            "message": {"role": "assistant", "content": ""},
            "done": True,
            "done_reason": "stop",
        },
    ]
    body = "".join(json.dumps(line) + "\n" for line in lines).encode()
    turn = await toolwire.collect(body, "ollama", tools=TOOLS)
    assert [call.name for call in turn.runnable] == ["write"]


@pytest.mark.parametrize("choice", ["off", []])
async def test_off(choice: Any) -> None:
    turn = await toolwire.collect(_sse(TEXT), "vllm", tools=TOOLS, text_calls=choice)
    assert turn.calls == ()


async def test_a_list_of_families_on_a_hosted_profile() -> None:
    turn = await toolwire.collect(_sse(TEXT), "openai", tools=TOOLS, text_calls=["hermes"])
    assert [call.name for call in turn.runnable] == ["write"]
    turn = await toolwire.collect(_sse(TEXT), "openai", tools=TOOLS, text_calls=["mistral"])
    assert turn.calls == ()


async def test_the_request_s_tools_count() -> None:
    pipeline = toolwire.Pipeline("vllm")
    request = {"model": "m", "messages": [], "tools": TOOLS, "stream": True}
    turn = await pipeline.collect(_sse(TEXT), request=request)
    assert [call.name for call in turn.runnable] == ["write"]
    assert (await pipeline.collect(_sse(TEXT))).calls == ()  # no tools: nothing counts


async def test_streamed_events_carry_the_provenance() -> None:
    events = [event async for event in toolwire.stream(_sse(TEXT), "vllm", tools=TOOLS)]
    (started,) = [e for e in events if isinstance(e, ToolCallStarted)]
    (ready,) = [e for e in events if isinstance(e, ToolCallReady)]
    assert (started.origin, started.text_family) == ("text", "hermes")
    assert (ready.call.origin, ready.call.text_family) == ("text", "hermes")
    (markup,) = [e for e in events if isinstance(e, TextCallMarkup)]
    assert markup.markup == ((len("On it.\n"), TEXT[len("On it.\n") :]),)
    assert markup.original("On it.\n") == TEXT


async def test_cut_at_the_limit_never_runs() -> None:
    turn = await toolwire.collect(_sse(TEXT[:-20], finish="length"), "llama-cpp", tools=TOOLS)
    (call,) = turn.calls
    assert call.truncated
    assert not call.may_run
    assert turn.stop_reason == "length"


def test_a_bad_choice_fails_at_construction() -> None:
    with pytest.raises(ConfigurationError):
        toolwire.Pipeline("vllm", text_calls="on")  # type: ignore[typeddict-item]
    with pytest.raises(ConfigurationError):
        toolwire.Pipeline("vllm", text_calls=["no-such-family"])


async def test_the_stage_keeps_the_stage_contract() -> None:
    from toolwire.stages.text_calls import TextCallStage
    from toolwire.testing import check_stage, sample_events

    await check_stage(TextCallStage(None, TOOLS))
    await check_stage(TextCallStage(None, TOOLS), sample_events())
