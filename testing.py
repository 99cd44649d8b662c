"""Conformance kits: one for any stage, built-in or plugged in, one for any provider adapter.

Call ``await check_stage(stage)`` from a test (on every anyio backend you support); it raises
``AssertionError`` naming the broken rule of the stage contract (see
:mod:`toolwire.core.stage`). The checks:

- ``order``: unknown events pass through untouched and in order;
- ``flush``: the stage's output ends once its input ends, with nothing of the input lost;
- ``early_close``: closing the stage's output early closes the upstream iterator;
- ``cancellation``: a cancelled run propagates the cancellation and closes upstream;
- ``no_task_left``: no task outlives a run;
- ``reusable``: two concurrent runs of the same stage object give the same output as one.

``check_mapper(open_mapper, body)`` checks a provider adapter (a sans-I/O mapper) on a recorded
body, without an event loop: see its docstring.
"""

from __future__ import annotations

import re
from collections.abc import AsyncGenerator, AsyncIterator, Sequence

import anyio

from .core.events import (
    Event,
    Finish,
    ProviderError,
    StreamEnd,
    TextDelta,
    ToolCallArgumentsDelta,
    ToolCallComplete,
    ToolCallReady,
    ToolCallRepaired,
    ToolCallStarted,
    encode_event,
)
from .core.mapper import MapperFactory, MapperSettings
from .core.stage import Stage, SyncStage
from .stages.judge import JudgeStage

__all__ = ["Probe", "check_mapper", "check_stage", "sample_events"]


class Probe(Event, frozen=True, tag="toolwire.testing.probe"):
    """An event type no stage knows: it must pass through every stage untouched."""

    number: int


def sample_events() -> list[Event]:
    """A short, ordinary run: text, one complete call, a finish; probes in between."""
    return [
        Probe(number=0),
        TextDelta(text="Looking it up."),
        Probe(number=1),
        ToolCallStarted(call_id="call_1", name="lookup", index=0),
        ToolCallArgumentsDelta(call_id="call_1", index=0, delta='{"q": '),
        Probe(number=2),
        ToolCallArgumentsDelta(call_id="call_1", index=0, delta='"x"}'),
        ToolCallComplete(call_id="call_1", name="lookup", index=0, arguments_raw='{"q": "x"}'),
        Probe(number=3),
        Finish(reason="tool_calls", raw="tool_calls"),
        StreamEnd(),
        Probe(number=4),
    ]


class _Upstream:
    """An async iterator over fixed events that records whether it was closed."""

    def __init__(self, events: Sequence[Event], hang: bool = False) -> None:
        self.closed = False
        self.sent = 0
        self._events = events
        self._hang = hang

    async def generate(self) -> AsyncGenerator[Event]:
        try:
            for event in self._events:
                self.sent += 1
                yield event
            if self._hang:
                await anyio.sleep_forever()
        finally:
            self.closed = True


def _run(stage: Stage | SyncStage, events: AsyncIterator[Event]) -> AsyncIterator[Event]:
    return stage(events)


async def _drain(stage: Stage | SyncStage, events: Sequence[Event]) -> list[Event]:
    upstream = _Upstream(events)
    output = _run(stage, upstream.generate())
    collected = [event async for event in output]
    aclose = getattr(output, "aclose", None)
    if aclose is not None:
        await aclose()
    return collected


