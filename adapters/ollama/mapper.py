"""Ollama's native chat stream (``POST /api/chat``, ``application/x-ndjson``) into toolwire events.

Each line is one ``ChatResponse`` (ollama/ollama ``api/types.go``): ``model``, ``created_at``,
``message`` (``role``, ``content``, ``thinking``, ``tool_calls``), ``done``, and on the last line
``done_reason`` and the counters (``prompt_eval_count``, ``eval_count``...). The rules, each
read from Ollama's source (``server/routes.go``, ``model/parsers/``):

- the terminator is the line with ``done: true``; a body that ends without one is a stream
  that dropped (``disconnected``);
- ``done_reason`` is ``stop`` or ``length`` (``llm.DoneReason``), ``load`` / ``unload`` on the
  empty answers that (un)load a model, and *absent* on a ``done`` line when the runner's
  connection closed (``DoneReasonConnectionClosed`` prints as ``""``, dropped by
  ``omitempty``): that one, and anything unknown, is ``unknown``, never a normal end;
- Ollama parses the model's output itself, so a tool call arrives whole in one line, its
  ``arguments`` an OBJECT. Every entry of ``message.tool_calls`` is a new call: the provider's
  ``function.index`` cannot tell calls apart (it was ``omitempty`` before v0.12.6, so the first
  call had none, and each parser counts on its own), and ``id`` exists only since v0.12.10;
- the calls stay open until the ``done`` line: Ollama's own parsers flush a call they are
  still reading when generation stops (gemma4 "flush any accumulated tool call content even
  without closing tag", glm46 ``finalizeToolCall`` on ``done``), so with ``length`` the call
  generated last may be short, and the finish decision (:mod:`toolwire.core.finish`) cuts it;
- a line ``{"error": "..."}`` is how Ollama reports a failure after the stream began
  (``streamResponse``): a fatal error;
- a body that is no NDJSON stream at all (an HTML 502 page from a proxy) is said to be so; lines
  that cannot be read before the first line of Ollama's shape are held back and reported when
  the stream proves to be one, so that a proxy's page is one error, not one per line.

A long answer is thousands of lines of a few characters each. The lines the NDJSON decoder
gives for a large read are decoded with one call (:meth:`OllamaMapper._block`, exactly as line
by line: see :mod:`.wire`), and a line of plain text or thinking is read in a few steps
(:meth:`OllamaMapper._plain`); every other line takes the general path.
"""

from __future__ import annotations

import msgspec

from ...core.events import (
    Event,
    ProviderError,
    ReasoningDelta,
    ResponseInfo,
    StopReason,
    TextDelta,
    Usage,
)
from ...core.mapper import MapperSettings
from ..frame_errors import CONVERT_FAILURES, object_shape_error, unknown_shape_error
from ..framing import FrameOverflow, Frames
from ..mapper_base import MapperBase
from ..ndjson import NDJSONDecoder
from .wire import (
    ErrorBody,
    Line,
    ToolCall,
    decode_any_lines,
    decode_line,
    decode_text_lines,
    wrapped_block,
    wrapped_lines,
)

__all__ = ["OllamaMapper", "finish_reason_from_ollama"]


_DONE_REASONS: dict[str, StopReason] = {
    "stop": "end_turn",
    "length": "length",
    # The empty answers to a request that only loads or unloads a model: no turn was generated.
    "load": "unknown",
    "unload": "unknown",
}


def finish_reason_from_ollama(raw: str | None) -> StopReason:
    """Normalize a ``done_reason``; absent (a closed runner connection) or unknown: ``unknown``."""
    if not raw:
        return "unknown"
    return _DONE_REASONS.get(raw, "unknown")


_DEFAULT_SETTINGS = MapperSettings()
#: Reads shorter than this are read line by line: a few lines gain nothing from :meth:`_block`.
_BLOCK_READ = 1024


