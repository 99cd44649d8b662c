"""What the SSE and NDJSON decoders share: the line buffer under them, and the shape they give.

h11 keeps one receive buffer under all of its readers; httpx gives every incremental decoder
one ``decode`` / ``flush`` shape. The same here:

- :class:`LineBuffer` is the bookkeeping of the unfinished line, written once for
  :mod:`.sse` and :mod:`.ndjson`: the end of the last read that no line end closed yet (kept as
  the pieces it came in, joined once when its line end arrives, so cost stays linear however the
  body is split), the cap (a line that passes it is counted and dropped, only its first bytes
  kept for quoting), and the first bytes and total size of the body (to tell, and quote, a body
  that is no stream at all).
- :class:`Frames` is what every ``feed`` and ``finish`` of both decoders returns: the payloads
  the read completed, in order, as columns (a list of payloads, and for SSE the events' names
  beside them), with a :class:`FrameOverflow` in place of a payload over the cap. Columns let a
  decoder hand over a run of events split in bulk (list slices, no object per event) and let
  every mapper read them with one loop.
"""

from __future__ import annotations

from typing import Final

import msgspec

__all__ = [
    "DEFAULT_MAX_EVENT_BYTES",
    "QUOTE_BYTES",
    "FrameOverflow",
    "Frames",
    "LineBuffer",
]

DEFAULT_MAX_EVENT_BYTES: Final = 16 * 1024 * 1024
"""The default cap on one event (SSE) or one line (NDJSON): far above any real chunk."""

QUOTE_BYTES: Final = 500
"""How many leading bytes are kept for quoting: of the body, and of an oversized event or line."""

# Of a line being dropped, enough to read its field name and still quote QUOTE_BYTES of its value.
_KEEP: Final = QUOTE_BYTES + 8
_EVENT_PREFIX: Final = len(b"event: ")
_SPACE: Final = b" \t\r\n"  # JSON whitespace


class FrameOverflow(msgspec.Struct, frozen=True, gc=False, kw_only=True):
    """An event (SSE) or line (NDJSON) over the decoder's cap: given in place of its payload.

    It is not ``bytes``, so a caller tells it apart with one ``type(item) is bytes`` test.

    - ``size``: the bytes the event or line was made of, in total (for SSE: its ``data:`` and
      ``event:`` lines, line ends excluded; for NDJSON: the line, its ``\\r\\n`` excluded). It is
      always greater than ``limit``.
    - ``limit``: the cap that was exceeded (``max_event_bytes`` / ``max_line_bytes``).
    - ``head``: the first bytes (at most :data:`QUOTE_BYTES`) of the event's data (its ``data``
      lines joined with ``\\n``, as the payload would have been) or of the line, for quoting.
    - ``event``: the SSE event name when an ``event:`` line came before the event went over the
      cap; ``None`` otherwise, and always for NDJSON.
    """

    size: int
    limit: int
    head: bytes
    event: bytes | None = None


class Frames:
    """The payloads one ``feed`` (or ``finish``) completed, in stream order, as columns.

    ``payloads[i]`` is the ``i``-th event's data (SSE) or line (NDJSON) as ``bytes``, or a
    :class:`FrameOverflow` where it passed the cap. :meth:`name` gives the SSE event name beside
    it. Names are kept as their ``event: NAME`` lines and cut only when asked for: most formats
    never ask (the payload says what it is), and a run of events is handed over without one
    object, or one slice, per name.

    :attr:`joined` is the same column unsplit, when the decoder has it so: NDJSON lines as they
    came, ``\\n`` between them, none with a ``\\r``, none over the cap, blank ones still in
    (``payloads`` is then its non-blank lines, :func:`non_blank`, made on first use). It is for
    a consumer that reads all the lines in one go without an object per line (Ollama), and
    must then refuse a blank line as it would refuse a line it cannot read.
    """

    __slots__ = ("_event_lines", "_payloads", "joined")

    def __init__(
        self,
        payloads: list[bytes | FrameOverflow] | None = None,
        event_lines: list[bytes | None] | None = None,
        *,
        joined: bytes | None = None,
    ) -> None:
        self._payloads = payloads
        #: ``None`` when no payload has a name; else, beside each payload, ``event: NAME`` or None.
        self._event_lines = event_lines
        #: The lines, unsplit (see above), or ``None``.
        self.joined = joined

    @property
    def payloads(self) -> list[bytes | FrameOverflow]:
        """The payloads, in stream order."""
        payloads = self._payloads
        if payloads is None:
            joined = self.joined
            lines = [] if joined is None else non_blank(joined.split(b"\n"))
            payloads = self._payloads = lines  # type: ignore[assignment]
        return payloads  # type: ignore[return-value]

    def name(self, index: int) -> bytes | None:
        """The event name of ``payloads[index]`` (``None``: no ``event:`` line; always, NDJSON)."""
        lines = self._event_lines
        if lines is None:
            return None
        line = lines[index]
        return None if line is None else line[_EVENT_PREFIX:]

    @property
    def names(self) -> list[bytes | None]:
        """Every payload's event name, as :meth:`name` gives it."""
        return [self.name(index) for index in range(len(self.payloads))]

    def __repr__(self) -> str:
        return f"Frames(payloads={self.payloads!r}, names={self.names!r})"


def non_blank(lines: list[bytes]) -> list[bytes]:
    """The lines that are not empty or JSON whitespace only: NDJSON's keep-alive lines go."""
    return [line for line in lines if line and (line[0] not in _SPACE or line.strip(_SPACE))]


def event_line(name: bytes) -> bytes:
    """The ``event: NAME`` spelling that :class:`Frames` keeps a name in."""
    return b"event: " + name


