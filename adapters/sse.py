"""A sans-I/O Server-Sent Events decoder over raw bytes.

Reads split at any byte boundary are fine: the decoder works on bytes and only complete lines are
interpreted, so a multibyte UTF-8 character split across two reads is joined before anyone decodes
it. It follows the WHATWG event-stream rules that providers rely on: ``\\n``, ``\\r\\n`` and ``\\r``
line ends (a ``\\r`` ending one read and the ``\\n`` starting the next are one line end), a leading
UTF-8 byte order mark, ``:`` comment lines, ``data:`` with or without the space, ``data`` with no
colon (an empty data line), several ``data:`` lines joined with ``\\n``, an ``event:`` name, and a
last event with no blank line after it (flushed by :meth:`SSEDecoder.finish`).

Cost is linear in the bytes fed, however they are split: a line longer than a read is kept as the
list of pieces it came in and joined once, when its line end arrives (joining on every read was
quadratic: a 4 MB line in 4 KB reads took seconds). No byte is scanned or copied more than a few
times, whatever the reads.

Memory is bounded by ``max_event_bytes``: an event whose ``data:`` and ``event:`` lines together
exceed it is not buffered further (its bytes are counted and dropped) and comes out as one
:class:`FrameOverflow` in place of its message, so that a server that never sends a line end (or a
non-SSE body of gigabytes) cannot exhaust memory. Decoding goes on normally with the next event.

To tell a body that is no event stream at all (an HTML 502 page from a proxy, a JSON error body,
binary junk) from a stream, the decoder keeps :attr:`SSEDecoder.saw_field`,
:attr:`SSEDecoder.bytes_seen` and :attr:`SSEDecoder.first_bytes` at no extra cost.
"""

from __future__ import annotations

from typing import Final, TypeAlias

import msgspec

from ..core.errors import ConfigurationError

__all__ = [
    "DEFAULT_MAX_EVENT_BYTES",
    "QUOTE_BYTES",
    "FrameOverflow",
    "SSEDecoder",
    "SSEMessage",
]

DEFAULT_MAX_EVENT_BYTES: Final = 16 * 1024 * 1024
"""The default cap on one event (SSE) or one line (NDJSON): far above any real chunk."""

QUOTE_BYTES: Final = 500
"""How many leading bytes are kept for quoting: of the body, and of an oversized event or line."""

# Of a line being dropped, enough to read its field name and still quote QUOTE_BYTES of its value.
_KEEP: Final = QUOTE_BYTES + 8
_BOM: Final = b"\xef\xbb\xbf"


class FrameOverflow(msgspec.Struct, frozen=True, gc=False, kw_only=True):
    """An event (SSE) or line (NDJSON) over the decoder's cap: given in place of its message.

    It is not ``bytes`` and not an :class:`SSEMessage`, so a caller tells it apart with one
    ``type(item) is FrameOverflow`` test (or by ``type(item) is bytes`` failing).

    - ``size``: the bytes the event or line was made of, in total (for SSE: its ``data:`` and
      ``event:`` lines, line ends excluded; for NDJSON: the line, its ``\\r\\n`` excluded). It is
      always greater than ``limit``.
    - ``limit``: the cap that was exceeded (``max_event_bytes`` / ``max_line_bytes``).
    - ``head``: the first bytes (at most :data:`QUOTE_BYTES`) of the event's data (its ``data``
      lines joined with ``\\n``, as the message would have carried it) or of the line, for
      quoting in an error.
    - ``event``: the SSE event name when an ``event:`` line came before the event went over the
      cap; ``None`` otherwise, and always for NDJSON.
    """

    size: int
    limit: int
    head: bytes
    event: bytes | None = None


class SSEMessage:
    """One dispatched event: its ``event`` name (or ``None``) and its ``data`` bytes."""

    __slots__ = ("data", "event")

    def __init__(self, event: bytes | None, data: bytes) -> None:
        self.event = event
        self.data = data

    def __repr__(self) -> str:
        return f"SSEMessage(event={self.event!r}, data={self.data!r})"


# What the internal decoding returns: bare ``bytes`` for an event with data and no name (the
# common case, no object made), an SSEMessage for a named event, or an overflow.
_Item: TypeAlias = "bytes | SSEMessage | FrameOverflow"


