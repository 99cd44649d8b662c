"""SSE framing of a Responses stream: runs of simple events split here, the rest by the decoder.

Every Responses event is named: an ``event: <type>`` line, one ``data:`` line, a blank line.
The shared :class:`~toolwire.adapters.sse.SSEDecoder` reads named events line by line in Python,
which was half the cost of a stream of short argument deltas. :class:`ResponsesFraming` takes a
run of such events itself, with list operations, and gives every other byte to the decoder, as it
came and in order, so that the events are exactly the decoder's:

- the decoder reads the start of the body (a byte-order mark, the first event), and every byte
  that follows an event it could not see the end of, up to the next blank line (``\\n\\n``).
  After a blank line nothing of an event is held in it: no line, no data, no name, no pending
  ``\\r`` (what it is fed then ends with ``\\n``), so bytes from there on may be read here;
- at such a point, the complete events of a read (up to its last ``\\n\\n``) are read here when
  every one of them is ``event: NAME`` then ``data: PAYLOAD``, or every one is ``data: PAYLOAD``
  alone (what the decoder makes of them: ``NAME`` and ``PAYLOAD`` with the one space after the
  colon dropped), the read holds no ``\\r`` (line ends the decoder would rewrite) and is within
  the decoder's event cap (so no event in it can be over the cap). Anything else (a comment, an
  ``id:`` line, several data lines, ``data:`` with no space, a read that is not ``bytes``) goes
  to the decoder whole, and the event a read cuts in two goes to it as well.
"""

from __future__ import annotations

from itertools import repeat

from ..sse import DEFAULT_MAX_EVENT_BYTES, FrameOverflow, SSEDecoder, SSEMessage

__all__ = ["Framed", "ResponsesFraming"]

#: What one read gives, in stream order: the decoder's messages, then the events read here (the
#: ``event: NAME`` line of each, or ``None`` when they have no name, and their payloads), then
#: the decoder's messages for what followed them.
Framed = tuple[
    list[SSEMessage | FrameOverflow],
    list[bytes] | None,
    list[bytes],
    list[SSEMessage | FrameOverflow],
]

_NAME = b"event: "
_DATA = b"data: "
_startswith = bytes.startswith


class ResponsesFraming:
    """The framing of one stream (see the module doc). Private to one run."""

    __slots__ = ("_at_boundary", "_limit", "_read_fields", "decoder")

    def __init__(self, max_event_bytes: int = DEFAULT_MAX_EVENT_BYTES) -> None:
        self.decoder = SSEDecoder(max_event_bytes)
        self._limit = max_event_bytes
        #: Everything fed to the decoder ends with a blank line (and it was fed something).
        self._at_boundary = False
        #: An event was read here (its data line is a field the decoder did not see).
        self._read_fields = False

    @property
    def saw_field(self) -> bool:
        """:attr:`SSEDecoder.saw_field` for the whole body.

        When it is False, every byte went to the decoder, so its ``bytes_seen`` and
        ``first_bytes`` are the body's.
        """
        return self._read_fields or self.decoder.saw_field

    def feed(self, data: bytes) -> Framed:
        """Take the next read of the body; return its messages and events in stream order."""
        decoder = self.decoder
        if type(data) is not bytes or not data:
            # Not bytes (a bytearray...): the decoder reads it, and the one after it, as before.
            if data:
                self._at_boundary = False
            return decoder.feed(data), None, [], []
        before: list[SSEMessage | FrameOverflow] = []
        if not self._at_boundary:
            end = data.find(b"\n\n")
            if end < 0:
                return decoder.feed(data), None, [], []
            end += 2
            before = decoder.feed(data[:end])
            self._at_boundary = True
            if end == len(data):
                return before, None, [], []
            data = data[end:]
        last = data.rfind(b"\n\n")
        if last >= 0 and len(data) <= self._limit and b"\r" not in data:
            names, payloads = _simple_events(data[:last].split(b"\n"))
            if payloads:
                self._read_fields = True
                rest = data[last + 2 :]
                self._at_boundary = not rest
                return before, names, payloads, decoder.feed(rest) if rest else []
        self._at_boundary = data[-2:] == b"\n\n"
        return before, None, [], decoder.feed(data)


def _simple_events(lines: list[bytes]) -> tuple[list[bytes] | None, list[bytes]]:
    """The name lines and payloads of ``lines`` if they are only simple events, else no payload.

    ``lines``: complete events separated by blank lines, the last one's blank line excluded.
    """
    count = len(lines)
    if count % 3 == 2:
        # event: NAME / data: PAYLOAD / (blank), ...
        blanks = lines[2::3]
        if blanks.count(b"") == len(blanks):
            names = lines[0::3]
            data_lines = lines[1::3]
            if all(map(_startswith, names, repeat(_NAME))) and all(
                map(_startswith, data_lines, repeat(_DATA))
            ):
                return names, [line[6:] for line in data_lines]
    if count % 2 == 1:
        # data: PAYLOAD / (blank), ...
        blanks = lines[1::2]
        if blanks.count(b"") == len(blanks):
            data_lines = lines[0::2]
            if all(map(_startswith, data_lines, repeat(_DATA))):
                return None, [line[6:] for line in data_lines]
    return None, []
