"""``toolwire.Pipeline``: checked once, immutable, shareable, and the same as ``collect``."""

from __future__ import annotations

import anyio
import anyio.lowlevel
import pytest
from _toolwire_testdata import chat_chunk, load_stream, sse_body

import toolwire
from toolwire import ConfigurationError, Pipeline, RepairLoopGuard, ToolResult

pytestmark = pytest.mark.anyio

WRITE_TOOL = {
    "type": "function",
    "function": {
        "name": "write",
        "parameters": {
            "type": "object",
            "required": ["path", "content"],
            "properties": {"path": {"type": "string"}, "content": {"type": "string"}},
        },
    },
}


def _call_body(arguments: str, call_id: str = "call_1") -> bytes:
    return sse_body(
        [
            chat_chunk(
                {
                    "role": "assistant",
                    "tool_calls": [
                        {
                            "index": 0,
                            "id": call_id,
                            "type": "function",
                            "function": {"name": "write", "arguments": ""},
                        }
                    ],
                }
            ),
            chat_chunk({"tool_calls": [{"index": 0, "function": {"arguments": arguments}}]}),
            chat_chunk({}, finish_reason="tool_calls"),
        ]
    )


@pytest.mark.parametrize(
    ("options", "fragment"),
    [
        ({"max_tokens": 0}, "max_tokens"),
        ({"max_tokens": True}, "max_tokens"),
        ({"stop_on": "length"}, "stop_on"),
        ({"stop_on": {"lenght"}}, "lenght"),
        ({"truncated_calls": "maybe"}, "truncated_calls"),
        ({"policy": "strict"}, "policy"),
        ({"judge": "yes"}, "judge"),
        ({"stages": [42]}, "not a stage"),
        ({"stages": "judge"}, "stages"),
        ({"loop_guard": 3}, "loop_guard"),
        ({"capture_content": "yes"}, "capture_content"),
        ({"redact": "***"}, "redact"),
        ({"request_model": 5}, "request_model"),
        ({"max_tokenz": 5}, "max_tokenz"),
        ({"tools": [{"type": "function", "function": {"parameters": {}}}]}, "name"),
    ],
)
def test_every_option_is_checked_at_construction(options: dict[str, object], fragment: str) -> None:
    with pytest.raises(ConfigurationError, match=fragment):
        Pipeline("openai-chat", **options)  # type: ignore[arg-type]


def test_unknown_provider_is_a_configuration_error() -> None:
    with pytest.raises(ConfigurationError, match="unknown provider"):
        Pipeline("openai-chatt")


def test_a_pipeline_is_immutable_and_replace_makes_a_checked_copy() -> None:
    pipeline = Pipeline("llama-cpp", max_tokens=64, tools=[WRITE_TOOL])
    with pytest.raises(AttributeError, match="immutable"):
        pipeline.max_tokens = 5  # type: ignore[attr-defined]
    with pytest.raises(AttributeError, match="immutable"):
        del pipeline._options
    with pytest.raises(TypeError):
        pipeline.options["max_tokens"] = 5  # type: ignore[index]
    bigger = pipeline.replace(max_tokens=512)
    assert bigger.options["max_tokens"] == 512
    assert pipeline.options["max_tokens"] == 64
    assert bigger.options["tools"] is pipeline.options["tools"]
    assert bigger.provider == "llama-cpp"
    with pytest.raises(ConfigurationError, match="max_tokens"):
        pipeline.replace(max_tokens=-1)
    assert "max_tokens=64" in repr(pipeline)
    assert dict(pipeline.options) == {"max_tokens": 64, "tools": [WRITE_TOOL]}


async def test_collect_through_a_pipeline_equals_the_convenience_function() -> None:
    body = load_stream("llama-cpp-python/write_max_tokens_24_cut_mid_string.real.sse")
    pipeline = Pipeline("llama-cpp", max_tokens=24, tools=[WRITE_TOOL])
    by_pipeline = await pipeline.collect(body)
    by_function = await toolwire.collect(body, "llama-cpp", max_tokens=24, tools=[WRITE_TOOL])
    assert by_pipeline == by_function
    assert by_pipeline.calls[0].outcome == "rejected"
    events = [event async for event in pipeline.stream(body)]
    assert [type(e) for e in events] == [
        type(e) async for e in toolwire.stream(body, "llama-cpp", max_tokens=24, tools=[WRITE_TOOL])
    ]


