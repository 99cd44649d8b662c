"""One place that decides how a turn ended: the typed stop reason and the truncation evidence.

Adapters only translate their provider's raw finish value (``finish_reason_from_openai`` and
friends) and report what they saw; the decision, which is the same for every provider, is here.

The rule that keeps it true: the output-token limit is named (``reason == "length"``,
``cut_by == "token_limit"``) only on evidence of it: the provider said so, usage reached the
request's ``max_tokens``, or the provider's profile documents that the server hides its length
finish and nothing speaks against the limit. A call whose text stops inside a value with no
such evidence is still cut (``truncated``, never run), but its cause is ``unknown``: a stop
sequence, a server's tool parser, anything. The message then states the facts (finish value,
usage, limit, stop sequences), not the likeliest story.
"""

from __future__ import annotations

from .accumulate import CallAccumulator
from .events import (
    ClosedBy,
    CutBy,
    CutFacts,
    Event,
    Finish,
    StopReason,
    TruncationEvidence,
)
from .jsonscan import unterminated

__all__ = ["FinishFacts", "close_calls_and_finish", "decide_finish"]

#: Usage this many tokens or more below ``max_tokens`` speaks against the limit (servers count
#: a closing special token differently, so one token of slack is allowed).
_BELOW_LIMIT_SLACK = 2


class FinishFacts:
    """What an adapter saw by the end of a stream, and what the request said. Private to one run."""

    __slots__ = (
        "error",
        "hides_length_finish",
        "length_signal",
        "max_tokens",
        "output_tokens",
        "parser_cut",
        "parser_failed",
        "raw",
        "reason",
        "stop_sequences",
        "terminated",
    )

    def __init__(
        self,
        max_tokens: int | None,
        *,
        stop_sequences: tuple[str, ...] | None = None,
        hides_length_finish: bool = False,
    ) -> None:
        self.max_tokens = max_tokens
        #: The request's stop sequences: ``None`` when the request is not known.
        self.stop_sequences = stop_sequences
        #: The provider profile says this server reports a normal finish for a call cut at the
        #: token limit (llama-cpp-python).
        self.hides_length_finish = hides_length_finish
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
        #: A fatal error was received (in band, an HTTP status, a body that is no stream).
        self.error = False
        #: The server's tool parser failed on the model's call and answered an error that
        #: quoted it: the turn ends with that call (``tool_calls``), not in ``error``.
        self.parser_failed = False
        #: ... and the parser said the call's text ended early (``unexpected end of JSON input``).
        self.parser_cut = False

    def usage_at_limit(self) -> bool:
        """Usage reached the request's ``max_tokens``."""
        return (
            self.max_tokens is not None
            and self.output_tokens is not None
            and self.output_tokens >= self.max_tokens
        )

    def usage_below_limit(self) -> bool:
        """Usage is known and clearly below a known ``max_tokens``: evidence against the limit."""
        return (
            self.max_tokens is not None
            and self.output_tokens is not None
            and self.output_tokens <= self.max_tokens - _BELOW_LIMIT_SLACK
        )

    def cut_facts(self) -> CutFacts:
        """The facts a message about a cut call may state."""
        return CutFacts(
            finish_raw=self.raw,
            output_tokens=self.output_tokens,
            max_tokens=self.max_tokens,
            stop_sequences=self.stop_sequences,
        )


def decide_finish(
    facts: FinishFacts,
    *,
    has_calls: bool,
    unterminated: bool,
    unfinished: bool = False,
    call_open: bool = False,
) -> Finish:
    """Build the one ``Finish`` event of a run from everything that was seen.

    ``unterminated`` is whether any call still open at the end stops inside a value,
    ``unfinished`` whether a call that the provider ends explicitly never got its end, and
    ``call_open`` whether the call being written last was still open (all computed by the
    caller, which knows the open calls). The stop reason is ``length`` only on evidence of
    the token limit, ``disconnected`` when the stream simply stopped, ``error`` after a fatal
    error; otherwise it is what the provider said.
    """
    evidence: list[TruncationEvidence] = []
    if facts.length_signal:
        evidence.append("finish_reason")
    if facts.usage_at_limit():
        evidence.append("usage_at_max_tokens")
    if (
        (unterminated or unfinished)
        and not evidence
        and facts.hides_length_finish
        and not facts.stop_sequences
        and not facts.usage_below_limit()
    ):
        evidence.append("server_profile")
    limit = bool(evidence)
    if unterminated:
        evidence.append("arguments_unterminated")
    if unfinished:
        evidence.append("call_unfinished")
    no_finish = (
        facts.raw is None and not facts.terminated and not facts.error and not facts.parser_failed
    )
    if no_finish:
        evidence.append("no_finish")
    if facts.error and call_open:
        evidence.append("error_mid_call")
    if facts.parser_cut:
        evidence.append("server_parser")

    reason: StopReason
    cut_by: CutBy | None = None
    if facts.error:
        reason = "error"
        cut_by = "error" if evidence else None
    elif no_finish:
        reason = "disconnected"
        cut_by = "disconnected"
    elif limit:
        reason = "length"
        cut_by = "token_limit"
    else:
        cut_by = "unknown" if unterminated or unfinished or facts.parser_cut else None
        if facts.reason is not None:
            reason = facts.reason
            if reason == "end_turn" and has_calls:
                # Some servers (Ollama's /v1, vLLM) say "stop" on a turn that called tools.
                reason = "tool_calls"
        else:
            # Terminated with no finish value (OpenRouter/Kimi never sends one).
            reason = "tool_calls" if has_calls else "end_turn"
    return Finish(
        reason=reason,
        raw=facts.raw,
        truncated=bool(evidence),
        evidence=tuple(evidence),
        cut_by=cut_by,
    )


def close_calls_and_finish(calls: CallAccumulator, facts: FinishFacts, out: list[Event]) -> Finish:
    """Close the calls still open at the end of a stream and return the run's ``Finish``.

    Output is generated one token after another, so when the output was cut only the call being
    generated last can be cut, plus any open call whose text visibly stops inside a value; only
    those are marked ``truncated``. The token limit, a fatal error or a dropped stream cuts the
    last call even when its text looks complete; a cut of unknown cause cuts only the calls whose
    text visibly stops.
    """
    open_calls = calls.open_calls()
    stops_inside = {
        call.call_id
        for call in open_calls
        if call.damage != "too_large"
        # Markup a server's error quoted is not JSON: its own reader says where it stops.
        and (call.server_parse is None or call.server_parse.quoted == "arguments")
        and unterminated(call.arguments())
    }
    unfinished = {call.call_id for call in open_calls if call.expects_end}
    cut = stops_inside | unfinished
    latest = calls.latest
    finish = decide_finish(
        facts,
        has_calls=bool(calls.calls),
        unterminated=bool(stops_inside),
        unfinished=bool(unfinished - stops_inside),
        call_open=latest is not None and not latest.closed,
    )
    cut_by: CutBy = finish.cut_by or ("error" if facts.error else "token_limit")
    if cut_by != "unknown" and (finish.truncated or facts.error):
        # The limit, a drop or a failure stops the call being written, whatever its text looks
        # like; with an unknown cause only the calls whose text visibly stops are cut.
        if latest is not None and not latest.closed:
            cut.add(latest.call_id)
    if facts.parser_cut and latest is not None and not latest.closed:
        cut.add(latest.call_id)  # the server's parser said the call's text ended early
    closed_by: ClosedBy = "finish" if facts.raw is not None else "end_of_stream"
    calls.close_all(out, closed_by, frozenset(cut), cut_by, facts.cut_facts())
    return finish
