"""Run text through the text-call stage and the judge, as a pipeline would, with no I/O."""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from toolwire.core.events import (
    Event,
    Finish,
    StreamEnd,
    TextCallMarkup,
    TextDelta,
    ToolCallComplete,
    ToolCallReady,
    ToolCallRejected,
    ToolCallRepaired,
)
from toolwire.core.turn import Turn, TurnBuilder
from toolwire.stages.judge import JudgeStage
from toolwire.stages.text_calls import TextCallStage

CORPUS = Path(__file__).parent / "corpus"


def corpus_cases(*names: str) -> list[dict[str, Any]]:
    """Every case of the named corpus files (all of them when none is named)."""
    files = names or (
        "cases.jsonl",
        "reports.jsonl",
        "synthetic_negatives.jsonl",
        "synthetic_cut_calls.jsonl",
        "synthetic_cut_reports.jsonl",
    )
    cases: list[dict[str, Any]] = []
    for name in files:
        with (CORPUS / name).open(encoding="utf-8") as lines:
            cases.extend(json.loads(line) for line in lines if line.strip())
    return cases


def _type_of(value: Any) -> str:
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "number"
    if isinstance(value, dict):
        return "object"
    if isinstance(value, list):
        return "array"
    return "string"


def tools_for(case: dict[str, Any]) -> list[dict[str, Any]]:
    """The case's tools, each with a schema typing the parameters its expected calls use, or
    the schema the report showed (``schemas``: tool name -> parameters) where it has one."""
    schemas: dict[str, Any] = case.get("schemas") or {}
    properties: dict[str, dict[str, Any]] = {name: {} for name in case.get("tools") or ()}
    expected = case.get("expected")
    calls = list(expected) if isinstance(expected, list) else []
    calls += [call for call in case.get("per_call", ()) if "arguments" in call]
    for call in calls:
        for key, value in call["arguments"].items():
            properties.setdefault(call["name"], {})[key] = {"type": _type_of(value)}
    return [
        {
            "type": "function",
            "function": {
                "name": name,
                "parameters": schemas.get(name) or {"type": "object", "properties": props},
            },
        }
        for name, props in properties.items()
    ]


def events_of(
    chunks: Iterable[str], *, finish: Finish | None = None, before_finish: Sequence[Event] = ()
) -> list[Event]:
    """The events an adapter would emit for text sent in ``chunks``."""
    events: list[Event] = [TextDelta(text=chunk) for chunk in chunks]
    events.extend(before_finish)
    events.append(finish or Finish(reason="end_turn", raw="stop"))
    events.append(StreamEnd())
    return events


def run_steps(stages: Sequence[Any], events: Iterable[Event], batch: int = 0) -> list[Event]:
    """Feed events through the stages' steps in order, as the runner's fused loop does: event
    by event, or (``batch`` > 0) in batches of that many through ``feed_batch`` where a step
    has it."""
    current = list(events)
    for stage in stages:
        step = stage.start()
        produced: list[Event] = []
        feed_batch = getattr(step, "feed_batch", None)
        if batch and feed_batch is not None:
            for start in range(0, len(current), batch):
                produced.extend(feed_batch(current[start : start + batch]))
        else:
            for event in current:
                produced.extend(step.feed(event))
        produced.extend(step.finish())
        current = produced
    return current


def run_text(
    chunks: Iterable[str],
    tools: Sequence[Any] | None,
    *,
    families: Any = None,
    finish: Finish | None = None,
    before_finish: Sequence[Event] = (),
    judge: bool = True,
) -> tuple[Turn, list[Event]]:
    """The turn and the events of text sent in ``chunks``, through the stage (and the judge)."""
    stages: list[Any] = [TextCallStage(families, tools)]
    if judge:
        stages.append(JudgeStage(tools))
    out = run_steps(stages, events_of(chunks, finish=finish, before_finish=before_finish))
    builder = TurnBuilder()
    for event in out:
        builder.add(event)
    return builder.build(), out


def visible_text(events: Iterable[Event]) -> str:
    """The text the events show."""
    return "".join(event.text for event in events if isinstance(event, TextDelta))


__all__ = [
    "CORPUS",
    "TextCallMarkup",
    "ToolCallComplete",
    "ToolCallReady",
    "ToolCallRejected",
    "ToolCallRepaired",
    "corpus_cases",
    "events_of",
    "run_steps",
    "run_text",
    "tools_for",
    "visible_text",
]
