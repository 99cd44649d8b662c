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
:class:`~toolwire.adapters.framing.FrameOverflow` in its place; the lines after it decode normally.
The unfinished line, the cap and the body's first bytes are kept by the
:class:`~toolwire.adapters.framing.LineBuffer` the SSE decoder uses too, and every
:meth:`~NDJSONDecoder.feed` and :meth:`~NDJSONDecoder.finish` returns the same
:class:`~toolwire.adapters.framing.Frames` (the lines as one column, never named).

Like the SSE decoder, it keeps :attr:`NDJSONDecoder.saw_object`,
:attr:`NDJSONDecoder.bytes_seen` and :attr:`NDJSONDecoder.first_bytes`, so that a body that is no
NDJSON at all (an HTML 502 page from a proxy) can be told from a stream and quoted.
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
    non_blank,
)

__all__ = ["DEFAULT_MAX_LINE_BYTES", "FrameOverflow", "Frames", "NDJSONDecoder"]

DEFAULT_MAX_LINE_BYTES: Final = DEFAULT_MAX_EVENT_BYTES
"""The default cap on one line: the same as the SSE decoder's cap on one event."""

_JSON_SPACE: Final = b" \t\r\n"


class NDJSONDecoder:
    """Feed bytes, get complete non-blank lines (without their line end). One per stream.

    A line longer than ``max_line_bytes`` (its ``\\r\\n`` not counted) comes out as a
    :class:`~toolwire.adapters.framing.FrameOverflow` (``event`` is always ``None``) in its
    place. For the line in progress the decoder holds at most the cap (plus one byte, for a
    ``\\r`` that may end the line) plus the unfinished end of the last read
    (:attr:`buffered_bytes`).
    """

    __slots__ = ("_limit", "_lines", "_saw_object")

    def __init__(self, max_line_bytes: int = DEFAULT_MAX_LINE_BYTES) -> None:
        if type(max_line_bytes) is not int or max_line_bytes < 1:
            raise ConfigurationError(
                f"max_line_bytes must be a positive int, not {max_line_bytes!r}"
            )
        self._limit = max_line_bytes
        self._lines = LineBuffer()
        self._saw_object = False

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
        return self._lines.bytes_seen

    @property
    def first_bytes(self) -> bytes:
        """The first bytes of the body as received (at most :data:`QUOTE_BYTES`), for quoting."""
        return self._lines.first_bytes

    @property
    def buffered_bytes(self) -> int:
        """Bytes held for the line in progress: at most the cap (+ 1) plus the last read.

        (The unfinished end of the last read is kept as it is; the quote of a line over the cap,
        at most :data:`QUOTE_BYTES` + 1, is not counted.)
        """
        return self._lines.held

    # -- input ----------------------------------------------------------------------------------

    def feed(self, chunk: bytes) -> Frames:
        """Take the next bytes of the body; return the lines they complete, blank ones skipped.

        Every payload is ``bytes`` except a line over the cap, which is a ``FrameOverflow``
        (test ``type(item) is bytes``: one identity check per line).
        """
        if not chunk:
            return Frames([])
        buffer = self._lines
        buffer.count(chunk)
        if b"\n" not in chunk:
            # The line goes on: keep the piece, join nothing (this is what keeps cost linear).
            # One byte over the cap is allowed for a "\r" that the line end would drop.
            buffer.hold(chunk, self._limit + 1)
            return Frames([])
        out: list[bytes | FrameOverflow] = []
        if buffer.in_long_line:
            # The end of a line longer than a read: ended apart from the rest of the read, so
            # that its bytes are copied once (joined), not again by a split.
            end = chunk.find(b"\n")
            self._whole_line(*buffer.end_long_line(chunk, end), out)
            chunk = chunk[end + 1 :]
        joined = buffer.split_block(chunk)
        if joined is None:
            return Frames(out)
        if not out and self._saw_object and len(joined) <= self._limit and b"\r" not in joined:
            # The common read, checked at C speed: no "\r" to drop, no line over the cap, and
            # the body known to be NDJSON. The lines are handed over unsplit (see Frames).
            return Frames(joined=joined)
        lines = joined.split(b"\n")
        if b"\r" in joined:
            lines = [line[:-1] if line[-1:] == b"\r" else line for line in lines]
        if len(joined) > self._limit:
            # Only then can a line among them be over the cap.
            for line in lines:
                self._line(line, out)
            return Frames(out)
        kept = non_blank(lines)
        if not self._saw_object:
            self._saw_object = any(line.lstrip(_JSON_SPACE)[:1] == b"{" for line in kept)
        if out:
            out.extend(kept)
            return Frames(out)
        return Frames(kept)  # type: ignore[arg-type]

    def finish(self) -> Frames:
        """The body ended: a last line with no ``\\n`` after it is complete."""
        out: list[bytes | FrameOverflow] = []
        last = self._lines.flush()
        if last is not None:
            self._whole_line(*last, out)
        return Frames(out)

    # -- framing --------------------------------------------------------------------------------

    def _whole_line(
        self, pieces: list[bytes], size: int, dropped: bool, out: list[bytes | FrameOverflow]
    ) -> None:
        """A line longer than a read, ended: joined once, or its overflow if it was dropped."""
        if dropped:
            out.append(self._overflow(size, pieces[0][:QUOTE_BYTES]))
        else:
            self._line(b"".join(pieces), out)

    def _line(self, line: bytes, out: list[bytes | FrameOverflow]) -> None:
        """One complete line (its line end removed), checked against the cap."""
        if len(line) > self._limit:
            out.append(self._overflow(len(line), line[:QUOTE_BYTES]))
        elif line and (line[0] not in _JSON_SPACE or line.strip(_JSON_SPACE)):
            if not self._saw_object and line.lstrip(_JSON_SPACE)[:1] == b"{":
                self._saw_object = True
            out.append(line)

    def _overflow(self, size: int, head: bytes) -> FrameOverflow:
        """The item for a line over the cap (which still counts as an object if it began as one)."""
        if not self._saw_object and head.lstrip(_JSON_SPACE)[:1] == b"{":
            self._saw_object = True
        return FrameOverflow(size=size, limit=self._limit, head=head)
