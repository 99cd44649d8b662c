"""The judge stage: every complete tool call leaves as exactly one ready / repaired / rejected.

It applies :func:`toolwire.judge.parse_arguments` to each ``ToolCallComplete`` with the tool
definitions the caller passed, and replaces the event with the judged one (which keeps the
complete event inside, as ``call``). Every other event passes through untouched.

A call cut off at the token limit whose text happens to parse is rejected as ``truncated`` by
default (its last value may be short, a field may be missing); ``truncated_calls="allow"`` lets
it run, still marked ``truncated``. That choice is the caller's, so it is an option here.

One answer for one text (issue 28): the adapter decides the turn's ``Finish`` from cheap facts
(``core/jsonscan.py``) before any call is judged; the judge reads each call's text whole and
may know more. When the judge finds a call cut (``truncated``) that the stream had not marked
cut, the turn is cut too: the ``Finish`` that follows gets ``arguments_unterminated`` with
``cut_by="unknown"`` (all that is known), as the adapters do for a call whose text visibly
stops. And a call read from the model's markup whose family's end marker closed it was not cut
whatever its text: arguments that end inside a value there are ``not_json`` (a closing bracket
or quote is missing), not ``truncated``.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any, Literal

import anyio.to_thread
import msgspec

from ..core.errors import ConfigurationError
from ..core.events import (
    Event,
    Finish,
    ToolCallComplete,
    ToolCallReady,
    ToolCallRejected,
    ToolCallRepaired,
)
from ..core.stage import EventStep, SyncStage
from ..core.verdict import Verdict
from ..judge import DEFAULT_POLICY, Policy, Toolset, parse_arguments, render_message
from ..judge._transit import damaged_verdict
from ..judge._worker import WorkerRequest, unchecked_verdict
from .judge_process import DEFAULT_CHECK_BUDGET, ON_LOOP_CHECK_NS, ask_worker, checked_budget
from .server_parsed import judge_server_parsed

__all__ = ["DEFAULT_OFFLOAD_ABOVE", "JudgeStage"]


#: Calls with more characters of arguments than this are judged in a worker thread, so that a
#: large malformed call never stalls the event loop: the worst shape costs about 0.35 µs per byte
#: (``bench/bench_worst_case_judge.py --ms``), so a call judged on the loop takes ~11 ms at most.
DEFAULT_OFFLOAD_ABOVE = 32 * 1024


class JudgeStage(SyncStage):
    """Judge every complete tool call against the tools offered to the model.

    ``offload_above``: calls whose arguments are longer (in characters) are judged in a worker
    thread (``anyio.to_thread``); the rest, nearly every call, on the event loop.

    ``check_budget``: a call whose schema check is priced too high for the event loop (see
    :mod:`toolwire.stages.judge_process`) is judged in a worker process, waiting at most this
    many seconds for it and then checked for at most as long; past either it is rejected as
    ``unchecked`` (toolwire could not check it; nothing was found wrong). ``None`` judges it in
    a worker thread, with no budget (the validator then holds the event loop while it runs).
    """

    def __init__(
        self,
        tools: Sequence[Any] | Toolset | None = None,
        policy: Policy | None = None,
        truncated_calls: Literal["reject", "allow"] = "reject",
        *,
        offload_above: int = DEFAULT_OFFLOAD_ABOVE,
        check_budget: float | None = DEFAULT_CHECK_BUDGET,
    ) -> None:
        if type(offload_above) is not int or offload_above < 0:
            raise ConfigurationError(f"offload_above must be an int >= 0, got {offload_above!r}")
        self.offload_above = offload_above
        self.check_budget = checked_budget(check_budget)
        #: Each tool's schema as canonical JSON, as a worker process receives it.
        self._schema_json: dict[str, bytes] = {}
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
        """The judged event for one complete call (the first, for a server's quote of several:
        see :meth:`judge_all`)."""
        if call.server_parse is not None:
            return self.judge_all(call)[0]
        return self._judge_text(call, self.policy) if call.damage is None else _damaged(call)

    def judge_all(self, call: ToolCallComplete) -> list[Event]:
        """The judged events for one complete call: one, or one per call a server's error
        quoted (``call.server_parse``: :mod:`toolwire.stages.server_parsed`)."""
        if call.server_parse is not None:
            return judge_server_parsed(call, self.toolset, self.policy, self._judge_text)
        return [self.judge(call)]

    def _judge_text(self, call: ToolCallComplete, policy: Policy) -> Event:
        """The judged event for a call judged on its text (no damage) with ``policy``."""
        toolset = self.toolset
        spec = toolset.get(call.name) if toolset is not None else None
        verdict = parse_arguments(
            call.arguments_raw,
            tool=call.name,
            schema=spec.schema if spec is not None else None,
            policy=policy,
            truncated=call.truncated,
            known_tools=toolset,
            arguments_form=call.arguments_form,
            call_id=call.call_id,
        )
        return self._judged(call, verdict)

    def checks_elsewhere(self, call: ToolCallComplete) -> bool:
        """Whether ``call``'s schema check is priced too high for the event loop (and so is
        judged in a worker process: see ``check_budget``)."""
        if self.check_budget is None or call.server_parse is not None or call.damage is not None:
            return False
        if len(call.arguments_raw) > self.policy.max_bytes:
            return False  # too large: refused before any schema is looked at
        spec = self.toolset.get(call.name) if self.toolset is not None else None
        if spec is None or spec.model is not None:
            return False
        return spec.checker.costs_more_than(call.arguments_raw, ON_LOOP_CHECK_NS)

    async def judge_elsewhere(self, call: ToolCallComplete) -> Event:
        """The judged event for a call :meth:`checks_elsewhere`, judged in a worker process
        within ``check_budget`` (``unchecked`` past it)."""
        budget = self.check_budget
        spec = self.toolset.get(call.name) if self.toolset is not None else None
        assert budget is not None
        assert spec is not None
        schema_json = self._schema_json.get(spec.name)
        if schema_json is None:
            schema_json = _canonical(spec.json_schema)
            self._schema_json[spec.name] = schema_json
        request = WorkerRequest(
            raw=call.arguments_raw,
            tool=call.name,
            schema_json=schema_json,
            policy=self.policy,
            truncated=call.truncated,
            arguments_form=call.arguments_form,
            call_id=call.call_id,
        )
        answer = await ask_worker(request, budget)
        if isinstance(answer, str):
            verdict = unchecked_verdict(
                raw=call.arguments_raw,
                tool=call.name,
                call_id=call.call_id,
                budget=budget,
                why=answer,
                truncated=call.truncated is True,
            )
            return ToolCallRejected(call=call, verdict=verdict)
        return self._judged(call, answer)

    def _judged(self, call: ToolCallComplete, verdict: Verdict) -> Event:
        """The judged event for ``call`` and the judge's ``verdict`` on its text."""
        if verdict.outcome == "rejected":
            if verdict.reason == "truncated" and _closed_by_its_markup(call):
                verdict = _unterminated_in_markup(verdict, call)
            elif verdict.reason == "truncated":
                # The judge saw only the text; the stream knows what cut it: say that.
                verdict = _with_cut_message(verdict, call)
            return ToolCallRejected(call=call, verdict=verdict)
        if verdict.truncated and self.truncated_calls == "reject":
            return ToolCallRejected(call=call, verdict=_as_truncated(verdict, call))
        if verdict.outcome == "repaired":
            return ToolCallRepaired(call=call, verdict=verdict)
        return ToolCallReady(call=call, verdict=verdict)


