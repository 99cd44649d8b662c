"""The runner on asyncio and trio: closing, cancellation, user stages and their order."""

from __future__ import annotations

import threading
from collections.abc import AsyncIterator, Iterable
from contextlib import aclosing
from typing import Any

import anyio
import msgspec
import pytest
from _toolwire_testdata import chat_chunk, load_stream, sse_body

import toolwire
from toolwire.core.events import Event, Finish, StreamEnd, TextDelta, encode_event
from toolwire.core.stage import EventStep, SyncStage, event_stage

pytestmark = pytest.mark.anyio

RECORDING = "openai-chat/parallel_two_calls_sequential_indices_usage_done.sse"
TEXT_BODY = sse_body(
    [chat_chunk({"content": "one "}), chat_chunk({"content": "two"}), chat_chunk({}, "stop")]
)


class Source:
    """An async-generator source that records whether it was closed, and how far it got."""

    def __init__(self, reads: Iterable[bytes], *, then_hang: bool = False) -> None:
        self.reads = list(reads)
        self.then_hang = then_hang
        self.sent = 0
        self.closed = False

    async def __call__(self) -> AsyncIterator[bytes]:
        try:
            for read in self.reads:
                self.sent += 1
                yield read
            if self.then_hang:
                await anyio.sleep_forever()
        finally:
            self.closed = True


def reads_of(body: bytes, size: int = 64) -> list[bytes]:
    return [body[i : i + size] for i in range(0, len(body), size)]


# -- closing ------------------------------------------------------------------------------------


async def test_early_break_closes_the_source() -> None:
    source = Source(reads_of(load_stream(RECORDING)))
    async with aclosing(toolwire.stream(source(), judge=False)) as events:
        async for _event in events:
            break
    assert source.closed
    assert source.sent < len(source.reads)


async def test_early_break_closes_an_sdk_like_stream() -> None:
    # The openai SDK's AsyncStream: __aiter__ plus `async def close()`, no aclose().
    class FakeSDKStream:
        def __init__(self) -> None:
            self.closed = False

        async def __aiter__(self) -> AsyncIterator[dict[str, Any]]:
            for chunk in [chat_chunk({"content": "a"}), chat_chunk({"content": "b"})]:
                yield chunk

        async def close(self) -> None:
            self.closed = True

    stream = FakeSDKStream()
    async with aclosing(toolwire.stream(stream, judge=False)) as events:
        async for event in events:
            if isinstance(event, TextDelta):
                break
    assert stream.closed


async def test_normal_end_closes_the_source() -> None:
    source = Source(reads_of(TEXT_BODY))
    turn = await toolwire.collect(source(), judge=False)
    assert source.closed
    assert (turn.text, turn.stop_reason) == ("one two", "end_turn")


async def test_stage_error_closes_the_source() -> None:
    def explode(event: Event) -> Iterable[Event]:
        if isinstance(event, TextDelta):
            raise RuntimeError("stage bug")
        return (event,)

    source = Source(reads_of(TEXT_BODY, 8))
    with pytest.raises(RuntimeError, match="stage bug"):
        await toolwire.collect(source(), judge=False, stages=[event_stage(explode)])
    assert source.closed


# -- cancellation -------------------------------------------------------------------------------


async def test_cancelling_collect_of_a_never_ending_source() -> None:
    source = Source([sse_body([chat_chunk({"content": "a"})], done=False)], then_hang=True)
    with anyio.move_on_after(0.05) as scope:
        await toolwire.collect(source(), judge=False)
        pytest.fail("collect returned from a source that never ends")
    assert scope.cancelled_caught
    assert source.closed
    assert source.sent == 1


async def test_cancel_scope_around_stream_consumer() -> None:
    source = Source([sse_body([chat_chunk({"content": "a"})], done=False)], then_hang=True)
    seen: list[Event] = []
    with anyio.CancelScope() as scope:
        async with aclosing(toolwire.stream(source(), judge=False)) as events:
            async for event in events:
                seen.append(event)
                if isinstance(event, TextDelta):
                    scope.cancel()
    assert scope.cancelled_caught
    assert source.closed
    assert [type(e) for e in seen][-1] is TextDelta


