"""A request whose history a server would refuse, repaired before it goes upstream.

One earlier call whose arguments a server cannot read fails every later request of the
conversation: llama-server (500 ``Failed to parse tool call arguments as JSON``), vLLM (400
``Expecting ',' delimiter``) and their Responses and Messages front ends, which convert to Chat
first; the Messages API (400 ``tool_use.input: Input should be a valid dictionary``); the Gemini
API (400 ``INVALID_ARGUMENT``: ``functionCall.args`` is a ``google.protobuf.Struct``); Ollama's
``/api/chat`` (400 ``json: cannot unmarshal string into ...``: arguments are an object). Every
healed format's ``plan_request`` calls :func:`repaired_history` on its history (``messages``,
``input``, ``contents``) with its own history format, whose ``repair`` writes each such call
as ``next_messages`` writes a rejected call (:mod:`toolwire.adapters.history`), and says what
it did in ``HealPlan.repaired`` (the transport's ``x-toolwire-history-repaired`` header).

Only the problems of :data:`~toolwire.adapters.history.REPAIRED_KINDS` are mended: arguments a
server refuses to read. A call without its result, a result without its call, ids reused:
those stay as the client wrote them (``check_history`` names them). toolwire cannot tell a
missing result from one the client has yet to send, and a result it made up would say
something about a tool run it knows nothing of.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import msgspec

from ..core.wire import HealPlan
from .history import HistoryFormat

__all__ = ["planned", "repaired_history", "unhealed_plan"]

_encode = msgspec.json.Encoder().encode


def repaired_history(
    body: dict[str, Any],
    key: str,
    form: HistoryFormat,
    broken_calls: Callable[[dict[str, Any]], Iterator[object]],
) -> tuple[dict[str, Any], dict[str, int]]:
    """``body`` with the history under ``key`` repaired by ``form``, and how many calls of each
    problem kind were rewritten (empty: none).

    ``broken_calls(message)`` yields the calls of one message that ``form.repair`` rewrites
    (each history module's ``broken_calls``): it only reads, so a history with none, the usual
    case, is neither copied nor rewritten. ``body`` itself comes back then, and when ``key``
    holds no list, or one of its entries is not an object (the server refuses that request
    anyway; toolwire does not guess).
    """
    messages = body.get(key)
    if not isinstance(messages, list) or not all(isinstance(m, dict) for m in messages):
        return body, {}
    if not any(next(broken_calls(message), None) is not None for message in messages):
        return body, {}
    repair = form.repair(messages)
    if not repair.changes:
        return body, {}
    counts: dict[str, int] = {}
    for change in repair.changes:
        counts[change.kind] = counts.get(change.kind, 0) + 1
    return {**body, key: repair.messages}, counts


def planned(
    body: dict[str, Any],
    key: str,
    form: HistoryFormat,
    broken_calls: Callable[[dict[str, Any]], Iterator[object]],
    *,
    heals: bool | Callable[[dict[str, Any]], bool],
    **fields: Any,
) -> HealPlan | None:
    """The plan of a request of a format that sends it upstream as it came (Anthropic,
    Responses, Gemini, Ollama), but for its history repaired (:func:`repaired_history`).

    ``heals(body)``: whether the response is healed; ``fields`` the rest of its
    :class:`~toolwire.core.wire.HealPlan` (``streaming``, ``query_params``, ``media_type``).
    A request not healed is :func:`unhealed_plan`'s.
    """
    body, repaired = repaired_history(body, key, form, broken_calls)
    if not (heals(body) if callable(heals) else heals):
        return unhealed_plan(body, repaired)
    return HealPlan(
        body=body,
        content=_encode(body) if repaired else None,
        client_wants_usage=True,
        repaired=repaired,
        **fields,
    )


def unhealed_plan(
    body: dict[str, Any], repaired: dict[str, int], adapted: dict[str, int] | None = None
) -> HealPlan | None:
    """The plan of a request that is not healed (no tools, or tools toolwire does not write
    back): ``None``, it goes up as it came, unless its history was repaired (or, for Chat,
    it was ``adapted`` to its server); then the new ``body`` goes up and its response passes
    untouched."""
    if not repaired and not adapted:
        return None
    return HealPlan(
        body=body,
        content=_encode(body),
        streaming=body.get("stream") is True,
        client_wants_usage=True,
        adapted=dict(adapted or {}),
        heal=False,
        repaired=repaired,
    )
