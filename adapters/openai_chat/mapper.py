"""OpenAI Chat Completions streams, and every server that speaks them, into toolwire events.

One mapper serves OpenAI, Azure, llama-server / llama-cpp-python, vLLM, Ollama's ``/v1``,
LM Studio, OpenRouter, Mistral, xAI and DashScope. Their differences are handled in
:mod:`toolwire.core.accumulate` (ids and indices) and here:

- chunks are decoded straight into typed msgspec Structs (fields the servers add, such as
  ``obfuscation``, ``provider``, ``native_finish_reason``, are skipped by the decoder);
- ``tool_calls: []`` / ``null`` on text chunks (vLLM) are nothing;
- llama-cpp-python repeats every tool-call fragment as a legacy ``function_call`` delta: once a
  stream has used ``tool_calls``, ``function_call`` is ignored so each call is counted once;
- reasoning arrives as ``reasoning_content`` (vLLM, LM Studio, xAI, DeepSeek) or ``reasoning``
  (OpenRouter);
- usage may come on the finish chunk, on a ``choices: []`` chunk, or not at all;
- an ``{"error": ...}`` payload (OpenAI, vLLM ``"object": "error"``) is a fatal ProviderError.

Only choice 0 is read: toolwire judges one assistant turn per stream.
"""

from __future__ import annotations

from typing import Any, Literal

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
from ..frame_errors import CONVERT_FAILURES, object_shape_error
from ..framing import FrameOverflow
from ..mapper_base import MapperBase
from ..sse import SSEDecoder
from .profiles import CHAT_PROFILES, ServerProfile

__all__ = ["OpenAIChatMapper", "finish_reason_from_openai"]


class _Function(msgspec.Struct, gc=False):
    name: str | None = None
    arguments: str | dict[str, Any] | None = None


class _ToolCallDelta(msgspec.Struct, gc=False):
    index: int | None = None
    id: str | None = None
    function: _Function | None = None


class _Delta(msgspec.Struct, gc=False):
    content: str | None = None
    reasoning_content: str | None = None
    reasoning: str | None = None
    tool_calls: list[_ToolCallDelta] | None = None
    function_call: _Function | None = None


class _Choice(msgspec.Struct, gc=False):
    index: int = 0
    delta: _Delta | None = None
    finish_reason: str | None = None


class _TokenDetails(msgspec.Struct, gc=False):
    reasoning_tokens: int | None = None


class _Usage(msgspec.Struct, gc=False):
    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    total_tokens: int | None = None
    completion_tokens_details: _TokenDetails | None = None


class _ErrorBody(msgspec.Struct, gc=False):
    message: str | None = None
    type: str | None = None
    code: str | int | None = None


class _Chunk(msgspec.Struct, gc=False):
    object: str | None = None
    choices: list[_Choice] | None = None
    usage: _Usage | None = None
    error: _ErrorBody | str | None = None
    message: str | None = None
    id: str | None = None
    model: str | None = None


class _HotChoice(msgspec.Struct, gc=False):
    delta: _Delta
    index: Literal[0] = 0
    finish_reason: None = None


class _HotChunk(msgspec.Struct, gc=False):
    """A chunk in the middle of a stream, in the shape most chunks have: one choice (0) with a
    delta, no finish, no usage, no error. The decoder checks those in C as it reads (a chunk
    shaped otherwise fails validation and is read again in full, once), so the hot loop does
    not test them one by one."""

    choices: list[_HotChoice]
    object: str | None = None
    usage: None = None
    error: None = None


_decode_chunk = msgspec.json.Decoder(_Chunk).decode
_decode_hot_chunk = msgspec.json.Decoder(_HotChunk).decode
_DONE = b"[DONE]"

_FINISH_REASONS: dict[str, StopReason] = {
    "stop": "end_turn",
    "eos": "end_turn",
    "end_turn": "end_turn",
    "tool_calls": "tool_calls",
    "function_call": "tool_calls",
    "length": "length",
    "max_tokens": "length",
    "content_filter": "content_filter",
    "error": "error",
}


def finish_reason_from_openai(raw: str) -> StopReason:
    """Normalize a Chat Completions ``finish_reason`` (and the variants compatible servers use)."""
    return _FINISH_REASONS.get(raw, "unknown")


_DEFAULT_SETTINGS = MapperSettings()

