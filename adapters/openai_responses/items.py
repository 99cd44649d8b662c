"""The output items a Responses turn must send back on replay, as events.

The Responses API wants some output items back in the next request's ``input`` exactly as it
sent them: a reasoning item (its ``id`` and ``encrypted_content``) must come back with the
function call it was generated with, an assistant message keeps its ``id`` and ``phase``, and a
server-side tool call (``web_search_call``, ``file_search_call``, ``code_interpreter_call``...)
is part of the turn although the client never runs it. The mapper emits one
:class:`ResponsesOutputItem` per finished output item (visible to anyone consuming
``toolwire.stream``), and all of them, once, as the turn's ``ProviderContent`` before ``Finish``:
they travel with the ``Turn`` (``Turn.provider_content``), and
:meth:`OpenAIResponsesHistory.assistant_messages` replays them.
"""

from __future__ import annotations

from collections.abc import Iterable

from ...core.events import Event

__all__ = ["CLIENT_CALL_ITEM", "ResponsesOutputItem", "output_items"]

#: The one item type that is a client tool call toolwire judges and ``dispatch`` runs.
CLIENT_CALL_ITEM = "function_call"


class ResponsesOutputItem(Event, frozen=True, tag="openai_responses.output_item"):
    """One finished output item of a Responses turn, kept for replay.

    - ``position``: the provider's ``output_index`` (replay keeps this order: a reasoning item
      must precede the call it belongs to);
    - ``item_type``: ``reasoning``, ``message``, ``function_call``, or a server-side tool call
      (``web_search_call``...), which is reported here and never as a toolwire call;
    - ``item_id``: the item's ``id`` (``rs_...``, ``msg_...``, ``fc_...``);
    - ``call_id``: for ``function_call`` items, toolwire's id of that call (its
      ``CallRecord.call_id``, which is the provider's ``call_id`` unless it had to be renamed);
    - ``status``: the item's status as the provider sent it;
    - ``item``: the item's JSON as received. A ``function_call`` item has its ``arguments``
      removed: they are judged, and replayed from the call's verdict, never from the raw text.
    """

    position: int
    item_type: str
    item_id: str | None = None
    call_id: str | None = None
    status: str | None = None
    item: str = "{}"


def output_items(events: Iterable[Event]) -> tuple[ResponsesOutputItem, ...]:
    """The :class:`ResponsesOutputItem` events of a run, in the order they came."""
    return tuple(event for event in events if isinstance(event, ResponsesOutputItem))