class SSEDecoder:
    """Feed bytes, get complete messages. One instance per stream.

    ``max_event_bytes`` caps the ``data:`` and ``event:`` lines of one event taken together (and
    so any one such line): such an event is reported even with no data line at all (a huge
    ``event:`` line). Comment, ``id:``, ``retry:`` and unknown lines over the cap are simply
    dropped, since they carry nothing toolwire uses. For the line and event in progress the
    decoder holds at most the cap plus the unfinished end of the last read
    (:attr:`buffered_bytes`).
    """

    __slots__ = (
        "_bom_held",
        "_bytes_seen",
        "_data",
        "_drop_head",
        "_drop_size",
        "_event",
        "_event_size",
        "_first",
        "_limit",
        "_more",
        "_more_size",
        "_named",
        "_over_has_data",
        "_over_head",
        "_saw_cr",
        "_saw_field",
        "_started",
        "_tail",
    )

    def __init__(self, max_event_bytes: int = DEFAULT_MAX_EVENT_BYTES) -> None:
        if type(max_event_bytes) is not int or max_event_bytes < 1:
            raise ConfigurationError(
                f"max_event_bytes must be a positive int, not {max_event_bytes!r}"
            )
        self._limit = max_event_bytes
        # The unfinished last line: the piece after the last line end (most often all of it),
        # then any further pieces while it goes on past a read (no line end in any of them).
        self._tail = b""
        self._more: list[bytes] = []
        self._more_size = 0
        # While the unfinished line is being dropped: its size so far, and its first bytes.
        self._drop_size = -1
        self._drop_head = b""
        # The event in progress: its data lines, name, and the size of its data/event lines.
        self._data: list[bytes] = []
        self._event: bytes | None = None
        self._event_size = 0
        # Once the event in progress went over the cap: the quote of its data (else None).
        self._over_head: bytes | None = None
        self._over_has_data = False
        self._named = False  # an SSEMessage is among this feed's items: feed_data must unwrap
        self._saw_cr = False
        self._started = False
        self._bom_held = b""
        self._saw_field = False
        self._bytes_seen = 0
        self._first = b""

    # -- what the caller reads ------------------------------------------------------------------

    @property
    def saw_field(self) -> bool:
        """True once a ``data``, ``event:``, ``id:``, ``retry:`` or comment line was seen.

        False after a whole body means it was no event stream (an HTML error page, a JSON error
        body, binary junk): quote :attr:`first_bytes` in the error rather than "no events".
        """
        return self._saw_field

    @property
    def bytes_seen(self) -> int:
        """How many bytes were fed in total."""
        return self._bytes_seen

    @property
    def first_bytes(self) -> bytes:
        """The first bytes of the body as received (at most :data:`QUOTE_BYTES`), for quoting."""
        return self._first

    @property
    def buffered_bytes(self) -> int:
        """Bytes held for the line and event in progress: at most the cap plus the last read.

        (The unfinished end of the last read is kept as it is; the quotes of an event over the
        cap, at most :data:`QUOTE_BYTES` each, are not counted.)
        """
        return len(self._tail) + self._more_size + sum(map(len, self._data))

    # -- input ----------------------------------------------------------------------------------

    def feed(self, chunk: bytes) -> list[SSEMessage | FrameOverflow]:
        """Take the next bytes of the body; return the messages they complete.

        An event over the cap comes out as one :class:`FrameOverflow` where its message would be.
        """
        items = self._feed(chunk)
        self._named = False
        # Only bare bytes need wrapping (the others are SSEMessage or FrameOverflow already).
        return [SSEMessage(None, item) if type(item) is bytes else item for item in items]  # type: ignore[misc]

    def feed_data(self, chunk: bytes) -> list[bytes | FrameOverflow]:
        """Like :meth:`feed`, but only the ``data`` of each message (event names dropped).

        For formats whose payloads say what they are (Chat Completions): no object per message.
        Every item is ``bytes`` except an event over the cap, which is a :class:`FrameOverflow`
        (test ``type(item) is bytes``: one identity check per payload).
        """
        items = self._feed(chunk)
        if not self._named:
            # No named event among them: the list is data already, with no copy made.
            return items  # type: ignore[return-value]
        self._named = False
        return [item.data if type(item) is SSEMessage else item for item in items]  # type: ignore[misc]

    def finish(self) -> list[SSEMessage | FrameOverflow]:
        """The body ended: interpret a last line and event that had no terminator."""
        messages: list[_Item] = []
        if not self._started and self._bom_held:
            # Fewer than three bytes in all, each a prefix of the byte order mark: a line.
            self._hold(self._bom_held)
        self._started = True
        if self._drop_size >= 0:
            self._end_dropped_line(messages)
        elif self._tail:
            line = b"".join([self._tail, *self._more]) if self._more else self._tail
            self._tail = b""
            self._more = []
            self._more_size = 0
            self._line(line, messages)
        if self._data or self._over_head is not None:
            self._dispatch(messages)
        self._named = False
        return [SSEMessage(None, item) if type(item) is bytes else item for item in messages]  # type: ignore[misc]

    # -- framing --------------------------------------------------------------------------------

    def _feed(self, chunk: bytes) -> list[_Item]:
        """Messages as bare ``bytes`` (data only, no event name), SSEMessage or FrameOverflow."""
        if not chunk:
            return []
        seen = self._bytes_seen
        self._bytes_seen = seen + len(chunk)
        if seen < QUOTE_BYTES:
            self._first += chunk[: QUOTE_BYTES - seen]
            if not self._started:
                chunk = self._without_bom(chunk)
                if not chunk:
                    return []
        if self._saw_cr and chunk[0] == 10:
            # The previous read ended with "\r" and this one starts with "\n": one CRLF.
            chunk = chunk[1:]
            if not chunk:
                self._saw_cr = False
                return []
        self._saw_cr = chunk[-1] == 13
        if b"\r" in chunk:
            # Per read is enough: a CRLF split between reads was handled just above.
            chunk = chunk.replace(b"\r\n", b"\n").replace(b"\r", b"\n")
        if b"\n" not in chunk:
            # The line goes on: keep the piece, join nothing (this is what keeps cost linear).
            self._hold(chunk)
            return []
        if self._more or self._drop_size >= 0:
            return self._after_long_line(chunk)
        tail = self._tail
        buffer = tail + chunk if tail else chunk
        lines = buffer.split(b"\n")
        self._tail = lines.pop()
        if self._data or self._event is not None or self._over_head is not None:
            return self._lines(lines, len(buffer), [])
        if len(buffer) <= self._limit:
            fast = self._simple_events(lines)
            if fast is not None:
                return fast  # type: ignore[return-value]
        messages: list[_Item] = []
        for line in lines:
            self._line(line, messages)
        return messages

    def _without_bom(self, chunk: bytes) -> bytes:
        """A UTF-8 byte order mark may open the stream; it is not part of the first line."""
        chunk = self._bom_held + chunk
        if len(chunk) < 3 and _BOM.startswith(chunk):
            self._bom_held = chunk  # too short to tell yet
            return b""
        self._bom_held = b""
        self._started = True
        return chunk[3:] if chunk.startswith(_BOM) else chunk

    def _after_long_line(self, chunk: bytes) -> list[_Item]:
        """The line end of a line longer than a read arrived: join its pieces once, or end it."""
        messages: list[_Item] = []
        end = chunk.find(b"\n")
        if self._drop_size >= 0:
            self._count_dropped(chunk, end)
            self._end_dropped_line(messages)
        else:
            pieces = [self._tail, *self._more, chunk[:end]]
            size = len(self._tail) + self._more_size + end
            self._tail = b""
            self._more = []
            self._more_size = 0
            self._long_line(pieces, size, messages)
        buffer = chunk[end + 1 :]
        lines = buffer.split(b"\n")
        self._tail = lines.pop()
        return self._lines(lines, len(buffer), messages)

    def _long_line(self, pieces: list[bytes], size: int, messages: list[_Item]) -> None:
        """A line longer than a read, whole: copy it once (a data line straight to its value).

        Joining and then slicing off ``data:`` would copy a multi-megabyte payload twice more.
        """
        while len(pieces[0]) < 6 and len(pieces) > 1:
            pieces[0:2] = [pieces[0] + pieces[1]]
        first = pieces[0]
        if first[:5] == b"data:" and len(first) >= 6:
            self._saw_field = True
            pieces[0] = first[6:] if first[5] == 32 else first[5:]  # 32: " "
            self._data_line(b"".join(pieces), size)
        else:
            self._line(b"".join(pieces), messages)

    def _lines(self, lines: list[bytes], size: int, messages: list[_Item]) -> list[_Item]:
        """The general path: end the open event line by line, then try the fast path again."""
        start = 0
        if self._data or self._event is not None or self._over_head is not None:
            for line in lines:
                start += 1
                self._line(line, messages)
                if not line:
                    break  # a blank line always ends the event
        rest = lines[start:] if start else lines
        fast = self._simple_events(rest) if rest and size <= self._limit else None
        if fast is not None:
            messages.extend(fast)
        else:
            for line in rest:
                self._line(line, messages)
        return messages

    def _simple_events(self, lines: list[bytes]) -> list[bytes] | None:
        """The hot path: a run of events that are one ``data: ...`` line each.

        Checked with C-speed list operations (single-byte split, slices, count); ``None`` when
        the lines hold anything else (comments, event names, multi-line data), and then the
        general line-by-line path reads them. Called with no event open and ``lines`` at most
        the cap in all, so that no line or event among them can be over it.
        """
        blanks = lines[1::2]
        events = len(blanks)
        if blanks.count(b"") != events:
            return None
        data_lines = lines[0::2]
        payloads = [line[6:] for line in data_lines if line[:6] == b"data: "]
        if len(payloads) != len(data_lines):
            return None
        self._saw_field = True
        if len(payloads) > events:
            # The last line still waits for its blank line: it opens the next event.
            self._data.append(payloads.pop())
            self._event_size = len(lines[-1])
        return payloads

    def _hold(self, piece: bytes) -> None:
        """Keep a piece of the unfinished line, or only count it once the line is over the cap."""
        if self._drop_size >= 0:
            self._count_dropped(piece, len(piece))
            return
        if self._tail:
            self._more.append(piece)
            self._more_size += len(piece)
        else:
            self._tail = piece
        if len(self._tail) + self._more_size + self._event_size > self._limit:
            self._start_dropping()

    def _start_dropping(self) -> None:
        """The unfinished line went over the cap: keep its first bytes and count the rest.

        Were it a data or event line, its event is over the cap whatever follows; were it
        anything else, its content is not used. Either way, it need not be kept.
        """
        head = self._tail[:_KEEP]
        for piece in self._more:
            if len(head) >= _KEEP:
                break
            head += piece[: _KEEP - len(head)]
        self._drop_head = head
        self._drop_size = len(self._tail) + self._more_size
        self._tail = b""
        self._more = []
        self._more_size = 0

    def _count_dropped(self, piece: bytes, length: int) -> None:
        """Count the first ``length`` bytes of ``piece`` into the line being dropped."""
        self._drop_size += length
        if len(self._drop_head) < _KEEP:
            self._drop_head += piece[: min(length, _KEEP - len(self._drop_head))]

    def _end_dropped_line(self, messages: list[_Item]) -> None:
        """The line end of a dropped line arrived: interpret it from its first bytes and size."""
        head, size = self._drop_head, self._drop_size
        self._drop_head = b""
        self._drop_size = -1
        self._line(head, messages, size)

    # -- events ---------------------------------------------------------------------------------

    def _line(self, line: bytes, messages: list[_Item], size: int = -1) -> None:
        """Interpret one complete line; ``size`` is its real length when only its head is kept."""
        if line[:5] == b"data:":
            self._saw_field = True
            value = line[6:] if line[5:6] == b" " else line[5:]
            self._data_line(value, len(line) if size < 0 else size)
        elif not line:
            self._dispatch(messages)
        elif line[:1] == b":":
            self._saw_field = True  # a comment (keep-alive): nothing to do
        elif line == b"data":
            self._saw_field = True
            self._data_line(b"", 4)  # a field name alone: the field with an empty value
        elif line[:6] == b"event:":
            self._saw_field = True
            self._event_size += len(line) if size < 0 else size
            if self._over_head is not None:
                return  # over the cap already: the name reported is the one known then
            if self._event_size > self._limit:
                self._overflow(None)
            else:
                value = line[6:]
                self._event = value[1:] if value[:1] == b" " else value
        elif line[:3] == b"id:" or line[:6] == b"retry:":
            self._saw_field = True  # they carry nothing toolwire needs
        # Unknown fields are ignored (WHATWG).

    def _data_line(self, value: bytes, size: int) -> None:
        """A data line of ``size`` bytes (its field name included) carrying ``value``."""
        self._event_size += size
        quote = self._over_head
        if quote is None:
            if self._event_size <= self._limit:
                self._data.append(value)
            else:
                self._overflow(value)
            return
        # The event is over the cap: only its quote grows, up to QUOTE_BYTES.
        if len(quote) < QUOTE_BYTES:
            self._over_head = (quote + b"\n" + value if self._over_has_data else value)[
                :QUOTE_BYTES
            ]
        self._over_has_data = True

    def _overflow(self, value: bytes | None) -> None:
        """The event in progress went over the cap: keep a quote of its data, drop the rest."""
        values = self._data if value is None else [*self._data, value]
        quote = b""
        for number, piece in enumerate(values):
            if number:
                quote += b"\n"
            quote += piece[: QUOTE_BYTES - len(quote)]
            if len(quote) >= QUOTE_BYTES:
                break
        self._over_head = quote[:QUOTE_BYTES]
        self._over_has_data = bool(values)
        self._data = []

    def _dispatch(self, messages: list[_Item]) -> None:
        """A blank line (or the end of the body) ends the event in progress."""
        if self._over_head is not None:
            messages.append(
                FrameOverflow(
                    size=self._event_size,
                    limit=self._limit,
                    head=self._over_head,
                    event=self._event,
                )
            )
            self._over_head = None
            self._over_has_data = False
        elif self._data:
            data = self._data[0] if len(self._data) == 1 else b"\n".join(self._data)
            if self._event is None:
                messages.append(data)
            else:
                messages.append(SSEMessage(self._event, data))
                self._named = True
            self._data = []
        self._event = None
        self._event_size = 0
