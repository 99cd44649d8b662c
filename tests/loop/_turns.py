"""Hand-built turns and a scripted stand-in judge, so these tests do not depend on the judge.

The stand-in judge is an ordinary user stage (``collect(..., judge=False, stages=[...])``): it
turns each ``ToolCallComplete`` into ``ToolCallReady`` when the text is a JSON object and the
call was not cut, into ``ToolCallRejected`` otherwise (or when the tool is in ``reject``).
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any

from toolwire.core.events import (
    Event,
    ToolCallComplete,
    ToolCallReady,
    ToolCallRejected,
)
from toolwire.core.stage import EventStep, SyncStage
from toolwire.core.turn import CallRecord, Turn
from toolwire.core.verdict import RejectReason, RepairKind, Verdict


def ok(call_id: str, name: str, raw: str, index: int = 0) -> CallRecord:
    arguments = json.loads(raw)
    verdict = Verdict(outcome="ok", arguments=arguments, raw_length=len(raw))
    return CallRecord(
        call_id=call_id, name=name, index=index, arguments_raw=raw, arguments=arguments,
        verdict=verdict,
    )


def repaired(
    call_id: str,
    name: str,
    raw: str,
    arguments: dict[str, Any],
    index: int = 0,
    repairs: tuple[RepairKind, ...] = ("trailing_commas",),
) -> CallRecord:
    verdict = Verdict(outcome="repaired", arguments=arguments, repairs=repairs)
    return CallRecord(
        call_id=call_id, name=name, index=index, arguments_raw=raw, arguments=arguments,
        verdict=verdict,
    )


def rejected(
    call_id: str,
    name: str,
    raw: str,
    index: int = 0,
    reason: RejectReason = "schema",
    message: str | None = None,
) -> CallRecord:
    verdict = Verdict(
        outcome="rejected",
        arguments=None,
        reason=reason,
        message=message if message is not None else f"`{name}` was rejected: {reason}.",
        truncated=reason == "truncated",
    )
    return CallRecord(
        call_id=call_id, name=name, index=index, arguments_raw=raw, verdict=verdict,
        truncated=reason == "truncated",
    )


def turn_of(*calls: CallRecord, **fields: Any) -> Turn:
    fields.setdefault("stop_reason", "tool_calls" if calls else "end_turn")
    return Turn(calls=calls, **fields)


class _ScriptedJudgeStep:
    def __init__(self, reject: frozenset[str]) -> None:
        self._reject = reject

    def feed(self, event: Event) -> Iterable[Event]:
        if not isinstance(event, ToolCallComplete):
            return (event,)
        try:
            arguments = json.loads(event.arguments_raw or "{}")
        except ValueError:
            arguments = None
        if (
            event.name in self._reject
            or event.truncated
            or not isinstance(arguments, dict)
        ):
            verdict = Verdict(
                outcome="rejected",
                arguments=None,
                reason="truncated" if event.truncated else "not_json",
                message=f"scripted rejection of `{event.name}`",
                truncated=event.truncated,
            )
            return (ToolCallRejected(call=event, verdict=verdict),)
        return (ToolCallReady(call=event, verdict=Verdict(outcome="ok", arguments=arguments)),)

    def finish(self) -> Iterable[Event]:
        return ()


class ScriptedJudge(SyncStage):
    """Ready when the arguments are a JSON object and not cut; rejected otherwise."""

    def __init__(self, reject: Iterable[str] = ()) -> None:
        self.reject = frozenset(reject)

    def start(self) -> EventStep:
        return _ScriptedJudgeStep(self.reject)


def chat_chunk(
    delta: dict[str, Any] | None = None,
    finish_reason: str | None = None,
    response_id: str = "chatcmpl-unit",
) -> dict[str, Any]:
    return {
        "id": response_id,
        "object": "chat.completion.chunk",
        "model": "unit",
        "choices": [{"index": 0, "delta": delta or {}, "finish_reason": finish_reason}],
    }


def sse(chunks: Iterable[dict[str, Any]], *, done: bool = True) -> bytes:
    body = b"".join(b"data: " + json.dumps(chunk).encode() + b"\n\n" for chunk in chunks)
    return body + (b"data: [DONE]\n\n" if done else b"")


def calls_body(
    *calls: tuple[str | None, str, str],
    finish_reason: str = "tool_calls",
    done: bool = True,
    response_id: str = "chatcmpl-unit",
) -> bytes:
    """A Chat stream of parallel calls ``(id or None, name, arguments)``, one chunk each."""
    chunks = [
        chat_chunk({"tool_calls": [{
            "index": index,
            **({"id": call_id} if call_id is not None else {}),
            "type": "function",
            "function": {"name": name, "arguments": arguments},
        }]}, response_id=response_id)
        for index, (call_id, name, arguments) in enumerate(calls)
    ]
    chunks.append(chat_chunk(finish_reason=finish_reason, response_id=response_id))
    return sse(chunks, done=done)