class OllamaMapper(MapperBase):
    """Sans-I/O mapper for one ``/api/chat`` stream (NDJSON bytes or ``ollama`` SDK chunks)."""

    provider_name = "ollama"
    unit = "a line"
    line_unit = "a line"

    def __init__(self, settings: MapperSettings = _DEFAULT_SETTINGS) -> None:
        super().__init__(settings)
        self._ndjson = NDJSONDecoder()
        self._calls = self._state.calls
        self._info_sent = False
        #: A line of Ollama's shape was read: the body is a stream, errors are reported as met.
        self._streaming = False
        #: The first unreadable line before that, how many there were, and whether one of them
        #: began like a JSON object (a first line cut short: a stream that dropped).
        self._held: ProviderError | None = None
        self._held_count = 0
        self._held_began_as_object = False

    # -- input -------------------------------------------------------------------------------

    def feed_bytes(self, data: bytes) -> list[Event]:
        """Take the next bytes of an NDJSON body (any split).

        The lines of a large read are read at once when that is exactly the same as reading
        them one by one (:meth:`_block`); else, and for a small read, one by one.
        """
        out: list[Event] = []
        frames = self._ndjson.feed(data)
        large = len(data) >= _BLOCK_READ
        if large and frames.joined is not None and self._streaming and self._block(frames, out):
            return out
        lines = frames.payloads
        payload = self._payload
        if not large or len(lines) < 2:
            # A small read (a line per read, as Ollama flushes them): nothing worth reading
            # at once.
            for line in lines:
                payload(line, out)
            return out
        start = 0
        while not self._streaming and start < len(lines):
            # Until a line shows the body is a stream, unreadable lines are held back one by one.
            payload(lines[start], out)
            start += 1
        rest = lines[start:] if start else lines
        if rest and not self._block(Frames(rest), out):
            for line in rest:
                payload(line, out)
        return out

    def feed_object(self, chunk: object) -> list[Event]:
        """Take one ``ollama`` SDK ``ChatResponse`` (any pydantic model) or a decoded mapping.

        The SDK's ``Message.ToolCall`` (ollama-python 0.6) has no ``id`` and its ``Function`` no
        ``index``: pydantic drops them, so calls read from SDK objects get synthesized ids.
        """
        out: list[Event] = []
        if self._state.ended:
            return out
        self._object_source = True
        self._streaming = True
        dump = getattr(chunk, "model_dump", None)
        payload = dump() if callable(dump) else chunk
        try:
            line = msgspec.convert(payload, Line, strict=False)
        except CONVERT_FAILURES as error:
            self._state.unreadable(out, object_shape_error(error, payload, self.unit))
            return out
        if not _has_ollama_shape(line):
            self._state.unreadable(out, object_shape_error(_NO_FIELDS, payload, self.unit))
            return out
        self._line(line, out, b"")
        return out

    def finish(self, *, failed: bool = False) -> list[Event]:
        """The source ended: flush the decoder, close open calls, decide the finish."""
        out: list[Event] = []
        for line in self._ndjson.finish().payloads:
            self._payload(line, out)
        if not (self._streaming or self._state.ended) and (
            failed or self._object_source or self._held_began_as_object
        ):
            # A read that failed, or a first line cut short: a stream that dropped.
            self._release_held(out)
        # Not one line of Ollama's shape: an HTML page, a JSON error body, an empty 200.
        self._not_a_stream(
            out,
            self._ndjson,
            failed=failed,
            saw_stream=self._streaming or self._held_began_as_object,
            what="an Ollama NDJSON stream",
        )
        self._state.end(out)
        return out

    # -- translation -------------------------------------------------------------------------

    def _payload(self, data: bytes | FrameOverflow, out: list[Event]) -> None:
        if self._state.ended:
            return
        line = self._decoded(decode_line, data, out)
        if line is not None and not self._plain(line, out):
            self._read(line, out, data)  # type: ignore[arg-type]

    def _not_json(
        self, error: msgspec.DecodeError, data: bytes, name: bytes | None, out: list[Event]
    ) -> None:
        if data.lstrip()[:1] == b"{":
            self._held_began_as_object = True  # a first line cut short: a stream that dropped
        super()._not_json(error, data, name, out)

    def _read(self, line: Line, out: list[Event], data: bytes) -> None:
        """A line decoded from ``data``: checked for Ollama's shape, then read."""
        if not _has_ollama_shape(line):
            error = unknown_shape_error(_NO_FIELDS, data, self.unit)
            # Ollama 0.11.4 sent a parser failure under the key "error parsing tool call"
            # (ollama/ollama#11781): a known one is the model's call, else a line unread.
            if not (self._streaming and self._state.known_error(out, error, None, data)):
                self._unreadable(out, error)
            return
        if not self._streaming:
            self._streaming = True
            self._release_held(out)
        self._line(line, out, data)

    def _plain(self, line: Line, out: list[Event]) -> bool:
        """Read a line that carries only text or thinking, as :meth:`_read` would; say so.

        Most lines of a stream are such: this is their short way. Any other line is left to
        :meth:`_read` (False, nothing read).
        """
        message = line.message
        if (
            message is None
            or line.error is not None
            or line.done
            or line.eval_count is not None
            or line.prompt_eval_count is not None
            or message.tool_calls
            or not self._streaming
            or (line.model is not None and not self._info_sent)
        ):
            return False
        if message.thinking:
            out.append(ReasoningDelta(text=message.thinking))
        if message.content:
            out.append(TextDelta(text=message.content))
        return True

    def _block(self, block: Frames, out: list[Event]) -> bool:
        """Read the lines the NDJSON decoder gave (unsplit if it has them so) with one call.

        Only once the body is a stream (so that no unreadable line is being held back), never
        past the end, never with a line over the cap among them. The lines are wrapped so that
        each decodes alone (:mod:`.wire`), and each is then read as :meth:`_payload` reads it.
        An unreadable line or one of two values makes the block fail as a whole: False,
        nothing read, and the caller reads its lines one by one.
        """
        if self._state.ended or not self._streaming:
            return False
        joined = block.joined
        if joined is not None:
            wrapped, count = wrapped_block(joined)
        else:
            try:
                wrapped = wrapped_lines(block.payloads)  # type: ignore[arg-type]
            except TypeError:
                return False  # a FrameOverflow among them (not bytes)
            count = len(block.payloads)
        if self._info_sent:
            # Most blocks: answer text and nothing else, each line a TextDelta of its content.
            try:
                texts = decode_text_lines(wrapped)
            except msgspec.MsgspecError:
                pass  # some line is not plain text (a call, the end...): read them all below
            else:
                if len(texts) != count:
                    return False
                out += [TextDelta(text=text) for (line,) in texts if (text := line.message.content)]
                return True
        try:
            lines = decode_any_lines(wrapped)
        except msgspec.MsgspecError:
            return False
        if len(lines) != count:
            return False
        plain = self._plain
        state = self._state
        for index, (line,) in enumerate(lines):
            if plain(line, out):
                continue
            self._read(line, out, block.payloads[index])  # type: ignore[arg-type]
            if state.ended:
                break
        return True

    def _unreadable(self, out: list[Event], error: ProviderError) -> None:
        """Report an unreadable piece, or hold it back until the body proves to be a stream."""
        if self._streaming:
            self._state.unreadable(out, error)
            return
        if self._held is None:
            self._held = error
        self._held_count += 1

    def _release_held(self, out: list[Event]) -> None:
        held = self._held
        if held is None:
            return
        if self._held_count > 1:
            more = self._held_count - 1
            held = msgspec.structs.replace(
                held, message=f"{held.message} (and {more} more unreadable lines before it)"
            )
        self._held = None
        self._state.unreadable(out, held)

    def _line(self, line: Line, out: list[Event], data: bytes) -> None:
        if line.error is not None:
            self._error(line.error, out, data)
            return
        if not self._info_sent and line.model is not None:
            self._info_sent = True
            out.append(ResponseInfo(model=line.model, response_id=None))
        message = line.message
        if message is not None:
            if message.thinking:
                out.append(ReasoningDelta(text=message.thinking))
            if message.content:
                out.append(TextDelta(text=message.content))
            if message.tool_calls:
                for tool_call in message.tool_calls:
                    self._call(tool_call, out)
        if line.prompt_eval_count is not None or line.eval_count is not None:
            self._facts.output_tokens = line.eval_count
            out.append(Usage(input_tokens=line.prompt_eval_count, output_tokens=line.eval_count))
        if line.done:
            self._done(line.done_reason)
            self._state.end(out)

    def _call(self, tool_call: ToolCall, out: list[Event]) -> None:
        """One whole call: always a new call, even with an index or id seen before.

        ``start`` opens it (a repeated provider id becomes ``<id>~2``); the arguments then go
        to that call, the latest, through ``fragment``, which serializes an object once and
        marks it ``arguments_form="object"``.
        """
        function = tool_call.function
        calls = self._calls
        calls.start(out, call_id=tool_call.id or None, name=function.name or None)
        calls.fragment(out, index=None, call_id=None, name=None, arguments=function.arguments)

    def _done(self, raw: str | None) -> None:
        facts = self._facts
        facts.terminated = True
        facts.raw = raw or None
        facts.reason = finish_reason_from_ollama(raw)
        if facts.reason == "length":
            facts.length_signal = True

    def _error(self, body: str | ErrorBody, out: list[Event], data: bytes) -> None:
        code: str | None = None
        if isinstance(body, ErrorBody):
            message = body.message or body.type or "provider error"
            code = str(body.code) if body.code is not None else body.type
        else:
            message = body or "provider error"
        self._in_band_error(out, message, code, data)


_NO_FIELDS = "none of Ollama's fields (message, done, error)"


def _has_ollama_shape(line: Line) -> bool:
    """Ollama always sends ``message`` and ``done`` (no ``omitempty``), or ``error`` alone."""
    return line.message is not None or line.done is not None or line.error is not None
