"""``ToolResult``: the one answer to one tool call, whoever produced it.

It lives in the core because both directions need it: the agent-loop helpers produce results
(:mod:`toolwire.loop`) and every provider's history format writes them back
(:mod:`toolwire.adapters`). :func:`rejected_result` is here for the same reason: the loop
answers a rejected call with it, and so does every healing format's follow-up request.
"""

from __future__ import annotations

from typing import Any, Literal

import msgspec

from .turn import CallRecord

__all__ = ["ResultStatus", "ToolResult", "rejected_result"]

ResultStatus = Literal["ok", "error", "rejected", "denied", "not_run"]


class ToolResult(msgspec.Struct, frozen=True, kw_only=True):
    """The one answer to one tool call, ready to become a tool-result message.

    ``status`` says where it came from: ``ok`` (the tool returned), ``error`` (the tool raised),
    ``rejected`` (the judge refused the call), ``denied`` (``approve`` said no) or ``not_run``
    (the turn was stopped or cancelled). ``is_error`` is true for every status but ``ok``.
    """

    call_id: str
    name: str
    content: str
    status: ResultStatus
    value: Any = None

    @property
    def is_error(self) -> bool:
        """True unless the tool ran and returned."""
        return self.status != "ok"


def rejected_result(call: CallRecord) -> ToolResult:
    """The synthesized error result of a rejected (or unjudged) call."""
    verdict = call.verdict
    if verdict is not None and verdict.message:
        content = verdict.message
    else:
        content = (
            f"Tool call {call.call_id} to `{call.name}` was not checked by toolwire and was not "
            "run. Send the call again."
        )
    return ToolResult(call_id=call.call_id, name=call.name, content=content, status="rejected")
