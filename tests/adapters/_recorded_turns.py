"""What every adapter's recording tests compare the same way, written once.

Each ``test_*_fixtures.py`` holds the hand-checked expectations of its provider's recordings
(its own ``Expected``: what differs is what each protocol carries). What they share is here: a
recorded call (:class:`Call`), the rows a turn's calls and usage are compared as, the finish of
a turn, and the shape every event stream ends with.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from toolwire.core.events import (
    Event,
    Finish,
    StreamEnd,
    ToolCallArgumentsDelta,
    ToolCallComplete,
    ToolCallStarted,
    Usage,
)
from toolwire.core.turn import Turn

CallRow = tuple[str, str, int, str, bool]


@dataclass(frozen=True)
class Call:
    """A call as the recording holds it, read by hand from the bytes."""

    call_id: str
    name: str
    index: int
    raw: str
    truncated: bool = False


@dataclass(frozen=True, kw_only=True)
class ExpectedTurn:
    """What the turn of a recording holds, read by hand from its bytes.

    Each provider's ``Expected`` adds what its protocol carries (ids, usage, end markers...)
    and states the raw finish its recordings mostly end with.
    """

    model: str | None
    calls: tuple[Any, ...] = ()
    text: str = ""
    reasoning: str = ""
    stop: str = "tool_calls"
    finish_raw: str | None
    truncated: bool = False
    evidence: tuple[str, ...] = ()
    cut_by: str | None = None


def call_rows(turn: Turn, *, synthesized: str | None = None) -> list[CallRow]:
    """``(id, name, index, raw text, truncated)`` of every call of ``turn``.

    With ``synthesized``, an id toolwire made up (random per stream) is shown as that mark.
    """
    return [
        (
            synthesized if synthesized is not None and c.id_synthesized else c.call_id,
            c.name,
            c.index,
            c.arguments_raw,
            c.truncated,
        )
        for c in turn.calls
    ]


def expected_rows(calls: tuple[Call, ...]) -> list[CallRow]:
    """The rows :func:`call_rows` must give for these recorded calls."""
    return [(c.call_id, c.name, c.index, c.raw, c.truncated) for c in calls]


def usage_row(usage: Usage | None) -> tuple[int | None, int | None, int | None, int | None] | None:
    """``(input, output, total, reasoning)`` tokens, or ``None`` when no usage came."""
    if usage is None:
        return None
    return (usage.input_tokens, usage.output_tokens, usage.total_tokens, usage.reasoning_tokens)


def assert_finish(turn: Turn, expected: ExpectedTurn) -> None:
    """The turn ends as the recording says: why, in the provider's words, and whether it was cut."""
    assert turn.stop_reason == expected.stop
    assert turn.finish_raw == expected.finish_raw
    assert turn.truncated is expected.truncated
    assert turn.truncation_evidence == expected.evidence


def in_reads(body: bytes, size: int) -> list[bytes]:
    """``body`` in reads of ``size`` bytes (the last one shorter)."""
    return [body[i : i + size] for i in range(0, len(body), size)]


# -- the event stream -----------------------------------------------------------------------


def assert_stream_ends(events: list[Event], *, terminated: bool) -> None:
    """One ``Finish``, then one ``StreamEnd`` last, ``terminated`` as the recording says."""
    assert isinstance(events[-1], StreamEnd)
    assert events[-1].terminated is terminated
    assert isinstance(events[-2], Finish)
    assert sum(isinstance(e, Finish | StreamEnd) for e in events) == 2


def started_and_complete(
    events: list[Event],
) -> tuple[list[ToolCallStarted], list[ToolCallComplete]]:
    """Every ``ToolCallStarted`` and every ``ToolCallComplete``, in order."""
    started = [e for e in events if isinstance(e, ToolCallStarted)]
    complete = [e for e in events if isinstance(e, ToolCallComplete)]
    return started, complete


def call_events(
    events: list[Event], call_id: str
) -> list[ToolCallStarted | ToolCallArgumentsDelta | ToolCallComplete]:
    """The start, argument deltas and completion of one call, in order."""
    return [
        e
        for e in events
        if isinstance(e, ToolCallStarted | ToolCallArgumentsDelta | ToolCallComplete)
        and e.call_id == call_id
    ]


def joined_deltas(events: list[Event], call_id: str) -> str:
    """The argument deltas of one call, joined."""
    return "".join(
        e.delta for e in events if isinstance(e, ToolCallArgumentsDelta) and e.call_id == call_id
    )
