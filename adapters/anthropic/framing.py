"""Anthropic's named SSE events, framed in bulk in front of the general SSE decoder.

Every Anthropic event is three lines, ``event: <name>`` / ``data: <payload>`` / a blank line.
The decoder's bulk path takes only nameless one-line events, so each of these lines went
through its line-by-line path: half the cost of a long ``tool_use`` block. :class:`EventFramer`
frames a run of such events itself with C-speed list operations (split, slices, counts) and
hands everything else to :class:`~toolwire.adapters.sse.SSEDecoder`, which stays the one
authority on SSE:

- it frames only from an *aligned* decoder, one holding nothing: the bytes it was given end
  with ``\n\n`` (two line ends in a row end a blank line, so no line or event is open and no
  ``\r`` is pending) and it has seen a field (so :attr:`SSEDecoder.saw_field` is already true;
  :attr:`~SSEDecoder.bytes_seen` and :attr:`~SSEDecoder.first_bytes`, which only matter when it
  is false, stop counting). An unaligned decoder is given a read up to its first ``\n\n``;
- it frames only up to the last ``\n\n`` of a read with no ``\r`` in it, which is exactly
  where the decoder's last event of that read ends (with ``\n`` as the only line end, an event
  ends at a blank line, which is a ``\n\n``); the rest waits for the next read, and no event
  ends in it (at most it starts with an empty line, which ends no event), so every event comes
  out of the same read as it would from the decoder alone;
- it frames only when every event up to there has exactly the three lines (``event: `` and
  ``data: `` with their space) and all of it fits in the decoder's cap (so no event can be over
  it). Anything else (comments, ``id:``, nameless or multi-line events, ``\r\n`` line ends,
  a read with no event end) goes to the decoder whole, and the next ``\n\n`` aligns it again.

The decoder would give the same messages for any split of the body, so handing it the body in
other pieces than the reads changes nothing but the cost.
"""

from __future__ import annotations

from typing import Final

from ..sse import DEFAULT_MAX_EVENT_BYTES, FrameOverflow, SSEDecoder, SSEMessage

__all__ = ["EventFramer", "event_name"]

_EVENT_END: Final = b"\n\n"
_EVENT: Final = b"event: "
_DATA: Final = b"data: "


def event_name(event_line: bytes) -> bytes:
    """The name in an ``event: <name>`` line given by :meth:`EventFramer.feed`."""
    return event_line[7:]


class EventFramer:
    """The SSE framing of one Anthropic stream: its own bulk path, else the decoder."""

    __slots__ = ("_aligned", "_limit", "_pending", "decoder")

    def __init__(self, max_event_bytes: int = DEFAULT_MAX_EVENT_BYTES) -> None:
        #: The general decoder; it holds the stream whenever this framer does not.
        self.decoder = SSEDecoder(max_event_bytes)
        self._limit = max_event_bytes
        #: The decoder holds nothing and has seen a field: this framer may frame.
        self._aligned = False
        #: Bytes after the decoder's last event end, not given to it yet (aligned only): the
        #: start of the next event, with no ``\r`` and no ``\n\n`` in it.
        self._pending = b""

    def feed(
        self, data: bytes
    ) -> tuple[list[SSEMessage | FrameOverflow], list[bytes], list[bytes]]:
        """Take the next read: the decoder's messages, then the events framed here.

        The events framed here follow the decoder's messages in the body; they come as two
        lists of the same length, each event's ``event: <name>`` line (see :func:`event_name`)
        and its payload. The three lists together are what the decoder alone would have given
        for this read, in that order.
        """
        if not data:
            return [], [], []
        decoder = self.decoder
        messages: list[SSEMessage | FrameOverflow] = []
        fresh = True  # ``data`` is a whole read
        if not self._aligned:
            # Align the decoder at the first event end: it reads up to there.
            end = data.find(_EVENT_END) + 2
            if end < 2:
                return decoder.feed(data), [], []
            messages = decoder.feed(data[:end])
            data = data[end:]
            if not decoder.saw_field:
                # Not known to be an event stream yet: the decoder keeps counting its bytes.
                if data:
                    messages += decoder.feed(data)
                return messages, [], []
            self._aligned = True
            if not data:
                return messages, [], []
            fresh = False
        pending = self._pending
        buffer = pending + data if pending else data
        end = buffer.rfind(_EVENT_END) + 2
        if end > self._limit or b"\r" in buffer or (end < 2 and fresh):
            # A "\r" line end may end an event anywhere; with no event end in a whole read the
            # event may be long, and the decoder holds long events in linear time.
            self._pending = b""
            self._aligned = False
            messages += decoder.feed(buffer)
            return messages, [], []
        if end < 2:
            self._pending = buffer  # the rest of the read that aligned the decoder
            return messages, [], []
        if end < len(buffer):
            head = buffer[:end]
            self._pending = buffer[end:]
        else:
            head = buffer
            self._pending = b""
        lines = head.split(b"\n")
        lines.pop()  # the empty piece after the last line end
        framed = _named_events(head, lines)
        if framed is None:
            messages += decoder.feed(head)  # ends with "\n\n": still aligned after it
            return messages, [], []
        return messages, framed[0], framed[1]

    def finish(self) -> list[SSEMessage | FrameOverflow]:
        """The body ended: the decoder takes what is pending and flushes (see its ``finish``)."""
        pending = self._pending
        self._pending = b""
        self._aligned = False
        messages = self.decoder.feed(pending) if pending else []
        return messages + self.decoder.finish()


def _named_events(head: bytes, lines: list[bytes]) -> tuple[list[bytes], list[bytes]] | None:
    """The event lines and payloads of ``lines`` (``head`` split), when every event is the three.

    ``None`` when any event is shaped otherwise. ``head`` ends with ``\\n\\n``, so ``lines``
    ends with the blank line of its last event.
    """
    count = len(lines) // 3
    if len(lines) != 3 * count or lines[2::3].count(b"") != count:
        return None
    payloads = [line[6:] for line in lines[1::3] if line[:6] == _DATA]
    if len(payloads) != count:
        return None
    # A "\n\nevent: " is a line starting "event: " right after an empty line. An empty line is
    # a blank line (every third) or an event line, and a data line, which never starts
    # "event: ", follows an event line: so these are the event lines past the first that are
    # well formed, and counting them checks them all at C speed.
    named = head.count(b"\n\nevent: ") + head.startswith(_EVENT)
    if named != count:
        return None
    return lines[0::3], payloads