async def test_cancellation_passes_through_an_async_stage() -> None:
    closed: list[str] = []

    async def watching(events: AsyncIterator[Event]) -> AsyncIterator[Event]:
        try:
            async for event in events:
                yield event
        finally:
            closed.append("stage")

    source = Source([sse_body([chat_chunk({"content": "a"})], done=False)], then_hang=True)
    with anyio.move_on_after(0.05) as scope:
        await toolwire.collect(source(), judge=False, stages=[watching])
    assert scope.cancelled_caught
    assert source.closed
    assert closed == ["stage"]


async def test_concurrent_collects_in_a_task_group() -> None:
    results: dict[int, str] = {}

    async def one(key: int) -> None:
        turn = await toolwire.collect(Source(reads_of(TEXT_BODY, 5))(), judge=False)
        results[key] = turn.text

    async with anyio.create_task_group() as group:
        for key in range(5):
            group.start_soon(one, key)
    assert results == dict.fromkeys(range(5), "one two")


# -- user stages --------------------------------------------------------------------------------


def suffix(mark: str) -> Any:
    def add(event: Event) -> Iterable[Event]:
        if isinstance(event, TextDelta):
            return (msgspec.structs.replace(event, text=event.text + mark),)
        return (event,)

    return event_stage(add)


def async_suffix(mark: str) -> Any:
    async def stage(events: AsyncIterator[Event]) -> AsyncIterator[Event]:
        async for event in events:
            if isinstance(event, TextDelta):
                await anyio.lowlevel.checkpoint()
                yield msgspec.structs.replace(event, text=event.text + mark)
            else:
                yield event

    return stage


async def test_sync_and_async_stages_run_in_the_order_given() -> None:
    stages = [suffix("1"), suffix("2"), async_suffix("3"), suffix("4"), async_suffix("5")]
    turn = await toolwire.collect(TEXT_BODY, judge=False, stages=stages)
    assert turn.text == "one 12345two12345"
    events = [e async for e in toolwire.stream(TEXT_BODY, judge=False, stages=stages)]
    assert [e.text for e in events if isinstance(e, TextDelta)] == ["one 12345", "two12345"]


async def test_stage_can_drop_and_expand_events() -> None:
    def double_text(event: Event) -> Iterable[Event]:
        return (event, event) if isinstance(event, TextDelta) else (event,)

    def drop_text(event: Event) -> Iterable[Event]:
        return () if isinstance(event, TextDelta) and event.text == "two" else (event,)

    turn = await toolwire.collect(
        TEXT_BODY, judge=False, stages=[event_stage(drop_text), event_stage(double_text)]
    )
    assert turn.text == "one one "


class HoldText(SyncStage):
    """Holds every TextDelta back and emits them joined when the input ends (a flush)."""

    def start(self) -> EventStep:
        return _HoldTextStep()


class _HoldTextStep:
    def __init__(self) -> None:
        self.held: list[str] = []

    def feed(self, event: Event) -> Iterable[Event]:
        if isinstance(event, TextDelta):
            self.held.append(event.text)
            return ()
        return (event,)

    def finish(self) -> Iterable[Event]:
        return (TextDelta(text="".join(self.held)),) if self.held else ()


@pytest.mark.parametrize("position", ["alone", "before_async", "after_async"])
async def test_sync_stage_flushes_at_end(position: str) -> None:
    stages: list[Any] = {
        "alone": [HoldText()],
        "before_async": [HoldText(), async_suffix("!")],
        "after_async": [async_suffix("!"), HoldText()],
    }[position]
    events = [e async for e in toolwire.stream(TEXT_BODY, judge=False, stages=stages)]
    texts = [e.text for e in events if isinstance(e, TextDelta)]
    assert (
        texts
        == {
            "alone": ["one two"],
            "before_async": ["one two!"],
            "after_async": ["one !two!"],
        }[position]
    )
    # The held text comes out once, after everything the stage passed through.
    assert isinstance(events[-1], TextDelta)
    assert sum(isinstance(e, Finish) for e in events) == 1
    assert sum(isinstance(e, StreamEnd) for e in events) == 1
    turn = await toolwire.collect(TEXT_BODY, judge=False, stages=stages)
    assert turn.text == texts[0]