_canonical = msgspec.json.Encoder(order="sorted").encode


def _found_cut(event: Event) -> bool:
    """The judged call's verdict says its text was cut."""
    verdict = getattr(event, "verdict", None)
    return isinstance(verdict, Verdict) and verdict.truncated


def _finish_cut(finish: Finish) -> Finish:
    """``finish``, cut: a call's text stops inside a value, and nothing else shows why."""
    if finish.truncated:
        return finish
    return msgspec.structs.replace(
        finish,
        truncated=True,
        evidence=(*finish.evidence, "arguments_unterminated"),
        cut_by="unknown",
    )


def _damaged(call: ToolCallComplete) -> Event:
    """Never judged on its text: a call that lost its middle can still parse."""
    assert call.damage is not None
    return ToolCallRejected(
        call=call,
        verdict=damaged_verdict(
            tool=call.name,
            call_id=call.call_id,
            raw=call.arguments_raw,
            damage=call.damage,
            received_length=call.arguments_length or len(call.arguments_raw),
        ),
    )


_CUT_DETAILS = {
    "token_limit": "the output stopped at the token limit while this call was being written",
    "disconnected": "the stream stopped while this call was being written",
    "error": "the provider failed while this call was being written",
    "unknown": "the call's text stops inside a value; nothing in the stream shows why",
}


def _as_truncated(verdict: Verdict, call: ToolCallComplete) -> Verdict:
    rejected = msgspec.structs.replace(
        verdict,
        outcome="rejected",
        arguments=None,
        repairs=(),
        reason="truncated",
        detail=_CUT_DETAILS[call.cut_by or "unknown"],
    )
    return _with_cut_message(rejected, call)


