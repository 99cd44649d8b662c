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

    __slots__ = ("_data", "_event", "_pending", "_saw_cr")

    def __init__(self) -> None:
        self._pending = b""
        self._data: list[bytes] = []
        self._event: bytes | None = None
        self._saw_cr = False

    def feed(self, chunk: bytes) -> list[SSEMessage]:
        """Take the next bytes of the body; return the messages they complete."""
        if not chunk:
            return []
        if self._saw_cr and chunk[:1] == b"\n":
            # The previous read ended with "\r" and this one starts with "\n": one CRLF.
            chunk = chunk[1:]
        self._saw_cr = chunk[-1:] == b"\r"
        buffer = self._pending + chunk if self._pending else chunk
        if b"\r" in buffer:
            buffer = buffer.replace(b"\r\n", b"\n").replace(b"\r", b"\n")
        lines = buffer.split(b"\n")
        self._pending = lines.pop()
        messages: list[SSEMessage] = []
        for line in lines:
            self._line(line, messages)
        return messages

    def finish(self) -> list[SSEMessage]:
        """The body ended: interpret a last line and event that had no terminator."""
        messages: list[SSEMessage] = []
        if self._pending:
            self._line(self._pending, messages)
            self._pending = b""
        if self._data:
            self._line(b"", messages)
        return messages

    def _line(self, line: bytes, messages: list[SSEMessage]) -> None:
        if not line:
            if self._data:
                data = self._data[0] if len(self._data) == 1 else b"\n".join(self._data)
                messages.append(SSEMessage(self._event, data))
                self._data = []
            self._event = None
            return
        if line[:5] == b"data:":
            value = line[5:]
            if value[:1] == b" ":
                value = value[1:]
            self._data.append(value)
        elif line[:1] == b":":
            return
        elif line[:6] == b"event:":
            value = line[6:]
            self._event = value[1:] if value[:1] == b" " else value
        # "id:", "retry:" and unknown fields carry nothing toolwire needs.
