"""The requests of a healed exchange: which to heal, what goes upstream, and the follow-up.

All sans-I/O, on decoded Chat Completions bodies:

- :func:`plan_request` decides whether a client's request is healed at all and what goes
  upstream. A request is healed when it is a JSON object with a ``messages`` list, offers
  ``tools``, and asks for one choice. Anything else (no tools, the legacy ``functions``, ``n``
  above 1, a body that is not JSON) passes upstream untouched: there is no call to judge, or a
  response toolwire would not write back faithfully. A streamed request gets
  ``stream_options.include_usage`` (usage is evidence of the token limit, and what a retry
  costs); nothing else of the body changes, and a body that already asks for usage goes up byte
  for byte.
- :func:`follow_up_body` is the request that asks again: the previous request's body (same
  model, tools, ``tool_choice``, everything), plus the assistant turn replayed safely and one
  result per call, written by the provider's history format (a rejected call replayed with
  ``{}`` and answered with toolwire's message; for llama-cpp-python, results as ``user``
  messages, the form its prompt really shows the model). A call that was accepted is answered
  with :data:`ACCEPTED_NOTE`: it went to the client, who runs it.
- :func:`raised_limit` raises ``max_tokens`` / ``max_completion_tokens`` for a retry after a
  cut at the token limit: doubled, never above the configured ceiling, only a limit the request
  set (the server's own default is not known, so it is never replaced).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

import msgspec

from ..core.results import ToolResult
from ..core.turn import CallRecord, Turn
from ..loop import rejected_result
from .encoder import json_object

__all__ = [
    "ACCEPTED_NOTE",
    "LIMIT_KEYS",
    "HealPlan",
    "NextMessages",
    "accepted_result",
    "follow_up_body",
    "plan_request",
    "raised_limit",
]

#: The result a retry request gives a call that was accepted (it is the client's to run).
ACCEPTED_NOTE = (
    "This call is valid and was passed on to be run; its result comes later. Do not send it "
    "again: send only the calls that were not run, corrected."
)

#: The request keys that set the output-token limit, newest first.
LIMIT_KEYS = ("max_completion_tokens", "max_tokens")

#: Writes the messages that follow a turn (``Pipeline.next_messages``).
NextMessages = Callable[[Turn, Sequence[ToolResult]], list[dict[str, Any]]]

_encode = msgspec.json.Encoder().encode


class HealPlan(msgspec.Struct, frozen=True, kw_only=True):
    """How one client request is sent upstream.

    ``body`` is what goes upstream, decoded; ``content`` its bytes when they differ from the
    client's (``None``: the client's bytes go up unchanged). ``client_wants_usage``: the client
    asked for the usage chunk itself (``stream_options.include_usage``).
    """

    body: dict[str, Any]
    content: bytes | None
    streaming: bool
    client_wants_usage: bool


def plan_request(content: bytes) -> HealPlan | None:
    """The plan for a client's request body, or ``None`` to pass it upstream untouched."""
    body = json_object(content)
    if body is None or not isinstance(body.get("messages"), list):
        return None
    tools = body.get("tools")
    if not isinstance(tools, list) or not tools:
        return None
    if body.get("n") not in (None, 1):
        return None
    streaming = body.get("stream") is True
    if not streaming:
        return HealPlan(body=body, content=None, streaming=False, client_wants_usage=True)
    options = body.get("stream_options")
    if isinstance(options, dict) and options.get("include_usage") is True:
        return HealPlan(body=body, content=None, streaming=True, client_wants_usage=True)
    upstream = dict(body)
    upstream["stream_options"] = {
        **(options if isinstance(options, dict) else {}),
        "include_usage": True,
    }
    return HealPlan(
        body=upstream, content=_encode(upstream), streaming=True, client_wants_usage=False
    )


def accepted_result(call: CallRecord) -> ToolResult:
    """The result a retry request gives an accepted call (see :data:`ACCEPTED_NOTE`)."""
    return ToolResult(call_id=call.call_id, name=call.name, content=ACCEPTED_NOTE, status="ok")


def follow_up_body(
    body: Mapping[str, Any],
    turn: Turn,
    next_messages: NextMessages,
    *,
    key: str = "messages",
) -> dict[str, Any]:
    """``body`` asked again: its messages, then ``turn`` and one result per call.

    The previous request's history (under ``key``: ``messages``; ``input`` for Responses,
    where a lone string is the one user message it stands for) comes first, untouched;
    ``next_messages`` (the
    provider's history format, as ``Pipeline.next_messages``) writes the assistant turn with
    every rejected call's arguments as ``{}`` and the results in the form the server shows
    its model.
    """
    results = [
        accepted_result(call) if call.may_run else rejected_result(call) for call in turn.calls
    ]
    history = body[key]
    if isinstance(history, str):
        history = [{"role": "user", "content": history}]
    return {**body, key: [*history, *next_messages(turn, results)]}


def raised_limit(
    body: Mapping[str, Any], ceiling: int, keys: Sequence[str] = LIMIT_KEYS
) -> tuple[dict[str, Any], int | None]:
    """``body`` with its output-token limit (under any of ``keys``) doubled, capped at ``ceiling``.

    Returns the new body and the new limit, or the body unchanged and ``None`` when no limit
    was set or it is already at the ceiling.
    """
    raised = dict(body)
    limits: list[int] = []
    for key in keys:
        value = body.get(key)
        if not isinstance(value, int) or isinstance(value, bool) or value < 1:
            continue
        higher = min(ceiling, value * 2)
        if higher > value:
            raised[key] = higher
            limits.append(higher)
    if not limits:
        return dict(body), None
    return raised, min(limits)