async def check_stage(
    stage: Stage | SyncStage, events: Sequence[Event] | None = None, *, limit_seconds: float = 5.0
) -> None:
    """Check ``stage`` against the stage contract; raise ``AssertionError`` on the first breach.

    ``events`` is an ordinary run to feed it (default :func:`sample_events`); it should contain
    :class:`Probe` events, which the stage must not know.
    """
    run = list(events) if events is not None else sample_events()
    tasks_before = len(anyio.get_running_tasks())

    with anyio.fail_after(limit_seconds):
        first = await _drain(stage, run)
    probes_in = [event for event in run if isinstance(event, Probe)]
    probes_out = [event for event in first if isinstance(event, Probe)]
    assert probes_out == probes_in, (
        f"order: unknown events must pass through untouched and in order; sent {probes_in}, "
        f"got {probes_out}"
    )
    assert any(isinstance(event, StreamEnd) for event in first) == any(
        isinstance(event, StreamEnd) for event in run
    ), "flush: the stream end must reach the output"

    # early_close: take one event, then close the output.
    upstream = _Upstream(run, hang=True)
    generator = upstream.generate()
    output = _run(stage, generator)
    with anyio.fail_after(limit_seconds):
        await output.__anext__()
        aclose = getattr(output, "aclose", None)
        assert aclose is not None, "early_close: a stage's output must be closable (aclose)"
        await aclose()
    closed = upstream.closed
    await generator.aclose()  # the kit cleans up after a broken stage either way
    assert closed, "early_close: closing the stage's output must close its upstream"

    # cancellation: upstream never ends; cancel the consumer.
    upstream = _Upstream(run, hang=True)
    generator = upstream.generate()
    output = _run(stage, generator)
    with anyio.move_on_after(0.05) as scope:
        async for _ in output:
            pass
    cancelled = scope.cancelled_caught
    aclose = getattr(output, "aclose", None)
    if aclose is not None:
        await aclose()
    closed = upstream.closed
    await generator.aclose()
    assert cancelled, "cancellation: the cancellation must propagate out of the stage"
    assert closed, "cancellation: a cancelled stage must close its upstream"

    # reusable: concurrent runs of the same object give the same output as one run.
    results: list[list[Event]] = [[], []]

    async def run_into(slot: int) -> None:
        results[slot] = await _drain(stage, run)

    with anyio.fail_after(limit_seconds):
        async with anyio.create_task_group() as group:
            group.start_soon(run_into, 0)
            group.start_soon(run_into, 1)
    reusable = "reusable: per-run state must live in the run, not on the stage object"
    assert results[0] == first, reusable
    assert results[1] == first, reusable

    assert len(anyio.get_running_tasks()) == tasks_before, "no_task_left: a task outlived the run"


# -- the adapter (mapper) kit ------------------------------------------------------------------


def _run_mapper(open_mapper: MapperFactory, reads: Sequence[bytes]) -> list[Event]:
    mapper = open_mapper(MapperSettings())
    events: list[Event] = []
    for read in reads:
        events.extend(mapper.feed_bytes(read))
        if mapper.done:
            break
    events.extend(mapper.finish())
    return events


_SYNTHESIZED = re.compile(rb"toolwire-[0-9a-f]{16}-")


def _normalized(events: Sequence[Event]) -> list[bytes]:
    """Events as JSON, with the random part of synthesized ids named by first use.

    Synthesized ids (``toolwire-<random per stream>-<n>``) may appear anywhere an id does: in
    call events, inside judged events, in a provider's replay content.
    """
    names: dict[bytes, bytes] = {}

    def rename(match: re.Match[bytes]) -> bytes:
        return names.setdefault(match.group(), b"toolwire-stream%d-" % len(names))

    return [_SYNTHESIZED.sub(rename, encode_event(event)) for event in events]


def _check_shape(events: Sequence[Event], where: str) -> None:
    finishes = [e for e in events if isinstance(e, Finish)]
    ends = [e for e in events if isinstance(e, StreamEnd)]
    assert len(finishes) == 1, f"{where}: exactly one Finish, got {len(finishes)}"
    assert len(ends) == 1, f"{where}: exactly one StreamEnd, got {len(ends)}"
    assert isinstance(events[-1], StreamEnd), f"{where}: StreamEnd must come last"
    assert isinstance(events[-2], Finish), f"{where}: Finish must come right before StreamEnd"
    started: dict[str, list[str]] = {}
    complete: set[str] = set()
    for event in events:
        if isinstance(event, ToolCallStarted):
            assert event.call_id not in started, f"{where}: call {event.call_id} started twice"
            started[event.call_id] = []
        elif isinstance(event, ToolCallArgumentsDelta):
            assert event.call_id in started, f"{where}: a delta before its call started"
            assert event.call_id not in complete, f"{where}: a delta after its call completed"
            started[event.call_id].append(event.delta)
        elif isinstance(event, ToolCallComplete):
            assert event.call_id in started, f"{where}: a call completed that never started"
            assert event.call_id not in complete, f"{where}: call {event.call_id} completed twice"
            complete.add(event.call_id)
            if event.damage is None:
                joined = "".join(started[event.call_id])
                assert joined == event.arguments_raw, (
                    f"{where}: the deltas of {event.call_id} do not add up to its arguments"
                )
    assert complete == set(started), f"{where}: calls started but never completed"


