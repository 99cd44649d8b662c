"""Anthropic Messages streams (``POST /v1/messages``, ``stream: true``) into toolwire events.

The stream is SSE with ``event:`` names; each payload's ``type`` says what it is, and the rules
here come from the recordings in ``tests/data/fixtures/streams/anthropic/``:

- ``message_start`` carries the model, the id and the input usage; ``message_delta`` the
  ``stop_reason`` and the output usage; ``message_stop`` is the terminator (there is no
  ``[DONE]``); ``ping`` is nothing. The API pads many payloads with spaces before the last
  ``}`` (``max_tokens_mid_tool_input_no_block_stop.sse``): JSON does not mind.
- Content is addressed by block index. A ``tool_use`` block (id, name, ``input: {}``) opens a
  call; its ``input_json_delta`` pieces are appended raw, the first one often ``""``; its
  ``content_block_stop`` closes it. The SDK's own partial-JSON parser is never used: it
  completes a cut buffer into a valid-looking object.
- A no-argument tool sends only ``partial_json: ""`` (``thinking_then_tool_use_no_args_padded``):
  the protocol then defines the input as the start block's ``input``, ``{}``. At
  ``content_block_stop`` toolwire writes that object's JSON, ``{}``, as the call's text (one
  argument delta), so the judge sees exactly the input the API means: ``ok``, not a repair.
- A ``tool_use`` block whose ``content_block_stop`` never comes stays open until the finish,
  which cuts it (``max_tokens_mid_tool_input_no_block_stop.sse``). A block that *is* stopped but
  whose text stops inside a value (``max_tokens_mid_tool_input.derived.sse``) is also left for
  the finish: only the finish knows what cut it (``max_tokens`` names the limit), so that the
  message to the model says the cause instead of "not known".
- ``thinking_delta`` is reasoning; ``signature_delta`` and ``redacted_thinking`` blocks are kept
  for replay (:mod:`.blocks`), and each such block is reported whole, signed, at its
  ``content_block_stop`` (``ProviderContent`` with ``scope="block"``), before anything that
  follows it: a writer can send it on in order. ``server_tool_use`` blocks and their results
  (``thinking_text_server_tool_use_text.sse``) are run by Anthropic: they are kept for replay
  and never opened as calls, so they are never judged or dispatched.
- ``event: error`` (``overloaded_error`` mid-stream, ``error_overloaded_mid_stream.derived.sse``)
  is fatal: the turn ends in ``error`` there, with the error's type as the code.

Cost: the SSE decoder splits runs of named events in bulk, and the commonest event, one more
``input_json_delta`` or ``text_delta`` piece for the block being written, is handled inline
(``_frames``); everything else takes the general path (``_message``), with the same result
(``tests/adapters/test_anthropic_fast_path.py`` compares the two).
"""

from __future__ import annotations

from typing import Any

import msgspec

from ...core.events import Event, ProviderContent, ProviderError, ResponseInfo, TextDelta, Usage
from ...core.mapper import MapperSettings, cap_text
from ..error_bodies import error_message
from ..frame_errors import CONVERT_FAILURES
from ..framing import FrameOverflow, Frames
from ..mapper_base import MapperBase
from ..sse import SSEDecoder
from .blocks import ContentRecord
from .content import ContentReader
from .wire import (
    LENGTH_STOP_REASONS,
    ErrorBody,
    MessageHead,
    StreamEvent,
    StreamUsage,
    decode_event,
    finish_reason_from_anthropic,
    quote_raw,
)

__all__ = ["AnthropicMapper"]

_DEFAULT_SETTINGS = MapperSettings()


