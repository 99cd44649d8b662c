"""Finished output items: settle what they finish, and keep them for replay.

``response.output_item.done`` sends each item whole; so does the final response's ``output``
(for any item whose own ``done`` never came). A finished ``function_call`` item settles its call
(:mod:`.calls`); a finished message or reasoning item checks its parts' text (:mod:`.texts`);
every item, of whatever type (server-side tool calls included), becomes one
:class:`ResponsesOutputItem` for replay (:mod:`.items`), and nothing else: an item that is not a
``function_call`` is never a toolwire call, so it is never judged or dispatched.
"""

from __future__ import annotations

import msgspec

from ...core.events import Event, ProviderError
from ...core.mapper import cap_text
from ...core.stream_state import StreamState
from .calls import FunctionCalls
from .items import CLIENT_CALL_ITEM, ResponsesOutputItem
from .texts import PART_EVENTS, TextParts
from .wire import Item, decode_item

__all__ = ["FinishedItems"]

#: The item types whose parts are text the turn shows.
_TEXT_ITEMS = ("message", "reasoning")


class FinishedItems:
    """The finished output items of one stream. Private to one run."""

    __slots__ = ("_calls", "_ids", "_positions", "_state", "_texts", "emitted")

    def __init__(self, state: StreamState, calls: FunctionCalls, texts: TextParts) -> None:
        self._state = state
        self._calls = calls
        self._texts = texts
        #: Output positions and item ids whose finished item was seen (the final output fills
        #: in the others).
        self._positions: set[int] = set()
        self._ids: set[str] = set()
        #: Every item emitted, for the turn's ``ProviderContent``.
        self.emitted: list[ResponsesOutputItem] = []

    def finished(
        self, out: list[Event], position: int | None, item: Item, raw: msgspec.Raw
    ) -> None:
        """One finished item (``raw``: its JSON as received)."""
        call_id: str | None = None
        text = bytes(raw).decode("utf-8", "replace")
        if item.type == CLIENT_CALL_ITEM:
            call_id = self._calls.item_done(out, position, item).call_id
            fields = msgspec.json.decode(raw)
            fields.pop("arguments", None)  # judged; replayed from the verdict, never raw
            text = msgspec.json.encode(fields).decode()
        elif item.type in _TEXT_ITEMS:
            self._whole_parts(out, position, item, raw)
        if position is not None:
            self._positions.add(position)
        if item.id is not None:
            self._ids.add(item.id)
        finished = ResponsesOutputItem(
            position=-1 if position is None else position,
            item_type=item.type,
            item_id=item.id,
            call_id=call_id,
            status=item.status,
            item=text,
        )
        self.emitted.append(finished)
        out.append(finished)

    def final_output(self, out: list[Event], output: list[msgspec.Raw]) -> None:
        """The final response's ``output``: the items whose own ``done`` never came."""
        for position, raw in enumerate(output):
            if position in self._positions:
                continue
            try:
                item = decode_item(raw)
            except msgspec.MsgspecError as error:
                self._state.unreadable(
                    out,
                    ProviderError(
                        message=f"an item of the final output of unknown shape: {error}",
                        kind="unknown_shape",
                        raw=cap_text(bytes(raw)),
                    ),
                )
                continue
            if item.id is None or item.id not in self._ids:
                self.finished(out, position, item, raw)

    def _whole_parts(
        self, out: list[Event], position: int | None, item: Item, raw: msgspec.Raw
    ) -> None:
        """A finished message or reasoning item: its parts' whole texts (see :mod:`.texts`)."""
        fields = msgspec.json.decode(raw)
        where = item.id if item.id is not None else position
        for field in ("content", "summary"):
            parts = fields.get(field)
            if not isinstance(parts, list):
                continue
            for number, part in enumerate(parts):
                if not isinstance(part, dict):
                    continue
                kind = part.get("type")
                value = part.get("refusal") if kind == "refusal" else part.get("text")
                if isinstance(kind, str) and kind in PART_EVENTS and isinstance(value, str):
                    self._texts.whole(out, (kind, where, number), value, PART_EVENTS[kind])