async def test_stream_batches_hands_on_the_events_of_each_read_together() -> None:
    """The same events as ``stream``, in order, grouped by the read they came from (never an
    empty batch), and observed: the turn's span ends once with the turn's outcome."""
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    body = load_stream("llama-cpp-python/write_max_tokens_24_cut_mid_string.real.sse")
    reads = [body[position : position + 97] for position in range(0, len(body), 97)]
    spans = InMemorySpanExporter()
    tracer_provider = TracerProvider()
    tracer_provider.add_span_processor(SimpleSpanProcessor(spans))
    pipeline = Pipeline(
        "llama-cpp", max_tokens=24, tools=[WRITE_TOOL], tracer_provider=tracer_provider
    )
    events = [event async for event in pipeline.replace(tracer_provider=None).stream(reads)]
    batches = [batch async for batch in pipeline.stream_batches(reads)]
    assert all(batches)
    assert len(batches) < len(events)  # a read brings several events
    flat = [event for batch in batches for event in batch]
    assert [type(event) for event in flat] == [type(event) for event in events]
    assert flat[-1] == events[-1]
    names = [span.name for span in spans.get_finished_spans()]
    assert names == ["toolwire.reject write", "toolwire.turn"]
    turn = spans.get_finished_spans()[1].attributes or {}
    assert turn.get("toolwire.tool_calls.rejected") == 1
    assert turn.get("toolwire.ended_early") is False


async def test_one_pipeline_serves_concurrent_turns() -> None:
    pipeline = Pipeline("openai-chat", tools=[WRITE_TOOL])
    bodies = {
        f"call_{n}": _call_body(
            f'{{"path": "f{n}.txt", "content": "{n}"}}' if n % 2 else '{"path": "f.txt"',
            call_id=f"call_{n}",
        )
        for n in range(20)
    }
    turns: dict[str, toolwire.Turn] = {}

    async def one(call_id: str, body: bytes) -> None:
        async def reads() -> object:
            for position in range(0, len(body), 7):
                await anyio.lowlevel.checkpoint()
                yield body[position : position + 7]

        turns[call_id] = await pipeline.collect(reads())

    async with anyio.create_task_group() as group:
        for call_id, body in bodies.items():
            group.start_soon(one, call_id, body)
    for number in range(20):
        call = turns[f"call_{number}"].calls[0]
        assert call.call_id == f"call_{number}"
        if number % 2:
            assert call.outcome == "ok"
            assert call.arguments == {"path": f"f{number}.txt", "content": str(number)}
        else:
            assert call.outcome == "rejected"


async def test_history_helpers_use_the_pipelines_provider() -> None:
    pipeline = Pipeline("openai-chat", tools=[WRITE_TOOL])
    turn = await pipeline.collect(_call_body('{"path": "a", "content": "b"}'))
    results = [ToolResult(call_id="call_1", name="write", content="done", status="ok")]
    messages = pipeline.next_messages(turn, results)
    assert messages[1] == {"role": "tool", "tool_call_id": "call_1", "content": "done"}
    assert pipeline.check_history(messages) == []
    with pytest.raises(toolwire.HistoryError):
        pipeline.ensure_well_formed(messages[:1])


async def test_a_loop_guard_is_shared_across_turns_of_one_pipeline() -> None:
    guard = RepairLoopGuard(limit=2)
    pipeline = Pipeline(
        "openai-chat", tools=[WRITE_TOOL], loop_guard=guard, stop_on={"repair_loop"}
    )
    first = await pipeline.collect(_call_body('{"path": '))
    second = await pipeline.collect(_call_body('{"path": '))
    assert first.stopped_by == ()
    assert second.stopped_by == ("repair_loop",)


async def test_the_request_option_brings_its_tools_to_the_judge() -> None:
    request = {"model": "m", "messages": [], "tools": [WRITE_TOOL]}
    body = _call_body('{"path": "a"}')  # "content" is required by the schema
    with_request = await toolwire.collect(body, request=request)
    assert with_request.calls[0].verdict is not None
    assert with_request.calls[0].verdict.reason == "schema"
    per_turn = await Pipeline("openai-chat").collect(body, request=request)
    assert per_turn.calls[0].verdict == with_request.calls[0].verdict
    without = await toolwire.collect(body)
    assert without.calls[0].outcome == "ok"