class AnthropicMapper(MapperBase):
    """Sans-I/O mapper for one Messages stream (SSE bytes, or the SDK's raw stream events)."""

    provider_name = "anthropic"
    unit = "an event"

    def __init__(self, settings: MapperSettings = _DEFAULT_SETTINGS) -> None:
        super().__init__(settings)
        self._sse = SSEDecoder()
        self._record = ContentRecord()
        self._content = ContentReader(self._state, self._record)
        self._input_tokens: int | None = None
        self._info_sent = False

    def content_blocks(self) -> tuple[dict[str, Any], ...]:
        """The assistant content so far, as it goes back to the API (see :mod:`.blocks`)."""
        return self._record.snapshot()

    # -- input -------------------------------------------------------------------------------

    def feed_bytes(self, data: bytes) -> list[Event]:
        """Take the next bytes of an SSE body."""
        out: list[Event] = []
        self._frames(self._sse.feed(data), out)
        return out

    def feed_object(self, chunk: object) -> list[Event]:
        """Take one ``anthropic`` SDK ``MessageStreamEvent`` (any pydantic model) or a mapping.

        The SDK builds its events from the wire JSON, so ``model_dump(exclude_unset=True)``
        gives back exactly the fields that were sent (no ``None`` for absent ones).
        """
        out: list[Event] = []
        if self._state.ended:
            return out
        self._object_source = True
        payload = _dumped(chunk)
        try:
            event = msgspec.convert(payload, StreamEvent, strict=False)
        except CONVERT_FAILURES as error:
            self._unreadable(out, _unknown_shape(f"an event of unknown shape: {error}", payload))
            return out
        self._event(event, out, payload)
        return out

    def finish(self, *, failed: bool = False) -> list[Event]:
        """The source ended: flush the decoder, close open calls, decide the finish."""
        out: list[Event] = []
        self._frames(self._sse.finish(), out)
        self._not_a_stream(out, self._sse, failed=failed, saw_stream=self._sse.saw_field)
        self._end(out)
        return out

    # -- translation -------------------------------------------------------------------------

    def _message(self, name: bytes | None, data: bytes | FrameOverflow, out: list[Event]) -> None:
        """One event the general way: decoded, or the error that says what is wrong with it."""
        if self._state.ended:
            return
        if name == b"error" and type(data) is bytes:
            # Any ``event: error`` is the server's error, whatever its payload's shape.
            self._error(_error_body(data), out, data)
            return
        event = self._decoded(decode_event, data, out, name)
        if event is None:
            return
        if event.type is None and name is not None:
            event.type = name.decode("utf-8", "replace")
        self._event(event, out, data)

    def _not_json(
        self, error: msgspec.DecodeError, data: bytes, name: bytes | None, out: list[Event]
    ) -> None:
        if name == b"error":
            # An error event whose body is not JSON is still the provider's error.
            self._error(ErrorBody(message=cap_text(data, 200)), out, data)
            return
        super()._not_json(error, data, name, out)

    def _frames(self, frames: Frames, out: list[Event]) -> None:
        """The events of a read: ``_message`` for each, the commonest inline.

        Most events of a turn are one more piece of the block being written: an
        ``input_json_delta`` for an open ``tool_use`` block, a ``text_delta`` for a ``text``
        block. Those are handled here exactly as :meth:`.ContentReader.delta` handles them; every
        other event (and any payload the typed decode refuses) takes the general path.
        """
        state = self._state
        if state.ended:
            return
        decode = decode_event
        by_index = self._record.by_index
        append_to = self._state.calls.append_to
        for number, payload in enumerate(frames.payloads):
            try:
                event = decode(payload)  # type: ignore[arg-type]
            except (msgspec.MsgspecError, TypeError):
                # The general path says what is wrong (or reads an error event that is not JSON,
                # or an event over the cap, which msgspec refuses as no bytes).
                self._message(frames.name(number), payload, out)
                if state.ended:
                    return
                continue
            if event.type == "content_block_delta":
                delta, index = event.delta, event.index
                block = by_index.get(index) if index is not None else None
                if delta is not None and block is not None:
                    dtype = delta.type
                    if dtype == "input_json_delta":
                        piece, call = delta.partial_json, block.call
                        if piece is not None and call is not None and not block.stopped:
                            append_to(out, call, piece)
                            continue
                    elif dtype == "text_delta" and block.kind == "text":
                        text = delta.text
                        if text is not None:
                            block.pieces.append(text)
                            if text:
                                out.append(TextDelta(text=text))
                            continue
            elif event.type is None and (name := frames.name(number)) is not None:
                event.type = name.decode("utf-8", "replace")
            self._event(event, out, payload)
            if state.ended:
                return

    def _event(self, event: StreamEvent, out: list[Event], raw: object) -> None:
        kind = event.type
        if kind == "content_block_delta":
            self._content.delta(event, out, raw)
        elif kind == "content_block_start":
            self._content.start(event, out, raw)
        elif kind == "content_block_stop":
            self._content.stop(event, out, raw)
        elif kind == "ping":
            return
        elif kind == "message_start":
            self._message_start(event.message, out, raw)
        elif kind == "message_delta":
            self._message_delta(event, out)
        elif kind == "message_stop":
            self._facts.terminated = True
            self._end(out)
        elif kind == "error":
            self._error(event.error or ErrorBody(), out, raw)
        else:
            # Anthropic may add event types; one toolwire cannot read may have held call text.
            self._unreadable(out, _unknown_shape(f"an event of unknown type {kind!r}", raw))

    def _message_start(self, message: MessageHead | None, out: list[Event], raw: object) -> None:
        if message is None:
            self._unreadable(out, _unknown_shape("message_start without a message", raw))
            return
        if not self._info_sent and (message.model is not None or message.id is not None):
            self._info_sent = True
            out.append(ResponseInfo(model=message.model, response_id=message.id))
        if message.content:
            self._state.report(
                out,
                ProviderError(
                    message="message_start carried content blocks; they were not read",
                    kind="protocol",
                    raw=quote_raw(raw),
                ),
            )
        usage = message.usage
        if usage is not None:
            self._input_tokens = usage.input_tokens
            # Only message_delta's count is final: message_start says 1 output token so far.
            out.append(_usage_event(usage, usage.input_tokens))

    def _message_delta(self, event: StreamEvent, out: list[Event]) -> None:
        delta = event.delta
        raw = delta.stop_reason if delta is not None else None
        if raw is not None:
            facts = self._facts
            facts.raw = raw
            facts.reason = finish_reason_from_anthropic(raw)
            facts.length_signal = raw in LENGTH_STOP_REASONS
        usage = event.usage
        if usage is not None:
            if usage.input_tokens is not None:
                self._input_tokens = usage.input_tokens
            if usage.output_tokens is not None:
                self._facts.output_tokens = usage.output_tokens
            out.append(_usage_event(usage, self._input_tokens))

    def _error(self, body: ErrorBody, out: list[Event], raw: object) -> None:
        """An in-band error is the end of the turn: nothing of it may run, unless it is a
        server's known tool-parser failure (llama-server's, Ollama's, vLLM's words, which
        serve this endpoint too): then the model's broken call (``core/stream_state.py``)."""
        error = ProviderError(
            message=body.message or body.type or "provider error",
            kind="error_payload",
            code=body.type,
            raw=quote_raw(raw),
            fatal=True,
        )
        said = raw if type(raw) is bytes else (body.message or "").encode()
        self._state.fatal_or_known(out, error, None, said)
        self._end(out)

    def _end(self, out: list[Event]) -> None:
        if self._state.ended:
            return
        # The blocks the API needs back travel with the Turn (Turn.provider_content).
        out.append(ProviderContent(items=self._record.snapshot()))
        self._state.end(out)


