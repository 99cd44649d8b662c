"""Text and reasoning parts of a Responses turn: streamed as deltas, then sent whole again.

Each content part is streamed as ``*.delta`` events and then repeated whole (``*.done``, the
finished output item, the final response's ``output``). The deltas are what the user saw, so
they are what the turn keeps; the whole text is used in two ways, so that no text is dropped
silently and none is counted twice:

- a part that was never streamed (a server that sends only the finished part, as LM Studio does
  for function-call arguments) is emitted from its whole text, once;
- a part whose whole text differs from its deltas is reported (a ``protocol`` ProviderError,
  not fatal: text runs nothing), and the streamed text is kept.

Parts are keyed by their output item's id (``item_id`` on the deltas, ``id`` on the finished
item; the ``output_index`` when a server sends no id) and their index inside the item.
"""

from __future__ import annotations

from collections.abc import Callable

from ...core.events import Event, ProviderError, ReasoningDelta, TextDelta
from ...core.mapper import cap_text
from ...core.stream_state import StreamState

__all__ = ["PART_EVENTS", "PartKey", "TextParts"]

#: (kind of part, the item's id or output_index, the part's index in the item).
PartKey = tuple[str, object, int]

#: Kind of part -> the event its text becomes. A refusal is what the user reads: text.
PART_EVENTS: dict[str, Callable[[str], Event]] = {
    "output_text": lambda text: TextDelta(text=text),
    "refusal": lambda text: TextDelta(text=text),
    "reasoning_text": lambda text: ReasoningDelta(text=text),
    "summary_text": lambda text: ReasoningDelta(text=text),
}


class TextParts:
    """Every text part of one stream: what was streamed, and what its whole text said."""

    __slots__ = ("_parts", "_state")

    def __init__(self, state: StreamState) -> None:
        self._state = state
        self._parts: dict[PartKey, list[str]] = {}

    def delta(self, key: PartKey, text: str) -> None:
        """A piece of the part was streamed (the caller emits its event)."""
        pieces = self._parts.get(key)
        if pieces is None:
            self._parts[key] = [text]
        else:
            pieces.append(text)

    def whole(
        self, out: list[Event], key: PartKey, text: str, make: Callable[[str], Event]
    ) -> None:
        """The part's whole text arrived: emit it if nothing was streamed, else check it."""
        pieces = self._parts.get(key)
        if pieces is None:
            self._parts[key] = [text]
            if text:
                out.append(make(text))
            return
        streamed = pieces[0] if len(pieces) == 1 else "".join(pieces)
        self._parts[key] = [streamed]
        if streamed != text:
            kind, _, index = key
            self._state.report(
                out,
                ProviderError(
                    message=(
                        f"the whole text of {kind} part {index} differs from the deltas streamed "
                        f"for it ({len(streamed)} characters streamed, {len(text)} in the whole "
                        "text); the streamed text was kept"
                    ),
                    kind="protocol",
                    raw=cap_text(text),
                ),
            )
