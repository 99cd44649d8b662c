"""A sans-I/O Server-Sent Events decoder over raw bytes.

Reads split at any byte boundary are fine: the decoder works on bytes and only complete lines are
interpreted, so a multibyte UTF-8 character split across two reads is joined before anyone decodes
it, and **any split of a body gives the same events**. It follows the WHATWG event-stream rules
that providers rely on: ``\\n``, ``\\r\\n`` and ``\\r`` line ends (a ``\\r`` ending one read and
the ``\\n`` starting the next are one line end), a leading UTF-8 byte order mark, ``:`` comment
lines, ``data:`` with or without the space, ``data`` with no colon (an empty data line), several
``data:`` lines joined with ``\\n``, an ``event:`` name, and a last event with no blank line after
it (flushed by :meth:`SSEDecoder.finish`).

Every :meth:`~SSEDecoder.feed` and :meth:`~SSEDecoder.finish` returns
:class:`~toolwire.adapters.framing.Frames`: the payloads completed, as a column, and their
event names beside them (the shape the NDJSON decoder returns too).

Cost is linear in the bytes fed, however they are split: a line longer than a read is kept as the
list of pieces it came in and joined once, when its line end arrives (the shared
:class:`~toolwire.adapters.framing.LineBuffer`). Most events are one of two shapes, a nameless
``data: PAYLOAD`` (Chat Completions, Gemini) or ``event: NAME`` / ``data: PAYLOAD`` (Anthropic,
Responses), each then a blank line: from an event boundary, a run of such events is checked and
split in bulk with C-speed list operations (:meth:`SSEDecoder._bulk`), and anything else
(comments, ``id:``, multi-line data, a name with no space...) is read line by line. Both ways
give the same events (``tests/adapters/test_sse_bulk.py``).

Memory is bounded by ``max_event_bytes`` (16 MiB by default): an event whose ``data:`` and
``event:`` lines together exceed it is not buffered further (its bytes are counted and dropped)
and comes out as one :class:`~toolwire.adapters.framing.FrameOverflow` in place of its payload,
so that a server that never sends a line end (or a non-SSE body of gigabytes) cannot exhaust
memory. Decoding goes on normally with the next event.

To tell a body that is no event stream at all (an HTML 502 page from a proxy, a JSON error body,
binary junk) from a stream, the decoder keeps :attr:`SSEDecoder.saw_field`,
:attr:`SSEDecoder.bytes_seen` and :attr:`SSEDecoder.first_bytes` at no extra cost.
"""

from __future__ import annotations

from typing import Final

from ..core.errors import ConfigurationError
from .framing import (
    DEFAULT_MAX_EVENT_BYTES,
    QUOTE_BYTES,
    FrameOverflow,
    Frames,
    LineBuffer,
    event_line,
)

__all__ = [
    "DEFAULT_MAX_EVENT_BYTES",
    "QUOTE_BYTES",
    "FrameOverflow",
    "Frames",
    "SSEDecoder",
]

_BOM: Final = b"\xef\xbb\xbf"
_DATA: Final = b"data: "
_EVENT: Final = b"event: "


