"""The judge stage: every complete tool call leaves as exactly one ready / repaired / rejected.

It applies :func:`toolwire.judge.parse_arguments` to each ``ToolCallComplete`` with the tool
definitions the caller passed, and replaces the event with the judged one (which keeps the
complete event inside, as ``call``). Every other event passes through untouched.

A call cut off at the token limit whose text happens to parse is rejected as ``truncated`` by
default (its last value may be short, a field may be missing); ``truncated_calls="allow"`` lets
it run, still marked ``truncated``. That choice is the caller's, so it is an option here.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any, Literal

import msgspec

from ..judge import DEFAULT_POLICY, Policy, Toolset, parse_arguments, render_message
from ..pipeline.errors import ConfigurationError
from ..pipeline.events import (
    Event,
    ToolCallComplete,
    ToolCallReady,
    ToolCallRejected,
    ToolCallRepaired,
)
from ..pipeline.stage import EventStep, SyncStage
from ..pipeline.verdict import Verdict

__all__ = ["JudgeStage"]


class JudgeStage(SyncStage):
    """Judge every complete tool call against the tools offered to the model."""

    def __init__(
        self,
        tools: Sequence[Any] | Toolset | None = None,
        policy: Policy | None = None,
        truncated_calls: Literal["reject", "allow"] = "reject",
    ) -> None:
        if truncated_calls not in ("reject", "allow"):
            raise ConfigurationError(
                f"truncated_calls must be 'reject' or 'allow', got {truncated_calls!r}"
            )
        if policy is not None and not isinstance(policy, Policy):
            raise ConfigurationError(f"policy must be a toolwire Policy, got {policy!r}")
        self.toolset = tools if isinstance(tools, Toolset) or tools is None else Toolset(tools)
        self.policy = policy or DEFAULT_POLICY
        self.truncated_calls = truncated_calls

    def start(self) -> EventStep:
        """Stateless per run: judging one call never depends on another."""
        return _JudgeStep(self)

    def judge(self, call: ToolCallComplete) -> Event:
        """The judged event for one complete call."""
        toolset = self.toolset
        spec = toolset.get(call.name) if toolset is not None else None
        verdict = parse_arguments(
            call.arguments_raw,
            tool=call.name,
            schema=spec.schema if spec is not None else None,
            policy=self.policy,
            truncated=call.truncated,
            known_tools=toolset,
            arguments_form=call.arguments_form,
            call_id=call.call_id,
        )
        if verdict.outcome == "rejected":
            if verdict.reason == "truncated" and call.cut_by not in (None, "token_limit"):
                # Cut by a dropped or failed stream, not by the token limit: say so.
                message = render_message(
                    verdict,
                    tool=call.name,
                    raw=call.arguments_raw,
                    call_id=call.call_id,
                    cut_by=call.cut_by,
                )
                verdict = msgspec.structs.replace(verdict, message=message)
            return ToolCallRejected(call=call, verdict=verdict)
        if verdict.truncated and self.truncated_calls == "reject":
            return ToolCallRejected(call=call, verdict=_as_truncated(verdict, call))
        if verdict.outcome == "repaired":
            return ToolCallRepaired(call=call, verdict=verdict)
        return ToolCallReady(call=call, verdict=verdict)


def _as_truncated(verdict: Verdict, call: ToolCallComplete) -> Verdict:
    rejected = msgspec.structs.replace(
        verdict,
        outcome="rejected",
        arguments=None,
        repairs=(),
        reason="truncated",
        detail="the output stopped at the token limit while this call was being written",
    )
    message = render_message(
        rejected,
        tool=call.name,
        raw=call.arguments_raw,
        call_id=call.call_id,
        cut_by=call.cut_by or "token_limit",
    )
    return msgspec.structs.replace(rejected, message=message)


class _JudgeStep:
    __slots__ = ("_stage",)

    def __init__(self, stage: JudgeStage) -> None:
        self._stage = stage

    def feed(self, event: Event) -> Iterable[Event]:
        if type(event) is ToolCallComplete:
            return (self._stage.judge(event),)
        return (event,)

    def finish(self) -> Iterable[Event]:
        return ()
