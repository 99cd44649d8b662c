"""OpenAI Responses streams (``POST /v1/responses``, ``stream: true``) into toolwire events.

One mapper serves OpenAI, Azure OpenAI, Bedrock Mantle and local servers that speak the
Responses protocol (LM Studio's Open Responses). What each rule handles:

- framing: SSE with ``event:`` lines, which may come after ``data:`` (Bedrock Mantle); the
  payload's own ``type`` names the event (the ``event:`` name is used only when it has none);
  there is no ``[DONE]`` (one is ignored if a server sends it): the terminator is
  ``response.completed``, ``response.incomplete`` or ``response.failed``;
- ``sequence_number`` may be absent (recordings before ~April 2025) or in any key position; when
  present, a gap or a repeat means an event was lost or replayed, which is an unreadable piece
  (every call open then never runs) and a repeated event is not applied twice;
- ``obfuscation`` padding, Azure's ``content_filters``, LM Studio's ``logprobs`` are skipped;
- function calls: see :mod:`.calls` (deltas by item id and output index, the whole value wins
  when no delta came, a disagreement is an error and the call never runs);
- text and reasoning: ``response.output_text.delta`` (and ``refusal.delta``) is text;
  ``response.reasoning_text.delta`` (LM Studio) and ``response.reasoning_summary_text.delta``
  are reasoning; whole parts are checked against their deltas (:mod:`.texts`);
- every finished output item is emitted as a :class:`ResponsesOutputItem` for replay; items of
  server-side tools (``web_search_call``, ``file_search_call``, ``code_interpreter_call``...)
  are reported that way only, never as toolwire calls, so they are never judged or dispatched;
- the finish: ``response.completed`` is a normal end, ``response.incomplete`` maps its
  ``incomplete_details.reason`` (only ``max_output_tokens`` is evidence of the token limit),
  ``response.failed`` and an ``error`` event are fatal errors with the provider's message.
"""

from __future__ import annotations

from collections.abc import Callable

import msgspec

from ...core.events import (
    Event,
    ProviderContent,
    ProviderError,
    ProviderErrorKind,
    ResponseInfo,
    ToolCallArgumentsDelta,
    Usage,
)
from ...core.mapper import MapperSettings, cap_text, quoted_object
from ..frame_errors import overflow_error
from ..framing import FrameOverflow, Frames
from ..mapper_base import MapperBase
from ..sse import SSEDecoder
from .calls import FunctionCalls
from .items import CLIENT_CALL_ITEM
from .outputs import FinishedItems
from .sequence import EventNumbers
from .texts import PART_EVENTS, PartKey, TextParts
from .wire import (
    Envelope,
    Item,
    Response,
    decode_envelope,
    decode_item,
    decode_response,
    present,
    stop_reason_from_responses,
)

__all__ = ["OpenAIResponsesMapper"]

_DEFAULT_SETTINGS = MapperSettings()
_TERMINALS = ("response.completed", "response.incomplete", "response.failed")
_ARGUMENTS_DELTA = "response.function_call_arguments.delta"


def _problem(
    message: str, raw: bytes | str, kind: ProviderErrorKind = "unknown_shape"
) -> ProviderError:
    return ProviderError(message=message, kind=kind, raw=cap_text(raw))


def _sdk_payload(chunk: object) -> object:
    """An SDK event as the JSON it was made from (only the fields the wire carried)."""
    dump = getattr(chunk, "model_dump", None)
    if not callable(dump):
        return chunk
    try:
        return dump(mode="json", by_alias=True, exclude_unset=True)
    except TypeError:  # a model_dump that takes no such options
        return dump()