def _runnable_texts(events: Sequence[Event], judge: JudgeStage) -> dict[tuple[int, str], str]:
    """(position, name) -> raw text, for the calls the default judge would let run.

    Keyed by the call's position in the turn, not its id: synthesized ids are random per stream.
    """
    out: dict[tuple[int, str], str] = {}
    for event in events:
        if isinstance(event, ToolCallComplete):
            judged = judge.judge(event)
            if isinstance(judged, ToolCallReady | ToolCallRepaired):
                out[event.index, event.name] = event.arguments_raw
    return out


def check_mapper(open_mapper: MapperFactory, body: bytes, *, cut_points: int = 300) -> None:
    """Check a provider adapter on one recorded ``body``; raise ``AssertionError`` on a breach.

    - ``shape``: one ``Finish`` then one ``StreamEnd``, last; every call started once, its
      deltas adding up to its text, completed once;
    - ``rechunking``: the same events whatever the split (whole, byte by byte, odd sizes);
    - ``cut_anywhere``: the body cut at any point (``cut_points`` of them, spread evenly, plus
      every line end) never gives a call the judge would run on less than its full text;
    - ``fail``: a fatal error from outside the body ends the run in ``error``, Finish last;
    - ``not_a_stream``: an HTML page and an empty body end in ``error``, not truncated.
    """
    whole = _run_mapper(open_mapper, [body])
    _check_shape(whole, "shape")
    expected = _normalized(whole)
    for size in (1, 7, 64, 1021):
        reads = [body[i : i + size] for i in range(0, len(body), size)]
        assert _normalized(_run_mapper(open_mapper, reads)) == expected, (
            f"rechunking: reads of {size} bytes gave other events than the whole body"
        )
    judge = JudgeStage()
    full = _runnable_texts(whole, judge)
    points = {len(body) * n // cut_points for n in range(1, cut_points)}
    points.update(i + 1 for i, byte in enumerate(body) if byte == 0x0A)
    for point in sorted(points):
        if point >= len(body):
            continue
        cut = _run_mapper(open_mapper, [body[:point]])
        _check_shape(cut, f"cut_anywhere at byte {point}")
        for key, text in _runnable_texts(cut, judge).items():
            assert full.get(key) == text, (
                f"cut_anywhere: cut at byte {point}, call {key} would run on {text!r}"
            )
    mapper = open_mapper(MapperSettings())
    failed = [*mapper.feed_bytes(body[: len(body) // 2]), *mapper.fail(_FAILURE)]
    failed += mapper.finish()
    _check_shape(failed, "fail")
    finish = next(e for e in failed if isinstance(e, Finish))
    assert finish.reason == "error", f"fail: the run must end in error, got {finish.reason}"
    for junk in (b"<html><body>502 Bad Gateway</body></html>", b""):
        events = _run_mapper(open_mapper, [junk])
        _check_shape(events, "not_a_stream")
        finish = next(e for e in events if isinstance(e, Finish))
        assert (finish.reason, finish.truncated) == ("error", False), (
            f"not_a_stream: {junk[:20]!r} must end in error, not truncated; got {finish}"
        )


_FAILURE = ProviderError(message="HTTP 500: test", kind="http_status", code="500", fatal=True)
