"""A sans-I/O NDJSON decoder over raw bytes: one JSON value per line.

Ollama's native API (``/api/chat``, ``application/x-ndjson``) streams one JSON object per line.
This module only frames: it hands back each complete line as ``bytes`` and never decodes JSON,
so that the mapper decodes each line once, straight into its typed Structs.

The rules, each for a quirk seen or allowed in the wild:

- a line ends at ``\\n``; a ``\\r`` before it is dropped (``\\r\\n`` written by a proxy or a
  Windows server), even when the ``\\r`` ends one read and the ``\\n`` starts the next;
- blank lines (empty, or JSON whitespace only) are skipped: keep-alive newlines are not values;
- a last line with no ``\\n`` after it is flushed by :meth:`NDJSONDecoder.finish` (a server that
  closes right after its last object).

Cost is linear in the bytes fed, however they are split (a line longer than a read is kept as a
list of pieces and joined once). Memory is bounded by ``max_line_bytes``: a longer line is not
kept (its bytes are counted and dropped) and comes out as one
:class:`~toolwire.adapters.sse.FrameOverflow` in its place; the lines after it decode normally.

Like the SSE decoder, it keeps :attr:`NDJSONDecoder.saw_object`,
:attr:`NDJSONDecoder.bytes_seen` and :attr:`NDJSONDecoder.first_bytes`, so that a body that is no
NDJSON at all (an HTML 502 page from a proxy) can be told from a stream and quoted.
"""

from __future__ import annotations

from typing import Final

from ..core.errors import ConfigurationError
from .sse import DEFAULT_MAX_EVENT_BYTES, QUOTE_BYTES, FrameOverflow

__all__ = ["DEFAULT_MAX_LINE_BYTES", "FrameOverflow", "NDJSONDecoder"]

DEFAULT_MAX_LINE_BYTES: Final = DEFAULT_MAX_EVENT_BYTES
"""The default cap on one line: the same as the SSE decoder's cap on one event."""

_JSON_SPACE: Final = b" \t\r\n"