class OpenAIResponsesMapper(MapperBase):
    """Sans-I/O mapper for one Responses stream (SSE bytes or ``openai`` SDK event objects)."""

    provider_name = "openai"
    unit = "an event"

    def __init__(self, settings: MapperSettings = _DEFAULT_SETTINGS) -> None:
        super().__init__(settings)
        self._sse = SSEDecoder()
        self._max_argument_chars = settings.max_argument_chars
        self._calls = FunctionCalls(self._state)
        self._texts = TextParts(self._state)
        self._items = FinishedItems(self._state, self._calls, self._texts)
        self._info_sent = False
        self._numbers = EventNumbers()

    # -- input -------------------------------------------------------------------------------

    def feed_bytes(self, data: bytes) -> list[Event]:
        """Take the next bytes of an SSE body (any split)."""
        out: list[Event] = []
        if self._state.ended:
            return out  # nothing after the end is read (and the framing is no longer needed)
        self._frames(self._sse.feed(data), out)
        return out

    def feed_object(self, chunk: object) -> list[Event]:
        """Take one ``openai`` SDK Responses stream event (any pydantic model) or a mapping.

        The object goes back to the JSON it came from and through the same path as bytes, so
        an SDK stream and its body give the same turn (and the SDK's own parsed arguments are
        never trusted: the raw text is accumulated and judged).
        """
        out: list[Event] = []
        if self._state.ended:
            return out
        self._object_source = True
        self._numbers.next_event()
        try:
            data = msgspec.json.encode(_sdk_payload(chunk))
        except (TypeError, ValueError, RecursionError, msgspec.MsgspecError) as error:
            self._unreadable(
                out, _problem(f"an SDK event that is not JSON data: {error}", quoted_object(chunk))
            )
            return out
        self._payload(data, None, out)
        return out

    def finish(self, *, failed: bool = False) -> list[Event]:
        """The source ended: flush the framing, settle open calls, decide the finish once."""
        out: list[Event] = []
        self._frames(self._sse.finish(), out)
        # Not one SSE line: an HTML error page, a JSON error body (stream=false?), nothing.
        self._not_a_stream(out, self._sse, failed=failed, saw_stream=self._sse.saw_field)
        self._end(out)
        return out

    # -- framing -----------------------------------------------------------------------------

    def _message(self, name: bytes | None, data: bytes | FrameOverflow, out: list[Event]) -> None:
        """One event the general way (``name``: its ``event:`` name, if any)."""
        if self._state.ended:
            return
        if type(data) is FrameOverflow:
            self._unreadable(out, overflow_error(data))
            return
        assert type(data) is bytes
        self._payload(data, name, out)

    def _frames(self, frames: Frames, out: list[Event]) -> None:
        """The events of a read, each through ``_message``, the commonest inline.

        The hot path, most events of a long call: one more argument piece for a call that is
        open, in sequence. It is taken only when the general path would do exactly the same
        (the same decoded envelope, the number that follows the last one or none, the item's
        call open, the piece within the size limit); anything else, and any doubt, goes the
        general way, which reports what is wrong.
        """
        state = self._state
        numbers = self._numbers
        by_item = self._calls.by_item
        calls = state.calls
        emit = calls.emit_deltas
        max_chars = self._max_argument_chars
        decode = decode_envelope
        for position, data in enumerate(frames.payloads):
            if state.ended:
                return
            envelope: Envelope | None = None
            if type(data) is not bytes:
                self._message(None, data, out)  # an event over the cap
                continue
            if data[:1] == b"{":
                try:
                    envelope = decode(data)
                except msgspec.MsgspecError:
                    envelope = None  # the general path says what is wrong with it
            if envelope is not None and envelope.type == _ARGUMENTS_DELTA:
                delta = envelope.delta
                item_id = envelope.item_id
                number = envelope.sequence_number
                call = by_item.get(item_id) if type(item_id) is str else None
                if (
                    call is not None
                    and type(delta) is str
                    and not call.closed
                    and (
                        type(number) is not int
                        or numbers.last is None
                        or number == numbers.last + 1
                    )
                ):
                    # next_event and check, for an event in sequence (or with no number).
                    if type(number) is int:
                        numbers.last = number
                        numbers.counted = True
                    else:
                        numbers.counted = False
                    if delta:
                        size = call.size + len(delta)
                        if call.buffering and size <= max_chars:
                            # CallAccumulator.append_to, inlined for a piece within the limit.
                            call.size = size
                            call.pieces.append(delta)
                            if emit:
                                out.append(
                                    ToolCallArgumentsDelta(
                                        call_id=call.call_id, index=call.index, delta=delta
                                    )
                                )
                        else:
                            calls.append_to(out, call, delta)
                    continue
            name = frames.name(position)
            if envelope is None:
                self._payload(data, name, out)
            else:
                numbers.next_event()
                self._event(envelope, data, name, out)

    def _payload(self, data: bytes, event_name: bytes | None, out: list[Event]) -> None:
        if self._state.ended:
            return
        self._numbers.next_event()
        if data[:1] != b"{" and data.strip() == b"[DONE]":
            return  # Chat Completions' marker is not this protocol's terminator (see above)
        envelope = self._decoded(decode_envelope, data, out)
        if envelope is not None:
            self._event(envelope, data, event_name, out)

    def _event(
        self, envelope: Envelope, data: bytes, event_name: bytes | None, out: list[Event]
    ) -> None:
        """A decoded event (``next_event`` called): check its number, dispatch on its type."""
        if not self._in_sequence(envelope.sequence_number, data, out):
            return
        kind = envelope.type
        if kind is None and event_name:
            # A payload without its ``type``: the ``event:`` line names it.
            kind = envelope.type = event_name.decode("utf-8", "replace")
        if kind is None and envelope.error is not None:
            # ``data: {"error": {...}}``: a server's error in band, in the Chat shape
            # (llama-server on /v1/responses, tools/server/server-context.cpp).
            error = envelope.error
            said = error.get("message") if isinstance(error, dict) else error
            envelope.message = said if type(said) is str else None
            envelope.code = error.get("code") if isinstance(error, dict) else None
            self._error_event(envelope, data, out)
            return
        if type(kind) is not str or not kind:
            self._unreadable(out, _problem("an event with no type", data))
            return
        handler = _HANDLERS.get(kind)
        if handler is not None:
            handler(self, envelope, data, out)
        elif kind in _TERMINALS:
            self._terminal(kind, envelope, data, out)
        # Anything else (content_part.*, *.done of parts already checked, progress events of
        # server-side tools, annotations) carries nothing the turn lacks.

    def _unreadable(self, out: list[Event], error: ProviderError) -> None:
        """An event could not be read: every call open then loses its right to run, and the
        event numbers allow for it (:mod:`.sequence`)."""
        self._numbers.unreadable()
        self._state.unreadable(out, error)

    def _in_sequence(self, number: object, data: bytes, out: list[Event]) -> bool:
        """Check ``sequence_number`` (:mod:`.sequence`); False: do not apply the event."""
        apply, problem = self._numbers.check(number)
        if problem is not None:
            self._state.unreadable(out, _problem(problem, data, "protocol"))
        return apply

    # -- events ------------------------------------------------------------------------------

    def _lifecycle(self, envelope: Envelope, data: bytes, out: list[Event]) -> None:
        if not self._info_sent:
            response = self._response(envelope, data, out)
            if response is not None:
                self._info(response, out)

    def _item_added(self, envelope: Envelope, data: bytes, out: list[Event]) -> None:
        item = self._item(envelope, data, out)
        if item is not None and item.type == CLIENT_CALL_ITEM:
            self._calls.added(out, _position(envelope.output_index), item)

    def _item_done(self, envelope: Envelope, data: bytes, out: list[Event]) -> None:
        item = self._item(envelope, data, out)
        if item is None:
            return
        self._items.finished(out, _position(envelope.output_index), item, envelope.item)

    def _arguments_delta(self, envelope: Envelope, data: bytes, out: list[Event]) -> None:
        delta = envelope.delta
        if type(delta) is not str:
            self._unreadable(out, _problem("an arguments delta with no text", data))
            return
        self._calls.delta(out, envelope.item_id, envelope.output_index, delta)

    def _arguments_done(self, envelope: Envelope, data: bytes, out: list[Event]) -> None:
        arguments = envelope.arguments
        if type(arguments) is not str:
            self._unreadable(out, _problem("an arguments.done with no arguments", data))
            return
        call = self._calls.find(envelope.item_id, envelope.output_index)
        if call is None:
            self._state.report(
                out,
                ProviderError(
                    message=(
                        f"response.function_call_arguments.done for item {envelope.item_id!r}, "
                        "which never started"
                    ),
                    kind="protocol",
                    raw=cap_text(arguments),
                ),
            )
            return
        self._calls.whole(out, call, arguments, "response.function_call_arguments.done")

    def _part_delta(self, envelope: Envelope, data: bytes, out: list[Event]) -> None:
        kind = _DELTA_KINDS[envelope.type]
        delta = envelope.delta
        if type(delta) is not str:
            self._unreadable(out, _problem(f"a {kind} delta with no text", data))
            return
        self._texts.delta(self._part_key(kind, envelope), delta)
        if delta:
            out.append(PART_EVENTS[kind](delta))

    def _part_done(self, envelope: Envelope, data: bytes, out: list[Event]) -> None:
        kind = _DONE_KINDS[envelope.type]
        text = envelope.refusal if kind == "refusal" else envelope.text
        if type(text) is str:
            self._texts.whole(out, self._part_key(kind, envelope), text, PART_EVENTS[kind])

    @staticmethod
    def _part_key(kind: str, envelope: Envelope) -> PartKey:
        item_id = envelope.item_id
        where = item_id if type(item_id) is str else envelope.output_index
        number = envelope.summary_index if kind == "summary_text" else envelope.content_index
        return (kind, where, number if type(number) is int else 0)

    def _error_event(self, envelope: Envelope, data: bytes, out: list[Event]) -> None:
        """An error event: fatal, unless it is a server's known tool-parser failure (the
        servers that serve this endpoint too: vLLM, llama-server, Ollama, LM Studio), which is
        the model's broken call (``core/stream_state.py``)."""
        message = envelope.message if type(envelope.message) is str else "provider error"
        code = envelope.code
        self._in_band_error(out, message, str(code) if code is not None else None, data)
        self._end(out)

    def _terminal(self, kind: str, envelope: Envelope, data: bytes, out: list[Event]) -> None:
        response = self._response(envelope, data, out) or Response()
        if not self._info_sent:
            self._info(response, out)
        if response.output:
            self._items.final_output(out, response.output)
        facts = self._facts
        facts.terminated = True
        if response.usage is not None:
            self._usage(response, out)
        reason = response.incomplete_details.reason if response.incomplete_details else None
        facts.reason = stop_reason_from_responses(kind, reason)
        if kind == "response.failed":
            facts.raw = "failed"
            error = response.error
            code = error.code if error is not None else None
            self._state.fatal(
                out,
                ProviderError(
                    message=(error.message if error and error.message else "the response failed"),
                    kind="error_payload",
                    code=str(code) if code is not None else None,
                    raw=cap_text(data),
                    fatal=True,
                ),
            )
        elif kind == "response.incomplete":
            facts.raw = reason or "incomplete"
            facts.length_signal = reason == "max_output_tokens"
        else:
            facts.raw = "completed"
        self._end(out)

    # -- helpers -----------------------------------------------------------------------------

    def _response(self, envelope: Envelope, data: bytes, out: list[Event]) -> Response | None:
        if not present(envelope.response):
            return None
        try:
            return decode_response(envelope.response)
        except msgspec.MsgspecError as error:
            self._unreadable(out, _problem(f"a response of unknown shape: {error}", data))
            return None

    def _item(self, envelope: Envelope, data: bytes, out: list[Event]) -> Item | None:
        if not present(envelope.item):
            self._unreadable(out, _problem("an output item event with no item", data))
            return None
        try:
            return decode_item(envelope.item)
        except msgspec.MsgspecError as error:
            self._unreadable(out, _problem(f"an output item: {error}", data))
            return None

    def _info(self, response: Response, out: list[Event]) -> None:
        if response.id is None and response.model is None:
            return
        self._info_sent = True
        out.append(ResponseInfo(model=response.model, response_id=response.id))

    def _usage(self, response: Response, out: list[Event]) -> None:
        usage = response.usage
        assert usage is not None
        details = usage.output_tokens_details
        self._facts.output_tokens = usage.output_tokens
        out.append(
            Usage(
                input_tokens=usage.input_tokens,
                output_tokens=usage.output_tokens,
                total_tokens=usage.total_tokens,
                reasoning_tokens=details.reasoning_tokens if details is not None else None,
            )
        )

    def _end(self, out: list[Event]) -> None:
        if self._state.ended:
            return
        facts = self._facts
        cuts_latest = (
            facts.length_signal or facts.error or not facts.terminated or facts.usage_at_limit()
        )
        self._calls.settle_incomplete(out, cuts_latest)
        # The items the API needs back (reasoning, messages, server tools) travel with the Turn.
        items = tuple(msgspec.to_builtins(item) for item in self._items.emitted)
        out.append(ProviderContent(items=items))
        self._state.end(out)