class SSEDecoder:
    """Feed bytes, get the payloads of complete events (:class:`Frames`). One per stream.

    ``max_event_bytes`` caps the ``data:`` and ``event:`` lines of one event taken together (and
    so any one such line): such an event is reported even with no data line at all (a huge
    ``event:`` line). Comment, ``id:``, ``retry:`` and unknown lines over the cap are simply
    dropped, since they carry nothing toolwire uses. For the line and event in progress the
    decoder holds at most the cap plus the unfinished end of the last read
    (:attr:`buffered_bytes`).
    """

    __slots__ = (
        "_bom_held",
        "_data",
        "_event",
        "_event_size",
        "_limit",
        "_lines",
        "_names",
        "_over_has_data",
        "_over_head",
        "_payloads",
        "_saw_cr",
        "_saw_data",
        "_saw_field",
        "_started",
    )

    def __init__(self, max_event_bytes: int = DEFAULT_MAX_EVENT_BYTES) -> None:
        if type(max_event_bytes) is not int or max_event_bytes < 1:
            raise ConfigurationError(
                f"max_event_bytes must be a positive int, not {max_event_bytes!r}"
            )
        self._limit = max_event_bytes
        self._lines = LineBuffer()
        # The event in progress: its data lines, its ``event: NAME`` line, the size of its
        # data/event lines.
        self._data: list[bytes] = []
        self._event: bytes | None = None
        self._event_size = 0
        # Once the event in progress went over the cap: the quote of its data (else None).
        self._over_head: bytes | None = None
        self._over_has_data = False
        # The columns of the feed in progress (names: None until a named event is among them).
        self._payloads: list[bytes | FrameOverflow] = []
        self._names: list[bytes | None] | None = None
        self._saw_cr = False
        self._started = False
        self._bom_held = b""
        self._saw_field = False
        self._saw_data = False

    # -- what the caller reads ------------------------------------------------------------------

    @property
    def saw_field(self) -> bool:
        """True once a ``data``, ``event:``, ``id:``, ``retry:`` or comment line was seen.

        False after a whole body means it was no event stream (an HTML error page, a JSON error
        body, binary junk): quote :attr:`first_bytes` in the error rather than "no events".
        """
        return self._saw_field

    @property
    def saw_data(self) -> bool:
        """True once a ``data`` line was seen: a stream of comments (keep-alive pings) alone
        carried no event, which is no response at all rather than a stream that dropped."""
        return self._saw_data

    @property
    def bytes_seen(self) -> int:
        """How many bytes were fed in total."""
        return self._lines.bytes_seen

    @property
    def first_bytes(self) -> bytes:
        """The first bytes of the body as received (at most :data:`QUOTE_BYTES`), for quoting."""
        return self._lines.first_bytes

    @property
    def buffered_bytes(self) -> int:
        """Bytes held for the line and event in progress: at most the cap plus the last read.

        (The unfinished end of the last read is kept as it is; the quotes of an event over the
        cap, at most :data:`QUOTE_BYTES` each, are not counted.)
        """
        return self._lines.held + sum(map(len, self._data))

    # -- input ----------------------------------------------------------------------------------

    def feed(self, chunk: bytes) -> Frames:
        """Take the next bytes of the body; return the payloads of the events they complete.

        An event over the cap comes out as one :class:`FrameOverflow` where its payload would be.
        """
        if not chunk:
            return Frames([])
        lines = self._lines
        lines.count(chunk)
        if not self._started:
            chunk = self._without_bom(chunk)
            if not chunk:
                return Frames([])
        if self._saw_cr and chunk[0] == 10:
            # The previous read ended with "\r" and this one starts with "\n": one CRLF.
            chunk = chunk[1:]
            if not chunk:
                self._saw_cr = False
                return Frames([])
        self._saw_cr = chunk[-1] == 13
        if b"\r" in chunk:
            # Per read is enough: a CRLF split between reads was handled just above.
            chunk = chunk.replace(b"\r\n", b"\n").replace(b"\r", b"\n")
        if chunk[:6] == _DATA and self._single_event(chunk):
            return self._frames()
        if b"\n" not in chunk:
            # The line goes on: keep the piece, join nothing (this is what keeps cost linear).
            lines.hold(chunk, self._limit - self._event_size)
            return Frames([])
        if lines.in_long_line:
            end = chunk.find(b"\n")
            self._long_line(*lines.end_long_line(chunk, end))
            chunk = chunk[end + 1 :]
        complete, buffer = lines.split(chunk)
        self._read(complete, len(buffer))
        return self._frames()

    def finish(self) -> Frames:
        """The body ended: interpret a last line and event that had no terminator."""
        if not self._started and self._bom_held:
            # Fewer than three bytes in all, each a prefix of the byte order mark: a line.
            self._lines.hold(self._bom_held, self._limit - self._event_size)
        self._started = True
        last = self._lines.flush()
        if last is not None:
            self._long_line(*last)
        if self._data or self._over_head is not None:
            self._dispatch()
        return self._frames()

    # -- framing --------------------------------------------------------------------------------

    def _frames(self) -> Frames:
        """The columns of the feed that ends, handed over (and fresh ones for the next)."""
        frames = Frames(self._payloads, self._names)
        self._payloads = []
        self._names = None
        return frames

    def _without_bom(self, chunk: bytes) -> bytes:
        """A UTF-8 byte order mark may open the stream; it is not part of the first line."""
        chunk = self._bom_held + chunk
        if len(chunk) < 3 and _BOM.startswith(chunk):
            self._bom_held = chunk  # too short to tell yet
            return b""
        self._bom_held = b""
        self._started = True
        return chunk[3:] if chunk.startswith(_BOM) else chunk

    def _long_line(self, pieces: list[bytes], size: int, dropped: bool) -> None:
        """A line longer than a read, whole (or its head, if dropped): copy it once.

        A data line is copied straight to its value: joining and then slicing off ``data:``
        would copy a multi-megabyte payload twice more.
        """
        if dropped:
            self._line(pieces[0], size)
            return
        while len(pieces[0]) < 6 and len(pieces) > 1:
            pieces[0:2] = [pieces[0] + pieces[1]]
        first = pieces[0]
        if first[:5] == b"data:" and len(first) >= 6:
            self._saw_field = self._saw_data = True
            pieces[0] = first[6:] if first[5] == 32 else first[5:]  # 32: " "
            self._data_line(b"".join(pieces), size)
        else:
            self._line(b"".join(pieces))

    def _read(self, lines: list[bytes], size: int) -> None:
        """Complete lines (``size`` bytes in all): end the open event line by line, then the
        rest in bulk when it is a run of simple events, else line by line."""
        start = 0
        if self._data or self._event is not None or self._over_head is not None:
            for line in lines:
                start += 1
                self._line(line)
                if not line:
                    break  # a blank line always ends the event
        rest = lines[start:] if start else lines
        if not rest or size > self._limit or not self._bulk(rest):
            for line in rest:
                self._line(line)

    def _single_event(self, chunk: bytes) -> bool:
        """The commonest read of a live stream, taken whole: one ``data: X`` event and nothing
        else, with nothing open before it (a server flushes each token as it comes). False
        (nothing read) for any other read, which the line paths then read."""
        if (
            chunk[-2:] != b"\n\n"
            or chunk.count(b"\n") != 2
            or not self._lines.empty
            or self._data
            or self._event is not None
            or self._over_head is not None
            or len(chunk) > self._limit
        ):
            return False
        self._saw_field = self._saw_data = True
        if self._names is not None:
            self._names.append(None)
        self._payloads.append(chunk[6:-2])
        return True

    def _bulk(self, lines: list[bytes]) -> bool:
        """The hot path: complete events that are all ``data: X`` or all ``event: N``/``data: X``.

        Called at an event boundary (no event open) with lines at most the cap in all, so no
        event among them can be over it. Checked with C-speed list operations (slices, counts,
        one join); False (nothing read) when any event is shaped otherwise, and then the
        general line-by-line path reads them. The lines after the last complete event (the
        start of the next one) are read line by line.
        """
        named = lines[0][:7] == _EVENT
        width = 3 if named else 2
        count = len(lines) // width
        if not count:
            return False
        whole = count * width
        if lines[width - 1 : whole : width].count(b"") != count:
            return False
        data_lines = lines[width - 2 : whole : width]
        payloads = [line[6:] for line in data_lines if line[:6] == _DATA]
        if len(payloads) != count:
            return False
        if named:
            event_lines = lines[0:whole:3]
            # Each line starts "event: ": the first, and every one after a "\n" once joined.
            if b"\n".join(event_lines).count(b"\nevent: ") != count - 1:
                return False
            self._add_named(payloads, event_lines)  # type: ignore[arg-type]
        elif self._names is not None:
            self._names += [None] * count
            self._payloads += payloads
        elif self._payloads:
            self._payloads += payloads
        else:
            self._payloads = payloads  # type: ignore[assignment]
        self._saw_field = self._saw_data = True
        for line in lines[whole:]:
            self._line(line)
        return True

    def _add_named(self, payloads: list[bytes], event_lines: list[bytes | None]) -> None:
        """Append named payloads (their ``event:`` lines beside them) to the feed's columns."""
        names = self._names
        if names is None:
            if not self._payloads:
                self._payloads = payloads  # type: ignore[assignment]
                self._names = event_lines
                return
            names = self._names = [None] * len(self._payloads)
        names += event_lines
        self._payloads += payloads

    # -- events ---------------------------------------------------------------------------------

    def _line(self, line: bytes, size: int = -1) -> None:
        """Interpret one complete line; ``size`` is its real length when only its head is kept."""
        if line[:5] == b"data:":
            self._saw_field = self._saw_data = True
            value = line[6:] if line[5:6] == b" " else line[5:]
            self._data_line(value, len(line) if size < 0 else size)
        elif not line:
            self._dispatch()
        elif line[:1] == b":":
            self._saw_field = True  # a comment (keep-alive): nothing to do
        elif line == b"data":
            self._saw_field = self._saw_data = True
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
                self._event = event_line(value[1:] if value[:1] == b" " else value)
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

    def _dispatch(self) -> None:
        """A blank line (or the end of the body) ends the event in progress."""
        payload: bytes | FrameOverflow | None = None
        event = self._event
        if self._over_head is not None:
            payload = FrameOverflow(
                size=self._event_size,
                limit=self._limit,
                head=self._over_head,
                event=event[7:] if event is not None else None,
            )
            self._over_head = None
            self._over_has_data = False
        elif self._data:
            payload = self._data[0] if len(self._data) == 1 else b"\n".join(self._data)
            self._data = []
        if payload is not None:
            if event is not None and self._names is None:
                self._names = [None] * len(self._payloads)
            if self._names is not None:
                self._names.append(event)
            self._payloads.append(payload)
        self._event = None
        self._event_size = 0