#: Said after "empty body" for a server that streams tool calls only when one is forced.
FORCED_TOOL_HINT = (
    "; this server sends no event (an empty body, or keep-alive pings alone) when a streamed "
    'request with tool_choice "auto" picks a tool (llama-cpp-python): name the function in '
    "tool_choice"
)


def _with_forced_tool_hint(event: Event) -> Event:
    if isinstance(event, ProviderError) and event.kind == "empty_response":
        return msgspec.structs.replace(event, message=event.message + FORCED_TOOL_HINT)
    return event


class OpenAIChatMapper(MapperBase):
    """Sans-I/O mapper for one Chat Completions stream (SSE bytes or SDK chunk objects)."""

    provider_name = "openai"

    def __init__(
        self,
        settings: MapperSettings = _DEFAULT_SETTINGS,
        profile: ServerProfile = CHAT_PROFILES["openai-chat"],
    ) -> None:
        super().__init__(settings, hides_length_finish=profile.hides_length_finish)
        self.provider_name = profile.gen_ai_name
        self._sse = SSEDecoder()
        self._forced_tools_only = profile.streams_tool_calls_only_when_forced
        self._calls = self._state.calls
        self._info_sent = False
        self._uses_tool_calls = False
        self._framed_elsewhere = False

    # -- input -------------------------------------------------------------------------------

    def feed_bytes(self, data: bytes) -> list[Event]:
        """Take the next bytes of an SSE body."""
        out: list[Event] = []
        payloads = self._sse.feed(data).payloads
        if not self._info_sent:
            # The first chunks (model, id) and anything before them: the full decoder.
            for position, payload in enumerate(payloads):
                if self._info_sent:
                    payloads = payloads[position:]
                    break
                self._payload(payload, out)
            else:
                return out
        append = out.append
        continuation = self._calls.continuation
        ended = self._state.ended
        for payload in payloads:
            if ended or type(payload) is not bytes:
                self._payload(payload, out)
                ended = self._state.ended
                continue
            try:
                chunk = _decode_hot_chunk(payload)
            except msgspec.MsgspecError:
                # Another shape (the finish, usage, an error, several choices, ``[DONE]``) or
                # no JSON: read again by the full decoder, which reports errors precisely.
                self._payload(payload, out)
                ended = self._state.ended
                continue
            if chunk.object == "error":
                self._payload(payload, out)  # an error chunk: read in full, for its message
                ended = self._state.ended
                continue
            # The hot paths, inline (most chunks of a long answer or call): one piece of text,
            # or one argument piece for the latest call. Anything else, and anything the call
            # accumulator does not take as a simple continuation, is ``_any_chunk``'s.
            choices = chunk.choices
            if len(choices) == 1:
                delta = choices[0].delta
                if delta.reasoning_content is None and delta.reasoning is None:
                    tool_calls = delta.tool_calls
                    if tool_calls is None:
                        if delta.function_call is None:
                            if delta.content:
                                append(TextDelta(text=delta.content))
                            continue
                    elif len(tool_calls) == 1 and delta.content is None:
                        fragment = tool_calls[0]
                        function = fragment.function
                        if (
                            fragment.id is None
                            and function is not None
                            and function.name is None
                            and type(function.arguments) is str
                            and continuation(out, fragment.index, function.arguments)
                        ):
                            continue
            self._any_chunk(chunk, out, payload)
        return out

    def feed_object(self, chunk: object) -> list[Event]:
        """Take one ``openai`` SDK ``ChatCompletionChunk`` (any pydantic model) or a mapping."""
        out: list[Event] = []
        if self._state.ended:
            return out
        self._object_source = True
        dump = getattr(chunk, "model_dump", None)
        payload = dump() if callable(dump) else chunk
        try:
            decoded = msgspec.convert(payload, _Chunk, strict=False)
        except CONVERT_FAILURES as error:
            self._unreadable(out, object_shape_error(error, payload))
            return out
        self._any_chunk(decoded, out, b"")
        return out

    def payload(self, data: bytes) -> list[Event]:
        """Take one already-framed ``data:`` payload (for callers doing their own framing)."""
        self._framed_elsewhere = True
        out: list[Event] = []
        self._payload(data, out)
        return out

    def finish(self, *, failed: bool = False) -> list[Event]:
        """The source ended: flush the decoder, close open calls, decide the finish."""
        out: list[Event] = []
        for payload in self._sse.finish().payloads:
            self._payload(payload, out)
        sse = self._sse
        saw_stream = sse.saw_field or self._framed_elsewhere
        saw_events = sse.saw_data or self._framed_elsewhere
        if self._not_a_stream(
            out, sse, failed=failed, saw_stream=saw_stream, saw_events=saw_events
        ):
            if not saw_events and self._forced_tools_only:
                out[:] = [_with_forced_tool_hint(event) for event in out]
        if self._object_source and not failed and self._facts.output_tokens is not None:
            # The SDK consumes ``[DONE]`` itself, so an SDK source cannot show it. A usage report
            # is only sent once generation is over (OpenRouter/Kimi never sends a finish reason),
            # so a clean end after usage stands for the terminator; without usage, a stream that
            # simply stopped stays ``disconnected``: a bad call must never run.
            self._facts.terminated = True
        self._end(out)
        return out

    # -- translation -------------------------------------------------------------------------

    def _payload(self, data: bytes | FrameOverflow, out: list[Event]) -> None:
        if self._state.ended:
            return
        if type(data) is bytes and data[:1] != b"{" and data.strip() == _DONE:
            self._facts.terminated = True
            self._end(out)
            return
        chunk = self._decoded(_decode_chunk, data, out)
        if chunk is not None:
            self._any_chunk(chunk, out, data)  # type: ignore[arg-type]

    def _any_chunk(self, chunk: _Chunk | _HotChunk, out: list[Event], data: bytes) -> None:
        if chunk.error is not None or chunk.object == "error":
            assert isinstance(chunk, _Chunk)  # a hot chunk has neither
            self._error(chunk, out, data)
            return
        if not self._info_sent and isinstance(chunk, _Chunk):
            self._info(chunk, out)
        choices = chunk.choices
        if choices:
            for choice in choices:
                if choice.index != 0:
                    continue
                if choice.delta is not None:
                    self._delta(choice.delta, out)
                if choice.finish_reason is not None:
                    self._finish_reason(choice.finish_reason)
        usage = chunk.usage
        if usage is not None:
            self._usage(usage, out)

    def _info(self, chunk: _Chunk, out: list[Event]) -> None:
        if chunk.model is None and chunk.id is None:
            return
        self._info_sent = True
        out.append(ResponseInfo(model=chunk.model, response_id=chunk.id))

    def _usage(self, usage: _Usage, out: list[Event]) -> None:
        details = usage.completion_tokens_details
        self._facts.output_tokens = usage.completion_tokens
        out.append(
            Usage(
                input_tokens=usage.prompt_tokens,
                output_tokens=usage.completion_tokens,
                total_tokens=usage.total_tokens,
                reasoning_tokens=details.reasoning_tokens if details is not None else None,
            )
        )

    def _delta(self, delta: _Delta, out: list[Event]) -> None:
        reasoning = delta.reasoning_content or delta.reasoning
        if reasoning:
            out.append(ReasoningDelta(text=reasoning))
        if delta.content:
            out.append(TextDelta(text=delta.content))
        tool_calls = delta.tool_calls
        if tool_calls:
            self._uses_tool_calls = True
            for fragment in tool_calls:
                function = fragment.function
                self._calls.fragment(
                    out,
                    index=fragment.index,
                    call_id=fragment.id,
                    name=function.name if function is not None else None,
                    arguments=function.arguments if function is not None else None,
                )
        elif delta.function_call is not None and not self._uses_tool_calls:
            legacy = delta.function_call
            self._calls.fragment(
                out, index=None, call_id=None, name=legacy.name, arguments=legacy.arguments
            )

    def _finish_reason(self, raw: str) -> None:
        facts = self._facts
        facts.raw = raw
        facts.reason = finish_reason_from_openai(raw)
        if facts.reason == "length":
            facts.length_signal = True

    def _error(self, chunk: _Chunk, out: list[Event], data: bytes) -> None:
        body = chunk.error
        code: str | None = None
        if isinstance(body, _ErrorBody):
            message = body.message or body.type or "provider error"
            code = str(body.code) if body.code is not None else body.type
        else:
            message = body or chunk.message or "provider error"
        self._in_band_error(out, message, code, data)
