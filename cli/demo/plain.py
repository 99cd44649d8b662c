"""What a plain agent loop does with the very same calls: ``json.loads(arguments or "{}") or {}``.

The loop most tutorials write runs, for each call of a turn, in order::

    arguments = json.loads(call.function.arguments or "{}") or {}
    result = tools[call.function.name](**arguments)

No tool runs here: each call is classified by what that loop *would* do with its raw text,
next to what toolwire did with the same call.

- ``crashed``: ``json.loads`` raises (or the value is no object, and ``**arguments`` raises):
  the exception ends the loop in the middle of the turn.
- ``not_reached``: a later call of a turn that crashed.
- ``ran_bad``: the tool runs with arguments toolwire did not let run: a call cut off at the
  token limit whose text happens to parse (partial arguments), an empty text read as ``{}``
  (made-up arguments), arguments that miss a required field or have the wrong type, an unknown
  tool, or a repaired call whose plain parse differs from the repair.
- ``ran_same``: the tool runs with exactly the arguments toolwire ran it with.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any, Literal

import msgspec

from ...core.turn import CallRecord

__all__ = ["PlainAction", "PlainCall", "plain_loop"]

PlainAction = Literal["crashed", "not_reached", "ran_bad", "ran_same"]


class PlainCall(msgspec.Struct, frozen=True):
    """What the plain loop does with one call, and why."""

    action: PlainAction
    why: str


def _plain_arguments(raw: str) -> Any:
    """The plain loop's line, exactly: ``json.loads(raw or "{}") or {}`` (raises as it does)."""
    return json.loads(raw or "{}") or {}


def _one(call: CallRecord) -> PlainCall:
    try:
        arguments = _plain_arguments(call.arguments_raw)
    except ValueError as error:  # json.JSONDecodeError, and RecursionError is not expected here
        return PlainCall("crashed", f"json.loads raised: {error}")
    if not isinstance(arguments, dict):
        return PlainCall("crashed", f"**arguments raised: a JSON {type(arguments).__name__}")
    if not call.may_run:
        verdict = call.verdict
        reason = verdict.reason if verdict is not None else "unjudged"
        if call.truncated or reason == "truncated":
            why = "cut off, yet it parses: the tool runs with partial arguments"
        elif not call.arguments_raw.strip():
            why = "no arguments were sent: the tool runs with made-up {}"
        else:
            why = f"toolwire rejected it ({reason}): the tool runs with those arguments anyway"
        return PlainCall("ran_bad", why)
    if arguments != call.arguments:
        return PlainCall("ran_bad", "parses to other arguments than the repaired call")
    return PlainCall("ran_same", "the same arguments toolwire ran")


def plain_loop(calls: Sequence[CallRecord]) -> list[PlainCall]:
    """What the plain loop does with each call of one turn, in order (a crash ends the turn)."""
    actions: list[PlainCall] = []
    crashed = False
    for call in calls:
        if crashed:
            actions.append(PlainCall("not_reached", "an earlier call of the turn crashed the loop"))
            continue
        action = _one(call)
        crashed = action.action == "crashed"
        actions.append(action)
    return actions
