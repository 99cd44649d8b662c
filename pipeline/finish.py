"""One place that decides how a turn ended: the typed stop reason and the truncation evidence.

Adapters only translate their provider's raw finish value (``finish_reason_from_openai`` and
friends) and report what they saw; the decision, which is the same for every provider, is here.
"""

from __future__ import annotations

from .accumulate import CallAccumulator
from .events import ClosedBy, CutBy, Event, Finish, StopReason, TruncationEvidence
from .jsonscan import unterminated

__all__ = ["FinishFacts", "close_calls_and_finish", "decide_finish"]


class FinishFacts:
    """What an adapter saw by the end of a stream. Mutable, private to one run."""

    __slots__ = (
        "error",
        "length_signal",
        "max_tokens",
        "output_tokens",
        "raw",
        "reason",
        "terminated",
    )

    def __init__(self, max_tokens: int | None) -> None:
        self.max_tokens = max_tokens
        #: The provider's raw finish value, if any (``"length"``, ``"MAX_TOKENS"``...).
        self.raw: str | None = None
        #: The normalized reason of that raw value, if any.
        self.reason: StopReason | None = None
        #: The provider said the output hit the token limit (finish reason, incomplete_details).
        self.length_signal = False
        #: Output tokens from the last usage report.
        self.output_tokens: int | None = None
        #: The provider's own end marker was seen (``[DONE]``, ``message_stop``...).
        self.terminated = False
        #: A fatal in-band error was received.
        self.error = False


def decide_finish(facts: FinishFacts, *, has_calls: bool, unterminated: bool) -> Finish:
    """Build the one ``Finish`` event of a run from everything that was seen.

    ``unterminated`` is whether any call still open at the end stops inside a value (computed by
    the caller, which knows the open calls). The stop reason is ``length`` whenever any evidence
    of truncation exists, ``disconnected`` when the stream simply stopped, ``error`` after a
    fatal in-band error.
    """
    evidence: list[TruncationEvidence] = []
    if facts.length_signal:
        evidence.append("finish_reason")
    if (
        facts.max_tokens is not None
        and facts.output_tokens is not None
        and facts.output_tokens >= facts.max_tokens
    ):
        evidence.append("usage_at_max_tokens")
    if unterminated:
        evidence.append("arguments_unterminated")
    no_finish = facts.raw is None and not facts.terminated and not facts.error
    if no_finish:
        evidence.append("no_finish")

    reason: StopReason
    if facts.error:
        reason = "error"
    elif no_finish:
        reason = "disconnected"
    elif evidence:
        reason = "length"
    elif facts.reason is not None:
        reason = facts.reason
        if reason == "end_turn" and has_calls:
            # Some servers (Ollama's /v1, vLLM) say "stop" on a turn that called tools.
            reason = "tool_calls"
    else:
        # Terminated with no finish value (OpenRouter/Kimi never sends one).
        reason = "tool_calls" if has_calls else "end_turn"
    return Finish(reason=reason, raw=facts.raw, truncated=bool(evidence), evidence=tuple(evidence))


def close_calls_and_finish(calls: CallAccumulator, facts: FinishFacts, out: list[Event]) -> Finish:
    """Close the calls still open at the end of a stream and return the run's ``Finish``.

    Output is generated one token after another, so when the output was cut only the call being
    generated last can be cut, plus any open call whose text visibly stops inside a value; only
    those are marked ``truncated``. A fatal error or a dropped stream cuts the last call too.
    """
    open_calls = calls.open_calls()
    cut = {call.call_id for call in open_calls if unterminated(call.arguments())}
    finish = decide_finish(facts, has_calls=bool(calls.calls), unterminated=bool(cut))
    latest = calls.latest
    if (finish.truncated or facts.error) and latest is not None and not latest.closed:
        cut.add(latest.call_id)
    cut_by: CutBy = (
        "error"
        if facts.error
        else "disconnected"
        if finish.reason == "disconnected"
        else "token_limit"
    )
    closed_by: ClosedBy = "finish" if facts.raw is not None else "end_of_stream"
    calls.close_all(out, closed_by, frozenset(cut), cut_by)
    return finish