def _closed_by_its_markup(call: ToolCallComplete) -> bool:
    """A call read from the model's markup whose family's end marker came after it (Kimi's
    ``<|tool_call_end|>``, harmony's ``<|call|>``...): its text was not cut."""
    return call.origin == "text" and call.closed_by == "call_end" and not call.truncated


def _unterminated_in_markup(verdict: Verdict, call: ToolCallComplete) -> Verdict:
    """``not_json`` for arguments that end inside a value before their markup's end marker."""
    detail = (
        f"{verdict.detail}, yet the call's markup was closed after them: a closing bracket or "
        "quote is missing"
    )
    rejected = msgspec.structs.replace(verdict, reason="not_json", detail=detail, truncated=False)
    message = render_message(rejected, tool=call.name, raw=call.arguments_raw, call_id=call.call_id)
    return msgspec.structs.replace(rejected, message=message)


def _with_cut_message(verdict: Verdict, call: ToolCallComplete) -> Verdict:
    message = render_message(
        verdict,
        tool=call.name,
        raw=call.arguments_raw,
        call_id=call.call_id,
        cut_by=call.cut_by,
        cut_facts=call.cut_facts,
    )
    return msgspec.structs.replace(verdict, message=message)


class _JudgeStep:
    __slots__ = ("_cut_unseen", "_limit", "_priced_call", "_priced_elsewhere", "_stage")

    def __init__(self, stage: JudgeStage) -> None:
        self._stage = stage
        self._limit = stage.offload_above
        #: A call the judge found cut that the stream had not marked cut: the ``Finish`` must
        #: say the turn was cut (see the module docstring).
        self._cut_unseen = False
        #: The last call priced by :meth:`_elsewhere`, and its answer.
        self._priced_call: ToolCallComplete | None = None
        self._priced_elsewhere = False

    def is_heavy(self, event: Event) -> bool:
        """A call this large is judged in a worker thread (see ``JudgeStage.offload_above``),
        and one whose schema check is costly in a worker process (``check_budget``)."""
        return type(event) is ToolCallComplete and (
            len(event.arguments_raw) > self._limit or self._elsewhere(event)
        )

    def _elsewhere(self, call: ToolCallComplete) -> bool:
        """``checks_elsewhere(call)``, priced once per call: the runner asks :meth:`is_heavy`
        of one call up to three times (``any_heavy``, its own loop, ``feed_step``), and
        :meth:`feed_heavy` asks again, and pricing reads the whole arguments."""
        if call is not self._priced_call:
            self._priced_call = call
            self._priced_elsewhere = self._stage.checks_elsewhere(call)
        return self._priced_elsewhere

    async def feed_heavy(self, event: Event) -> list[Event]:
        """:meth:`feed` for an event :meth:`is_heavy` chose, away from the event loop."""
        if type(event) is ToolCallComplete and self._elsewhere(event):
            return self._noted(event, [await self._stage.judge_elsewhere(event)])
        return await anyio.to_thread.run_sync(_feed_listed, self, event)

    def any_heavy(self, events: list[Event]) -> bool:
        """Whether a batch holds a call :meth:`is_heavy` would send to a worker thread."""
        return ToolCallComplete in map(type, events) and any(map(self.is_heavy, events))

    def feed_batch(self, events: list[Event]) -> list[Event]:
        """:meth:`feed` for a batch: one with no complete call (text, argument pieces: most of
        a stream) passes as it is, after one look at its event types."""
        if not self._cut_unseen and ToolCallComplete not in map(type, events):
            return events
        out: list[Event] = []
        for event in events:
            out.extend(self.feed(event))
        return out

    def feed(self, event: Event) -> Iterable[Event]:
        if type(event) is ToolCallComplete:
            if event.server_parse is not None:
                judged = self._stage.judge_all(event)
            else:
                judged = [self._stage.judge(event)]
            return self._noted(event, judged)
        if type(event) is Finish and self._cut_unseen:
            self._cut_unseen = False
            return (_finish_cut(event),)
        return (event,)

    def _noted(self, call: ToolCallComplete, judged: list[Event]) -> list[Event]:
        """``judged``, after noting a cut the stream had not seen (see the module docstring)."""
        if not call.truncated and any(map(_found_cut, judged)):
            self._cut_unseen = True
        return judged

    def finish(self) -> Iterable[Event]:
        return ()


def _feed_listed(step: _JudgeStep, event: Event) -> list[Event]:
    return list(step.feed(event))
