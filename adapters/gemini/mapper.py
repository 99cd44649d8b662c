"""Gemini API and Vertex AI ``streamGenerateContent?alt=sse`` streams into toolwire events.

The wire, as recorded in ``tests/data/fixtures/streams/gemini/``:

- ``data:`` lines only, events separated by ``\\r\\n\\r\\n``, JSON written with ``": "`` after
  keys (the SSE decoder takes any line end; the JSON decoder any spacing);
- no terminator: the stream ends when the body ends. A candidate's ``finishReason`` is the end
  signal; it may come in the same chunk as the call
  (``function_call_single_chunk_with_stop_gemini2flash.sse``) or in a later chunk whose only
  part is ``{"text": ""}`` (``function_call_thought_signature_gemini3.sse``). A clean end of
  the body after a finish reason is a terminated stream; a body that ends without one dropped;
- whole ``functionCall`` parts with ``args`` as an object (Gemini API): serialized once,
  ``arguments_form="object"``, an id synthesized when the API gives none. They stay open until
  the stream ends, as Ollama's whole calls do: the server parses what the model wrote, and
  with ``MAX_TOKENS`` the call generated last may have been cut short and still parse, so the
  finish decision (:mod:`toolwire.core.finish`) cuts it (``whole_call_cut_by_max_tokens`` in
  ``tests/adapters/gemini/test_gemini_healing.py``);
- Vertex ``streamFunctionCallArguments``: a header, ``partialArgs`` pieces, an end piece; the
  pieces are written out as JSON text by :mod:`.partial_args` and the call closes only on its
  end piece (``max_tokens_mid_partial_args.derived.sse`` never sends it: the call stays open,
  its text stops inside a value, and the finish cuts it);
- ``thought: true`` text is reasoning; ``thoughtSignature`` on any part is kept, in part order,
  for history replay (:mod:`.replay`);
- ``usageMetadata`` (often the same on every chunk; reported once per change):
  ``candidatesTokenCount`` excludes thinking, so output tokens are candidates + thoughts, which
  is what ``maxOutputTokens`` limits;
- ``finishReason`` / ``promptFeedback.blockReason``: mapped completely by :mod:`.finish`;
  ``MALFORMED_FUNCTION_CALL`` becomes one synthesized, rejected call;
- ``{"error": {...}}`` in band: a fatal ProviderError, and the end of the stream.

Only candidate 0 is read: toolwire judges one model turn per stream. While the answer is text,
each payload is first decoded as a :class:`~.wire.TextChunk` (one text part, nothing else) and
read in a few steps in :meth:`GeminiMapper.feed_bytes`; any other chunk takes the general path.
"""

from __future__ import annotations

import msgspec

from ...core.accumulate import OpenCall
from ...core.events import (
    Event,
    ProviderContent,
    ProviderError,
    ReasoningDelta,
    ResponseInfo,
    TextDelta,
    Usage,
)
from ...core.json_text import json_text
from ...core.mapper import MapperSettings, cap_text, quoted_object
from ..frame_errors import CONVERT_FAILURES, object_shape_error
from ..framing import FrameOverflow
from ..mapper_base import MapperBase
from ..sse import SSEDecoder
from .finish import (
    MALFORMED,
    MAX_TOKENS,
    block_reason_from_gemini,
    finish_reason_from_gemini,
    malformed_call_rejection,
)
from .partial_args import ArgumentsWriter, PartialArgError
from .replay import ReplayLog
from .wire import (
    Candidate,
    Chunk,
    FunctionCall,
    TextChunk,
    UsageMetadata,
    decode_chunk,
    decode_text_chunk,
    sdk_payload,
)

__all__ = ["GeminiMapper"]

_encode = msgspec.json.encode
_DEFAULT_SETTINGS = MapperSettings()


class _Streamed:
    """A Vertex streamed call being written: its accumulator call and its JSON writer."""

    __slots__ = ("broken", "call", "writer")

    def __init__(self, call: OpenCall, writer: ArgumentsWriter) -> None:
        self.call = call
        self.writer = writer
        #: A piece could not be written: the call is lost and nothing more is written to it.
        self.broken = False


