"""``sequence_number``: the numbering that shows an event lost or replayed on the way.

OpenAI numbers the events of a Responses stream 0, 1, 2... (recordings before ~April 2025 carry
no number at all, and the key may come anywhere in the payload). Every recording here is
numbered without a gap, so when numbers are present:

- a gap means events never arrived: whatever they held (an argument piece, a call's header) is
  lost, which is an unreadable piece: every call open then never runs;
- a number that comes again (or goes back) is an event replayed: it is reported the same way
  and not applied twice (a repeated argument delta would double a piece of text);
- an event that could not be read at all still stands for one number, so the next event is not
  reported as a second loss.
"""

from __future__ import annotations

__all__ = ["EventNumbers"]


class EventNumbers:
    """The numbering of one stream's events. Private to one run."""

    __slots__ = ("counted", "last")

    def __init__(self) -> None:
        #: The number of the last event applied (the mapper's hot path reads and sets it).
        self.last: int | None = None
        #: The event being read had its number counted.
        self.counted = False

    def next_event(self) -> None:
        """A new event is being read."""
        self.counted = False

    def check(self, number: object) -> tuple[bool, str | None]:
        """``(apply the event?, what went wrong or None)`` for an event's ``sequence_number``."""
        if type(number) is not int:
            return True, None
        last = self.last
        self.counted = True
        if last is None or number == last + 1:
            self.last = number
            return True, None
        if number > last:
            self.last = number
            return True, f"events {last + 1} to {number - 1} of the stream never arrived"
        return False, f"event {number} came again after event {last}; it was not applied twice"

    def unreadable(self) -> None:
        """The event being read could not be read: it stands for the next number."""
        if not self.counted and self.last is not None:
            self.last += 1
        self.counted = True