class LineBuffer:
    """The unfinished line of a body, its cap, and the body's first bytes and size.

    The decoders above it decide what ends a line (SSE turns ``\\r\\n`` and ``\\r`` into
    ``\\n`` first; NDJSON leaves a ``\\r`` for this buffer to strip) and what a line means; this
    buffer only holds what no ``\\n`` ended yet, at most the decoder's ``budget`` of it: past
    that, the line is counted and dropped (its first bytes kept), so that a server that never
    sends a line end cannot exhaust memory.
    """

    __slots__ = (
        "_drop_cr",
        "_drop_head",
        "_drop_size",
        "_more",
        "_more_size",
        "_tail",
        "bytes_seen",
        "first_bytes",
    )

    def __init__(self) -> None:
        # The unfinished last line: the piece after the last line end (most often all of it),
        # then any further pieces while it goes on past a read (no line end in any of them).
        self._tail = b""
        self._more: list[bytes] = []
        self._more_size = 0
        # While the unfinished line is being dropped: its size so far, its first bytes, and
        # whether its last byte so far is "\r" (which a line end would make no part of it).
        self._drop_size = -1
        self._drop_head = b""
        self._drop_cr = False
        #: How many bytes were fed in total.
        self.bytes_seen = 0
        #: The first bytes of the body as received (at most :data:`QUOTE_BYTES`).
        self.first_bytes = b""

    def count(self, chunk: bytes) -> None:
        """Count a read into :attr:`bytes_seen` and :attr:`first_bytes` (before any rewriting)."""
        seen = self.bytes_seen
        self.bytes_seen = seen + len(chunk)
        if seen < QUOTE_BYTES:
            self.first_bytes += chunk[: QUOTE_BYTES - seen]

    @property
    def held(self) -> int:
        """Bytes kept of the unfinished line (none once it is being dropped)."""
        return len(self._tail) + self._more_size

    @property
    def empty(self) -> bool:
        """Nothing is held: the next read starts a line."""
        return not self._tail and not self._more and self._drop_size < 0

    @property
    def in_long_line(self) -> bool:
        """The unfinished line began before the last read: end it with :meth:`end_long_line`."""
        return self._drop_size >= 0 or bool(self._more)

    @property
    def dropping(self) -> bool:
        """The unfinished line passed its budget: only its size and first bytes are kept."""
        return self._drop_size >= 0

    def hold(self, piece: bytes, budget: int) -> None:
        """Keep ``piece`` (no line end in it) of the unfinished line, at most ``budget`` bytes.

        Past the budget the line is dropped: its first bytes are kept and the rest only counted.
        """
        if self._drop_size >= 0:
            self._count_dropped(piece, len(piece))
            return
        if self._tail:
            self._more.append(piece)
            self._more_size += len(piece)
        else:
            self._tail = piece
        size = len(self._tail) + self._more_size
        if size > budget:
            head = self._tail[:_KEEP]
            for more in self._more:
                if len(head) >= _KEEP:
                    break
                head += more[: _KEEP - len(head)]
            self._drop_head = head
            self._drop_size = size
            self._drop_cr = piece[-1] == 13
            self._tail = b""
            self._more = []
            self._more_size = 0

    def split(self, chunk: bytes) -> tuple[list[bytes], bytes]:
        """The lines ``chunk`` ends (no long line open): ``(lines, the bytes split)``.

        The unfinished end is kept; the lines come without their ``\\n``.
        """
        tail = self._tail
        buffer = tail + chunk if tail else chunk
        lines = buffer.split(b"\n")
        self._tail = lines.pop()
        return lines, buffer

    def split_block(self, chunk: bytes) -> bytes | None:
        """The lines ``chunk`` ends (no long line open), unsplit: ``\\n`` between them, none
        after the last; ``None`` when it ends none. The unfinished end is kept."""
        last = chunk.rfind(b"\n")
        tail = self._tail
        if last < 0:
            self._tail = tail + chunk if tail else chunk
            return None
        self._tail = chunk[last + 1 :]
        return tail + chunk[:last] if tail else chunk[:last]

    def end_long_line(self, chunk: bytes, end: int) -> tuple[list[bytes], int, bool]:
        """``chunk[end]`` is the ``\\n`` that ends the long line: ``(pieces, size, dropped)``.

        Kept, it comes as the pieces it came in (the caller joins them once, so that its bytes
        are copied once); dropped, as ``[its first bytes]`` and its real size. A ``\\r`` right
        before the ``\\n`` is no part of it either way.
        """
        if self._drop_size >= 0:
            self._count_dropped(chunk, end)
            size = self._drop_size - (1 if self._drop_cr else 0)
            head = self._drop_head[:size]
            self._drop_size = -1
            self._drop_head = b""
            self._drop_cr = False
            return [head], size, True
        pieces = [self._tail, *self._more]
        if end:
            pieces.append(chunk[:end])
        size = len(self._tail) + self._more_size + end
        self._tail = b""
        self._more = []
        self._more_size = 0
        if pieces[-1][-1:] == b"\r":
            pieces[-1] = pieces[-1][:-1]
            size -= 1
        return pieces, size, False

    def flush(self) -> tuple[list[bytes], int, bool] | None:
        """The body ended: the unfinished line, as :meth:`end_long_line` gives it, or ``None``."""
        if self._drop_size < 0 and not self._tail:
            return None
        return self.end_long_line(b"", 0)

    def _count_dropped(self, piece: bytes, length: int) -> None:
        """Count the first ``length`` bytes of ``piece`` into the line being dropped."""
        if length:
            self._drop_size += length
            self._drop_cr = piece[length - 1] == 13
            if len(self._drop_head) < _KEEP:
                self._drop_head += piece[: min(length, _KEEP - len(self._drop_head))]