class GeminiMapper(MapperBase):
    """Sans-I/O mapper for one Gemini / Vertex stream (SSE bytes or google-genai objects)."""

    provider_name = "gcp.gemini"

    def __init__(self, settings: MapperSettings = _DEFAULT_SETTINGS) -> None:
        super().__init__(settings)
        self._sse = SSEDecoder()
        self._calls = self._state.calls
        self._info_sent = False
        self._streamed: _Streamed | None = None
        self._replay = ReplayLog()
        self._last_usage: tuple[int | None, ...] | None = None
        #: The last chunk read was answer text: try the next one as a :class:`TextChunk` first.
        self._texting = True

    @property
    def done(self) -> bool:
        """The stream ended (a fatal error): nothing after it is read.

        Gemini has no terminator to stop at: a finish reason is the end of the candidate, and
        the body is read to its end (a late usage or metadata chunk is not lost).
        """
        return self._state.ended

    # -- input -------------------------------------------------------------------------------

    def feed_bytes(self, data: bytes) -> list[Event]:
        """Take the next bytes of an SSE body (any split).

        While the answer is text, each payload is first decoded as a :class:`TextChunk` and
        read here in a few steps, as :meth:`_chunk` would read it; any other payload, or one
        that is no text chunk after all, takes the general path (:meth:`_payload`).
        """
        out: list[Event] = []
        append = out.append
        state = self._state
        texting = self._texting
        #: Text read the short way and not yet in the replay log: it goes there in one step,
        #: before anything else can touch the log.
        texts: list[str] = []
        for payload in self._sse.feed(data).payloads:
            if texting and type(payload) is bytes and not state.ended:
                try:
                    chunk = decode_text_chunk(payload)
                except msgspec.MsgspecError:
                    self._texting = texting = False
                else:
                    if not self._info_sent and (chunk.model_version or chunk.response_id):
                        self._info(chunk, out)
                    text = chunk.candidates[0].content.parts[0].text
                    if text:
                        append(TextDelta(text=text))
                        texts.append(text)
                    if chunk.usage_metadata is not None:
                        self._usage(chunk.usage_metadata, out)
                    continue
            if texts:
                self._replay.plain_texts(texts)
                texts = []
            self._payload(payload, out)
            texting = self._texting
        if texts:
            self._replay.plain_texts(texts)
        return out

    def feed_object(self, chunk: object) -> list[Event]:
        """Take one google-genai ``GenerateContentResponse``, or a mapping in the wire spelling."""
        out: list[Event] = []
        if self._state.ended:
            return out
        self._object_source = True
        payload = sdk_payload(chunk)
        try:
            decoded = msgspec.convert(payload, Chunk)
        except CONVERT_FAILURES as error:
            self._unreadable(out, object_shape_error(error, payload))
            return out
        self._chunk(decoded, out, b"")
        return out

    def finish(self, *, failed: bool = False) -> list[Event]:
        """The source ended: flush the framing, decide whether it ended cleanly, close."""
        out: list[Event] = []
        for payload in self._sse.finish().payloads:
            self._payload(payload, out)
        # Not one SSE line: an HTML error page, a JSON error body, the JSON array that
        # ``streamGenerateContent`` sends without ``alt=sse``, an empty 200.
        self._not_a_stream(out, self._sse, failed=failed, saw_stream=self._sse.saw_field)
        facts = self._facts
        if not failed and facts.raw is not None and not facts.error:
            # No terminator in this protocol: a finish reason, then a clean end of the body.
            facts.terminated = True
        self._end(out)
        return out

    # -- framing -----------------------------------------------------------------------------

    def _payload(self, data: bytes | FrameOverflow, out: list[Event]) -> None:
        if self._state.ended:
            return
        chunk = self._decoded(decode_chunk, data, out)
        if chunk is not None:
            self._chunk(chunk, out, data)  # type: ignore[arg-type]

    # -- translation -------------------------------------------------------------------------

    def _chunk(self, chunk: Chunk, out: list[Event], data: bytes) -> None:
        if chunk.error is not None:
            self._error(chunk, out, data)
            return
        if not self._info_sent and (chunk.model_version or chunk.response_id):
            self._info(chunk, out)
        for candidate in chunk.candidates or ():
            if candidate.index in (None, 0):
                self._candidate(candidate, out)
                break
        feedback = chunk.prompt_feedback
        if feedback is not None and feedback.block_reason:
            self._blocked(feedback.block_reason, feedback.block_reason_message, out)
        if chunk.usage_metadata is not None:
            self._usage(chunk.usage_metadata, out)

    def _info(self, chunk: Chunk | TextChunk, out: list[Event]) -> None:
        self._info_sent = True
        out.append(ResponseInfo(model=chunk.model_version, response_id=chunk.response_id))

    def _candidate(self, candidate: Candidate, out: list[Event]) -> None:
        content = candidate.content
        for part in (content.parts if content is not None else None) or ():
            call = part.function_call
            if call is not None:
                self._function_call(call, part.thought_signature, out)
                continue
            text = part.text
            if text:
                if part.thought:
                    out.append(ReasoningDelta(text=text))
                else:
                    out.append(TextDelta(text=text))
                    self._texting = True  # the answer text may go on: try the short way
            if text is not None or part.thought_signature is not None:
                self._replay.text(
                    text or "", reasoning=bool(part.thought), signature=part.thought_signature
                )
        if candidate.finish_reason is not None:
            self._finish_reason(candidate.finish_reason, candidate.finish_message, out)

    def _function_call(self, part: FunctionCall, signature: str | None, out: list[Event]) -> None:
        streamed = self._streamed
        if streamed is not None:
            if not part.name:
                self._continue(streamed, part, signature, out)
                return
            # A new header while the streamed call has had no end piece: the old call is closed
            # as it is (its object was never closed, so it can never pass as complete).
            self._state.report(
                out,
                ProviderError(
                    message=(
                        f"function call {part.name!r} began before the streamed call "
                        f"{streamed.call.name!r} ended; that call was closed unfinished"
                    ),
                    kind="protocol",
                ),
            )
            self._calls.close(out, streamed.call, "next_call")
            self._streamed = None
        if not part.name:
            # A piece of a streamed call with no call open (its header was in a lost piece, or
            # the server broke its protocol): reported, and no call is made of it.
            self._state.report(
                out,
                ProviderError(
                    message="a piece of a function call arrived with no call open; dropped",
                    kind="protocol",
                    raw=_quoted(part),
                ),
            )
            return
        call = self._calls.start(out, call_id=part.id or None, name=part.name)
        call.arguments_form = "object"
        self._replay.call(call.call_id, signature)
        if part.partial_args is None and not part.will_continue:
            # A whole call (Gemini API): left open for the finish to decide (module docstring).
            self._calls.append_to(out, call, json_text(part.args or {}))
            return
        writer = ArgumentsWriter()
        self._calls.append_to(out, call, writer.start())
        self._streamed = _Streamed(call, writer)
        self._continue(self._streamed, part, None, out)

    def _continue(
        self, streamed: _Streamed, part: FunctionCall, signature: str | None, out: list[Event]
    ) -> None:
        """One piece of the streamed call: its argument text, and maybe its end."""
        call = streamed.call
        if signature is not None:
            self._replay.sign_call(call.call_id, signature)
        if part.args is not None and not streamed.broken:
            streamed.broken = True
            self._state.unreadable(out, _protocol("a streamed call piece with whole args", part))
        for piece in part.partial_args or ():
            if streamed.broken:
                break
            try:
                text = streamed.writer.feed(piece)
            except PartialArgError as error:
                streamed.broken = True
                self._state.unreadable(out, _protocol(str(error), part))
                break
            self._calls.append_to(out, call, text)
        if not part.will_continue:
            if not streamed.broken:
                self._calls.append_to(out, call, streamed.writer.end())
            self._calls.close(out, call, "call_end")
            self._streamed = None

    def _finish_reason(self, raw: str, message: str | None, out: list[Event]) -> None:
        facts = self._facts
        if raw == MALFORMED and facts.raw != MALFORMED:
            rejection = malformed_call_rejection(len(self._calls.calls), message)
            out.append(rejection)
        facts.raw = raw
        facts.reason = finish_reason_from_gemini(raw)
        if raw == MAX_TOKENS:
            facts.length_signal = True

    def _blocked(self, raw: str, message: str | None, out: list[Event]) -> None:
        """The prompt was blocked: no candidate, the turn ends in a content filter (or unknown)."""
        facts = self._facts
        facts.raw = raw
        facts.reason = block_reason_from_gemini(raw)
        detail = f": {cap_text(message, 300)}" if message else ""
        self._state.report(
            out,
            ProviderError(
                message=f"the prompt was blocked ({raw}){detail}; nothing was generated",
                kind="error_payload",
                code=raw,
            ),
        )

    def _usage(self, usage: UsageMetadata, out: list[Event]) -> None:
        candidates, thoughts = usage.candidates_token_count, usage.thoughts_token_count
        output = (
            None if candidates is None and thoughts is None else (candidates or 0) + (thoughts or 0)
        )
        key = (usage.prompt_token_count, output, usage.total_token_count, thoughts)
        if key == self._last_usage or key == (None, None, None, None):
            return  # Vertex sends {"trafficType": ...} alone; Gemini repeats the same counts
        self._last_usage = key
        self._facts.output_tokens = output
        out.append(
            Usage(
                input_tokens=usage.prompt_token_count,
                output_tokens=output,
                total_tokens=usage.total_token_count,
                reasoning_tokens=thoughts,
            )
        )

    def _error(self, chunk: Chunk, out: list[Event], data: bytes) -> None:
        body = chunk.error
        code: str | None = None
        if isinstance(body, str):
            message = body
        else:
            assert body is not None
            message = body.message or body.status or "provider error"
            code = str(body.code) if body.code is not None else body.status
        self._state.fatal(
            out,
            ProviderError(
                message=message,
                kind="error_payload",
                code=code,
                raw=cap_text(data) if data else "",
                fatal=True,
            ),
        )
        self._end(out)

    def _end(self, out: list[Event]) -> None:
        if self._state.ended:
            return
        if self._replay.signed:
            # The parts Gemini needs back, signatures on their parts, travel with the Turn.
            parts = tuple(msgspec.to_builtins(part) for part in self._replay.parts())
            out.append(ProviderContent(items=parts))
        self._state.end(out)


def _protocol(message: str, part: FunctionCall) -> ProviderError:
    return ProviderError(
        message=f"a streamed function-call piece that cannot be written as sent: {message}",
        kind="protocol",
        raw=_quoted(part),
    )


def _quoted(part: FunctionCall) -> str:
    """The piece as sent, capped, for an error (its ``repr`` if it holds what JSON cannot)."""
    try:
        return cap_text(_encode(part))
    except (UnicodeEncodeError, RecursionError):
        return quoted_object(part)