def _position(value: object) -> int | None:
    return value if type(value) is int else None


_DELTA_KINDS = {
    "response.output_text.delta": "output_text",
    "response.refusal.delta": "refusal",
    "response.reasoning_text.delta": "reasoning_text",
    "response.reasoning_summary_text.delta": "summary_text",
}
_DONE_KINDS = {
    "response.output_text.done": "output_text",
    "response.refusal.done": "refusal",
    "response.reasoning_text.done": "reasoning_text",
    "response.reasoning_summary_text.done": "summary_text",
}

_Handler = Callable[[OpenAIResponsesMapper, Envelope, bytes, list[Event]], None]
_HANDLERS: dict[str, _Handler] = {
    "response.created": OpenAIResponsesMapper._lifecycle,
    "response.in_progress": OpenAIResponsesMapper._lifecycle,
    "response.queued": OpenAIResponsesMapper._lifecycle,
    "response.output_item.added": OpenAIResponsesMapper._item_added,
    "response.output_item.done": OpenAIResponsesMapper._item_done,
    "response.function_call_arguments.delta": OpenAIResponsesMapper._arguments_delta,
    "response.function_call_arguments.done": OpenAIResponsesMapper._arguments_done,
    "error": OpenAIResponsesMapper._error_event,
    **{name: OpenAIResponsesMapper._part_delta for name in _DELTA_KINDS},
    **{name: OpenAIResponsesMapper._part_done for name in _DONE_KINDS},
}
