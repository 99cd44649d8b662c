"""A sans-I/O Server-Sent Events decoder over raw bytes.

Reads split at any byte boundary are fine: the decoder works on bytes and only complete lines are
interpreted, so a multibyte UTF-8 character split across two reads is joined before anyone decodes
it. It follows the WHATWG event-stream rules that providers rely on: ``\\n``, ``\\r\\n`` and ``\\r``
line ends, ``:`` comment lines, ``data:`` with or without the space, several ``data:`` lines
joined with ``\\n``, an ``event:`` name, and a last event with no blank line after it (flushed by
:meth:`SSEDecoder.finish`).
"""

from __future__ import annotations

__all__ = ["SSEDecoder", "SSEMessage"]


class SSEMessage:
    """One dispatched event: its ``event`` name (or ``None``) and its ``data`` bytes."""

    __slots__ = ("data", "event")

    def __init__(self, event: bytes | None, data: bytes) -> None:
        self.event = event
        self.data = data

    def __repr__(self) -> str:
        return f"SSEMessage(event={self.event!r}, data={self.data!r})"


class SSEDecoder:
    """Feed bytes, get complete messages. One instance per stream."""

    __slots__ = ("_data", "_event", "_pending", "_saw_cr", "_started")

    def __init__(self) -> None:
        self._pending = b""
        self._data: list[bytes] = []
        self._event: bytes | None = None
        self._saw_cr = False
        self._started = False

    def feed(self, chunk: bytes) -> list[SSEMessage]:
        """Take the next bytes of the body; return the messages they complete."""
        return [
            SSEMessage(None, item) if type(item) is bytes else item  # type: ignore[misc]
            for item in self._feed(chunk)
        ]

    def feed_data(self, chunk: bytes) -> list[bytes]:
        """Like :meth:`feed`, but only the ``data`` of each message (event names dropped).

        For formats whose payloads say what they are (Chat Completions): no object per message.
        """
        return [item if type(item) is bytes else item.data for item in self._feed(chunk)]  # type: ignore[union-attr]

    def _feed(self, chunk: bytes) -> list[bytes | SSEMessage]:
        """Messages as bare ``bytes`` (data only, no event name) or :class:`SSEMessage`."""
        if not self._started:
            # A UTF-8 byte order mark may open the stream; it is not part of the first line.
            if len(self._pending) + len(chunk) < 3 and b"\xef\xbb\xbf".startswith(
                self._pending + chunk
            ):
                self._pending += chunk
                return []
            chunk = self._pending + chunk
            self._pending = b""
            self._started = True
            if chunk.startswith(b"\xef\xbb\xbf"):
                chunk = chunk[3:]
        if not chunk:
            return []
        if self._saw_cr and chunk[:1] == b"\n":
            # The previous read ended with "\r" and this one starts with "\n": one CRLF.
            chunk = chunk[1:]
        self._saw_cr = chunk[-1:] == b"\r"
        buffer = self._pending + chunk if self._pending else chunk
        if b"\r" in buffer:
            buffer = buffer.replace(b"\r\n", b"\n").replace(b"\r", b"\n")
        messages: list[bytes | SSEMessage] = []
        if not self._data and self._event is None:
            fast = self._simple_events(buffer)
            if fast is not None:
                return fast
        lines = buffer.split(b"\n")
        self._pending = lines.pop()
        for line in lines:
            self._line(line, messages)
        return messages

    def _simple_events(self, buffer: bytes) -> list[bytes | SSEMessage] | None:
        """The hot path: a run of events that are one ``data: ...`` line each.

        Checked with C-speed list operations (single-byte split, slices, count); ``None`` when
        the buffer holds anything else (comments, event names, multi-line data), and then the
        general line-by-line path reads it.
        """
        lines = buffer.split(b"\n")
        tail = lines.pop()
        if len(lines) % 2:
            # The last complete line still waits for its blank line: keep it for the next read.
            tail = lines.pop() + b"\n" + tail
        blanks = lines[1::2]
        if blanks.count(b"") != len(blanks):
            return None
        data_lines = lines[0::2]
        payloads: list[bytes | SSEMessage] = [
            line[6:] for line in data_lines if line[:6] == b"data: "
        ]
        if len(payloads) != len(data_lines):
            return None
        self._pending = tail
        return payloads

    def finish(self) -> list[SSEMessage]:
        """The body ended: interpret a last line and event that had no terminator."""
        messages: list[bytes | SSEMessage] = []
        if self._pending:
            for line in self._pending.split(b"\n"):
                self._line(line, messages)
            self._pending = b""
        if self._data:
            self._line(b"", messages)
        return [SSEMessage(None, item) if type(item) is bytes else item for item in messages]  # type: ignore[misc]

    def _line(self, line: bytes, messages: list[bytes | SSEMessage]) -> None:
        if not line:
            if self._data:
                data = self._data[0] if len(self._data) == 1 else b"\n".join(self._data)
                messages.append(data if self._event is None else SSEMessage(self._event, data))
                self._data = []
            self._event = None
            return
        if line[:5] == b"data:":
            value = line[5:]
            if value[:1] == b" ":
                value = value[1:]
            self._data.append(value)
        elif line == b"data":
            self._data.append(b"")  # a field name alone: the field with an empty value
        elif line[:1] == b":":
            return
        elif line[:6] == b"event:":
            value = line[6:]
            self._event = value[1:] if value[:1] == b" " else value
        # "id:", "retry:" and unknown fields carry nothing toolwire needs.