class NDJSONDecoder:
    """Feed bytes, get complete non-blank lines (without their line end). One per stream.

    A line longer than ``max_line_bytes`` (its ``\\r\\n`` not counted) comes out as a
    :class:`~toolwire.adapters.sse.FrameOverflow` (``event`` is always ``None``) in its place.
    For the line in progress the decoder holds at most the cap (plus one byte, for a ``\\r``
    that may end the line) plus the unfinished end of the last read (:attr:`buffered_bytes`).
    """

    __slots__ = (
        "_bytes_seen",
        "_drop_cr",
        "_drop_head",
        "_drop_size",
        "_first",
        "_limit",
        "_more",
        "_more_size",
        "_saw_object",
        "_tail",
    )

    def __init__(self, max_line_bytes: int = DEFAULT_MAX_LINE_BYTES) -> None:
        if type(max_line_bytes) is not int or max_line_bytes < 1:
            raise ConfigurationError(
                f"max_line_bytes must be a positive int, not {max_line_bytes!r}"
            )
        self._limit = max_line_bytes
        # The unfinished last line: the piece after the last "\n", then further pieces.
        self._tail = b""
        self._more: list[bytes] = []
        self._more_size = 0
        # While the unfinished line is being dropped: its size so far, its first bytes, and
        # whether its last byte so far is "\r" (which the line end would make no part of it).
        self._drop_size = -1
        self._drop_head = b""
        self._drop_cr = False
        self._saw_object = False
        self._bytes_seen = 0
        self._first = b""

    # -- what the caller reads ------------------------------------------------------------------

    @property
    def saw_object(self) -> bool:
        """True once a line whose first non-blank byte is ``{`` was seen (or begun, if too long).

        False after a whole body means it was no NDJSON stream of objects (an HTML error page,
        plain text, binary junk): quote :attr:`first_bytes` in the error.
        """
        return self._saw_object

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
        """Bytes held for the line in progress: at most the cap (+ 1) plus the last read.

        (The unfinished end of the last read is kept as it is; the quote of a line over the cap,
        at most :data:`QUOTE_BYTES` + 1, is not counted.)
        """
        return len(self._tail) + self._more_size

    # -- input ----------------------------------------------------------------------------------

    def feed(self, chunk: bytes) -> list[bytes | FrameOverflow]:
        """Take the next bytes of the body; return the lines they complete, blank ones skipped.

        Every item is ``bytes`` except a line over the cap, which is a ``FrameOverflow``
        (test ``type(item) is bytes``: one identity check per line).
        """
        if not chunk:
            return []
        seen = self._bytes_seen
        self._bytes_seen = seen + len(chunk)
        if seen < QUOTE_BYTES:
            self._first += chunk[: QUOTE_BYTES - seen]
        if b"\n" not in chunk:
            # The line goes on: keep the piece, join nothing (this is what keeps cost linear).
            self._hold(chunk)
            return []
        out: list[bytes | FrameOverflow] = []
        if self._drop_size >= 0 or self._more:
            # The end of a line longer than a read: ended apart from the rest of the read, so
            # that its bytes are copied once (joined), not again by a split.
            end = chunk.find(b"\n")
            if self._drop_size >= 0:
                self._count_dropped(chunk, end)
                out.append(self._end_dropped_line())
            else:
                self._long_line([self._tail, *self._more, chunk[:end]], out)
            buffer = chunk[end + 1 :]
        else:
            tail = self._tail
            buffer = tail + chunk if tail else chunk
        lines = buffer.split(b"\n")
        self._tail = lines.pop()
        if b"\r" in buffer:
            lines = [line[:-1] if line[-1:] == b"\r" else line for line in lines]
        if len(buffer) > self._limit:
            # Only then can a line among them be over the cap.
            for line in lines:
                self._line(line, out)
            return out
        kept = [
            line
            for line in lines
            if line and (line[0] not in _JSON_SPACE or line.strip(_JSON_SPACE))
        ]
        if not self._saw_object:
            self._saw_object = any(line.lstrip(_JSON_SPACE)[:1] == b"{" for line in kept)
        if out:
            out.extend(kept)
            return out
        return kept  # type: ignore[return-value]

    def finish(self) -> list[bytes | FrameOverflow]:
        """The body ended: a last line with no ``\\n`` after it is complete."""
        out: list[bytes | FrameOverflow] = []
        if self._drop_size >= 0:
            out.append(self._end_dropped_line())
        elif self._tail:
            line = b"".join([self._tail, *self._more]) if self._more else self._tail
            self._tail = b""
            self._more = []
            self._more_size = 0
            self._line(line[:-1] if line[-1:] == b"\r" else line, out)
        return out

    # -- framing --------------------------------------------------------------------------------

    def _long_line(self, pieces: list[bytes], out: list[bytes | FrameOverflow]) -> None:
        """Join the pieces of a line longer than a read, its ``\\r`` (if any) left out."""
        self._tail = b""
        self._more = []
        self._more_size = 0
        if not pieces[-1]:
            pieces.pop()  # the "\n" started the read
        if pieces[-1][-1:] == b"\r":
            pieces[-1] = pieces[-1][:-1]
        self._line(b"".join(pieces), out)

    def _line(self, line: bytes, out: list[bytes | FrameOverflow]) -> None:
        """One complete line (its line end removed), checked against the cap."""
        if len(line) > self._limit:
            out.append(self._overflow(len(line), line[:QUOTE_BYTES]))
        elif line and (line[0] not in _JSON_SPACE or line.strip(_JSON_SPACE)):
            if not self._saw_object and line.lstrip(_JSON_SPACE)[:1] == b"{":
                self._saw_object = True
            out.append(line)

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
        size = len(self._tail) + self._more_size
        if size > self._limit + 1:
            # Over the cap even if its last byte is a "\r" that the line end drops: stop keeping.
            head = self._tail[: QUOTE_BYTES + 1]
            for more in self._more:
                if len(head) > QUOTE_BYTES:
                    break
                head += more[: QUOTE_BYTES + 1 - len(head)]
            self._drop_head = head
            self._drop_size = size
            self._drop_cr = piece[-1] == 13
            self._tail = b""
            self._more = []
            self._more_size = 0

    def _count_dropped(self, piece: bytes, length: int) -> None:
        """Count the first ``length`` bytes of ``piece`` into the line being dropped."""
        if length:
            self._drop_size += length
            self._drop_cr = piece[length - 1] == 13
            if len(self._drop_head) <= QUOTE_BYTES:
                self._drop_head += piece[: min(length, QUOTE_BYTES + 1 - len(self._drop_head))]

    def _end_dropped_line(self) -> FrameOverflow:
        """The line end of a dropped line arrived: its overflow, from its size and first bytes."""
        size = self._drop_size - (1 if self._drop_cr else 0)
        head = self._drop_head[:size]  # without a final "\r" when the head is the whole line
        self._drop_size = -1
        self._drop_head = b""
        self._drop_cr = False
        return self._overflow(size, head[:QUOTE_BYTES])

    def _overflow(self, size: int, head: bytes) -> FrameOverflow:
        """The item for a line over the cap (which still counts as an object if it began as one)."""
        if not self._saw_object and head.lstrip(_JSON_SPACE)[:1] == b"{":
            self._saw_object = True
        return FrameOverflow(size=size, limit=self._limit, head=head)
