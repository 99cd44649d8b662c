"""A very large call is judged in a worker thread: one turn never stalls the others."""

from __future__ import annotations

import threading

import pytest
from _toolwire_testdata import chat_chunk, sse_body

import toolwire
import toolwire.events
from toolwire.core.events import ToolCallComplete
from toolwire.stages.judge import DEFAULT_OFFLOAD_ABOVE, JudgeStage

pytestmark = pytest.mark.anyio


def _body(arguments: str) -> bytes:
    return sse_body(
        [
            chat_chunk({"tool_calls": [{"index": 0, "id": "c1", "type": "function",
                                        "function": {"name": "w", "arguments": arguments}}]}),
            chat_chunk({}, "tool_calls"),
        ]
    )


class _RecordingJudge(JudgeStage):
    """Records the thread each call was judged on."""

    def __init__(self, threads: list[str], **kwargs: int) -> None:
        super().__init__(**kwargs)
        self.threads = threads

    def judge(self, call: ToolCallComplete) -> toolwire.events.Event:
        self.threads.append(threading.current_thread().name)
        return super().judge(call)


@pytest.mark.parametrize("size", [100, DEFAULT_OFFLOAD_ABOVE + 1])
async def test_only_large_calls_leave_the_event_loop(size: int) -> None:
    threads: list[str] = []
    raw = '{"text": "' + "x" * size + '",}'  # repairable: trailing comma
    turn = await toolwire.collect(_body(raw), judge=False, stages=[_RecordingJudge(threads)])
    assert turn.calls[0].outcome == "repaired"
    on_loop = threads == [threading.current_thread().name]
    assert on_loop is (size <= DEFAULT_OFFLOAD_ABOVE)


async def test_a_large_call_in_a_hand_built_chain_is_offloaded_too() -> None:
    # After an async stage the judge runs through drive_step, which offloads the same way.
    threads: list[str] = []

    async def passthrough(events: object) -> object:
        async for event in events:  # type: ignore[attr-defined]
            yield event

    raw = '{"text": "' + "y" * 5000 + '",}'
    turn = await toolwire.collect(
        _body(raw), judge=False, stages=[passthrough, _RecordingJudge(threads, offload_above=10)]
    )
    assert turn.calls[0].outcome == "repaired"
    assert threads
    assert threads[0] != threading.current_thread().name


def test_offload_above_is_checked() -> None:
    with pytest.raises(toolwire.ConfigurationError, match="offload_above"):
        JudgeStage(offload_above=-1)