async def test_flush_of_an_earlier_stage_goes_through_later_sync_stages() -> None:
    turn = await toolwire.collect(TEXT_BODY, judge=False, stages=[HoldText(), suffix("+")])
    assert turn.text == "one two+"


async def test_async_stage_flush_at_end() -> None:
    async def count_at_end(events: AsyncIterator[Event]) -> AsyncIterator[Event]:
        count = 0
        async for event in events:
            count += 1
            yield event
        yield TextDelta(text=f"[{count} events]")

    turn = await toolwire.collect(TEXT_BODY, judge=False, stages=[count_at_end])
    # ResponseInfo, two TextDelta, Finish, StreamEnd.
    assert turn.text == "one two[5 events]"


async def test_one_stage_object_serves_concurrent_runs() -> None:
    stage = HoldText()
    texts: list[str] = []

    async def one(body: bytes) -> None:
        turn = await toolwire.collect(Source(reads_of(body, 3))(), judge=False, stages=[stage])
        texts.append(turn.text)

    other = sse_body([chat_chunk({"content": "x"}), chat_chunk({}, "stop")])
    async with anyio.create_task_group() as group:
        group.start_soon(one, TEXT_BODY)
        group.start_soon(one, other)
    assert sorted(texts) == ["one two", "x"]


@pytest.mark.parametrize("kind", ["sync", "async", "both"])
async def test_pass_through_stages_keep_event_order(kind: str) -> None:
    def identity(event: Event) -> Iterable[Event]:
        return (event,)

    async def async_identity(events: AsyncIterator[Event]) -> AsyncIterator[Event]:
        async for event in events:
            yield event

    stages: list[Any] = {
        "sync": [event_stage(identity)],
        "async": [async_identity],
        "both": [event_stage(identity), async_identity, event_stage(identity)],
    }[kind]
    body = load_stream(RECORDING)
    plain = [encode_event(e) async for e in toolwire.stream(body, judge=False)]
    staged = [
        encode_event(e)
        async for e in toolwire.stream(Source(reads_of(body, 100))(), judge=False, stages=stages)
    ]
    assert staged == plain
    assert len(plain) > 20


async def test_sync_iterable_source() -> None:
    turn = await toolwire.collect(reads_of(TEXT_BODY, 10), judge=False)
    assert turn.text == "one two"


# -- a step that offloads heavy events and takes batches ------------------------------------------


class _BatchingHeavyStep:
    """Takes batches, calls a piece of text containing "heavy" heavy; records what it was fed."""

    def __init__(self, fed: list[tuple[str, str]]) -> None:
        self.fed = fed

    def is_heavy(self, event: Event) -> bool:
        return isinstance(event, TextDelta) and "heavy" in event.text

    def any_heavy(self, events: list[Event]) -> bool:
        return any(map(self.is_heavy, events))

    def feed_batch(self, events: list[Event]) -> list[Event]:
        self.fed.append(("batch", str(len(events))))
        return events

    def feed(self, event: Event) -> Iterable[Event]:
        on_loop = threading.current_thread() is threading.main_thread()
        self.fed.append((type(event).__name__, "loop" if on_loop else "thread"))
        return (event,)

    def finish(self) -> Iterable[Event]:
        return ()


class _BatchingHeavyStage(SyncStage):
    def __init__(self) -> None:
        self.fed: list[tuple[str, str]] = []

    def start(self) -> EventStep:
        return _BatchingHeavyStep(self.fed)


async def test_a_batch_with_no_heavy_event_goes_whole_to_feed_batch() -> None:
    stage = _BatchingHeavyStage()
    turn = await toolwire.collect([TEXT_BODY], judge=False, stages=[stage])
    assert turn.text == "one two"
    assert [kind for kind, _ in stage.fed] == ["batch"]


async def test_a_batch_with_a_heavy_event_goes_event_by_event_heavy_ones_in_a_thread() -> None:
    body = sse_body([chat_chunk({"content": "a heavy one"}), chat_chunk({}, "stop")])
    stage = _BatchingHeavyStage()
    turn = await toolwire.collect([body], judge=False, stages=[stage])
    assert turn.text == "a heavy one"
    assert "batch" not in dict(stage.fed)
    assert [kind for kind, where in stage.fed if where == "thread"] == ["TextDelta"]
    assert len(stage.fed) > 1  # the other events of the batch, one by one on the loop
