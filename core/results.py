"""``ToolResult``: the one answer to one tool call, whoever produced it.

It lives in the core because both directions need it: the agent-loop helpers produce results
(:mod:`toolwire.loop`) and every provider's history format writes them back
(:mod:`toolwire.adapters`).
"""

from __future__ import annotations

from typing import Any, Literal

import msgspec

__all__ = ["ResultStatus", "ToolResult"]

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
