"""The skeleton every provider's mapper shares, so that each keeps only its own format's words.

Every mapper keeps a :class:`~toolwire.core.stream_state.StreamState`, says it is ``done`` when
that state ended, ends the turn on :meth:`~MapperBase.fail`, and reads each payload the decoder
hands it the same way (:meth:`MapperBase._decoded`): an event or line over the framing cap, a
payload that is not JSON and one of a shape the provider never sends are each an unreadable
piece (:mod:`.frame_errors`), which costs every call open then its right to run; a blank
payload is nothing. At the end of a body, one with no event-stream (or NDJSON) line at all is
said to be no stream (:meth:`MapperBase._not_a_stream`), never a dropped connection.

A format says how its payloads are called in those errors (:attr:`MapperBase.unit`,
:attr:`MapperBase.line_unit`), and overrides :meth:`~MapperBase._unreadable` (to keep more
state about lost pieces), :meth:`~MapperBase._not_json` (a format whose error events may be
plain text) or :meth:`~MapperBase._end` (content to hand back with the turn) when it must.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import ClassVar, TypeVar

import msgspec

from ..core.events import Event, ProviderError
from ..core.mapper import MapperSettings, cap_text
from ..core.stream_state import StreamState
from .frame_errors import not_json_error, overflow_error, unknown_shape_error
from .framing import FrameOverflow
from .ndjson import NDJSONDecoder
from .sse import SSEDecoder

__all__ = ["MapperBase"]

_T = TypeVar("_T")


class MapperBase:
    """The part of :class:`~toolwire.core.mapper.ProviderMapper` that no format changes."""

    #: How one payload of the format is called in an ``unknown_shape`` error.
    unit: ClassVar[str] = "a chunk"
    #: How one payload of the format is called in a ``not_json`` error.
    line_unit: ClassVar[str] = "a data line"

    def __init__(self, settings: MapperSettings, *, hides_length_finish: bool = False) -> None:
        self._state = StreamState(settings, hides_length_finish=hides_length_finish)
        self._facts = self._state.facts
        #: Payloads came as SDK objects, not as a body: there is no body to call no stream.
        self._object_source = False

    @property
    def done(self) -> bool:
        """The terminator (or a fatal error) was seen: nothing after it is read."""
        return self._state.ended

    def fail(self, error: ProviderError) -> list[Event]:
        """A fatal error from outside the body (an HTTP status): the turn ends in ``error``."""
        out: list[Event] = []
        if not self._state.ended:
            self._state.fatal(out, error)
            self._end(out)
        return out

    def fail_response(self, error: ProviderError, status: int, body: bytes) -> list[Event]:
        """A non-2xx response (:class:`~toolwire.core.mapper.ReadsErrorBody`): :meth:`fail`,
        unless ``body`` is a known tool-parser failure of the server (the model's broken call,
        read from what the body quotes) or a refusal of the request's history.
        """
        out: list[Event] = []
        if not self._state.ended:
            self._state.fatal_or_known(out, error, status, body)
            self._end(out)
        return out

    # -- the shared steps ----------------------------------------------------------------------

    def _in_band_error(self, out: list[Event], message: str, code: str | None, data: bytes) -> None:
        """An error payload in the stream (``data``): fatal, unless it is a known tool-parser
        failure (Ollama's ``error parsing tool call``), which is the model's broken call."""
        error = ProviderError(
            message=message,
            kind="error_payload",
            code=code,
            raw=cap_text(data) if data else "",
            fatal=True,
        )
        self._state.fatal_or_known(out, error, None, data or message.encode())

    def _end(self, out: list[Event]) -> None:
        """Close the open calls and decide the finish (once)."""
        self._state.end(out)

    def _unreadable(self, out: list[Event], error: ProviderError) -> None:
        """A piece of the stream could not be read: every call open then never runs."""
        self._state.unreadable(out, error)

    def _not_json(
        self, error: msgspec.DecodeError, data: bytes, name: bytes | None, out: list[Event]
    ) -> None:
        """A payload that is not JSON (``name``: its SSE event name, if any)."""
        self._unreadable(out, not_json_error(error, data, self.line_unit))

    def _decoded(
        self,
        decode: Callable[[bytes], _T],
        data: bytes | FrameOverflow,
        out: list[Event],
        name: bytes | None = None,
    ) -> _T | None:
        """One payload decoded into the format's Struct, or ``None`` with its error reported.

        An overflow is ``too_long``, a shape the provider never sends ``unknown_shape``, a
        payload that is not JSON ``not_json`` (:meth:`_not_json`); a blank one is nothing.
        """
        if type(data) is FrameOverflow:
            self._unreadable(out, overflow_error(data))
            return None
        assert type(data) is bytes
        try:
            return decode(data)
        except msgspec.ValidationError as error:
            self._unreadable(out, unknown_shape_error(error, data, self.unit))
        except msgspec.DecodeError as error:
            if data.strip():
                self._not_json(error, data, name, out)
        return None

    def _not_a_stream(
        self,
        out: list[Event],
        decoder: SSEDecoder | NDJSONDecoder,
        *,
        failed: bool,
        saw_stream: bool,
        saw_events: bool | None = None,
        what: str = "an event stream",
    ) -> bool:
        """At the end: a body with nothing of ``what`` in it (an HTML error page, a JSON error
        body, an empty 200) is said to be so, quoting its first bytes; True when it was.

        Saying "the stream dropped" would invite a retry that fails the same way. Not for SDK
        objects, a turn already ended, or a read that failed. An event stream that carried no
        event (``saw_events`` False; by default, an SSE body of comments alone: the keep-alive
        pings a slow server sends before it answers nothing) is an empty response too.
        """
        if self._object_source or self._state.ended or failed:
            return False
        if saw_events is None:
            saw_events = not isinstance(decoder, SSEDecoder) or decoder.saw_data
        if saw_stream and not saw_events:
            self._state.no_event(out, size=decoder.bytes_seen)
            return True
        if saw_stream:
            return False
        self._state.not_a_stream(out, size=decoder.bytes_seen, head=decoder.first_bytes, what=what)
        return True
