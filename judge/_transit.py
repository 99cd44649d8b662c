"""The rejection of a call whose text cannot be trusted as whole, whatever it looks like.

A piece of the stream that could not be read may have held any part of any call being written
then (``lost_fragment``); a call that passed the size limit while streaming was no longer kept
(``too_large``). Neither is judged on its text: a call that lost its middle can still parse
(``{"path": "/home/me/"}`` from ``{"path": "/home/me/old-backups/"}``), and must never run.
A call read from the model's markup whose JSON does not balance inside its complete wrapper
(``unbalanced``, ``stages/text_calls/_unbalanced.py``) is no call's arguments either: which
text is its arguments is not certain, and completing it would be a guess.
"""

from __future__ import annotations

from ..core.verdict import Verdict
from ._message import QUOTE_LIMIT, quote_received

__all__ = ["damaged_verdict"]


def _quote_head(head: str, total: int) -> str:
    """``Received ...`` for a call of which only ``head`` was kept, ``total`` characters long."""
    if total <= len(head):
        return quote_received(head)
    shown = quote_received(head[:QUOTE_LIMIT]).split(": ", 1)[1]
    return f"Received (first {min(len(head), QUOTE_LIMIT)} of {total} characters): {shown}"


def damaged_verdict(
    *,
    tool: str,
    call_id: str | None,
    raw: str,
    damage: str,
    received_length: int,
    limit: int | None = None,
) -> Verdict:
    """The rejection of a call whose text cannot be trusted as whole (``lost_fragment``,
    ``too_large`` or ``unbalanced``)."""
    subject = f"Tool call `{tool}`" + (f" (id {call_id})" if call_id else "")
    if damage == "too_large":
        limit_text = f"; the limit is {limit} characters" if limit is not None else ""
        detail = f"the arguments grew to {received_length} characters while streaming{limit_text}"
        message = "\n".join(
            [
                f"{subject} was not run: its arguments are too large ({received_length} "
                f"characters{limit_text}).",
                _quote_head(raw, received_length),
                "Send smaller arguments, or split the work into several smaller calls.",
            ]
        )
        reason = "too_large"
    elif damage == "unbalanced":
        detail = (
            "the call's JSON does not balance before the end of its tool-call markup: a "
            "closing bracket is missing, so which text is its arguments is not certain"
        )
        message = "\n".join(
            [
                f"{subject} was not run: the call is not valid JSON.",
                "Problem: its brackets do not balance before the end of its tool-call markup "
                "(a closing bracket is missing), so which text is its arguments is not certain.",
                quote_received(raw),
                f"Call `{tool}` again as one complete JSON object, every bracket closed.",
            ]
        )
        reason = "not_json"
    else:
        detail = "a piece of the stream that may have carried part of this call could not be read"
        message = "\n".join(
            [
                f"{subject} was not run: part of the stream that carried it was lost in transit "
                "(a piece could not be read), so its arguments may be missing any part.",
                quote_received(raw),
                f"Send the `{tool}` call again, complete.",
            ]
        )
        reason = "lost_in_transit"
    return Verdict(
        outcome="rejected",
        arguments=None,
        reason=reason,  # type: ignore[arg-type]  # one of the literals above
        message=message,
        detail=detail,
        raw_length=received_length,
    )
