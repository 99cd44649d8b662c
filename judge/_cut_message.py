"""The summary and advice of the message for a call cut short, true to what is known.

"You hit the token limit, split the work" is said only with evidence of the limit
(``cut_by == "token_limit"``): told wrongly, it makes a model shrink a call that was fine. A cut
of unknown cause states the facts that are known (the finish the server reported, the usage, the
limit, the request's stop sequences) and asks for the complete call.
"""

from __future__ import annotations

import json

from ..core.events import CutBy, CutFacts

__all__ = ["cut_summary_and_advice"]

#: Usage this many tokens or more below the limit shows the limit was not reached (the same
#: slack as ``toolwire.core.finish``).
_BELOW_LIMIT_SLACK = 2
_SPLIT_ADVICE = (
    "A plain retry will hit the same limit: send smaller arguments, "
    "or split the work into several smaller calls."
)
_MAX_STOPS_SHOWN = 4


def _again(tool: str) -> str:
    return f"Call `{tool}` again with the complete arguments."


def _stops(stops: tuple[str, ...]) -> str:
    shown = ", ".join(
        json.dumps(stop[:40], ensure_ascii=False) for stop in stops[:_MAX_STOPS_SHOWN]
    )
    more = len(stops) - _MAX_STOPS_SHOWN
    return shown + (f" and {more} more" if more > 0 else "")


def _facts_sentence(facts: CutFacts | None) -> str:
    """What the server and the request said, for a cut whose cause is not known."""
    if facts is None:
        return "Why it stopped is not known."
    said = (
        f"The server reported `{facts.finish_raw}`"
        if facts.finish_raw is not None
        else "The server reported no finish reason"
    )
    tokens, limit = facts.output_tokens, facts.max_tokens
    if tokens is not None and limit is not None:
        said += f" after {tokens} output tokens of the {limit} allowed"
        said += (
            ", so this was not the output-token limit."
            if tokens <= limit - _BELOW_LIMIT_SLACK
            else "."
        )
    elif tokens is not None:
        said += f" after {tokens} output tokens (the request's limit is not known)."
    elif limit is not None:
        said += f" and no token usage (the request allowed {limit} output tokens)."
    else:
        said += " and no token usage."
    stops = facts.stop_sequences
    if stops:
        said += (
            f" The request's stop sequences ({_stops(stops)}) may have ended it there, "
            "or the server cut it for another reason."
        )
    elif stops is not None and tokens is None:
        said += " The request had no stop sequence; why it stopped is not known."
    elif tokens is None:
        said += " Why it stopped is not known."
    return said


def cut_summary_and_advice(
    *, tool: str, raw_length: int, cut_by: CutBy | None, facts: CutFacts | None
) -> tuple[str, str]:
    """The summary and the advice of the message for a ``truncated`` call."""
    if cut_by == "token_limit":
        return (
            f"it was cut off at the output-token limit after {raw_length} characters, "
            "so it was not run.",
            _SPLIT_ADVICE,
        )
    if cut_by in ("disconnected", "error"):
        cause = "the stream dropped" if cut_by == "disconnected" else "the provider failed"
        return (
            f"{cause} after {raw_length} characters of its arguments, before the call "
            "was complete, so it was not run.",
            _again(tool),
        )
    return (
        f"its arguments end after {raw_length} characters, before the call was complete, "
        f"so it was not run. {_facts_sentence(facts)}",
        _again(tool),
    )