def _usage_event(usage: StreamUsage, input_tokens: int | None) -> Usage:
    details = usage.output_tokens_details
    return Usage(
        input_tokens=input_tokens,
        output_tokens=usage.output_tokens,
        reasoning_tokens=details.thinking_tokens if details is not None else None,
    )


def _dumped(chunk: object) -> object:
    dump = getattr(chunk, "model_dump", None)
    if not callable(dump):
        return chunk
    try:
        return dump(mode="json", exclude_unset=True)
    except TypeError:  # a model_dump without pydantic's keywords
        return dump()


def _unknown_shape(detail: str, raw: object) -> ProviderError:
    return ProviderError(message=detail, kind="unknown_shape", raw=quote_raw(raw))


def _error_body(data: bytes) -> ErrorBody:
    """The error of an ``event: error``: Anthropic's ``{"type": "error", "error": {...}}``, or
    the error object itself, as llama-server sends it on ``/v1/messages`` (``{"code": 500,
    "message": ..., "type": "server_error"}``, tools/server/server-context.cpp), or any text."""
    try:
        event = decode_event(data)
    except (msgspec.MsgspecError, TypeError):
        event = None
    if event is not None and event.type == "error" and event.error is not None:
        return event.error
    try:
        decoded = msgspec.json.decode(data)
    except msgspec.DecodeError:
        decoded = None
    kind = decoded.get("type") if isinstance(decoded, dict) else None
    message, _ = error_message(data.decode("utf-8", "replace"))
    return ErrorBody(type=kind if isinstance(kind, str) else None, message=cap_text(message, 300))
