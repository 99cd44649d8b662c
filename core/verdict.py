"""What the judge decided about one tool call's arguments.

A ``Verdict`` is plain data so that it can travel inside events, be printed by ``toolwire check``
and be compared in tests. It lives in ``core`` (not ``judge``) because events carry it and
events must not depend on the judge's implementation.
"""

from __future__ import annotations

from typing import Any, Literal

import msgspec

__all__ = ["Outcome", "RejectReason", "RepairKind", "Verdict"]

Outcome = Literal["ok", "repaired", "rejected"]

RejectReason = Literal[
    "truncated",
    "not_json",
    "wrong_type",
    "ambiguous",
    "schema",
    "unknown_tool",
    "too_large",
    "lost_in_transit",
    "server_could_not_parse",
    # toolwire could not finish checking the arguments in time: nothing was found wrong.
    "unchecked",
]

RepairKind = Literal[
    "empty",
    "null_as_empty",
    "double_encoded",
    "fence",
    "prose",
    "template_markers",
    "wrapping_braces",
    "bare_keys",
    "single_quoted_keys",
    "quote_tokens",
    "python_literal",
    "trailing_commas",
    "control_chars",
    "invalid_escapes",
    "envelope",
]


class Verdict(msgspec.Struct, frozen=True, kw_only=True, gc=False):
    """The judge's decision on one raw arguments string.

    ``outcome`` is ``ok`` (valid as sent; ``arguments`` is exactly what the text encodes),
    ``repaired`` (``repairs`` lists every repair applied, in order) or ``rejected`` (``reason``
    says why and ``message`` is the text the model will read). ``arguments`` is always a dict
    when the call may run and always ``None`` when it was rejected.
    """

    outcome: Outcome
    arguments: dict[str, Any] | None
    repairs: tuple[RepairKind, ...] = ()
    reason: RejectReason | None = None
    message: str | None = None
    #: Technical detail for logs and spans: the parser error or the schema errors, one per line.
    detail: str | None = None
    #: Character offset in the raw text where parsing stopped, when a parser failed.
    position: int | None = None
    #: Length of the raw arguments text in characters.
    raw_length: int = 0
    #: The stream or the text showed the call was cut off at the output-token limit.
    truncated: bool = False

    @property
    def may_run(self) -> bool:
        """True when the call has arguments that passed the judge (ok or repaired)."""
        return self.outcome != "rejected"

    def to_public_dict(self) -> dict[str, Any]:
        """The five fields of the documented verdict JSON (``toolwire check``)."""
        return {
            "outcome": self.outcome,
            "arguments": self.arguments,
            "repairs": list(self.repairs),
            "reason": self.reason,
            "message": self.message,
        }
